"""Replays the shared vectors (tests/vectors/*.json, also run by the Rust, C
and Node suites) through the Python API: sanitize, artifact, normalize,
intercept and tool. (sink, notice and render have no Python API of their
own; their effects show in BashResult and the tool results.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conch
from conftest import VECTORS

ERROR_CLASSES = {
    "invalid_argument": conch.InvalidArgumentError,
    "not_found": conch.NotFoundError,
    "io": conch.IoError,
    "spawn": conch.SpawnError,
    "closed": conch.ClosedError,
}


def cases(name: str) -> list:
    path = VECTORS / f"{name}.json"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{path.name} not on this branch yet"))]
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return [pytest.param(case, id=case["name"]) for case in loaded]


def as_bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


@pytest.mark.parametrize("case", cases("sanitize"))
def test_sanitize(case):
    data = as_bytes(case["input"] if "input" in case else case["input_bytes"])
    expect = case["expect"]
    assert conch.sanitize_text(data) == expect
    if "input" in case:
        assert conch.sanitize_text(case["input"]) == expect
    points = [0, *case.get("chunks", []), len(data)]
    for pieces in ([data[a:b] for a, b in zip(points, points[1:])],
                   [data[i:i + 1] for i in range(len(data))]):
        s = conch.Sanitizer()
        assert "".join(s.push(p) for p in pieces) + s.finish() == expect


@pytest.mark.parametrize("case", cases("artifact"))
def test_artifact(case, tmp_path):
    root = tmp_path / "artifacts"
    if case["files"] is not None:
        root.mkdir()
        for name, text in case["files"].items():
            (root / name).write_text(text)
    store = conch.ArtifactStore(root)

    def op():
        if case["op"] == "allocate":
            names = []
            for kind in case["kinds"]:
                a = store.allocate(kind)
                assert a.path.parent == root and a.path.name == f"{a.id}.{kind}.log"
                names.append(a.path.name)
            return names
        if case["op"] == "resolve":
            return store.resolve(case["url"])
        if case["op"] == "read":
            return store.read(case["id"], offset=case["offset"], limit=case["limit"])
        raise AssertionError(f"unknown op {case['op']}")

    if "expect_error" in case:
        expected = case["expect_error"]
        with pytest.raises(ERROR_CLASSES[expected["kind"]]) as info:
            op()
        assert str(info.value) == expected["message"]
    else:
        assert op() == case["expect"]


@pytest.mark.parametrize("case", cases("normalize"))
def test_normalize(case):
    if case["fn"] == "normalize":
        n = conch.normalize_bash_command(case["command"])
        actual = {"command": n.command, "head_lines": n.head_lines, "tail_lines": n.tail_lines}
    elif case["fn"] == "apply_head_tail":
        actual = conch.apply_head_tail(case["text"], case["head"], case["tail"])
    else:
        raise AssertionError(f"unknown fn {case['fn']}")
    assert actual == case["expect"]


@pytest.mark.parametrize("case", cases("intercept"))
def test_intercept(case):
    rules = case["rules"]
    bad = case.get("rule_errors") or []
    if bad:
        # The Python API reports invalid rules instead of skipping them.
        with pytest.raises(conch.InvalidArgumentError) as info:
            conch.check_bash_interception(case["command"], case["tool_names"], rules)
        for index in bad:
            assert f"interceptor rule {index} " in str(info.value)
        rules = [r for i, r in enumerate(rules) if i not in bad]
    hit = conch.check_bash_interception(case["command"], case["tool_names"], rules)
    if case["expect"] is None:
        assert hit is None
    else:
        assert hit is not None and hit.blocked
        assert {"message": hit.message, "suggested_tool": hit.suggested_tool} == case["expect"]


@pytest.mark.parametrize("case", cases("tool"))
def test_tool(case, tmp_path):
    root = tmp_path.resolve()
    config = case.get("config") or {}
    tool = conch.BashTool(
        root,
        snapshot=None,
        session_key=f"tool-vectors-{root.name}",
        interceptor=config.get("interceptor", False),
        tool_names=config.get("tool_names", []),
        rules=config.get("rules"),
        artifacts_dir=root / "artifacts" if config.get("artifacts") else None,
    )
    try:
        try:
            r = tool.execute(case["args"])
            got = {"kind": "ok", "truncated": r.details is not None}
            text = r.text
        except conch.BlockedError as e:
            got = {"kind": "blocked", "suggested_tool": e.suggested_tool}
            text = str(e)
        except conch.ToolError as e:
            got = {"kind": "failed", "truncated": e.details is not None}
            text = str(e)
        except conch.ToolAbortError as e:
            got = {"kind": "aborted", "truncated": e.details is not None}
            text = str(e)
    finally:
        tool.close()
    expect = case["expect"]
    for key in ("kind", "truncated", "suggested_tool"):
        if key in expect:
            assert got.get(key) == expect[key], key

    def want(key: str) -> str | None:
        value = expect.get(key)
        return None if value is None else value.replace("{cwd}", str(root))

    if want("text") is not None:
        assert text == want("text")
    if want("text_starts_with") is not None:
        assert text.startswith(want("text_starts_with"))
    if want("text_ends_with") is not None:
        assert text.endswith(want("text_ends_with"))
