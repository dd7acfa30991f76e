#!/usr/bin/env bash
# The test command of a Mac (docs/platforms.md): builds every face once, as
# scripts/build.sh does, then runs clippy, the Rust tests, the Python suite,
# the MCP suite, the Node suite and the C suite, one after the other, each
# to its end, and says which failed. Nothing here has run on a Mac yet: it
# is written from the Linux scripts it reuses, and is the first thing to
# run there.
#
# Needs (Homebrew): brew install bash rust node python pkg-config, and the
# Xcode Command Line Tools (cc, c++, nm, git: xcode-select --install).
#
# Left to the Linux test command (scripts/test.sh), and why:
#   - fmt, scripts/check-features.sh, scripts/check-docs.py: the same on
#     every platform;
#   - apt-get (scripts/build.sh installs valgrind, iproute2, g++ and
#     pkg-config with it): Homebrew instead, above;
#   - valgrind and its pidfd shim (scripts/test-c.sh): valgrind does not
#     run on arm64 macOS and the shim is Linux's; the C tests run without;
#   - test-c.sh's check that tests/c/test_null.c calls every function: a
#     check of the source, the same everywhere;
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

# scripts/build.sh less its apt-get step and its Linux file names: the same
# pinned tools (read from build.sh, so they never differ), the same builds.
build() {
  local pins
  pins=$(grep -oE "'[A-Za-z0-9_.-]+==[0-9][^']*'" scripts/build.sh | tr -d "'" || true)
  grep -q '^maturin==' <<<"$pins" || { echo "no pins found in scripts/build.sh" >&2; exit 1; }
  echo "== build: tools (.venv: ${pins//$'\n'/ }; bindings/node: npm ci)"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # shellcheck disable=SC2086 # the pins are words
  "$VENV/bin/python" -m pip install -q $pins
  (cd bindings/node && npm ci --no-audit --no-fund --silent)

  echo "== build: the Node addon (release)"
  (cd bindings/node && npm run --silent build)

  echo "== build: the Python wheel (release), installed into .venv"
  rm -rf "$WHEEL_DIR"
  (cd bindings/python && PYO3_PYTHON="$VENV/bin/python" "$VENV/bin/maturin" build --release --locked \
    --target "$TRIPLE" --strip --interpreter "$VENV/bin/python" --out "$WHEEL_DIR" --quiet)
  "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$WHEEL_DIR"/conch-"$VERSION"-*.whl

  echo "== build: libconch and the conch CLI (release)"
  cargo build --release --locked --target "$TRIPLE" -p conch-ffi -p conch-cli
  ls -1 "$WHEEL_DIR"/*.whl bindings/node/conch.*.node "$RELEASE_DIR"/{libconch.dylib,libconch.a,conch}
}

# scripts/test-c.sh with macOS's names (libconch.dylib, `nm -gU`, Mach-O's
# leading underscore), without valgrind, and with the libraries rustc
# says a static libconch needs here.
c_suite() {
  local LIBDIR=$RELEASE_DIR OUT=$TARGET_DIR/ctest
  local CFLAGS=(-std=c11 -Wall -Wextra -Werror -pthread -I"$ROOT/include")
  # shellcheck disable=SC2054 # -Wl,-rpath,DIR is one flag
  local LINK=(-L"$LIBDIR" -lconch -Wl,-rpath,"$LIBDIR")
  local HEADER_FNS native src name
  export CONCH_BIN="$RELEASE_DIR/conch"
  mkdir -p "$OUT"

  echo "== c: header compiles as C11 and C++17"
  printf '#include "conch.h"\nint main(void) { return conch_version() == 0; }\n' >"$OUT/header.c"
  cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -c "$OUT/header.c" -o "$OUT/header.o"
  c++ -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -c "$OUT/header.c" -o "$OUT/header_cpp.o"

  echo "== c: exported symbols = functions declared in the header"
  HEADER_FNS=$(python3 tests/c/header_fns.py include/conch.h)
  diff <(echo "$HEADER_FNS") \
    <(nm -gU "$LIBDIR/libconch.dylib" | awk '$2 == "T" { sub(/^_/, "", $3); print $3 }' | LC_ALL=C sort -u) ||
    { echo "libconch.dylib exports differ from include/conch.h (< header, > library)"; exit 1; }

  echo "== c: shared vectors -> $OUT/vectors_*.h"
  python3 tests/c/gen_vectors.py tests/vectors "$OUT"
  for src in tests/c/test_*.c; do
    name=$(basename "$src" .c)
    echo "== c: $name"
    cc "${CFLAGS[@]}" -I"$ROOT/tests/c" -I"$OUT" -DCONCH_EXPECTED_VERSION="\"$VERSION\"" "$src" "${LINK[@]}" -o "$OUT/$name"
    # Run from a scratch directory: shells start in the host's cwd.
    (cd "$OUT" && "./$name")
  done

  echo "== c: example (shared library, static library, pkg-config file)"
  cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" examples/c/stream.c "${LINK[@]}" -o "$OUT/stream"
  "$OUT/stream" >"$OUT/stream.out"
  grep -qx 'hello from /tmp' "$OUT/stream.out"
  # ffi/conch.pc.in's Libs.private are Linux's; on macOS a static libconch
  # also needs system frameworks: rustc prints the list.
  native=$(cargo rustc --release --locked --target "$TRIPLE" -p conch-ffi --lib --crate-type staticlib \
    -- --print native-static-libs 2>&1 | sed -n 's/^note: native-static-libs: //p')
  [ -n "$native" ] || { echo "rustc printed no native-static-libs"; exit 1; }
  echo "static libconch needs: $native"
  # shellcheck disable=SC2086 # rustc prints several flags
  cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" examples/c/stream.c "$LIBDIR/libconch.a" \
    $native -o "$OUT/stream_static"
  "$OUT/stream_static" | cmp - "$OUT/stream.out"
  sed -e "s|@LIBDIR@|$LIBDIR|" -e "s|@INCLUDEDIR@|$ROOT/include|" -e "s|@VERSION@|$VERSION|" \
    ffi/conch.pc.in >"$OUT/conch.pc"
  # shellcheck disable=SC2046 # pkg-config prints several flags
  cc -std=c11 -Wall -Werror examples/c/stream.c $(PKG_CONFIG_PATH="$OUT" pkg-config --cflags --libs conch) \
    -Wl,-rpath,"$LIBDIR" -o "$OUT/stream_pc"
  "$OUT/stream_pc" | cmp - "$OUT/stream.out"
  echo "example output matches (shared, static, pkg-config)"

  echo "== c: example tool loop (a scripted model through the tool's definition)"
  cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" examples/c/tool_loop.c "${LINK[@]}" -o "$OUT/tool_loop"
  (cd "$OUT" && ./tool_loop) >"$OUT/tool_loop.out"
  grep -q '^request: {"tools": \[{"description":' "$OUT/tool_loop.out"
  grep -qx 'tool_result (ok): hello from the model' "$OUT/tool_loop.out"
  grep -qx 'Command exited with code 2' "$OUT/tool_loop.out"
  grep -qx 'tool_result (is_error): \[Command timed out after 1 seconds\]' "$OUT/tool_loop.out"
}

START=$(date +%s)
TIMES=()
failed=()
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
  step "build: the release artifacts" build
  # Nothing runs on a build that failed.
  [ ${#failed[@]} = 0 ] || { echo "FAILED: the build" >&2; exit 1; }
fi
export CONCH_BUILT=1
# clippy sees the macOS code nowhere else (scripts/check-foreign.sh only
# type-checks it).
step "rust: clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "rust: tests" cargo test --workspace --locked
step "python" ./scripts/test-python.sh
step "mcp" ./scripts/test-mcp.sh
step "node" ./scripts/test-node.sh
step "c" c_suite

echo "== times"
printf '%s\n' "${TIMES[@]}"
echo "$(printf '%5ss' $(($(date +%s) - START)))  in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "every suite passed"
