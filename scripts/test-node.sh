#!/usr/bin/env bash
# Node face: installs the pinned napi CLI (npm ci), builds the addon, checks
# that the generated loader and types are the committed ones, runs the
# node:test suite and the examples. Needs only Node 20 + npm and Rust.
set -euo pipefail
cd "$(dirname "$0")/../bindings/node"

echo "== node: npm ci, napi build (debug)"
npm ci --no-audit --no-fund
npm run build:debug

echo "== node: generated index.js and index.d.ts are committed and fresh"
# A different CLI version or a changed #[napi] item rewrites them: rebuild
# with `npm run build:debug` (or `npm run build`) and commit the result.
git diff --exit-code -- index.js index.d.ts
test -z "$(git status --porcelain -- index.js index.d.ts)"

echo "== node: node --test"
node --test __test__/*.test.mjs

echo "== node: examples"
for example in ../../examples/node/*.mjs; do
  echo "-- $example"
  node "$example"
done
