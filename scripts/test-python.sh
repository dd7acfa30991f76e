#!/usr/bin/env bash
# The Python face: its pytest suite and the Python examples, against the
# wheel of the release build (scripts/build.sh, run first unless the caller
# says CONCH_BUILT=1), installed into .venv. Needs only Python >= 3.10 with
# pip, and Rust.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT"
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH"
# The server the remote tests connect to: the release build's.
export CONCH_BIN="$RELEASE_DIR/conch"

echo "== python: pytest (the installed wheel)"
(cd bindings/python && python -m pytest -q -p no:cacheprovider --durations=10)
echo "== python: examples"
for example in examples/python/*.py; do
  echo "-- $example"
  python "$example"
done
