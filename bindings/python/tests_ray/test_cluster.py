"""A multi-node cluster on this machine (Ray's own
``ray.cluster_utils.Cluster``: a head and small nodes with custom
resources): sessions land on the nodes asked for, and a node removed in
the middle of a command is a ``SessionLost`` naming it, with nothing left
running, the pool replacing the session."""

from __future__ import annotations

from typing import Iterator

import pytest
import ray
from ray.cluster_utils import Cluster

import conch
from conch.ray import ActorShell, ShellActor, ShellPool
from conftest import OBJECT_STORE, Sleeper, in_background, is_alive, pids_with, sleeper, wait_until


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": OBJECT_STORE, "include_dashboard": False})
    c.node_a = c.add_node(num_cpus=2, resources={"node_a": 4}, object_store_memory=OBJECT_STORE)
    c.node_b = c.add_node(num_cpus=2, resources={"node_b": 4}, object_store_memory=OBJECT_STORE)
    ray.init(address=c.address, log_to_driver=False, configure_logging=False)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


def test_sessions_land_on_the_nodes_asked_for(cluster, tmp_path):
    a, b = cluster.node_a.node_id, cluster.node_b.node_id
    sh = ActorShell(ShellActor.options(resources={"node_a": 1}).remote(cwd=str(tmp_path), snapshot=None))
    assert sh.node_id == a
    assert sh.run("echo on a").output == "on a\n"
    ray.kill(sh.actor)
    with ShellPool(2, resources={"node_b": 1}, snapshot=None) as pool:
        assert pool.node_ids() == [b, b]
    with ShellPool(4, placement=[a, b], snapshot=None) as pool:  # node affinity, in turn
        assert pool.node_ids() == [a, b, a, b]
        assert sorted(pool.map(lambda s, i: s.node_id, range(4))) == sorted([a, b, a, b])
    with ShellPool(2, placement=b, snapshot=None) as pool:
        assert pool.node_ids() == [b, b]
    # SPREAD over the nodes that have the resource: both, not one.
    with ShellPool(2, placement="SPREAD", resources={"CPU": 2}, snapshot=None) as pool:
        assert sorted(pool.node_ids()) == sorted([a, b])


def test_a_node_removed_mid_command_is_session_lost_and_leaves_nothing(cluster, tmp_path, marker):
    doomed = cluster.add_node(num_cpus=1, resources={"doomed": 1}, object_store_memory=OBJECT_STORE)
    cluster.wait_for_nodes()
    with ShellPool(1, resources={"doomed": 1}, cwd=str(tmp_path), snapshot=None) as pool:
        with pool.session() as sh:
            assert sh.node_id == doomed.node_id
            sh.run(f"setsid bash -c 'exec -a {marker} /bin/sleep 60' &")
            sh.start(f"exec -a {marker} /bin/sleep 60")
            s = Sleeper(marker)
            errors = []

            def command():
                try:
                    sh.run(sleeper(marker), on_chunk=s, timeout=60)
                except conch.SessionLost as e:
                    errors.append(e)

            with in_background(command):
                s.wait_started()
                # The two started before may not have become sleep yet (a
                # loaded machine, the worker at nice 15).
                assert wait_until(lambda: len([p for p in pids_with(marker) if is_alive(p, marker)]) == 3)
                cluster.remove_node(doomed)
            assert errors and doomed.node_id in str(errors[0]), errors
            assert wait_until(lambda: not [p for p in pids_with(marker) if is_alive(p, marker)])
            with pytest.raises(conch.SessionLost, match=doomed.node_id):
                sh.run("echo")
        # The pool replaces it, on the node that now has the resource.
        again = cluster.add_node(num_cpus=1, resources={"doomed": 1}, object_store_memory=OBJECT_STORE)
        with pool.session(timeout=60) as sh:
            assert sh.node_id == again.node_id
            assert sh.run("pwd").output == f"{tmp_path}\n"
