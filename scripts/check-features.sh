#!/usr/bin/env bash
# Checks that every package the test command builds in release (the Node
# addon, the wheel, the C library, the CLI) compiles each shared dependency
# with the same features, so the one release build serves all of them and
# nothing is compiled twice. Lists, for each dependency that differs, what
# a package lacks: add it to workspace-hack/Cargo.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
TREES=$(mktemp -d)
trap 'rm -rf "$TREES"' EXIT
for package in conch-node conch-python conch-ffi conch-cli; do
  cargo tree --locked -p "$package" --target "$TRIPLE" -e normal,build -f '{p}|{f}' --prefix none |
    sed -e 's/ (\*)$//' -e 's/ (proc-macro)$//' | sort -u >"$TREES/$package"
done
python3 - "$TREES"/* <<'PY'
import collections, os, sys
features = collections.defaultdict(dict)
for path in sys.argv[1:]:
    for line in open(path):
        if line.strip():
            crate, listed = line.strip().split("|")
            features[crate][os.path.basename(path)] = set(filter(None, listed.split(",")))
differ = 0
for crate, by_package in sorted(features.items()):
    union = set().union(*by_package.values())
    lacking = {p: sorted(union - f) for p, f in by_package.items() if union - f}
    if len(by_package) > 1 and lacking:
        differ += 1
        print(f"{crate}: {', '.join(f'{p} lacks {l}' for p, l in lacking.items())}")
if differ:
    sys.exit(f"{differ} shared dependencies are built with different features: add them to workspace-hack/Cargo.toml")
print("every release package builds its shared dependencies with the same features")
PY
