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


async def run_in_thread(call: Callable[[], T], token: CancelToken) -> T:
    """Runs ``call()`` on a new thread and awaits its result. If the awaiting
    task is cancelled, ``token.cancel()`` stops the call; the task waits for
    the call to return (so nothing it started is left running) before
    ``CancelledError`` propagates.

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
        try:
            await asyncio.shield(done)
        except BaseException:  # noqa: BLE001 - the cancellation wins
            pass
        raise


async def aenter(obj: T) -> T:
    """``__aenter__`` of conch's context managers: the object itself."""
    return obj


async def aexit(exit: Callable[..., bool], *exc: Any) -> bool:
    """``__aexit__``: the blocking ``exit(*exc)`` (``__exit__``, which closes
    or kills) on a thread of its own, so the event loop is not held while
    processes are killed. A cancelled task still waits for it to finish."""
    return await run_in_thread(lambda: exit(*exc), CancelToken())
