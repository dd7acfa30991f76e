"""Every option of the core's option types (``docs/api/schema.json``:
ShellOptions, RunOptions, ExecuteOptions, JobOptions, PtyOptions) is a keyword argument of the Python
face: a valid value is taken, a value of a wrong JSON type is a
``TypeError``. The samples are made from the schema's types, so an option
added to the core type is walked here with no change of the binding or of
this test (unless its value needs a sample the types cannot give)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import conch

SCHEMA = json.loads((Path(__file__).parents[3] / "docs/api/schema.json").read_text())
DEFS = SCHEMA["$defs"]

# Values the types alone cannot give: a bash to run, a snapshot choice, a
# terminal size as Python spells it, a sandbox that starts where the kernel
# lacks Landlock, a word of an enum.
SAMPLES: dict[str, Any] = {
    "shell": "bash",
    "snapshot": "none",
    "prefix": "env",
    "pty": (80, 24),
    "cols": 100,
    "rows": 30,
    "sandbox": {"best_effort": True},
    "carriage_return": "newline",
    "engine": "auto",
}

# Options the binding takes itself (a value that is no JSON: a
# conch.ArtifactStore), refused with its own error.
EXPLICIT_ERRORS: dict[str, type[Exception]] = {
    "artifacts_dir": conch.InvalidArgumentError,
}


def kinds(prop: dict[str, Any]) -> set[str]:
    if "$ref" in prop:
        return kinds(DEFS[prop["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in prop:
        return set().union(*(kinds(p) for p in prop["anyOf"]))
    if "oneOf" in prop:
        return set().union(*(kinds(p) for p in prop["oneOf"]))
    kind = prop.get("type", "object")
    return set(kind) if isinstance(kind, list) else {kind}


def valid(name: str, prop: dict[str, Any], tmp_path: Path) -> Any:
    if name in SAMPLES:
        return SAMPLES[name]
    found = kinds(prop) - {"null"}
    if "boolean" in found:
        return True
    if "integer" in found:
        return max(1, prop.get("minimum", 1))
    if "number" in found:
        return 5.0
    if "string" in found:
        return str(tmp_path)
    if "object" in found:
        extra = prop.get("additionalProperties")
        return {"CONCH_SAMPLE": "1"} if isinstance(extra, dict) else {}
    if "array" in found:
        return []
    raise AssertionError(f"no sample for {name}: {prop}")


def wrong(prop: dict[str, Any]) -> Any:
    found = kinds(prop)
    for kind, value in (("string", "x"), ("integer", 7), ("array", ["x"])):
        if kind not in found and not (kind == "integer" and "number" in found):
            return value
    raise AssertionError(f"no wrong type for {prop}")


def options(name: str) -> list[tuple[str, dict[str, Any]]]:
    return [(key, prop) for key, prop in DEFS[name]["properties"].items() if key != "command"]


def call(kind: str, session: conch.Shell, kwargs: dict[str, Any]) -> Any:
    if kind == "ShellOptions":
        with conch.Shell(**kwargs) as sh:
            return sh.run("true")
    if kind == "RunOptions":
        return session.run("true", **kwargs)
    if kind == "ExecuteOptions":
        return conch.execute_shell("true", **kwargs)
    if kind == "PtyOptions":
        with conch.PtySession() as pty:
            return pty.start("true", **kwargs)
    job = session.start("true", **kwargs)
    return session.kill(job)


KINDS = ("ShellOptions", "RunOptions", "ExecuteOptions", "JobOptions", "PtyOptions")
CASES = [(kind, key, prop) for kind in KINDS for key, prop in options(kind)]


@pytest.mark.parametrize(("kind", "key", "prop"), CASES, ids=[f"{k}.{n}" for k, n, _ in CASES])
def test_every_option_of_the_schema_is_a_keyword_argument(shell, tmp_path, kind, key, prop):
    call(kind, shell, {key: valid(key, prop, tmp_path)})
    with pytest.raises(EXPLICIT_ERRORS.get(key, TypeError)) as raised:
        call(kind, shell, {key: wrong(prop)})
    assert str(raised.value).startswith(key), raised.value


@pytest.mark.parametrize("kind", KINDS)
def test_a_name_the_core_does_not_read_is_a_type_error(shell, kind):
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'no_such_option'$"):
        call(kind, shell, {"no_such_option": 1})
