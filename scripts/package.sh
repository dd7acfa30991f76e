#!/usr/bin/env bash
# Makes conch's installable packages of one version (the workspace's, in
# Cargo.toml) from the release build (scripts/build.sh, run first unless
# the caller says CONCH_BUILT=1), then installs each on a PATH without
# cargo or rustc and runs the examples against it. Writes into target/package/:
#   conch-<v>-cp310-abi3-manylinux_*.whl       Python (abi3: CPython >= 3.10)
#   conch-<v>.tgz, conch-linux-x64-gnu-<v>.tgz npm: the main package and its
#                                              platform package (napi-rs layout)
#   conch-<v>-<os>-<arch>.tar.gz               C library, header, pkg-config
#                                              file, and the conch CLI (os:
#                                              linux or macos; arch: x64 or
#                                              arm64: conch-<v>-linux-x64 on
#                                              Linux x86_64)
# Needs only what scripts/test.sh needs (Rust, Python >= 3.10 with pip,
# Node 20 with npm, a C compiler, pkg-config). Exits non-zero on any
# failure.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT"
OUT="$TARGET_DIR/package"
rm -rf "$OUT"
mkdir -p "$OUT"
echo "== package: conch $VERSION into $OUT"

# The npm version is the one place the version is written twice: it must
# be the workspace's (package.json cannot read Cargo.toml).
NPM_VERSION=$(node -p 'require("./bindings/node/package.json").version')
[ "$NPM_VERSION" = "$VERSION" ] ||
  { echo "bindings/node/package.json says $NPM_VERSION, Cargo.toml says $VERSION"; exit 1; }

echo "== package: C library and CLI"
# The tarball is named after the machine it is built on (the host triple's
# build), and so are the library's suffix and the strip that drops the line
# tables: on macOS, `strip -S` (no --strip-debug there).
case "$(uname -s)" in
  Linux) C_OS=linux LIB=libconch.so STRIP=(strip --strip-debug) ;;
  Darwin) C_OS=macos LIB=libconch.dylib STRIP=(strip -S) ;;
  *) echo "no C package for $(uname -s)"; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) C_ARCH=x64 ;;
  aarch64 | arm64) C_ARCH=arm64 ;;
  *) echo "no C package for $(uname -m)"; exit 1 ;;
esac
C_NAME="conch-$VERSION-$C_OS-$C_ARCH"
C_DIR="$OUT/$C_NAME"
mkdir -p "$C_DIR/bin" "$C_DIR/lib/pkgconfig" "$C_DIR/include"
cp "$RELEASE_DIR/conch" "$C_DIR/bin/"
cp "$RELEASE_DIR/$LIB" "$RELEASE_DIR/libconch.a" "$C_DIR/lib/"
# The release profile keeps line tables for backtraces; a package does not.
"${STRIP[@]}" "$C_DIR/bin/conch" "$C_DIR/lib/$LIB" "$C_DIR/lib/libconch.a"
if [ "$C_OS" = macos ]; then
  # A dylib's install name is the path it was linked at (the build tree's
  # deps/): name it @rpath/ so programs find it by their rpath, as the
  # pkg-config check below links them. Editing a Mach-O voids its ad-hoc
  # signature, which arm64 macOS requires: sign both again.
  install_name_tool -id "@rpath/$LIB" "$C_DIR/lib/$LIB"
  codesign --force --sign - "$C_DIR/bin/conch" "$C_DIR/lib/$LIB"
fi
cp include/conch.h "$C_DIR/include/"
cp LICENSE-MIT LICENSE-APACHE "$C_DIR/"
# Relocatable: paths relative to the .pc file, wherever the tree is unpacked.
sed -e 's|@LIBDIR@|${pcfiledir}/..|' -e 's|@INCLUDEDIR@|${pcfiledir}/../../include|' \
  -e "s|@VERSION@|$VERSION|" ffi/conch.pc.in >"$C_DIR/lib/pkgconfig/conch.pc"
