"""``ShellActor`` on a local Ray: the local calls and results through an
actor, the shared vectors replayed through it, kills on the node, and
nothing left running once its actor is killed (conch's lifeline)."""

from __future__ import annotations

import dataclasses
import glob
import os
import signal
import tempfile
import threading
import time

import pytest
import ray

import conch
from conch.ray import ActorShell, ShellActor, ToolResult
from conftest import GUARD, Output, Sleeper, _cmdline, in_background, is_alive, pids_with, sleeper, wait_until
from test_jobs import vector_cases as job_cases, poll_options
from test_network import Servers, blocked, policy
from test_vectors import (
    SINK_CASES,
    TOOL_CASES,
    cases,
    replay_artifact,
    replay_sink,
    replay_tool,
    write_artifacts,
)


@pytest.fixture(scope="module")
def actor(local_ray):
    """One actor for the module; each test resets it to the options it needs."""
    a = ShellActor.remote(snapshot=None)
    yield ActorShell(a)
    ray.kill(a)


@pytest.fixture
def sh(actor, tmp_path):
    actor.reset(cwd=str(tmp_path), snapshot=None)
    return actor


def test_a_session_keeps_its_state_and_gives_the_local_results(sh, tmp_path):
    assert sh.node_id == ray.get_runtime_context().get_node_id()
    assert sh.pid != os.getpid()
    r = sh.run("mkdir sub && cd sub && export KEPT=1; f() { echo fn; }")
    assert isinstance(r, conch.BashResult) and r.exit_code == 0
    r = sh.run("echo $KEPT; f; pwd")
    assert (r.output, r.working_dir) == (f"1\nfn\n{tmp_path}/sub\n", f"{tmp_path}/sub")
    assert sh.cwd == f"{tmp_path}/sub"
    # The raw actor gives the same objects.
    assert ray.get(sh.actor.run.remote("echo $KEPT")).output == "1\n"


def test_the_session_tells_its_engine(sh, tmp_path):
    # The actor's process, the session's host, inherits the caller's
    # CONCH_ENGINE (the test command runs every suite once with `eval`),
    # which decides for `auto`.
    assert sh.engine == (os.environ.get("CONCH_ENGINE") or "builtin")
    for engine in ("builtin", "eval"):
        sh.reset(cwd=str(tmp_path), snapshot=None, engine=engine)
        assert sh.engine == engine
        assert ray.get(sh.actor.engine.remote()) == engine


def test_a_domain_policy_holds_on_the_node_and_changes_through_the_actor(sh, tmp_path):
    servers = Servers(tmp_path / "net")
    try:
        sh.reset(cwd=str(tmp_path), snapshot=None, sandbox={"network": policy(["registry.test"])})
        r = sh.run(servers.curl(f"https://registry.test:{servers.https}/"))
        assert (r.exit_code, r.output, r.sandbox_violations) == (0, "hello from registry.test\n", [])
        unlisted = servers.curl(f"https://unlisted.test:{servers.https}/")
        r = sh.run(unlisted)
        target = f"unlisted.test:{servers.https}"
        assert r.sandbox_violations == [target] and r.output.endswith(blocked(target)), r
        sh.set_network(policy(["registry.test", "unlisted.test"]))
        assert sh.run(unlisted).exit_code == 0
        ray.get(sh.actor.set_network.remote("deny"))
        assert sh.run(unlisted).sandbox_violations == [target]
        with pytest.raises(conch.InvalidArgumentError, match=r"network\.allow\[0\] must be a domain pattern"):
            sh.set_network(policy(["bad pattern"]))
    finally:
        servers.close()


def test_output_streams_back_then_the_result(sh):
    items = list(sh.stream("echo one; /bin/sleep 0.1; echo two >&2; exit 3"))
    *chunks, result = items
    assert "".join(chunks) == "one\ntwo\n" and all(isinstance(c, str) for c in chunks)
    assert isinstance(result, conch.BashResult) and result.exit_code == 3
    # Ray's own streaming generator, as a user of the actor reads it.
    refs = sh.actor.stream.remote("echo raw")
    assert [ray.get(ref) for ref in refs][-1].output == "raw\n"
    seen = Output()
    assert sh.run("echo a; echo b", on_chunk=seen).output == seen.text == "a\nb\n"


