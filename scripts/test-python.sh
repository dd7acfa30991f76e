#!/usr/bin/env bash
# The Python face: builds the module into a virtualenv (.venv at the repo
# root, created here) with `maturin develop`, runs its pytest suite and the
# Python examples. Needs only Python >= 3.10 with pip, and Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

echo "== python: venv, maturin develop, pytest, examples"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q 'maturin==1.16.0' 'pytest==9.2.0' 'pytest-timeout==2.4.0' 'hypothesis==6.155.2'
# One interpreter for every cargo call made from here, so pyo3's build
# script sees the same environment each time (no rebuild thrash).
export VIRTUAL_ENV="$ROOT/.venv" PATH="$ROOT/.venv/bin:$PATH" PYO3_PYTHON="$ROOT/.venv/bin/python"

(cd bindings/python && maturin develop --locked --quiet)
(cd bindings/python && python -m pytest -q -p no:cacheprovider)
for example in examples/python/*.py; do
  echo "-- $example"
  python "$example"
done
