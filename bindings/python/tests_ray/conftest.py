"""Shared helpers of the Ray suite (scripts/test-ray.sh): the main suite's
helpers (tests/conftest.py, re-exported so its replays import them from
here), a local Ray per module, and the check that the suite runs in a
network namespace of its own.

Ray binds its ports on every interface and advertises the machine's
address, so these tests run where loopback is the only interface there is
(``unshare -n`` with ``lo`` up): nothing they start is reachable from, or
sends to, anything off this machine. Ray's token authentication stays on."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

TESTS = Path(__file__).resolve().parents[1] / "tests"
_spec = importlib.util.spec_from_file_location("_conch_main_conftest", TESTS / "conftest.py")
_main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_main)
globals().update({k: v for k, v in vars(_main).items() if not k.startswith("__")})
# The main suite's replays (test_vectors, test_jobs) are imported from there.
sys.path.insert(1, str(TESTS))

import ray  # noqa: E402

# A local Ray's size: logical CPUs (placement only; the machine's cores are
# shared) and memory kept small.
RAY_CPUS = 4
OBJECT_STORE = 80 << 20


def interfaces() -> list[str]:
    """The network interfaces of this process's namespace (/sys/class/net
    shows the namespace sysfs was mounted in, /proc/self/net ours)."""
    with open("/proc/self/net/dev") as f:
        return sorted(line.split(":")[0].strip() for line in f.readlines()[2:])


def pytest_sessionstart(session: pytest.Session) -> None:
    if interfaces() != ["lo"]:
        pytest.exit(
            f"the Ray tests run in a network namespace with only lo (found {interfaces()}): "
            "run scripts/test-ray.sh, or `unshare -n sh -c 'ip link set lo up && pytest tests_ray'` as root",
            returncode=2,
        )
    # Token authentication on, whatever the caller's environment says.
    if os.environ.get("RAY_AUTH_MODE", "token") != "token":
        pytest.exit("RAY_AUTH_MODE must stay token for these tests", returncode=2)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for a test module, bounded in CPUs and memory."""
    ray.init(num_cpus=RAY_CPUS, object_store_memory=OBJECT_STORE, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()
