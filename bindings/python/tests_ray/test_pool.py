"""``ShellPool`` on a local Ray: recycling leaves nothing behind (a census
of the session host's processes before and after), ``map`` gives one
fresh session per item, a lost session is replaced, 64 sessions run."""

from __future__ import annotations

import os

import pytest
import ray

import conch
from conch.ray import ShellPool
from conftest import GUARD, is_alive, pids_with, wait_until
from test_actor import descendants


def census(sh) -> set[int]:
    """The processes below the session's host (the actor's process)."""
    return descendants(sh.pid)


def test_a_returned_session_is_a_fresh_bash_with_nothing_left_running(local_ray, tmp_path, marker):
    with ShellPool(1, cwd=str(tmp_path), snapshot=None) as pool:
        with pool.session() as sh:
            host, before = sh.pid, census(sh)
            sh.run("mkdir -p elsewhere && cd elsewhere && export LEFT=1; f() { :; }")
            sh.run(f"(exec -a {marker} /bin/sleep 60) &")
            sh.run(f"setsid bash -c 'exec -a {marker} /bin/sleep 60' &")
            sh.start(f"exec -a {marker} /bin/sleep 60")
            sh.start(f"exec -a {marker} /bin/sleep 60", pty=(80, 24))
            assert wait_until(lambda: len([p for p in pids_with(marker) if is_alive(p, marker)]) == 4)
            assert len(census(sh)) > len(before)
        # Recycled on the way out: nothing the episode started runs.
        assert not [p for p in pids_with(marker) if is_alive(p, marker)]
        with pool.session() as sh:
            assert sh.pid == host  # the same actor, a new bash
            # And the spare it forked for the next recycle: a bash, running
            # nothing (the eval loop forks none).
            spare = 1 if sh.engine == "builtin" else 0
            assert wait_until(lambda: len(census(sh)) == len(before) + spare), (census(sh), before)
            r = sh.run("echo ${LEFT:-unset}; type f >/dev/null 2>&1 || echo no-f; pwd")
            assert r.output == f"unset\nno-f\n{tmp_path}\n"
            assert sh.jobs() == [] and sh.background_jobs() == []
            sh.run("export LEFT=1")
            seen = census(sh)
        with pool.session() as sh:
            # The spare took the last bash's place: its pid was there before.
            bash = int(sh.run("echo $$").output)
            assert (bash in seen) == bool(spare)
            assert sh.run("echo ${LEFT:-unset}").output == "unset\n"


def test_map_runs_one_episode_per_item_on_recycled_sessions(local_ray, tmp_path):
    def episode(sh, item):
        seen = sh.run("echo ${MARK:-clean}").output.strip()
        sh.run(f"export MARK={item}")
        return seen, sh.run("echo $MARK").output.strip()

    with ShellPool(2, cwd=str(tmp_path), snapshot=None) as pool:
        assert pool.map(episode, range(6)) == [("clean", str(i)) for i in range(6)]

        def fail(sh, item):
            if item == 1:
                sh.poll(99)
            return item

        with pytest.raises(conch.NotFoundError):
            pool.map(fail, range(3))
        assert pool.map(lambda sh, i: i, range(3)) == [0, 1, 2]  # still whole


def test_a_lost_session_raises_session_lost_and_is_replaced(local_ray, tmp_path):
    with ShellPool(1, cwd=str(tmp_path), snapshot=None) as pool:
        with pool.session() as sh:
            first = sh.pid
            ray.kill(sh.actor)
            with pytest.raises(conch.SessionLost, match=f"Ray node {sh.node_id}"):
                sh.run("echo")
        with pool.session() as sh:
            assert sh.pid != first
            assert sh.run("pwd").output == f"{tmp_path}\n"


def test_a_session_that_cannot_be_recycled_is_replaced_when_it_can_be(local_ray, tmp_path):
    start = tmp_path / "start"
    start.mkdir()
    with ShellPool(1, cwd=str(start), snapshot=None) as pool:
        with pool.session() as sh:
            sh.run(f"cd / && rm -rf {start}")  # no start directory to recycle into
        with pytest.raises(conch.InvalidArgumentError, match="Working directory does not exist"):
            with pool.session():
                pass
        start.mkdir()
        with pool.session() as sh:
            assert sh.run("pwd").output == f"{start}\n"


def test_bad_pools_are_refused(local_ray):
    with pytest.raises(conch.InvalidArgumentError, match="placement must be"):
        ShellPool(1, placement="EVERYWHERE")
    with pytest.raises(conch.InvalidArgumentError, match="size must be"):
        ShellPool(0)
    with pytest.raises(conch.InvalidArgumentError, match="Working directory does not exist"):
        ShellPool(1, cwd="/no/such/dir")
    pool = ShellPool(1, snapshot=None)
    pool.close()
    with pytest.raises(conch.ClosedError):
        with pool.session():
            pass


# 64 Ray workers start here, a CPU-second each: far more than the suite's
# 120 s per test on a machine the other suites keep busy.
@pytest.mark.timeout(600)
def test_64_sessions_run_one_command_each(local_ray, tmp_path, marker):
    # A session holds a sliver of a CPU: the 64 fit the local Ray's 4.
    def episode(sh, i):
        sh.run(f"(exec -a {marker} /bin/sleep 60) &")
        return sh.pid, sh.run(f"echo {i}").output

    with ShellPool(64, resources={"CPU": 0.05}, cwd=str(tmp_path), snapshot=None) as pool:
        hosts = pool.map(episode, range(64))
    assert [out for _, out in hosts] == [f"{i}\n" for i in range(64)]
    assert len({pid for pid, _ in hosts}) == 64
    # Recycled, then closed: nothing any episode started runs.
    assert not [p for p in pids_with(marker) if is_alive(p, marker)]
