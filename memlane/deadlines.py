"""A call's time budget against a Redis that went silent.

A frozen Redis (stopped, or its host gone quiet) holds every call for the socket timeout (30 s).
`within_budget` gives a call up after its budget only when Redis has said nothing for the last
half of it: neither a probe sent then nor any other call of the store got a reply. A loaded
machine still hears from Redis (its probe may queue behind busy connections, the other calls'
replies come), so a slow call there is waited for; while it runs, Redis is asked again every
half budget, so a Redis that freezes later gives it up too. Recall before a reply
(memlane/turns.py) and every route of the memories API (serve/deadlines.py) use it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from memlane.store.errors import StoreError
from memlane.store.protocols import ServiceStore

T = TypeVar("T")


class RedisSilent(StoreError):
    """A call outlived its budget and Redis answered nothing in the last half of it (frozen, or every
    connection stuck)."""


async def within_budget(work: Awaitable[T], store: ServiceStore, seconds: float, *, what: str) -> T:
    """`await work`, or `RedisSilent` (naming `what`) once `seconds` have passed while Redis said
    nothing for the last half of them; a call Redis keeps answering around is waited for."""
    task = asyncio.ensure_future(work)
    half = seconds / 2
    probe: asyncio.Future[None] | None = None
    try:
        done, _ = await asyncio.wait({task}, timeout=half)
        while not done:
            probe = asyncio.ensure_future(store.check_ready())
            done, _ = await asyncio.wait({task}, timeout=half)
            answered = probe.done() and not probe.cancelled() and probe.exception() is None
            if not done and not answered and not store.answered_within(half):
                raise RedisSilent(f"{what} took over {seconds:g} s and Redis answered nothing in its last {half:g} s")
            _finish(probe)
        return await task
    finally:
        if not task.done():
            task.cancel()
        if probe is not None:
            _finish(probe)


def _finish(probe: asyncio.Future[None]) -> None:
    if not probe.done():
        probe.cancel()
    elif not probe.cancelled():
        probe.exception()  # read, so a failed probe is not reported as never retrieved
