#!/usr/bin/env bash
# Node face: checks that the generated loader and types are the committed
# ones, runs the node:test suite and the examples, against the addon of the
# release build (scripts/build.sh, run first unless the caller says
# CONCH_BUILT=1). Needs only Node 20 + npm and Rust.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT/bindings/node"
# The server the remote tests connect to: the release build's.
export CONCH_BIN="$RELEASE_DIR/conch"

echo "== node: generated index.js and index.d.ts are committed and fresh"
# A different CLI version or a changed #[napi] item rewrites them: rebuild
# with `npm run build` and commit the result.
git diff --exit-code -- index.js index.d.ts
test -z "$(git status --porcelain -- index.js index.d.ts)"

echo "== node: node --test"
node --test __test__/*.test.mjs

echo "== node: examples"
for example in ../../examples/node/*.mjs; do
  echo "-- $example"
  node "$example"
done
