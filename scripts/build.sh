#!/usr/bin/env bash
# The one release build every face is tested from and every package is made
# of: the Node addon (`npm run build`, which also writes index.js and
# index.d.ts), the Python wheel (maturin, installed into .venv), libconch
# (.so and .a), the conch CLI, and the loop builtin conch-loop.so (builtin/,
# a separate GPL-3.0-or-later component bash loads: docs/licences.md) beside
# each face's code, where the core looks for it. Installs the build and test
# tools first: the pinned Python packages into .venv, the pinned napi CLI
# with `npm ci`, valgrind, g++, pkg-config, Vim, nano and less from Debian when
# missing.
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
# (core/tests/shell/no_terminal.rs: `vi`, `vim`, `nano`, `less`) and the domain
# policy's (`curl`, `git`, `openssl`: core/tests/sandbox/domains.rs) need (CI is a
# fresh Debian). A Mac has what its test command needs from Homebrew
# (scripts/test-macos.sh).
need=()
if [ "$(uname -s)" = Linux ]; then
  command -v valgrind >/dev/null || need+=(valgrind)
  command -v ip >/dev/null || need+=(iproute2)
  command -v vim >/dev/null || need+=(vim)
  command -v nano >/dev/null || need+=(nano)
  command -v less >/dev/null || need+=(less)
  command -v curl >/dev/null || need+=(curl)
  command -v git >/dev/null || need+=(git)
  command -v openssl >/dev/null || need+=(openssl)
  command -v c++ >/dev/null || need+=(g++)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  if [ ${#need[@]} -gt 0 ]; then
    echo "== build: installing ${need[*]}"
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

echo "== build: the loop builtin (conch-loop.so), beside each face's code"
# One build (builtin/Makefile, which knows macOS's flags) into the release
# directory, beside libconch and the conch CLI; copies beside the Node addon
# and into the Python package, where maturin takes it into the wheel (an
# `include` of pyproject.toml: *.so is gitignored), with its licence text
# among the wheel's licence files. The copies are gitignored.
mkdir -p "$RELEASE_DIR"
make -s -C builtin OUT="$RELEASE_DIR"
cp "$RELEASE_DIR/conch-loop.so" bindings/node/conch-loop.so
cp "$RELEASE_DIR/conch-loop.so" bindings/python/python/conch/conch-loop.so
cp builtin/LICENSE bindings/python/LICENSE-GPL-3.0

echo "== build: the Node addon (release)"
(cd bindings/node && npm run --silent build)

echo "== build: the Python wheel (release), installed into .venv"
rm -rf "$WHEEL_DIR"
# PYO3_PYTHON: pyo3's build script sees the same interpreter on every run.
(cd bindings/python && PYO3_PYTHON="$VENV/bin/python" "$VENV/bin/maturin" build --release --locked \
  --target "$TRIPLE" --strip --interpreter "$VENV/bin/python" --out "$WHEEL_DIR" --quiet)
"$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$WHEEL_DIR"/conch-"$VERSION"-*.whl
"$VENV/bin/python" -c 'import conch, pathlib, sys
loop = pathlib.Path(conch.__file__).with_name("conch-loop.so")
sys.exit(None if loop.is_file() else f"the wheel installed into .venv lacks {loop}")'

echo "== build: libconch and the conch CLI (release)"
cargo build --release --locked --target "$TRIPLE" -p conch-ffi -p conch-cli

echo "== build: done"
ls -1 "$WHEEL_DIR"/*.whl bindings/node/conch.*.node bindings/node/conch-loop.so \
  "$RELEASE_DIR"/{"$SHLIB",libconch.a,conch,conch-loop.so}
