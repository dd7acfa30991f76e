#!/usr/bin/env bash
# conch's benchmarks, side by side with what a host would otherwise use, in ONE run:
#
#   ./bench/run.sh
#
# Builds what it needs in release mode (the Rust harness in bench/rust, the
# sink benchmark of conch-core, the Python module with `maturin develop
# --release` into bench/.venv, the Node addon with `napi build --platform
# --release` once bindings/node exists), installs the baselines itself
# (pexpect==4.9.0 into bench/.venv; @oh-my-pi/pi-natives with `npm ci` in
# bench/), runs every scenario from Rust, Node and Python (conch twice: with
# its default session loop, the loop builtin, and as `conch-eval` with the
# eval loop, each checked to run the loop it claims), prints one
# markdown table of medians, min-max and ratios (conch / baseline), and
# writes it with a description of the machine to bench/RESULTS.md.
#
# Needs: Rust, Python >= 3.10 with pip, Node 20 with npm, bash, git, cc, make.
# Takes about 10 minutes on 2 cores (the first build adds about 5).
#
# Environment:
#   BENCH_QUICK=1        few repetitions and 64 MiB floods (checks the harnesses)
#   BENCH_ONLY=a,b       only these scenarios: builtin external cpu sequence
#                        throughput sink flood_rss abort timeout concurrent
#   BENCH_LOADED=1       every measurement runs while one CPU hog per core
#                        (`yes > /dev/null`) keeps the machine busy; checks
#                        the loaded-machine targets; scenarios default to
#                        builtin,external,cpu,sequence; writes
#                        bench/RESULTS-loaded.md
#   BENCH_TARGET_DIR     cargo target dir (default bench/target: release builds
#                        of their own, whatever CARGO_TARGET_DIR says)
#   BENCH_RESULTS        where to write the table (default bench/RESULTS.md)
#   BENCH_CONCH_NODE     directory of an already built conch Node package to
#                        measure instead of building bindings/node (e.g. a
#                        branch not yet merged); named in the machine section
#   BENCH_CONCH_PY       the same for Python: a directory holding an already
#                        built `conch` package (`conch/` with its
#                        `_conch.abi3.so`, as `maturin develop` leaves
#                        bindings/python/python), put first on PYTHONPATH
#                        instead of building bindings/python; named in the
#                        machine section
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench
WORK=$BENCH/work
mkdir -p "$WORK"
export CARGO_TARGET_DIR=${BENCH_TARGET_DIR:-$BENCH/target}
export CARGO_TERM_COLOR=never
RESULTS=$WORK/results.jsonl
: > "$RESULTS"
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
HOGS=0
if [ "${BENCH_LOADED:-}" = 1 ]; then
  HOGS=$(nproc)
  export BENCH_ONLY=${BENCH_ONLY:-builtin,external,cpu,sequence}
  DEFAULT_RESULTS=$BENCH/RESULTS-loaded.md
else
  DEFAULT_RESULTS=$BENCH/RESULTS.md
fi

wants() { [ -z "${BENCH_ONLY:-}" ] || [[ ",$BENCH_ONLY," == *",$1,"* ]]; }
# A harness that fails leaves a record saying so (and says so here, with its
# error); the others still run.
harness() {
  local lang=$1 runtime=$2 scenario=$3; shift 3
  local log="$WORK/$lang-$scenario-$runtime.log"
  if ! "$@" >> "$RESULTS" 2> "$log"; then
    printf '{"lang":"%s","runtime":"%s","scenario":"%s","unavailable":"harness failed (bench/work/%s)"}\n' \
      "$lang" "$runtime" "$scenario" "$(basename "$log")" >> "$RESULTS"
    echo "!! the $lang harness failed ($scenario, $runtime), see bench/work/$(basename "$log"):" >&2
    { grep -m 2 -A 1 -E 'panicked at|Error' "$log" || tail -n 5 "$log"; } | head -n 6 | sed 's/^/!!   /' >&2
  fi
}

echo "== baselines"
[ -x "$BENCH/.venv/bin/python" ] || python3 -m venv "$BENCH/.venv"
"$BENCH/.venv/bin/python" -m pip install -q 'pexpect==4.9.0' 'maturin==1.16.0'
(cd "$BENCH" && npm ci --no-audit --no-fund --loglevel=error)
export VIRTUAL_ENV=$BENCH/.venv PATH="$BENCH/.venv/bin:$PATH" PYO3_PYTHON=$BENCH/.venv/bin/python

echo "== build (release)"
# The harness is its own workspace; it takes the versions of conch's lock file.
cp Cargo.lock bench/rust/Cargo.lock
cargo build --release --quiet --manifest-path bench/rust/Cargo.toml
RUST_BENCH=$CARGO_TARGET_DIR/release/conch-bench

