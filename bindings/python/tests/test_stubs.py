"""The type stubs (conch/__init__.pyi) match the runtime: every public name
is stubbed, and every stubbed function and method takes the parameters the
runtime takes (names, kinds and defaults). A cheap stand-in for
``mypy.stubtest``, which was run by hand. A class's calls include those of
its stub-only bases (``_ShellCalls``...), and a call the stub assigns
(``name_async = _coroutine_of(name)``) takes the parameters it names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import conch

STUB = ast.parse((Path(conch.__file__).parent / "__init__.pyi").read_text())


def stub_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str, object]]:
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, default in zip(positional, defaults):
        out.append((arg.arg, "positional", literal(default)))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, "keyword", literal(default)))
    return [p for p in out if p[0] not in ("self", "cls")]


def literal(node: ast.expr | None) -> object:
    if node is None:
        return inspect.Parameter.empty
    return ast.literal_eval(node)


def runtime_params(obj) -> list[tuple[str, str, object]] | None:
    sig = inspect.signature(obj)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None  # the *_async twins forward **options
    kinds = {inspect.Parameter.KEYWORD_ONLY: "keyword"}
    return [
        (p.name, kinds.get(p.kind, "positional"), p.default)
        for p in sig.parameters.values()
        if p.name not in ("self", "cls")
    ]


def normalize(params):
    # tuples and lists are both fine as a sequence default
    return [(n, k, list(d) if isinstance(d, tuple) else d) for n, k, d in params]


def stubbed() -> dict[str, ast.AST]:
    names = {}
    for node in STUB.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node
        elif isinstance(node, ast.ImportFrom):
            names.update({a.asname or a.name: node for a in node.names})
    return names


Function = ast.FunctionDef | ast.AsyncFunctionDef


def class_members(cls: ast.ClassDef) -> dict[str, Function | ast.Assign]:
    """The calls of a stubbed class, those of its stub-only bases first."""
    classes = {n.name: n for n in STUB.body if isinstance(n, ast.ClassDef)}
    members: dict[str, Function | ast.Assign] = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            members.update(class_members(classes[base.id]))
    for m in cls.body:
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members[m.name] = m
        elif isinstance(m, ast.Assign) and isinstance(m.targets[0], ast.Name):
            members[m.targets[0].id] = m
    return members


def assigned(node: ast.Assign, scope: dict[str, ast.AST]) -> Function:
    """The function whose parameters a call assigned in the stub takes: a
    twin ``name_async = _coroutine_of(name)`` those of ``name`` (looked up
    in ``scope``, or ``Cls.name`` in a stubbed class), a method
    ``_opening(Cls, Session)`` those of ``Cls.__new__``."""
    value = node.value
    assert isinstance(value, ast.Call), ast.unparse(node)
    helper, target = value.func.id, value.args[0]
    if helper == "_opening":
        found = class_members(stubbed()[target.id])["__new__"]
    elif isinstance(target, ast.Attribute):
        found = class_members(stubbed()[target.value.id])[target.attr]
    else:
        assert helper == "_coroutine_of", ast.unparse(node)
        found = scope[target.id]
    assert isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)), ast.unparse(node)
    return found


def test_every_public_name_is_stubbed():
    missing = set(conch.__all__) - set(stubbed())
    assert not missing


def test_stubbed_signatures_match_the_runtime():
    mismatches = []
    for name, node in stubbed().items():
        if name.startswith("_") or isinstance(node, (ast.AnnAssign, ast.ImportFrom)):
            continue
        runtime = getattr(conch, name)
        if isinstance(node, ast.ClassDef):
            scope = class_members(node)
            members = [
                (f"{name}.{m}", m, fn) for m, fn in scope.items()
                if not m.startswith("_") or m == "__new__"
            ]
        else:
            scope = stubbed()
            members = [(name, name, node)]
        for qual, member, fn in members:
            obj = runtime if qual == name or member == "__new__" else getattr(runtime, member)
            if isinstance(fn, ast.Assign):
                fn = assigned(fn, scope)
            if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
                continue
            expected = runtime_params(obj)
            if expected is not None and normalize(expected) != normalize(stub_params(fn)):
                mismatches.append(f"{qual}: runtime {expected} != stub {stub_params(fn)}")
    assert not mismatches, "\n".join(mismatches)
