#!/usr/bin/env bash
# The MCP server: the official MCP Python SDK's client (pinned, in .venv)
# runs bindings/cli/tests/mcp_client against `conch mcp` of the release
# build (scripts/build.sh, run first unless the caller says CONCH_BUILT=1).
set -euo pipefail
source "$(dirname "$0")/paths.sh"
[ -n "${CONCH_BUILT:-}" ] || "$ROOT/scripts/build.sh"
cd "$ROOT"

echo "== mcp: the MCP Python SDK's client against conch mcp"
CONCH_BIN="$RELEASE_DIR/conch" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  "$ROOT/bindings/cli/tests/mcp_client"
