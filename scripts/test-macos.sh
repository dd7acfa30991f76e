#!/usr/bin/env bash
# The test command of a Mac (docs/platforms.md): builds every face once
# (scripts/build.sh), then runs clippy, the Rust tests, the Python suite,
# the MCP suite, the Node suite and the C suite, one after the other, each
# to its end, and says which failed. Nothing here has run on a Mac yet: it
# is written from the Linux scripts it reuses, and is the first thing to
# run there.
#
# Needs (Homebrew): brew install bash rust node python pkg-config, and the
# Xcode Command Line Tools (cc, c++, nm, git: xcode-select --install).
#
# scripts/build.sh and scripts/test-c.sh run here as they are (each
# does what differs on macOS: no apt-get, libconch.dylib, `nm -gU`, no
# valgrind). The build's loop builtin, conch-loop.so (builtin/Makefile links
# it with -dynamiclib -undefined dynamic_lookup on macOS), goes beside
# libconch.dylib and the CLI, beside the Node addon and into the wheel, as
# on Linux; the suites run on it (checked below). Left to the Linux test command (scripts/test.sh), and why:
#   - fmt, scripts/check-features.sh, scripts/check-docs.py: the same on
#     every platform;
#   - the Ray suite (scripts/test-ray.sh): it runs in a Linux network
#     namespace (unshare);
#   - the packages (scripts/package.sh): its C tarball is named per
#     platform, but its npm step still makes the linux-x64-gnu package.
#
# Usage: scripts/test-macos.sh
#   CONCH_BUILT=1  use the artifacts of the last build instead of building

# bash >= 4 first, in bash 3.2's language: conch refuses 3.2 (/bin/bash on
# macOS) and takes the first bash >= 4 on PATH, else Homebrew's. Found in
# Homebrew's directory, that bash goes first on PATH, so the scripts run
# below (#!/usr/bin/env bash) and conch's sessions use it.
set -eo pipefail
if [ "$(uname -s)" != Darwin ]; then
  echo "scripts/test-macos.sh is the test command of macOS; elsewhere run scripts/test.sh" >&2
  exit 1
fi
# bash_major PROGRAM: its bash major version; 0 for no bash.
bash_major() {
  local major
  # shellcheck disable=SC2016 # expanded by the bash asked
  major=$("$1" -c 'echo "${BASH_VERSINFO[0]}"' 2>/dev/null) || major=0
  case $major in '' | *[!0-9]*) echo 0 ;; *) echo "$major" ;; esac
}
if [ "$(bash_major bash)" -lt 4 ]; then
  for candidate in /opt/homebrew/bin/bash /usr/local/bin/bash; do
    if [ "$(bash_major "$candidate")" -ge 4 ]; then
      PATH="$(dirname "$candidate"):$PATH"
      export PATH
      break
    fi
  done
fi
if [ "$(bash_major bash)" -lt 4 ]; then
  echo "conch needs bash >= 4 and macOS ships bash 3.2: brew install bash" >&2
  exit 1
fi
if [ -n "${CONCH_BASH:-}" ] && [ "$(bash_major "$CONCH_BASH")" -lt 4 ]; then
  echo "CONCH_BASH=$CONCH_BASH is not a bash >= 4: unset it, or brew install bash" >&2
  exit 1
fi
# The rest runs in that bash.
[ "${BASH_VERSINFO[0]}" -ge 4 ] || exec bash "$0"
set -u

missing=()
for tool in cargo rustc python3 node npm cc c++ nm git pkg-config; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]} (brew install rust node python pkg-config;" \
    "cc, c++, nm and git: xcode-select --install)" >&2
  exit 1
fi

cd "$(dirname "$0")/.."
source scripts/paths.sh
# As scripts/test.sh: a fixed seed for the property tests, and a test
# command that checks include/conch.h, never rewrites it.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261204}"
if [ -n "${CONCH_BLESS+set}" ]; then
  echo "CONCH_BLESS is set: unset it (see ffi/README.md)" >&2
  exit 1
fi
echo "== toolchains"
bash --version | sed -n 1p
cargo --version
python3 --version
node --version

source scripts/times.sh
# step NAME COMMAND...: runs one step to its end and notes its time and
# whether it failed. In the background, then waited for: a function run
# in a condition (`if f`, `f || …`) would ignore `set -e`; a job does not.
step() {
  local name=$1 began status=0
  shift
  began=$(date +%s)
  echo "== $name"
  "$@" &
  wait $! || status=$?
  TIMES+=("$(printf '%5ss  %s%s' $(($(date +%s) - began)) "$name" "$([ $status = 0 ] || echo " (FAILED, exit $status)")")")
  [ $status = 0 ] || failed+=("$name")
}

if [ -z "${CONCH_BUILT:-}" ]; then
  step "build: the release artifacts" ./scripts/build.sh
  # Nothing runs on a build that failed.
  [ ${#failed[@]} = 0 ] || { echo "FAILED: the build" >&2; exit 1; }
fi
export CONCH_BUILT=1
# The loop builtin beside each face's code (scripts/build.sh): without it
# every suite would run the eval loop only.
for built in "$RELEASE_DIR/conch-loop.so" bindings/node/conch-loop.so \
  bindings/python/python/conch/conch-loop.so; do
  [ -f "$built" ] || { echo "no $built: run scripts/build.sh" >&2; exit 1; }
done
# clippy sees the macOS code nowhere else (scripts/check-foreign.sh only
# type-checks it).
step "rust: clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "rust: tests" cargo test --workspace --locked
step "python" ./scripts/test-python.sh
step "mcp" ./scripts/test-mcp.sh
step "node" ./scripts/test-node.sh
step "c" ./scripts/test-c.sh

report_times "(one suite after the other)"
