"""conch on Ray: sessions as Ray actors, placed by Ray across a cluster.

Ray does the placement; conch stays the shell inside each worker. A
``ShellActor`` owns a local ``conch.Shell`` on the node Ray put it on, with
that shell's jobs (PTY jobs too), artifacts, files and a bash tool; its
methods and results are the local ones. ``ActorShell`` is its blocking face
in the caller (``conch.Shell``'s calls, conch's errors raised as their own
classes, a dead actor or node raised as ``conch.SessionLost``), and
``ShellPool`` keeps a set of them across the cluster, recycling each
returned session to a fresh bash. Nothing here is a scheduler: the core
does the shell, Ray does the rest (docs/ray.md).

Nothing a session started outlives its actor: the actor's process is the
session's host, and conch's lifeline kills every tree a host started when
the host dies by any means (``ray.kill``, a removed node, a crashed worker).
"""

from __future__ import annotations

from ._actor import MAX_CONCURRENCY, RUNTIME_ENV, ShellActor, ToolResult
from ._files import MAX_FILE_BYTES
from ._pool import ShellPool
from ._shell import ActorJobTool, ActorShell, ActorTool, _Artifacts, _Files

__all__ = ["ActorJobTool", "ActorShell", "ActorTool", "ShellActor", "ShellPool", "ToolResult"]
