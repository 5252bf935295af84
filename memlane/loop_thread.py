"""An event loop on a daemon thread of its own, for sync callers, and its quiet close.

`MemlaneStore.open()` and the sync twins (`Memory`, `MemlaneClient`) run their async object on
one. Closing it while other threads' calls were under way used to stop the loop under them:
each pending call's task was destroyed at exit with a traceback ("Event loop is closed",
"Task was destroyed but it is pending!", "coroutine ignored GeneratorExit"), 10 to 20 of them.
`close()` now lets the calls under way finish (for `grace` seconds), cancels the rest (their
callers get `LoopClosed`, a StoreError that says so), closes the async object, cancels what it
left, and only then stops the loop. A call made after close began is refused at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from memlane.store.errors import StoreError

Answer = TypeVar("Answer")


class LoopClosed(StoreError):
    """The call came after `close()`, or was still waiting when close ended it."""


class LoopThread:
    """An event loop running on a daemon thread; `submit` hands it coroutines from any thread."""

    def __init__(self, name: str, *, owner: str) -> None:
        self.owner = owner  # what the errors name: "MemlaneStore", "Memory"...
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()
        self._closing = False
        self._lock = threading.Lock()  # a call is submitted before close begins, or refused
        # the coroutines handed to the loop: close finds their tasks by them
        self._submitted: weakref.WeakSet[Coroutine[Any, Any, Any]] = weakref.WeakSet()

    def submit(self, work: Coroutine[Any, Any, Answer]) -> concurrent.futures.Future[Answer]:
        """`work` started on the loop; `LoopClosed` once close has begun (`work` is then never run)."""
        with self._lock:
            if self._closing:
                work.close()
                raise self.closed()
            self._submitted.add(work)
            return asyncio.run_coroutine_threadsafe(work, self.loop)

    def run(self, work: Coroutine[Any, Any, Answer]) -> Answer:
        """`work`'s answer, waited for in this (another) thread."""
        return self.answer(self.submit(work))

    def answer(self, future: concurrent.futures.Future[Answer], timeout: float | None = None) -> Answer:
        """`future.result(timeout)`, a call that close ended raising `LoopClosed`."""
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            raise self.closed() from None

    def closed(self) -> LoopClosed:
        return LoopClosed(f"{self.owner} was closed while this call was made or waited; open it again to use it")

    def close(self, last: Callable[[], Awaitable[None]] | None = None, *, grace: float = 2.0) -> None:
        """Stop the loop quietly: the calls under way get `grace` seconds to finish and are then
        cancelled, `last()` (closing the async object) runs, what is left is cancelled, and the
        thread ends. A second close does nothing."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        try:
            if self.loop.is_running():
                asyncio.run_coroutine_threadsafe(self._wind_down(last, grace), self.loop).result()
        finally:
            if self.loop.is_running():
                self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()

    async def _wind_down(self, last: Callable[[], Awaitable[None]] | None, grace: float) -> None:
        # every call submitted has its task by now: each was handed over before close began
        calls = {task for task in asyncio.all_tasks() if task.get_coro() in self._submitted}
        if calls:
            await asyncio.wait(calls, timeout=grace)
        await _cancelled({call for call in calls if not call.done()})
        try:
            if last is not None:
                await last()
        finally:
            # what the calls and the close left behind (a connect under way, a pool's watcher)
            await _cancelled(asyncio.all_tasks() - {asyncio.current_task()})
            await self.loop.shutdown_asyncgens()


async def _cancelled(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