def test_actor_shell_rebuilds_the_result_the_actor_gives(sh):
    # ActorShell asks for the fields as a dict (Ray's msgpack, not its
    # pickle path) and rebuilds the BashResult: the raw call's, field for
    # field (the artifact's id aside: each run spills to one of its own).
    for command in ("printf 'a\\nb'; echo e >&2; false", "seq 1 30000", "(exit 7)"):
        raw = ray.get(sh.actor.run.remote(command))
        for result in (sh.run(command), list(sh.stream(command))[-1]):
            assert type(result) is conch.BashResult
            assert dataclasses.replace(result, artifact_id=None) == dataclasses.replace(raw, artifact_id=None)
            assert (result.artifact_id is None) == (raw.artifact_id is None)


def test_errors_are_conchs_own_classes(sh):
    with pytest.raises(conch.NotFoundError, match="no job 42 in this session") as info:
        sh.poll(42)
    assert type(info.value) is conch.NotFoundError
    with pytest.raises(conch.InvalidArgumentError, match="timeout must be"):
        sh.run("true", timeout=0)
    with pytest.raises(TypeError):
        sh.run("true", nope=1)
    # Ray's wrapper of the raw actor's error is the same class too.
    with pytest.raises(conch.NotFoundError):
        ray.get(sh.actor.poll.remote(42))
    with pytest.raises(conch.InvalidArgumentError, match="Working directory does not exist"):
        sh.reset(cwd="/no/such/dir")
    sh.reset(snapshot=None)  # the first options again
    assert sh.run("echo back").output == "back\n"


def test_abort_kills_the_tree_on_the_node(sh, marker):
    s = Sleeper(marker)
    results = []
    with in_background(lambda: results.append(sh.run(sleeper(marker), on_chunk=s, timeout=GUARD * 6))):
        s.wait_started()
        sh.abort()
    assert results[0].cancelled and not results[0].timed_out
    s.assert_gone()
    assert sh.run("echo after").output == "after\n"


def test_a_timeout_and_a_cancel_token_kill_the_tree_on_the_node(sh, marker):
    s = Sleeper(marker)
    r = sh.run(sleeper(marker), timeout=1, on_chunk=s)
    assert r.timed_out and r.output.startswith("[Command timed out after 1 second")
    s.assert_gone()
    s = Sleeper(marker + "c")
    token = conch.CancelToken()
    with in_background(lambda: (s.wait_started(), token.cancel())):
        r = sh.run(sleeper(marker + "c"), cancel=token, on_chunk=s, timeout=GUARD * 6)
    assert r.cancelled and not r.timed_out
    s.assert_gone()


def test_a_run_waits_for_the_run_before_it_and_job_calls_and_a_cancel_do_not(sh, marker, tmp_path):
    # A session runs one command at a time; the actor's other calls and a
    # cancel answer while it runs, and a run cancelled while it waits for
    # its turn is cancelled as it starts.
    job = sh.start("read line; echo got $line", stdin=True)
    s = Sleeper(marker)
    results = []
    with in_background(lambda: results.append(sh.run(sleeper(marker), on_chunk=s, timeout=GUARD * 6))):
        s.wait_started()
        sh.write(job, "beside\n")
        assert sh.poll(job, wait=GUARD).output == "got beside\n"
        queued = sh.actor.run.remote("touch ran; echo ran", call_id="queued")
        ray.get(sh.actor.cancel.remote("queued"), timeout=GUARD)
        assert ray.wait([queued], timeout=0.5)[1] == [queued], "it waits for the run before it"
        sh.abort()
    assert results[0].cancelled
    r = ray.get(queued, timeout=GUARD)
    assert (r.output, r.cancelled) == ("[Command cancelled]\n", True)
    assert not (tmp_path / "ran").exists()
    assert sh.run("echo after").output == "after\n"


def test_a_dropped_stream_stops_its_command(sh, marker):
    gen = sh.stream(sleeper(marker))
    first = next(gen)
    pid = int(first.split("=")[1])
    assert wait_until(lambda: is_alive(pid, marker))
    gen.close()
    assert wait_until(lambda: not is_alive(pid, marker))
    assert sh.run("echo after").output == "after\n"


