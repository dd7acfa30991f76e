# shellcheck shell=bash
# Sourced by the test commands (scripts/test.sh, scripts/test-macos.sh):
# what each step took and which failed, and the summary that ends a run.
START=$(date +%s)
TIMES=()
failed=()

# report_times TITLE: prints each step's time under "== times TITLE" and
# the whole run's, then exits non-zero when a step failed.
report_times() {
  echo "== times $1"
  printf '%s\n' "${TIMES[@]}"
  echo "$(printf '%5ss' $(($(date +%s) - START)))  in all"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}" >&2
    exit 1
  fi
  echo "every suite passed"
}
