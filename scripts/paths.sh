# Sourced by the scripts: where the test command's one release build puts
# each artifact. Every release build names the host triple (`--target`), as
# `napi build --platform` does, so the Node addon, the wheel, libconch and
# the CLI share one directory and compile the dependencies they share once.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Read once and exported: the scripts test.sh starts side by side inherit
# them instead of asking rustc and cargo again.
if [ -z "${CONCH_TARGET_DIR:-}" ]; then
  META=$(cd "$ROOT" && cargo metadata --no-deps --format-version 1)
  CONCH_TARGET_DIR=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$META")
  CONCH_VERSION=$(python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "conch-core"))' <<<"$META")
  CONCH_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
  export CONCH_TARGET_DIR CONCH_VERSION CONCH_TRIPLE
fi
TARGET_DIR=$CONCH_TARGET_DIR
VERSION=$CONCH_VERSION
TRIPLE=$CONCH_TRIPLE
# libconch.{so,a} and the conch CLI.
RELEASE_DIR="$TARGET_DIR/$TRIPLE/release"
# The shared libconch's file name on this system.
case $(uname -s) in
  Darwin) SHLIB=libconch.dylib ;;
  *) SHLIB=libconch.so ;;
esac
# The wheel (the one in it is the one the Python tests import).
WHEEL_DIR="$TARGET_DIR/wheels"
# The repository's virtualenv: the wheel, pytest, the MCP SDK, maturin.
VENV="$ROOT/.venv"
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
