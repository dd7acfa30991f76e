#!/usr/bin/env bash
# A short tour of the `conch` command. From the repository root:
#   cargo build -p conch-cli && examples/cli/session.sh
# (set CONCH to use another conch binary).
set -uo pipefail
conch() { "${CONCH:-target/debug/conch}" "$@"; }
export CONCH_ARTIFACTS_DIR=${CONCH_ARTIFACTS_DIR:-$(mktemp -d)}
# Prints a command line, runs it, prints its exit status.
step() { printf '\n$ %s\n' "$1"; eval "$1"; printf '[exit status %s]\n' "$?"; }

# What the model reads, and the command's own exit status.
step "conch run -- 'echo hello; ls /nonexistent'"

# A big output: the model sees the last 50 KiB and where the rest is.
step "conch run -- 'seq 1 300000; false' | tail -n 3"
step "conch artifact 0 --offset 149999 --limit 2"

# Head/tail apply to the whole stream; the command stops once a head is complete.
step "conch run -- 'yes | head -n 2'"

# Deadlines end the whole process tree: exit status 124.
step "conch run --timeout 1 -- 'echo working; sleep 30'"

# The interceptor steers the model to the host's own tools.
step "conch run --tools read,grep -- 'cd src && cat main.rs'"

# RPC: JSON lines in and out; abort_bash is handled while a command runs.
step "{ echo '{\"id\":1,\"type\":\"bash\",\"command\":\"sleep 30\"}'; sleep 0.5;
    echo '{\"id\":2,\"type\":\"abort_bash\"}'; } | conch rpc"
