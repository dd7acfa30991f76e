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
# Each carries conch-loop.so, the loop builtin (builtin/: a separate
# GPL-3.0-or-later program bash loads, never linked into conch), beside the
# code that looks for it, and its licence as LICENSE-GPL-3.0 next to
# LICENSE-MIT and LICENSE-APACHE (docs/licences.md): the wheel and the
# platform npm package beside the native module, the C tarball in lib/.
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
cp "$RELEASE_DIR/$LIB" "$RELEASE_DIR/libconch.a" "$RELEASE_DIR/conch-loop.so" "$C_DIR/lib/"
# The release profile keeps line tables for backtraces; a package does not.
"${STRIP[@]}" "$C_DIR/bin/conch" "$C_DIR/lib/$LIB" "$C_DIR/lib/libconch.a" "$C_DIR/lib/conch-loop.so"
if [ "$C_OS" = macos ]; then
  # A dylib's install name is the path it was linked at (the build tree's
  # deps/): name it @rpath/ so programs find it by their rpath, as the
  # pkg-config check below links them. Editing a Mach-O voids its ad-hoc
  # signature, which arm64 macOS requires: sign the three again.
  install_name_tool -id "@rpath/$LIB" "$C_DIR/lib/$LIB"
  codesign --force --sign - "$C_DIR/bin/conch" "$C_DIR/lib/$LIB" "$C_DIR/lib/conch-loop.so"
fi
cp include/conch.h "$C_DIR/include/"
cp LICENSE-MIT LICENSE-APACHE "$C_DIR/"
cp builtin/LICENSE "$C_DIR/LICENSE-GPL-3.0"
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
# The loop builtin beside the addon, where the core looks for it, and its
# licence: the platform package holds all the native code.
cp bindings/node/conch.linux-x64-gnu.node bindings/node/conch-loop.so LICENSE-MIT LICENSE-APACHE "$PLATFORM/"
cp builtin/LICENSE "$PLATFORM/LICENSE-GPL-3.0"
"${STRIP[@]}" "$PLATFORM/conch.linux-x64-gnu.node" "$PLATFORM/conch-loop.so"
node -e 'const fs = require("fs"); const f = process.argv[1]; const p = JSON.parse(fs.readFileSync(f, "utf8"));
  p.files.push("conch-loop.so", "LICENSE-MIT", "LICENSE-APACHE", "LICENSE-GPL-3.0")
  fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n")' "$PLATFORM/package.json"
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

echo "== package: the loop builtin and its licence (GPL-3.0-or-later) beside each native module"
# package_has DESCRIPTION LISTING PATH...: the listing (one name a line) has
# each path.
package_has() {
  local what=$1 listing=$2 path
  shift 2
  for path in "$@"; do
    grep -x -- "$path" <<<"$listing" >/dev/null || { echo "$what lacks $path"; exit 1; }
  done
}
WHEEL_FILES=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' \
  "$OUT"/conch-"$VERSION"-*.whl)
WHEEL_EXT=$(grep -x 'conch/_conch\..*so' <<<"$WHEEL_FILES") || { echo "the wheel has no conch/_conch extension"; exit 1; }
package_has "the wheel (beside $WHEEL_EXT)" "$WHEEL_FILES" conch/conch-loop.so \
  "conch-$VERSION.dist-info/licenses/LICENSE-GPL-3.0"
package_has "the npm platform package" "$(tar -tzf "$OUT"/conch-linux-x64-gnu-"$VERSION".tgz)" \
  package/conch.linux-x64-gnu.node package/conch-loop.so package/LICENSE-GPL-3.0
package_has "the C tarball" "$(tar -tzf "$OUT/$C_NAME.tar.gz")" \
  "$C_NAME/lib/$LIB" "$C_NAME/lib/conch-loop.so" "$C_NAME/LICENSE-GPL-3.0"
# conch's own licence stays conch's: the builtin's is beside it, not in it.
python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
sys.exit(None if "License-Expression: MIT OR Apache-2.0" in meta.splitlines() else "the wheel: not MIT OR Apache-2.0")' \
  "$OUT"/conch-"$VERSION"-*.whl

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
# CONCH_LOOP_BUILTIN would name a builtin other than the package's.
in_clean() { env -u CARGO_HOME -u RUSTUP_HOME -u VIRTUAL_ENV -u CONCH_LOOP_BUILTIN PATH="$CLEAN_PATH" "$@"; }

