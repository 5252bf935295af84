"""The sync twin of an async object: its coroutine methods, called without `await`.

Each twin runs its async object on an event loop in a daemon thread of its own
(memlane/loop_thread.py), so a sync call works anywhere, inside a running loop too (a
notebook's). `close()` (or `with`) closes the async object and stops the thread, quietly: calls
under way from other threads finish or fail with a StoreError saying the twin was closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from memlane.loop_thread import LoopThread

Answer = TypeVar("Answer")


class SyncTwin:
    """Subclasses set `twin_of` (the async class) and build their async object with `_start(work)`."""

    twin_of: type = object
    closer = "aclose"

    def _start(self, build: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
        self._private = LoopThread(name, owner=type(self).__name__)
        try:
            self._async: Any = self._run(build())
        except BaseException:
            self._private.close()
            raise

    def _run(self, work: Coroutine[Any, Any, Answer]) -> Answer:
        return self._private.run(work)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._private.close(getattr(self._async, self.closer))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.twin_of, name, None)
        if (
            name.startswith("_")
            or name in ("open", self.closer)
            or method is None
            or not asyncio.iscoroutinefunction(method)
        ):
            raise AttributeError(f"{type(self).__name__} has no method {name!r}")
        bound = getattr(self._async, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(bound(*args, **kwargs))

        call.__name__, call.__doc__ = name, method.__doc__
        return call
