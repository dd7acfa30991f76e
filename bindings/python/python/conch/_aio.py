"""asyncio glue: a blocking conch call on its own thread, awaitable, and
cancelled (through a ``CancelToken``) when the awaiting task is cancelled.
The ``*_async`` methods of the native classes return ``call_async(...)``."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

if TYPE_CHECKING:
    from . import CancelToken
else:
    from ._conch import CancelToken

T = TypeVar("T")


async def call_async(
    call: Callable[..., T],
    first: Any,
    cancel: CancelToken | None,
    options: Mapping[str, Any] | None,
) -> T:
    """Awaits ``call(first, cancel=<token>, **options)`` run on a new thread.
    The token is a child of ``cancel``: cancelling the awaiting task cancels
    it, and so stops the call, without touching the caller's token."""
    token = CancelToken(cancel)
    kwargs = dict(options or {})
    return await run_in_thread(lambda: call(first, cancel=token, **kwargs), token)


async def call_in_thread(
    call: Callable[..., T],
    args: tuple[Any, ...],
    options: Mapping[str, Any] | None,
    undo: Callable[[T], object] | None,
) -> T:
    """Awaits ``call(*args, **options)`` run on a new thread, for a call that
    takes no cancel token (``Shell.kill``, ``Shell.start``): a cancelled task
    waits for it to return, and then, if it succeeded and ``undo`` is given,
    for ``undo(result)`` (the job a start made is killed)."""
    kwargs = dict(options or {})
    return await run_in_thread(lambda: call(*args, **kwargs), CancelToken(), undo)


async def run_in_thread(
    call: Callable[[], T], token: CancelToken, undo: Callable[[T], object] | None = None
) -> T:
    """Runs ``call()`` on a new thread and awaits its result. If the awaiting
    task is cancelled, ``token.cancel()`` stops the call; the task waits for
    the call to return (so nothing it started is left running) before
    ``CancelledError`` propagates. With ``undo``, what a call that succeeded
    all the same returned is undone (``undo(result)`` on a thread of its
    own, awaited too), however often the task is cancelled meanwhile.

    A thread per call, not the loop's default executor: agent commands run
    for minutes and would starve the small default pool.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if done.cancelled():
            return
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def work() -> None:
        outcome: tuple[bool, Any]
        try:
            outcome = (True, call())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:
            pass  # the loop is closed; nobody awaits the result any more

    threading.Thread(target=work, name="conch-async", daemon=True).start()
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        token.cancel()
        undone = None if undo is None else _undo_when_done(loop, done, undo)
        for waited in (done, undone):
            if waited is None:
                continue
            try:
                await asyncio.shield(waited)
            except BaseException:  # noqa: BLE001 - the cancellation wins
                pass
        raise


def _undo_when_done(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[T], undo: Callable[[T], object]
) -> asyncio.Future[None]:
    """Once ``done`` has a result, ``undo(result)`` on a new thread; the
    future returned is settled when that is over (at once when ``done``
    failed). A callback of ``done``, so no second cancellation of the
    awaiting task can skip it."""
    undone: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not undone.done():
            undone.set_result(None)

    def work(value: T) -> None:
        try:
            undo(value)
        except BaseException:  # noqa: BLE001 - nobody awaits its outcome
            pass
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # the loop is closed

    def on_done(future: asyncio.Future[T]) -> None:
        if future.cancelled() or future.exception() is not None:
            settle()
            return
        threading.Thread(target=work, args=(future.result(),), name="conch-async-undo", daemon=True).start()

    done.add_done_callback(on_done)
    return undone


async def aenter(obj: T) -> T:
    """``__aenter__`` of conch's context managers: the object itself."""
    return obj


async def aexit(exit: Callable[..., bool], *exc: Any) -> bool:
    """``__aexit__``: the blocking ``exit(*exc)`` (``__exit__``, which closes
    or kills) on a thread of its own, so the event loop is not held while
    processes are killed. A cancelled task still waits for it to finish."""
    return await run_in_thread(lambda: exit(*exc), CancelToken())
