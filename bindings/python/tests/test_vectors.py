"""Replays the shared vectors (tests/vectors/*.json, also run by the Rust, C
and Node suites) through the Python API: sanitize, artifact, normalize,
intercept and tool directly; keys through a real terminal (PtySession); sink
through the runs that own one (execute_shell), except its cases with
``head_bytes``, a sink option no Python call sets; mask through runs
(execute_shell), a value cut at each of its bytes by the case's ``cut``
commands (no Python call takes pushes). notice and render have no
Python API: they are the internal text builders of the tool's notice and
of a UI's previews (the notice text shows in the tool vectors' results).
jobs is replayed by test_jobs.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import conch
from conftest import GUARD, VECTORS, Output, in_background, is_alive, pids_with, wait_until

REPLAYED = {"sanitize", "artifact", "normalize", "intercept", "tool", "keys", "sink", "mask",
            "carriage_return"}
# Replayed by a suite of their own: jobs (test_jobs.py), job_steps
# (test_job_steps.py), job_tool (test_job_tool.py), tool_definition
# (test_tool_definition.py), sandbox_options (test_sandbox.py).
REPLAYED_ELSEWHERE = {"jobs", "job_steps", "job_tool", "tool_definition", "sandbox_options"}
# notice, render: no Python function.
NO_PYTHON_API = {"notice", "render"}

ERROR_CLASSES = {
    "invalid_argument": conch.InvalidArgumentError,
    "not_found": conch.NotFoundError,
    "io": conch.IoError,
    "spawn": conch.SpawnError,
    "closed": conch.ClosedError,
}


def load(name: str) -> list[dict]:
    """The cases of tests/vectors/<name>.json; a missing file is an error."""
    path = VECTORS / f"{name}.json"
    assert path.is_file(), f"{path} is missing"
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return loaded


def cases(name: str, keep=lambda case: True) -> list:
    return [pytest.param(case, id=case["name"]) for case in load(name) if keep(case)]


def test_every_vector_file_is_replayed_or_has_no_python_api():
    # A new or renamed file fails here until this suite replays it or lists
    # it as out of the Python API's reach.
    files = {path.stem for path in VECTORS.glob("*.json")}
    assert files == REPLAYED | REPLAYED_ELSEWHERE | NO_PYTHON_API


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
    write_artifacts(case, root)
    replay_artifact(case, root, conch.ArtifactStore(root))


def write_artifacts(case, root: Path) -> None:
    """The artifact files of ``case``, in ``root`` (none: no directory)."""
    if case["files"] is not None:
        root.mkdir()
        for name, text in case["files"].items():
            (root / name).write_text(text)


def replay_artifact(case, root: Path, store) -> None:
    """Replays ``case`` on ``store`` (a local or a remote one) over ``root``."""

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


TOOL_CASES = cases("tool")


@pytest.mark.parametrize("case", TOOL_CASES)
def test_tool(case, tmp_path):
    replay_tool(case, tmp_path, conch.BashTool)


def replay_tool(case, tmp_path, make):
    """Replays a tool vector on the tool ``make(cwd, **options)`` gives (a
    local ``BashTool``, or a remote one)."""
    root = tmp_path.resolve()
    config = case.get("config") or {}
    tool = make(
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


@pytest.mark.parametrize("app_cursor", [False, True], ids=["normal-cursor", "app-cursor"])
def test_keys_through_a_real_terminal(app_cursor):
    replay_keys(app_cursor, conch.PtySession())


def replay_keys(app_cursor: bool, pty) -> None:
    """Types the key cases on ``pty`` (a local or a remote terminal)."""
    # The command puts its terminal in raw mode (every byte passes as it
    # is), switches to application cursor keys when the cases want it, says
    # READY, then dumps in hex the bytes it receives: exactly the bytes the
    # cases expect, in order. Bad key names are refused without sending a
    # byte (any stray byte would shift the dump).
    batch = [c for c in load("keys") if c["app_cursor"] == app_cursor]
    sent = [c for c in batch if "expect" in c]
    refused = [c for c in batch if "error_starts_with" in c]
    expected = b"".join(c["expect"].encode() for c in sent)
    mode = r"printf '\e[?1h'; " if app_cursor else ""
    command = f"stty raw -echo -iexten; {mode}printf READY; head -c {len(expected)} | od -An -v -tx1"
    out = Output()
    messages = []

    def type_the_cases(pty) -> None:
        out.wait_for("READY")
        for c in refused:
            with pytest.raises(conch.InvalidArgumentError) as info:
                pty.write_key(c["key"])
            messages.append((c, str(info.value)))
        for c in sent:
            if "key" in c:
                pty.write_key(c["key"])
            else:
                pty.write(c["input"])

    with pty, in_background(type_the_cases, pty):
        r = pty.start(command, on_chunk=out, timeout=GUARD)
    for c, message in messages:
        assert message.startswith(c["error_starts_with"]), c["name"]
    assert not r.timed_out, f"{len(expected)} bytes expected, the terminal got fewer"
    got = bytes.fromhex(r.output.split("READY", 1)[1])
    if got != expected:
        at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b),
                  min(len(got), len(expected)))
        offset = 0
        for c in sent:
            offset += len(c["expect"].encode())
            if at < offset:
                pytest.fail(f"first difference at byte {at}, in case {c['name']!r}")
    assert got == expected


def mask_commands(case) -> list[str]:
    """A mask case's command, then the same output written cut at each byte
    of a value."""
    cut = case.get("cut")
    cuts = range(cut["from"], cut["to"]) if cut else ()
    return [case["command"], *(cut["command"].replace("{k}", str(k)) for k in cuts)]


def mask_options(case) -> dict:
    return {"mask": case["mask"]} if "mask" in case else {}


@pytest.mark.parametrize("case", cases("mask"))
def test_mask(case):
    for command in mask_commands(case):
        seen = Output()
        r = conch.execute_shell(command, env=case["env"], on_chunk=seen, **mask_options(case))
        assert r.output == case["expect"], command
        assert seen.text == case["expect"], command
        assert r.total_bytes == len(case["expect"].encode()), command


def test_mask_in_a_session_covers_its_env_a_run_s_and_a_job_s():
    token = "tok_9f8e7d6c5b4a3210"
    with conch.Shell(snapshot="none", env={"API_TOKEN": token}, mask=["DB_URL"]) as sh:
        r = sh.run('echo "$API_TOKEN" "$DB_URL"', env={"DB_URL": "postgres://app:pw@db/app"})
        assert r.output == "[masked: API_TOKEN] [masked: DB_URL]\n"
        job = sh.start('printf "%s %s\\n" "$API_TOKEN" "$JOB_SECRET"', env={"JOB_SECRET": "job-secret-1"})
        p = sh.poll(job, wait=GUARD)
        assert p.output == "[masked: API_TOKEN] [masked: JOB_SECRET]\n"
    with conch.Shell(snapshot="none", env={"API_TOKEN": token}, mask=False) as sh:
        assert sh.run('echo "$API_TOKEN"').output == f"{token}\n"
    with pytest.raises(TypeError, match="mask"):
        conch.Shell(mask="yes")


SINK_CASES = cases("sink", keep=lambda c: "head_bytes" not in c["options"])


@pytest.mark.parametrize("case", SINK_CASES)
def test_sink(case, tmp_path, marker):
    replay_sink(case, tmp_path, marker, conch.execute_shell)


def replay_sink(case, tmp_path, marker, run):
    """Replays a sink case through ``run(command, **options)``: a one-shot
    ``execute_shell``, or a session's ``run`` (a remote one too)."""
    # Each push is a file the command cats, with a pause between, so the
    # pieces tend to reach the sink in separate reads. With a line head the
    # run stops once the head is full, so the stream goes out in one write
    # for the totals to count all of it.
    options = case["options"]
    pieces = [as_bytes(p) for p in case["pushes"]]
    if "head_lines" in options:
        pieces = [b"".join(pieces)]
    parts = []
    for i, piece in enumerate(pieces):
        (tmp_path / f"push{i}").write_bytes(piece)
        parts.append(f"cat push{i}")
    command = "; sleep 0.02; ".join(parts) or "true"
    stream = conch.sanitize_text(b"".join(pieces))
    timeout = None
    token = None
    seen = Output()
    notice = case["notice"]
    if notice is not None:
        # A notice comes from how the run ended: the command waits after its
        # output for the timeout, or for a cancel once all of it was seen
        # and the sleep runs. (A script that gets SIGINT while its child
        # exits normally goes on, so an earlier cancel would leave it to
        # SIGTERM, and bash would add "Terminated" to the output.)
        command += f"; exec -a {marker} sleep 60"
        if m := re.fullmatch(r"Command timed out after (\d+) seconds", notice):
            timeout = int(m[1])
        else:
            assert notice == "Command cancelled", f"no way to make the notice {notice!r}"
            token = conch.CancelToken()

    def on_chunk(text: str) -> None:
        seen(text)
        if token is not None and seen.text == stream:
            assert wait_until(lambda: any(is_alive(pid, marker) for pid in pids_with(marker)))
            token.cancel()

    artifacts = tmp_path / "artifacts" if options.get("artifact") else None
    r = run(
        command, cwd=tmp_path, timeout=timeout or GUARD * 6, cancel=token, on_chunk=on_chunk,
        max_bytes=options.get("max_bytes", 51200), head=options.get("head_lines"),
        artifacts_dir=artifacts,
    )
    assert r.timed_out == (timeout is not None)
    expect = dict(case["expect"])
    if artifacts is None:
        # The case gives the sink no artifact; a run without artifacts_dir
        # has the process's private store, which holds what was truncated.
        assert (r.artifact_id is not None) == expect["truncated"], r
        expect["artifact_id"] = r.artifact_id
    for field in ("output", "truncated", "total_lines", "total_bytes", "output_lines",
                  "output_bytes", "artifact_id"):
        assert getattr(r, field) == expect[field], field
    if "artifact_text" in expect:
        assert (artifacts / "0.bash.log").read_text() == expect["artifact_text"]
    if "artifact_exists" in expect:
        assert (artifacts / "0.bash.log").exists() == expect["artifact_exists"]


def shell_bytes(data: bytes) -> str:
    """``data`` as one bash word, every byte escaped."""
    return "$'" + "".join(f"\\x{b:02x}" for b in data) + "'"


def carriage_commands(text: str) -> list[str]:
    """Commands that write ``text``: whole, then in two writes cut at each
    byte."""
    data = text.encode()
    commands = [f"printf %s {shell_bytes(data)}"]
    for cut in range(1, len(data)):
        commands.append(f"printf %s {shell_bytes(data[:cut])}; printf %s {shell_bytes(data[cut:])}")
    return commands


@pytest.mark.parametrize("case", cases("carriage_return"))
@pytest.mark.parametrize("mode", ["terminal", "newline"])
def test_carriage_return(case, mode):
    # No Python call takes pushes: the command writes the text, whole and
    # cut at each byte; the chunks and the result read alike.
    want = case["expect"][mode]
    for command in carriage_commands(case["input"]):
        seen = Output()
        r = conch.execute_shell(command, carriage_return=mode, on_chunk=seen)
        assert r.output == want, command
        assert seen.text == want, command
