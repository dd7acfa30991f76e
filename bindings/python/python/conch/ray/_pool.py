"""``ShellPool``: sessions across the cluster, handed out one at a time."""

from __future__ import annotations

import contextlib
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator, TypeVar

import ray
from ray.exceptions import RayTaskError
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

import conch

from ._actor import ShellActor
from ._shell import ActorShell

T = TypeVar("T")


def _actor_options(resources: dict[str, float] | None) -> dict[str, Any]:
    """Ray's actor options for a session's ``resources``: ``CPU``, ``GPU``
    and ``memory`` are Ray's own keywords, the rest custom resources."""
    rest = dict(resources or {})
    options: dict[str, Any] = {}
    for key, option in (("CPU", "num_cpus"), ("GPU", "num_gpus"), ("memory", "memory")):
        if key in rest:
            options[option] = rest.pop(key)
    if rest:
        options["resources"] = rest
    return options


def _is_node_id(name: object) -> bool:
    """Ray's node ids are 28 bytes, written in hex."""
    return isinstance(name, str) and len(name) == 56 and all(c in "0123456789abcdef" for c in name)


def _strategies(placement: Any, size: int) -> list[Any]:
    """The scheduling strategy of each of ``size`` sessions."""
    if placement == "SPREAD":
        return ["SPREAD"] * size
    if placement == "PACK":
        # Ray's default scheduler fills a node before it moves to the next.
        return ["DEFAULT"] * size
    if isinstance(placement, (NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy)):
        return [placement] * size
    nodes = [placement] if isinstance(placement, str) else placement
    if isinstance(nodes, (list, tuple)) and nodes and all(map(_is_node_id, nodes)):
        return [NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False) for i in range(size)]
    raise conch.InvalidArgumentError(
        'placement must be "SPREAD", "PACK", a node id, a list of node ids or a Ray '
        f"scheduling strategy, got {placement!r}"
    )


class ShellPool:
    """``size`` conch sessions across the cluster, handed out one at a time.

    ``placement``: ``"SPREAD"`` (over as many nodes as can take them),
    ``"PACK"`` (Ray's default scheduler: a node filled before the next), a
    node id or a list of them (node affinity, one after the other), or a
    Ray scheduling strategy (a placement group's). ``resources``: what
    each session holds while it lives (``{"CPU": 1, "node_a": 1}``);
    ``None``: Ray's actor default. ``shell_options``: ``conch.Shell``'s.
    """

    def __init__(
        self,
        size: int,
        placement: Any = "SPREAD",
        resources: dict[str, float] | None = None,
        **shell_options: Any,
    ) -> None:
        if not isinstance(size, int) or size < 1:
            raise conch.InvalidArgumentError(f"size must be a whole number >= 1, got {size!r}")
        self.size = size
        self._strategies = _strategies(placement, size)
        self._actor_options = _actor_options(resources)
        self._shell_options = shell_options
        self._idle: queue.Queue[ActorShell] = queue.Queue()
        self._sessions: list[ActorShell | None] = [None] * size
        self._lock = threading.Lock()
        self._closed = False
        actors = [self._actor(slot) for slot in range(size)]
        try:
            infos = ray.get([a.info.remote() for a in actors])
        except BaseException as e:
            for a in actors:
                ray.kill(a)
            if isinstance(e, RayTaskError):
                raise e.cause from None
            raise
        for slot, (actor, info) in enumerate(zip(actors, infos)):
            self._adopt(slot, ActorShell(actor, info))

    def _actor(self, slot: int) -> Any:
        return ShellActor.options(
            scheduling_strategy=self._strategies[slot], **self._actor_options
        ).remote(**self._shell_options)

    def _adopt(self, slot: int, sh: ActorShell) -> None:
        sh._slot = slot  # type: ignore[attr-defined]
        self._sessions[slot] = sh
        self._idle.put(sh)

    def node_ids(self) -> list[str]:
        """The node of each session, by slot."""
        return [sh.node_id for sh in self._sessions if sh is not None]

    @contextlib.contextmanager
    def session(self, timeout: float | None = None) -> Iterator[ActorShell]:
        """An idle session (waiting up to ``timeout`` seconds for one); on
        leaving, it is recycled to a fresh bash in its start directory
        with nothing left running, or replaced if it was lost."""
        if self._closed:
            raise conch.ClosedError("the ShellPool is closed")
        try:
            sh = self._idle.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no idle session within {timeout} s") from None
        if sh.lost:
            try:
                sh = self._replace(sh)
            except BaseException:
                self._idle.put(sh)  # replaced by the next caller
                raise
        try:
            yield sh
        finally:
            self._recycle(sh)

    def _recycle(self, sh: ActorShell) -> None:
        if not sh.lost:
            try:
                sh.reset()
            except conch.SessionLost:
                pass
            except Exception:
                # A fresh bash could not start (the episode removed its start
                # directory…): replaced when next handed out, which raises
                # the reason if it still holds.
                sh.lost = True
        if self._closed:
            ray.kill(sh.actor)
        else:
            self._idle.put(sh)

    def _replace(self, lost: ActorShell) -> ActorShell:
        """A new actor in the lost one's slot; the old one is killed, in
        case only its node's link was lost."""
        with contextlib.suppress(Exception):
            ray.kill(lost.actor)
        slot = lost._slot  # type: ignore[attr-defined]
        actor = self._actor(slot)
        try:
            sh = ActorShell(actor)
        except BaseException:
            ray.kill(actor)
            raise
        sh._slot = slot  # type: ignore[attr-defined]
        self._sessions[slot] = sh
        return sh

    def map(self, fn: Callable[[ActorShell, Any], T], items: Iterable[Any]) -> list[T]:
        """``fn(session, item)`` for each item, in the caller's process on
        up to ``size`` threads, each on a recycled session; the results in
        the items' order. The first exception (in that order) is raised
        once the running episodes have ended; those not started are not."""

        def episode(item: Any) -> T:
            with self.session() as sh:
                return fn(sh, item)

        with ThreadPoolExecutor(max_workers=self.size) as ex:
            futures = [ex.submit(episode, item) for item in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()  # the episodes not started yet
                raise

    def close(self) -> None:
        """Kills every session (their processes with them); idempotent."""
        if self._closed:
            return
        self._closed = True
        for sh in self._sessions:
            if sh is None:
                continue
            with contextlib.suppress(Exception):
                ray.get(sh.actor.close.remote(), timeout=10)
            with contextlib.suppress(Exception):
                ray.kill(sh.actor)

    def __enter__(self) -> ShellPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

