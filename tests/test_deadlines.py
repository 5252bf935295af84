"""memlane/deadlines.py: a call is given up only while Redis is silent, however long it runs."""

from __future__ import annotations

import asyncio
import time

import pytest

from memlane.deadlines import RedisSilent, within_budget


class RedisThatFreezesAt:
    """The two things `within_budget` asks of a store: a probe, and when Redis last answered.
    Redis answers until `freezes_after` seconds (None: never freezes), then nothing."""

    def __init__(self, freezes_after: float | None) -> None:
        self.started = time.monotonic()
        self.freezes_after = freezes_after

    def frozen(self) -> bool:
        return self.freezes_after is not None and time.monotonic() - self.started >= self.freezes_after

    async def check_ready(self) -> None:
        while self.frozen():  # a frozen Redis holds the probe
            await asyncio.sleep(3600)

    def answered_within(self, seconds: float) -> bool:
        return False  # no other call: only the probe tells


async def work_for(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "answered"


async def test_a_slow_call_redis_keeps_answering_around_is_waited_for():
    assert await within_budget(work_for(0.7), RedisThatFreezesAt(None), 0.2, what="an export") == "answered"


async def test_a_call_on_a_silent_redis_ends_at_its_budget():
    started = time.monotonic()
    with pytest.raises(RedisSilent, match="a note took over 0.2 s and Redis answered nothing"):
        await within_budget(work_for(30), RedisThatFreezesAt(0.0), 0.2, what="a note")
    assert time.monotonic() - started < 1.0  # its budget (0.2 s), not the work's 30 s; slack for a loaded machine


async def test_a_redis_that_freezes_under_a_long_call_ends_it_a_budget_later():
    started = time.monotonic()
    with pytest.raises(RedisSilent):
        await within_budget(work_for(30), RedisThatFreezesAt(0.5), 0.2, what="an export")
    assert 0.5 <= time.monotonic() - started < 1.5  # after the freeze, about a budget later