export BENCH_CONCH_PY_PENDING="pending: Python module not built (bindings/python is not on this branch)"
if [ -n "${BENCH_CONCH_PY:-}" ]; then
  if [ -f "$BENCH_CONCH_PY/conch/__init__.py" ]; then
    unset BENCH_CONCH_PY_PENDING
    export PYTHONPATH="$BENCH_CONCH_PY${PYTHONPATH:+:$PYTHONPATH}"
    export BENCH_PY_SOURCE="prebuilt module from $BENCH_CONCH_PY"
  else
    export BENCH_CONCH_PY_PENDING="no conch/__init__.py in BENCH_CONCH_PY ($BENCH_CONCH_PY)"
  fi
elif [ -f bindings/python/pyproject.toml ]; then
  if (cd bindings/python && maturin develop --release --quiet) > "$WORK/python-build.log" 2>&1; then
    unset BENCH_CONCH_PY_PENDING
  else
    export BENCH_CONCH_PY_PENDING="build failed (bench/work/python-build.log)"
  fi
fi

export BENCH_CONCH_NODE_PENDING="pending: Node addon not built (bindings/node is not on this branch)"
if [ -n "${BENCH_CONCH_NODE:-}" ]; then
  unset BENCH_CONCH_NODE_PENDING
  export BENCH_NODE_SOURCE="prebuilt addon from $BENCH_CONCH_NODE"
elif [ -f bindings/node/package.json ]; then
  if (cd bindings/node && npm ci --no-audit --no-fund --loglevel=error \
        && npx napi build --platform --release) > "$WORK/node-build.log" 2>&1; then
    export BENCH_CONCH_NODE=$ROOT/bindings/node
    unset BENCH_CONCH_NODE_PENDING
  else
    export BENCH_CONCH_NODE_PENDING="build failed (bench/work/node-build.log)"
  fi
fi

echo "== fixtures"
"$BENCH/fixture.sh" "$WORK/repo" > /dev/null
# 64 MiB of text lines; the floods are `cat` of it N times (one fast producer).
FLOOD_FILE=$WORK/flood-64MiB.txt
if [ ! -f "$FLOOD_FILE" ]; then
  # (`yes` ends on SIGPIPE: not a failure here)
  (set +o pipefail
   yes 'the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnopqrstuvwxyz' \
     | head -c $((64 << 20)) > "$FLOOD_FILE")
fi
flood_cmd() { printf 'cat'; for _ in $(seq "$1"); do printf " '%s'" "$FLOOD_FILE"; done; }
if [ "${BENCH_QUICK:-}" = 1 ]; then t_copies=1 f_copies=1; else t_copies=16 f_copies=32; fi
export BENCH_REPO=$WORK/repo BENCH_SEQUENCE=$BENCH/sequence.txt
export BENCH_THROUGHPUT_CMD=$(flood_cmd $t_copies) BENCH_THROUGHPUT_BYTES=$((t_copies << 26))
export BENCH_FLOOD_CMD=$(flood_cmd $f_copies) BENCH_FLOOD_BYTES=$((f_copies << 26))

# The hogs start after the builds and stop before the report, killed by
# PID (and bounded by `timeout`, should this script be killed itself).
hog_pids=()
stop_hogs() { [ ${#hog_pids[@]} -eq 0 ] || kill "${hog_pids[@]}" 2>/dev/null || true; hog_pids=(); }
trap stop_hogs EXIT
for _ in $(seq "$HOGS"); do
  timeout 7200 yes > /dev/null &
  hog_pids+=($!)
done
[ "$HOGS" = 0 ] || echo "== under load: $HOGS CPU hogs (pids ${hog_pids[*]})"

echo "== rust"
harness rust all suite "$RUST_BENCH" suite
if wants sink; then
  mib=$([ "${BENCH_QUICK:-}" = 1 ] && echo 64 || echo 1024)
  CONCH_BENCH_MIB=$mib cargo bench --quiet -p conch-core --bench sink_throughput > "$WORK/sink.txt" 2> "$WORK/sink.log" \
    || echo '{"lang":"rust","runtime":"conch","scenario":"sink","unavailable":"cargo bench failed (bench/work/sink.log)"}' >> "$RESULTS"
fi
if wants flood_rss; then
  for rt in conch conch-eval std; do harness rust "$rt" flood_rss "$RUST_BENCH" flood "$rt"; done
fi

echo "== node"
harness node all suite node "$BENCH/node/bench.mjs" suite
if wants flood_rss; then
  for rt in conch conch-eval spawn pi-natives; do harness node "$rt" flood_rss node "$BENCH/node/bench.mjs" flood "$rt"; done
fi

echo "== python"
harness python all suite python "$BENCH/python/bench.py" suite
if wants flood_rss; then
  for rt in conch conch-eval subprocess pexpect; do harness python "$rt" flood_rss python "$BENCH/python/bench.py" flood "$rt"; done
fi

stop_hogs

echo "== report"
python3 "$BENCH/report.py" --results "$RESULTS" --sink "$WORK/sink.txt" --load "$LOAD_AT_START" \
  --hogs "$HOGS" --out "${BENCH_RESULTS:-$DEFAULT_RESULTS}"
