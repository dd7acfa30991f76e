#!/usr/bin/env bash
# The C face, against libconch of the release build (scripts/build.sh, run
# first unless the caller says CONCH_BUILT=1): checks include/conch.h
# (compiles as C11 and C++17 with -Wall -Werror, declares exactly the
# exported symbols), runs the C tests in tests/c/ under valgrind (no leak of any kind, no memory error)
# and builds and runs examples/c/ against the shared and the static library
# and through its pkg-config file. Exits non-zero on any failure.
#
# On macOS (scripts/test-macos.sh) the same with macOS's names
# (libconch.dylib, `nm -gU`, Mach-O's leading underscore), without
# valgrind (it does not run on arm64 macOS; the pidfd shim is Linux's), and
# with the libraries rustc says a static libconch needs there.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT"

LIBDIR="$RELEASE_DIR"
# The server tests/c/test_remote.c connects to: the release build's.
export CONCH_BIN="$RELEASE_DIR/conch"
# The servers tests/c/test_domains.c's domain policy lets commands reach.
export CONCH_NET_SERVER="$ROOT/tests/net/server.py"
OUT="$TARGET_DIR/ctest"
mkdir -p "$OUT"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -pthread -I"$ROOT/include")
LINK=(-L"$LIBDIR" -lconch -Wl,-rpath,"$LIBDIR")

echo "== c: header compiles as C11 and C++17"
printf '#include "conch.h"\nint main(void) { return conch_version() == 0; }\n' >"$OUT/header.c"
cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -c "$OUT/header.c" -o "$OUT/header.o"
c++ -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -c "$OUT/header.c" -o "$OUT/header_cpp.o"

echo "== c: exported symbols = functions declared in the header"
# The functions the header declares (comments and typedefs do not count).
HEADER_FNS=$(python3 tests/c/header_fns.py include/conch.h)
if [ "$(uname -s)" = Darwin ]; then
  EXPORTS=$(nm -gU "$LIBDIR/$SHLIB" | awk '$2 == "T" { sub(/^_/, "", $3); print $3 }' | LC_ALL=C sort -u)
else
  EXPORTS=$(nm -D --defined-only "$LIBDIR/$SHLIB" | awk '$2 == "T" { print $3 }' | sort -u)
fi
diff <(echo "$HEADER_FNS") <(echo "$EXPORTS") ||
  { echo "$SHLIB exports differ from include/conch.h (< header, > library)"; exit 1; }

echo "== c: tests/c/test_null.c calls every function of the header"
# A call is the name followed by "(" in the code: comments are stripped
# first, and a name in a string literal is not followed by "(".
NULL_CODE=$(cc -fpreprocessed -dD -E -P tests/c/test_null.c)
missing=$(while read -r fn; do grep -qE "\b$fn *\(" <<<"$NULL_CODE" || echo "$fn"; done <<<"$HEADER_FNS")
[ -z "$missing" ] || { echo "not called with NULL arguments in tests/c/test_null.c: $missing"; exit 1; }

# What runs each test: valgrind on Linux; the test alone on macOS.
UNDER=()
if [ "$(uname -s)" = Linux ]; then
  # valgrind 3.19 (Debian 12) lacks pidfd_open, which conch uses to wait for
  # its children; this shim emulates it under valgrind only (see the file).
  cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -pthread tests/c/pidfd_shim.c -ldl -o "$OUT/pidfd_shim.so"
  # Every kind of leak fails the run: definite, indirect (reachable only from
  # a leaked block) and possible (reachable only through a pointer into the
  # block). tests/c/valgrind.supp lists the possible ones that are not leaks
  # (what process-global maps and threads hold at exit), each with its owner.
  LEAKS=definite,indirect,possible
  VALGRIND=(valgrind -q --leak-check=full --show-leak-kinds=$LEAKS --errors-for-leak-kinds=$LEAKS
    --suppressions="$ROOT/tests/c/valgrind.supp" --error-exitcode=99)
  # valgrind's notes about what it does not model (pidfd_open, handled by the
  # shim; landlock_create_ruleset, which fails as on a kernel without Landlock;
  # open_tree, move_mount and mount_setattr, which fail as on a host that may
  # not make the sandbox's namespaces; the PTY's TIOCGPTPEER ioctl), filtered
  # from the output.
  VALGRIND_NOTES='^(--|==)[0-9]+(--|==) +(WARNING: unhandled amd64-linux syscall: (428|429|434|442|444)|You may be able to write|Read the file README_MISSING|Nevertheless we consider|it at http://valgrind.org|Warning: noted but unhandled ioctl 0x5441|This could cause spurious|See README_MISSING)'
  UNDER=(env LD_PRELOAD="$OUT/pidfd_shim.so" "${VALGRIND[@]}")
fi

echo "== c: shared vectors -> $OUT/vectors_*.h"
python3 tests/c/gen_vectors.py tests/vectors "$OUT"

for src in tests/c/test_*.c; do
  name=$(basename "$src" .c)
  echo "== c: $name$([ ${#UNDER[@]} = 0 ] || echo " (under valgrind)")"
  cc "${CFLAGS[@]}" -I"$ROOT/tests/c" -I"$OUT" -DCONCH_EXPECTED_VERSION="\"$VERSION\"" "$src" "${LINK[@]}" -o "$OUT/$name"
  # Run from a scratch directory: shells start in the host's cwd.
  if [ ${#UNDER[@]} -gt 0 ]; then
    (cd "$OUT" && "${UNDER[@]}" "./$name" 2> >(grep -v -E "$VALGRIND_NOTES" >&2))
  else
    (cd "$OUT" && "./$name")
  fi
done

if [ ${#UNDER[@]} -gt 0 ]; then
  # valgrind does not model Landlock and seccomp (ENOSYS under it), so the
  # sandbox's enforcement is checked by a run of its tests without valgrind.
  for name in test_sandbox test_domains; do
    echo "== c: $name (without valgrind: the sandbox enforced)"
    (cd "$OUT" && "./$name")
  done
fi

echo "== c: example (shared library, static library, pkg-config file)"
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" examples/c/stream.c "${LINK[@]}" -o "$OUT/stream"
"$OUT/stream" >"$OUT/stream.out"
grep -qx 'hello from /tmp' "$OUT/stream.out"
# ffi/conch.pc.in's Libs.private are Linux's; on macOS a static libconch
# also needs system frameworks: rustc prints the list.
if [ "$(uname -s)" = Darwin ]; then
  native=$(cargo rustc --release --locked --target "$TRIPLE" -p conch-ffi --lib --crate-type staticlib \
    -- --print native-static-libs 2>&1 | sed -n 's/^note: native-static-libs: //p')
  [ -n "$native" ] || { echo "rustc printed no native-static-libs"; exit 1; }
  read -r -a STATIC_LIBS <<<"$native"
else
  STATIC_LIBS=(-lpthread -ldl -lm)
fi
cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/include" examples/c/stream.c "$LIBDIR/libconch.a" \
  "${STATIC_LIBS[@]}" -o "$OUT/stream_static"
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