tar -C "$OUT" -czf "$OUT/$C_NAME.tar.gz" "$C_NAME"
rm -rf "$C_DIR"

echo "== package: Python wheel (built abi3, stripped and manylinux-checked by maturin)"
cp "$WHEEL_DIR"/conch-"$VERSION"-*.whl "$OUT/"

echo "== package: npm packages (napi-rs layout)"
NODE_STAGE="$OUT/node"
mkdir -p "$NODE_STAGE/conch"
cp bindings/node/{package.json,conch.js,conch.mjs,conch.d.ts,index.js,index.d.ts} "$NODE_STAGE/conch/"
cp README.md LICENSE-MIT LICENSE-APACHE "$NODE_STAGE/conch/"
# The published main package: no dev dependencies or scripts, not private,
# the native addon in its platform package (an optional dependency, which
# npm installs only on a matching platform; index.js loads it from there).
node - "$NODE_STAGE/conch/package.json" "$VERSION" <<'EOF'
const fs = require('fs')
const [file, version] = process.argv.slice(2)
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
delete pkg.private
delete pkg.devDependencies
delete pkg.scripts
pkg.napi.targets = ['x86_64-unknown-linux-gnu']
pkg.files = pkg.files.filter((f) => f !== '*.node')
pkg.optionalDependencies = { 'conch-linux-x64-gnu': version }
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
EOF
(cd "$NODE_STAGE/conch" && "$ROOT/bindings/node/node_modules/.bin/napi" create-npm-dirs --npm-dir npm >/dev/null)
PLATFORM="$NODE_STAGE/conch/npm/linux-x64-gnu"
cp bindings/node/conch.linux-x64-gnu.node LICENSE-MIT LICENSE-APACHE "$PLATFORM/"
"${STRIP[@]}" "$PLATFORM/conch.linux-x64-gnu.node"
node -e 'const fs = require("fs"); const f = process.argv[1]; const p = JSON.parse(fs.readFileSync(f, "utf8"));
  p.files.push("LICENSE-MIT", "LICENSE-APACHE"); fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n")' "$PLATFORM/package.json"
