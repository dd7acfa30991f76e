#!/usr/bin/env bash
# The one release build every face is tested from and every package is made
# of: the Node addon (`npm run build`, which also writes index.js and
# index.d.ts), the Python wheel (maturin, installed into .venv), libconch
# (.so and .a) and the conch CLI. Installs the build and test tools first:
# the pinned Python packages into .venv, the pinned napi CLI with `npm ci`,
# valgrind, g++, pkg-config, Vim and nano from Debian when missing.
# workspace-hack/ gives every one of those builds the same dependency
# features, so each dependency and conch-core compile once (checked by
# scripts/check-features.sh). Prints where each artifact is.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
cd "$ROOT"

echo "== build: tools (.venv: maturin, pytest, hypothesis, mcp; bindings/node: npm ci)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q 'maturin==1.16.0' 'pytest==9.2.0' 'pytest-timeout==2.4.0' \
  'hypothesis==6.155.2' 'mcp==2.3.0'
(cd bindings/node && npm ci --no-audit --no-fund --silent)
# Debian packages the C checks, the packages step, the Ray suite's
# network namespace (`ip`) and the tests of editors run without a terminal
# (core/tests/shell/no_terminal.rs: `vi`, `vim`, `nano`) need (CI is a
# fresh Debian). A Mac has what its test command needs from Homebrew
# (scripts/test-macos.sh).
need=()
if [ "$(uname -s)" = Linux ]; then
  command -v valgrind >/dev/null || need+=(valgrind)
  command -v ip >/dev/null || need+=(iproute2)
  command -v vim >/dev/null || need+=(vim)
  command -v nano >/dev/null || need+=(nano)
  command -v c++ >/dev/null || need+=(g++)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  if [ ${#need[@]} -gt 0 ]; then
    echo "== build: installing ${need[*]}"
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

echo "== build: the Node addon (release)"
(cd bindings/node && npm run --silent build)

echo "== build: the Python wheel (release), installed into .venv"
rm -rf "$WHEEL_DIR"
# PYO3_PYTHON: pyo3's build script sees the same interpreter on every run.
(cd bindings/python && PYO3_PYTHON="$VENV/bin/python" "$VENV/bin/maturin" build --release --locked \
  --target "$TRIPLE" --strip --interpreter "$VENV/bin/python" --out "$WHEEL_DIR" --quiet)
"$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$WHEEL_DIR"/conch-"$VERSION"-*.whl

echo "== build: libconch and the conch CLI (release)"
cargo build --release --locked --target "$TRIPLE" -p conch-ffi -p conch-cli

echo "== build: done"
ls -1 "$WHEEL_DIR"/*.whl bindings/node/conch.*.node "$RELEASE_DIR"/{"$SHLIB",libconch.a,conch}
