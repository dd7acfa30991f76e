#!/usr/bin/env bash
# Runs the whole test command (scripts/test.sh) N times in a row (default 5)
# while one CPU hog per core (`yes > /dev/null`) keeps every core busy, and
# prints each run's wall time. CI runs on a shared machine that is often busy;
# a suite that passes here does not fail by the clock there.
#
#   ./scripts/test-under-load.sh [RUNS]
#
# Stops at the first failing run and exits with its status. The hogs are
# started and killed by PID (and bounded by `timeout`, so an interrupted run
# cannot leave them behind for long).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cores=$(nproc)
hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$cores"); do
  timeout 14400 yes >/dev/null &
  hogs+=($!)
done
echo "== under load: ${#hogs[@]} CPU hogs (pids ${hogs[*]}), $runs runs of ./scripts/test.sh"

times=()
for run in $(seq "$runs"); do
  start=$(date +%s)
  log=$(mktemp /tmp/conch-test-under-load.XXXXXX)
  if ./scripts/test.sh >"$log" 2>&1; then
    took=$(($(date +%s) - start))
    times+=("$took")
    echo "run $run: passed in ${took} s (log $log)"
  else
    status=$?
    echo "run $run: FAILED with status $status after $(($(date +%s) - start)) s; the end of $log:"
    tail -n 60 "$log"
    exit "$status"
  fi
done
echo "== all $runs runs passed under load; wall times (s): ${times[*]}"
