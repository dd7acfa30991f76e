#!/usr/bin/env bash
# `conch mcp` with a real MCP client: builds the CLI, installs the official
# MCP Python SDK (pinned) into the repo's virtualenv (.venv, created here
# when missing) and runs bindings/cli/tests/mcp_client with it. Needs only
# Python >= 3.10 with pip, and Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

echo "== mcp: build conch, install the MCP Python SDK, run its client against conch mcp"
cargo build -p conch-cli --locked
META=$(cargo metadata --no-deps --format-version 1)
TARGET_DIR=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$META")
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q 'mcp==2.3.0' 'pytest==9.2.0' 'pytest-timeout==2.4.0'
CONCH_BIN="$TARGET_DIR/debug/conch" .venv/bin/python -m pytest -q -p no:cacheprovider \
  "$ROOT/bindings/cli/tests/mcp_client"