# Which loop an installed package's sessions run, and whose conch-loop.so.
# LOOP_COMMANDS are given to a probe, which runs each in one session and
# prints its output: bash's syntax error names `-c` under the builtin
# (`eval` under the eval loop), and /proc/$$/maps names the conch-loop.so
# the session's bash loaded (Linux), which must be the package's own (the
# build tree's copy, the core's last resort, is on this machine too).
# shellcheck disable=SC2016 # expanded by the session's bash
LOOP_COMMANDS=('if then' 'grep -o "/.*/conch-loop\.so$" /proc/$$/maps | sort -u')
# runs_builtin WHAT CWD DIR PROBE...: the probe, run in CWD, runs the loop
# builtin from DIR: with CONCH_ENGINE=builtin (no session starts without
# it) and with CONCH_ENGINE unset (the default, auto: the builtin where it
# is found).
runs_builtin() {
  local what=$1 cwd=$2 dir=$3 engine output loaded
  shift 3
  for engine in builtin unset; do
    local choice=(-u CONCH_ENGINE)
    [ "$engine" = unset ] || choice=(CONCH_ENGINE="$engine")
    # The status is the probe's last command's; the output is what counts.
    output=$(cd "$cwd" && in_clean env "${choice[@]}" "$@" "${LOOP_COMMANDS[@]}" 2>&1) || true
    grep -F 'bash: -c: line 1: syntax error' <<<"$output" >/dev/null ||
      { echo "$what, CONCH_ENGINE $engine: not the loop builtin:"; echo "$output"; exit 1; }
    [ "$C_OS" = linux ] || continue
    loaded=$(grep -o '/.*/conch-loop\.so$' <<<"$output" || true)
    [ "$loaded" = "$(realpath "$dir")/conch-loop.so" ] ||
      { echo "$what, CONCH_ENGINE $engine: bash loaded ${loaded:-no conch-loop.so}, not $dir/conch-loop.so"; exit 1; }
  done
  echo "-- $what: the loop builtin, its own conch-loop.so"
}

echo "-- python: a fresh venv, pip install the wheel, the examples"
in_clean python3 -m venv "$TRY/venv"
in_clean "$TRY/venv/bin/pip" install -q "$OUT"/conch-"$VERSION"-*.whl
PY_VERSION=$(cd "$TRY" && in_clean "$TRY/venv/bin/python" -c 'import conch; print(conch.__version__)')
[ "$PY_VERSION" = "$VERSION" ] || { echo "conch.__version__ is $PY_VERSION"; exit 1; }
for example in examples/python/*.py; do
  echo "-- $example"
  (cd "$TRY" && in_clean "$TRY/venv/bin/python" "$ROOT/$example" >/dev/null)
done
PY_EXT_DIR=$(cd "$TRY" && in_clean "$TRY/venv/bin/python" -c 'import os, conch._conch; print(os.path.dirname(conch._conch.__file__))')
runs_builtin "python: the wheel's conch.Shell" "$TRY" "$PY_EXT_DIR" "$TRY/venv/bin/python" -c '
import sys, conch
with conch.Shell() as shell:
    for command in sys.argv[1:]:
        print(shell.run(command).output)'

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
runs_builtin "node: the npm packages' Shell" "$TRY/node" "$TRY/node/node_modules/conch-linux-x64-gnu" node -e '
const { Shell } = require("conch")
;(async () => {
  const shell = new Shell()
  for (const command of process.argv.slice(1)) console.log((await shell.run({ command })).output)
  shell.close()
})()'

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
# The CLI finds lib/conch-loop.so from bin/, libconch beside itself. The
# CLI's session is `conch rpc`'s: `conch run` (the bash tool) gives every
# command a cwd of its own, and a run with a cwd goes through `eval` under
# either loop (its syntax errors name `eval`).
runs_builtin "c: the tarball's bin/conch rpc" "$TRY" "$C_TREE/lib" python3 -c '
import json, subprocess, sys
requests = "".join(json.dumps({"id": i, "type": "bash", "command": c}) + "\n" for i, c in enumerate(sys.argv[2:]))
replies = subprocess.run([sys.argv[1], "rpc", "--drain"], input=requests, capture_output=True, text=True).stdout
for line in replies.splitlines():
    reply = json.loads(line)
    if reply["type"] == "response":
        print((reply.get("data") or {}).get("output", line))' "$C_TREE/bin/conch"
cat >"$TRY/loop.c" <<'EOF'
#include <conch.h>
#include <stdio.h>
int main(int argc, char **argv) {
  conch_shell_options opts = {0};
  conch_shell *sh = conch_shell_new(&opts);
  if (sh == NULL) { fprintf(stderr, "conch_shell_new: %s\n", conch_last_error()); return 1; }
  for (int i = 1; i < argc; i++) {
    conch_run_options run = {0};
    run.command = argv[i];
    conch_bash_result *r = NULL;
    if (conch_shell_run(sh, &run, NULL, NULL, &r) != CONCH_OK) {
      fprintf(stderr, "conch_shell_run: %s\n", conch_last_error());
      return 1;
    }
    puts(r->output);
    conch_bash_result_free(r);
  }
  conch_shell_free(sh);
  return 0;
}
EOF
# shellcheck disable=SC2046
in_clean cc -std=c11 -Wall -Werror "$TRY/loop.c" $(in_clean pkg-config --cflags --libs conch) \
  -Wl,-rpath,"$(in_clean pkg-config --variable=libdir conch)" -o "$TRY/loop"
runs_builtin "c: the tarball's libconch" "$TRY" "$C_TREE/lib" "$TRY/loop"

rm -rf "$TRY"
echo "== package: conch $VERSION: wheel, npm tarballs and C tarball installed and ran without a Rust toolchain"
