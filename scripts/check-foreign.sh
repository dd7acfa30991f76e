#!/usr/bin/env bash
# Type-checks the whole workspace for the Unixes this machine cannot run:
# macOS and FreeBSD, from Linux x86_64, with no Mac, no rustup target and
# no network beyond Debian's archive and crates.io. By default macOS is
# checked on arm64 only: x86_64 macOS runs the same code (no code outside
# Linux depends on the CPU), and a third target cost the test command
# about two minutes cold; CONCH_CHECK_TARGETS adds it.
#
# How: Debian 12's bookworm-security ships `rustc-web`, a full rustc, with
# the standard library's source of the very same version (`rust-web-src`).
# With RUSTC_BOOTSTRAP=1, cargo's -Zbuild-std builds core, alloc and std for
# any target that rustc knows from that source, and `cargo check` needs no
# linker and no SDK. The packages are only unpacked (`dpkg -x`) under
# target/: nothing on the machine changes and rustup stays the default.
# The compiler and its library source always come from one source package
# (whatever version the archive has now): a library of another version
# does not build.
#
# Usage: scripts/check-foreign.sh [cargo check arguments...]
#   default arguments: --workspace --all-targets
#   CONCH_CHECK_TARGETS    the targets, space-separated (default:
#                          aarch64-apple-darwin x86_64-unknown-freebsd)
#   CONCH_CHECK_TOOLCHAIN  where the toolchain is unpacked
#                          (default: target/debian-rustc-web)
set -euo pipefail
cd "$(dirname "$0")/.."

TC=${CONCH_CHECK_TOOLCHAIN:-$PWD/target/debian-rustc-web}
TARGETS=${CONCH_CHECK_TARGETS:-aarch64-apple-darwin x86_64-unknown-freebsd}

if [ ! -x "$TC/rustc" ]; then
  # The lists must know bookworm-security; updating them needs root (as CI is).
  if [ "$(id -u)" = 0 ]; then apt-get update -qq; fi
  V=$(apt-cache policy rustc-web | awk '/Candidate:/ {print $2}')
  [ -n "$V" ] && [ "$V" != "(none)" ] || { echo "no rustc-web in apt" >&2; exit 1; }
  MM=$(echo "$V" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
  LLVM=$(apt-cache depends "libstd-rust-web-$MM=$V" | awk '/Depends: libllvm/ {print $2; exit}')
  rm -rf "$TC" && mkdir -p "$TC/debs" "$TC/root"
  (cd "$TC/debs" && apt-get download -qq \
    "rustc-web=$V" "rust-web-src=$V" "libstd-rust-web-dev=$V" "libstd-rust-web-$MM=$V" "$LLVM")
  for d in "$TC"/debs/*.deb; do dpkg -x "$d" "$TC/root"; done
  rm -rf "$TC/debs"
  # rust-web-src is the whole compiler's source; -Zbuild-std reads library/.
  find "$TC"/root/usr/src/rustc-*/ -mindepth 1 -maxdepth 1 ! -name library -exec rm -rf {} +
  cat >"$TC/rustc.tmp" <<EOW
#!/bin/sh
LD_LIBRARY_PATH=$TC/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $TC/root/usr/bin/rustc "\$@"
EOW
  chmod +x "$TC/rustc.tmp"
  # Last, so an interrupted unpack is redone rather than half used.
  mv "$TC/rustc.tmp" "$TC/rustc"
fi
"$TC/rustc" -vV | sed -n 1p

# A C compiler for the targets, for build scripts that compile C (ring's,
# under the remote face's TLS): nothing is linked by a check, so it only
# makes the object files it is asked for, empty.
cat >"$TC/no-cc" <<'EOW'
#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in
    -o) : >"$2"; shift ;;
    -o?*) : >"${1#-o}" ;;
    -Fo?*) : >"${1#-Fo}" ;; # taken for MSVC, since it says nothing to -E
  esac
  shift
done
EOW
chmod +x "$TC/no-cc"

[ $# -gt 0 ] || set -- --workspace --all-targets
target_args=()
for t in $TARGETS; do
  target_args+=(--target "$t")
  export "CC_${t//-/_}=$TC/no-cc"
done

# A target dir of its own: the Debian rustc's artifacts never mix with
# rustup's. Opt-level 0: nothing here is run, so nothing is optimised.
# Warnings are errors, as clippy makes them on Linux: a cfg'd-out caller
# leaves dead code only another platform's check sees.
RUSTC="$TC/rustc" RUSTC_BOOTSTRAP=1 RUSTFLAGS="${RUSTFLAGS:-} -D warnings" \
  CARGO_TARGET_DIR="${CONCH_CHECK_TARGET_DIR:-$PWD/target/foreign-check}" \
  cargo check --locked -Zbuild-std=std,panic_abort "${target_args[@]}" \
  --config 'profile.dev.opt-level=0' --config 'profile.dev.package."*".opt-level=0' \
  "$@"
