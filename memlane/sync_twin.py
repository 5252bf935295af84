"""The sync twin of an async object: its coroutine methods, called without `await`.

Each twin runs its async object on an event loop in a daemon thread of its own, so a sync call
works anywhere, inside a running loop too (a notebook's). `close()` (or `with`) closes the async
object and stops the thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

Answer = TypeVar("Answer")


class SyncTwin:
    """Subclasses set `twin_of` (the async class) and build their async object with `_start(work)`."""

    twin_of: type = object
    closer = "aclose"

    def _start(self, build: Callable[[], Awaitable[Any]], name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._async: Any = self._run(build())

    def _run(self, work: Awaitable[Answer]) -> Answer:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()  # type: ignore[arg-type]

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._loop.is_running():
            self._run(getattr(self._async, self.closer)())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

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
