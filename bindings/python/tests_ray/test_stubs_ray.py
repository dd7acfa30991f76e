"""conch/ray/__init__.pyi matches conch.ray: every public name is stubbed, and
every stubbed method takes the parameters the runtime takes (as
tests/test_stubs.py checks conch/__init__.pyi)."""

from __future__ import annotations

import ast
from pathlib import Path

import conch.ray
from test_stubs import normalize, runtime_params, stub_params

STUB = ast.parse(Path(conch.ray.__file__).with_suffix(".pyi").read_text())


def stubbed() -> dict[str, ast.AST]:
    names = {}
    for node in STUB.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def test_every_public_name_is_stubbed():
    assert not set(conch.ray.__all__) - set(stubbed())


def test_stubbed_signatures_match_the_runtime():
    mismatches = []
    for name, node in stubbed().items():
        if not isinstance(node, ast.ClassDef) or name == "_SessionContext":
            continue
        runtime = getattr(conch.ray, name)
        for fn in node.body:
            if not isinstance(fn, ast.FunctionDef) or (fn.name.startswith("_") and fn.name != "__init__"):
                continue
            if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
                assert isinstance(getattr(runtime, fn.name), property), f"{name}.{fn.name}"
                continue
            expected = runtime_params(getattr(runtime, fn.name))
            if expected is not None and normalize(expected) != normalize(stub_params(fn)):
                mismatches.append(f"{name}.{fn.name}: runtime {expected} != stub {stub_params(fn)}")
    assert not mismatches, "\n".join(mismatches)
