#!/usr/bin/env bash
# The Ray face (conch.ray, docs/ray.md): its pytest suite
# (bindings/python/tests_ray) against the installed wheel, on a real Ray:
# a local Ray per test module and a multi-node ray.cluster_utils.Cluster.
# Installs Ray into .venv when missing, pinned as the wheel's `ray` extra
# pins it (bindings/python/pyproject.toml).
#
# Ray binds its ports on every interface and advertises the machine's
# address instead of 127.0.0.1, so the suite runs in a network namespace of
# its own with only `lo` up (`unshare -n`; as a user who is not root, in a
# user namespace too, `unshare -r -n`): loopback is the only address there
# is, and nothing reaches out. Ray's token authentication stays on.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT"
RAY_PIN=$(sed -n 's/^ray = \["\(ray==[^"]*\)"\]$/\1/p' bindings/python/pyproject.toml)
[ -n "$RAY_PIN" ] || { echo "no ray pin in bindings/python/pyproject.toml" >&2; exit 1; }
if ! "$VENV/bin/python" -c "import sys, ray; sys.exit(ray.__version__ != sys.argv[1])" "${RAY_PIN#ray==}" 2>/dev/null; then
  echo "== ray: installing $RAY_PIN into .venv"
  "$VENV/bin/python" -m pip install -q "$RAY_PIN"
fi

echo "== ray: pytest (the installed wheel) in a network namespace with only lo"
# No usage report (it could not leave the namespace anyway).
export RAY_USAGE_STATS_ENABLED=0
UNSHARE=(unshare -n)
[ "$(id -u)" = 0 ] || UNSHARE=(unshare -r -n)
cd bindings/python
"${UNSHARE[@]}" -- bash -c 'ip link set lo up && exec "$@"' _ \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider --durations=10 tests_ray