(cd "$NODE_STAGE/conch" && rm -rf npm/*/README.md && mv npm "$NODE_STAGE/npm" &&
  npm pack --silent --pack-destination "$OUT" >/dev/null)
(cd "$NODE_STAGE/npm/linux-x64-gnu" && npm pack --silent --pack-destination "$OUT" >/dev/null)
rm -rf "$NODE_STAGE"

ls -l "$OUT"

echo "== package: every package carries both licence texts"
# Each listing is read whole (grep without -q): a grep that quits at its
# first match would end the listing with SIGPIPE, a failure under pipefail.
for licence in LICENSE-MIT LICENSE-APACHE; do
  python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' \
    "$OUT"/conch-"$VERSION"-*.whl | grep "\.dist-info/licenses/$licence\$" >/dev/null ||
    { echo "the wheel lacks $licence"; exit 1; }
  for tgz in "$OUT"/conch-"$VERSION".tgz "$OUT"/conch-linux-x64-gnu-"$VERSION".tgz; do
    tar -tzf "$tgz" | grep -x "package/$licence" >/dev/null || { echo "$tgz lacks $licence"; exit 1; }
  done
  tar -tzf "$OUT/$C_NAME.tar.gz" | grep -x "$C_NAME/$licence" >/dev/null ||
    { echo "the C tarball lacks $licence"; exit 1; }
done

echo "== install: a PATH with no cargo or rustc"
# Only the directories of the tools a user of the packages has.
CLEAN_PATH=/usr/local/sbin:/usr/sbin:/sbin:/bin
for tool in python3 node npm cc pkg-config; do
  CLEAN_PATH="$(dirname "$(command -v "$tool")"):$CLEAN_PATH"
done
for tool in cargo rustc; do
  if PATH=$CLEAN_PATH command -v "$tool" >/dev/null; then
    echo "the install PATH still has $tool: $(PATH=$CLEAN_PATH command -v "$tool")"; exit 1
  fi
done
TRY="$OUT/try"
mkdir -p "$TRY"
in_clean() { env -u CARGO_HOME -u RUSTUP_HOME -u VIRTUAL_ENV PATH="$CLEAN_PATH" "$@"; }

echo "-- python: a fresh venv, pip install the wheel, the examples"
in_clean python3 -m venv "$TRY/venv"
in_clean "$TRY/venv/bin/pip" install -q "$OUT"/conch-"$VERSION"-*.whl
PY_VERSION=$(cd "$TRY" && in_clean "$TRY/venv/bin/python" -c 'import conch; print(conch.__version__)')
[ "$PY_VERSION" = "$VERSION" ] || { echo "conch.__version__ is $PY_VERSION"; exit 1; }
for example in examples/python/*.py; do
  echo "-- $example"
  (cd "$TRY" && in_clean "$TRY/venv/bin/python" "$ROOT/$example" >/dev/null)
done

echo "-- node: npm install the tarballs into an empty directory, the examples"
mkdir -p "$TRY/node"
(cd "$TRY/node" && echo '{"name": "try-conch", "private": true}' >package.json &&
  in_clean npm install --no-audit --no-fund --silent "$OUT"/conch-*.tgz)
[ -f "$TRY/node/node_modules/conch-linux-x64-gnu/conch.linux-x64-gnu.node" ] ||
  { echo "the platform package was not installed"; exit 1; }
for example in examples/node/*.mjs; do
  # Copied beside node_modules, importing 'conch' where the checkout's copy
  # imports the build tree (a bare name resolves from the file's place).
  sed -E "s#(['\"])(\.\./)+bindings/node/conch\.m?js(['\"])#\1conch\3#" "$example" \
    >"$TRY/node/$(basename "$example")"
  grep -qE "from ['\"](\.\./)+bindings/" "$TRY/node/$(basename "$example")" &&
    { echo "$example still imports the build tree"; exit 1; }
  echo "-- $example (import)"
  (cd "$TRY/node" && in_clean node "$(basename "$example")" >/dev/null)
done
NODE_VERSION=$(cd "$TRY/node" && in_clean node -p \
  'const c = require("conch"); if (typeof c.Shell !== "function") throw new Error("no Shell"); require("conch/package.json").version')
[ "$NODE_VERSION" = "$VERSION" ] || { echo "the npm package is $NODE_VERSION"; exit 1; }

echo "-- c: unpack the tarball, build the example with pkg-config only"
tar -C "$TRY" -xzf "$OUT/$C_NAME.tar.gz"
C_TREE="$TRY/$C_NAME"
export PKG_CONFIG_PATH="$C_TREE/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config prints several flags
in_clean cc -std=c11 -Wall -Werror examples/c/stream.c $(in_clean pkg-config --cflags --libs conch) \
  -Wl,-rpath,"$(in_clean pkg-config --variable=libdir conch)" -o "$TRY/stream"
in_clean "$TRY/stream" >/dev/null
printf '#include <conch.h>\n#include <stdio.h>\nint main(void) { puts(conch_version()); return 0; }\n' >"$TRY/version.c"
# shellcheck disable=SC2046
in_clean cc -std=c11 "$TRY/version.c" $(in_clean pkg-config --cflags --libs conch) \
  -Wl,-rpath,"$(in_clean pkg-config --variable=libdir conch)" -o "$TRY/version"
C_VERSION=$(in_clean "$TRY/version")
CLI_VERSION=$(in_clean "$C_TREE/bin/conch" --version)
[ "$C_VERSION" = "$VERSION" ] || { echo "conch_version() is $C_VERSION"; exit 1; }
[ "$CLI_VERSION" = "conch $VERSION" ] || { echo "conch --version is $CLI_VERSION"; exit 1; }
in_clean "$C_TREE/bin/conch" run -- 'echo packaged' | grep -qx packaged

rm -rf "$TRY"
echo "== package: conch $VERSION: wheel, npm tarballs and C tarball installed and ran without a Rust toolchain"