def test_jobs_pty_jobs_and_their_errors(sh):
    job = sh.start("read line; echo got $line", stdin=True)
    sh.write(job, "hello\n")
    p = sh.poll(job, wait=GUARD)
    assert isinstance(p, conch.JobPoll) and (p.status, p.output) == ("exited", "got hello\n")
    assert [j.job for j in sh.jobs()] == [job] and isinstance(sh.jobs()[0], conch.JobInfo)
    term = sh.start("read -p 'name? ' n; echo hi $n", pty=(80, 24))
    assert "name?" in sh.poll(term, wait=GUARD, until="name\\?").output
    sh.write(term, "ada")
    sh.write_key(term, "enter")
    assert "hi ada" in sh.poll(term, wait=GUARD, until="hi ada").output
    assert sh.wait_any([term], timeout=GUARD) == term
    long = sh.start("/bin/sleep 30")
    assert sh.kill(long).status == "killed"
    with pytest.raises(conch.NoInputError):
        sh.write(long, "x")
    with pytest.raises(conch.TooManyJobsError) as info:
        sh.reset(max_jobs=0, snapshot=None)
        sh.start("true")
    assert info.value.running == 0


@pytest.mark.parametrize("case", job_cases())
def test_job_vectors_agree_through_an_actor(case, sh):
    for r in case["runs"]:
        assert sh.run(r["command"], timeout=GUARD).output == r["output"]
    listed = sh.jobs()
    own = listed[-1].job if listed else 0
    for p in case["polls"]:
        job = p.get("job", own)
        if "error" in p:
            with pytest.raises(conch.ConchError) as e:
                sh.poll(job, **poll_options(p["options"]))
            assert p["error"] in str(e.value)
            continue
        got = sh.poll(job, **poll_options(p["options"]))
        for key, want in p["expect"].items():
            assert getattr(got, key) == want, f"{key} of {got!r}"
    for got, want in zip(sh.jobs(), case.get("jobs", [])):
        for key, value in want.items():
            assert getattr(got, key) == value, f"{key} of {got!r}"


@pytest.mark.parametrize("case", SINK_CASES)
def test_sink_vectors_agree_through_an_actor(case, actor, tmp_path, marker):
    def run(command, *, cwd, max_bytes, artifacts_dir, **run_options):
        actor.reset(cwd=str(cwd), max_bytes=max_bytes, snapshot=None,
                    artifacts_dir=None if artifacts_dir is None else str(artifacts_dir))
        return actor.run(command, **run_options)

    replay_sink(case, tmp_path, marker, run)


@pytest.mark.parametrize("case", TOOL_CASES)
def test_tool_vectors_agree_through_an_actor(case, sh, tmp_path):
    def make(cwd, **options):
        if options.get("artifacts_dir") is not None:
            options["artifacts_dir"] = str(options["artifacts_dir"])
        return sh.tool(cwd=str(cwd), **options)

    replay_tool(case, tmp_path, make)


@pytest.mark.parametrize("case", cases("artifact", keep=lambda c: c["op"] != "allocate"))
def test_artifact_vectors_agree_through_an_actor(case, actor, tmp_path):
    root = tmp_path / "artifacts"
    write_artifacts(case, root)
    actor.reset(cwd=str(tmp_path), snapshot=None, artifacts_dir=str(root))
    if case["files"] is None and root.exists():
        root.rmdir()  # the session made it, empty
    replay_artifact(case, root, actor.artifacts)


def test_a_spilled_output_stays_on_the_node_and_reads_by_range(sh):
    r = sh.run("seq 1 100000")
    assert r.truncated and r.artifact_id is not None and r.output_bytes <= 51200
    assert sh.artifacts.read(r.artifact_id, 10, 3) == "11\n12\n13\n"
    assert sh.artifacts.resolve(f"artifact://{r.artifact_id}").endswith("99999\n100000\n")
    with pytest.raises(conch.NotFoundError):
        sh.artifacts.read("77")


def test_files_have_the_remote_faces_names_and_semantics(sh, tmp_path):
    f = sh.files
    f.write("deep/er/notes.md", "# notes\n", mode=0o640)  # relative: the cwd's; parents made
    assert (tmp_path / "deep/er/notes.md").read_text() == "# notes\n"
    assert f.read("deep/er/notes.md", offset=2, limit=3) == b"not"
    info = f.stat(str(tmp_path / "deep/er/notes.md"))
    assert (info["name"], info["type"], info["size"], info["mode"]) == ("notes.md", "file", 8, 0o640)
    f.write("deep/er/notes.md", b"\x00\x01")  # the replaced file's mode is kept
    assert f.stat("deep/er/notes.md")["mode"] == 0o640 and f.read("deep/er/notes.md") == b"\x00\x01"
    os.symlink("er/notes.md", tmp_path / "deep/link")
    assert [(e["name"], e["type"]) for e in f.list("deep")] == [("er", "dir"), ("link", "symlink")]
    assert f.stat("deep/link")["target"] == "er/notes.md"
    with pytest.raises(conch.NotFoundError, match="no such file or directory"):
        f.read("missing")
    with pytest.raises(conch.IoError) as info:
        f.read("deep")
    assert info.value.errno == 21  # EISDIR
    with pytest.raises(conch.IoError, match="recursive removes its tree"):
        f.remove("deep")
    with pytest.raises(conch.InvalidArgumentError, match="limit must be at most 8388608"):
        f.read("deep/er/notes.md", limit=(8 << 20) + 1)
    f.remove("deep/link")
    assert (tmp_path / "deep/er/notes.md").exists()  # a symlink's target is never removed
    f.remove("deep", recursive=True)
    assert not (tmp_path / "deep").exists()


def test_the_bash_tool_runs_on_the_node(sh, tmp_path):
    tool = sh.tool(snapshot=None)
    assert tool.execute({"command": "pwd"}) == ToolResult(str(tmp_path), None)
    with pytest.raises(conch.ToolError, match="exited with code 3"):
        tool.execute({"command": "exit 3"})
    assert tool.definition()["name"] == "bash" and tool.job_tool().definition()["name"] == "job"
    assert "job" in tool.execute({"command": "/bin/sleep 5", "async": True}).text
    assert "running" in tool.job_tool().execute({"op": "list"}).text
    tool.close()
    with pytest.raises(conch.ClosedError):
        tool.execute({"command": "true"})


def descendants(pid: int) -> set[int]:
    """Live processes below ``pid``."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z":
                parents[int(entry)] = int(fields[1])
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found.update(kids)
        todo.extend(kids)
    return found


@pytest.mark.parametrize("how", ["ray.kill", "SIGKILL of the worker"])
def test_nothing_the_session_started_outlives_its_actor(local_ray, tmp_path, marker, how):
    sh = ActorShell(ShellActor.remote(cwd=str(tmp_path), snapshot=None))
    # A background job, a started job, a PTY job, and a setsid escape.
    sh.run(f"(exec -a {marker} /bin/sleep 60) &")
    sh.start(f"exec -a {marker} /bin/sleep 60")
    sh.start(f"exec -a {marker} /bin/sleep 60", pty=(80, 24))
    sh.run(f"setsid bash -c 'exec -a {marker} /bin/sleep 60' &")
    assert wait_until(lambda: len([p for p in pids_with(marker) if is_alive(p, marker)]) == 4)
    if how == "ray.kill":
        ray.kill(sh.actor)
    else:
        os.kill(sh.pid, signal.SIGKILL)
    assert wait_until(lambda: not [p for p in pids_with(marker) if is_alive(p, marker)]), pids_with(marker)
    with pytest.raises(conch.SessionLost, match=f"Ray node {sh.node_id}"):
        sh.run("echo")
    assert sh.lost
    with pytest.raises(conch.SessionLost):  # at once, from then on
        sh.jobs()


def test_what_a_killed_actor_spilled_goes_with_the_next_session_on_the_node(local_ray, tmp_path):
    sh = ActorShell(ShellActor.remote(cwd=str(tmp_path), snapshot=None))
    assert sh.run("seq 1 100000").truncated
    # The worker's own store: conch's private directory, named after the worker.
    private = os.path.join(tempfile.gettempdir(), f"conch-{os.getuid()}")
    [store] = glob.glob(os.path.join(private, f"artifacts-{sh.pid}-*"))
    ray.kill(sh.actor)
    assert wait_until(lambda: _cmdline(sh.pid) is None)
    assert os.path.isdir(store), "a kill leaves it"
    # The next conch on the node (this actor's worker, at its start) removes it.
    nxt = ActorShell(ShellActor.remote(cwd=str(tmp_path), snapshot=None))
    assert not os.path.exists(store)
    assert nxt.run("echo ok").output == "ok\n"
    ray.kill(nxt.actor)
