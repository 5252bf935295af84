"""The circuit breaker (store/models/breaker.py), alone and around the store's embedder."""

from __future__ import annotations

import asyncio
import logging

import pytest
from scripted import FlakyEmbeddings

from memlane.store.models.breaker import CircuitBreaker, CircuitOpen
from memlane.store.records import Message
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore


async def test_the_breaker_opens_after_consecutive_failures_and_closes_after_a_good_trial(caplog):
    breaker = CircuitBreaker("the test service", failure_threshold=3, reset_seconds=0.2)
    reached: list[bool] = []

    async def failing() -> None:
        reached.append(True)
        raise ConnectionError("down")

    async def working() -> str:
        reached.append(True)
        return "ok"

    caplog.set_level(logging.WARNING, logger="memlane.store.models.breaker")
    assert await breaker.call(working) == "ok"
    for _ in range(3):
        with pytest.raises(ConnectionError):
            await breaker.call(failing)
    assert breaker.state == "open"
    with pytest.raises(CircuitOpen, match="the test service is paused"):
        await breaker.call(working)  # refused without reaching the service
    assert len(reached) == 4

    await asyncio.sleep(0.25)  # half-open: one trial; it fails, so the breaker opens again at once
    with pytest.raises(ConnectionError):
        await breaker.call(failing)
    with pytest.raises(CircuitOpen):
        await breaker.call(working)
    await asyncio.sleep(0.25)
    assert await breaker.call(working) == "ok"
    assert breaker.state == "closed"
    lines = [record.getMessage() for record in caplog.records]
    assert len([line for line in lines if line.startswith("circuit open")]) == 1
    assert len([line for line in lines if line.startswith("circuit closed")]) == 1


async def test_a_success_resets_the_count_of_failures():
    breaker = CircuitBreaker("svc", failure_threshold=2, reset_seconds=60)

    async def failing() -> None:
        raise ConnectionError("down")

    async def working() -> int:
        return 1

    for _ in range(3):
        with pytest.raises(ConnectionError):
            await breaker.call(failing)
        await breaker.call(working)
    assert breaker.state == "closed"


async def test_the_store_stops_calling_a_down_embedder_and_resumes_after_it_recovers(store, settings, embeddings):
    await store.add_messages([Message(id="m1", user_id="alice", session_id="s", role="user", content="I live in Lyon")])
    flaky = FlakyEmbeddings(embeddings, down=True)
    degraded = RedisMemoryStore(
        store.client,
        flaky,
        **settings.model_copy(update={"circuit_failure_threshold": 2, "circuit_reset_seconds": 0.3}).parts(
            *STORE_PARTS
        ),
    )
    for _ in range(4):  # every search answers by keyword; after 2 failures the embedder is not called
        hits = await degraded.search_memories("alice", "Lyon")
        assert hits[0].memory.text == "I live in Lyon"
    assert flaky.calls == 2 and degraded.embedder_breaker.state == "open"

    flaky.down = False
    await asyncio.sleep(0.35)
    hits = await degraded.search_memories("alice", "Lyon")
    assert flaky.calls == 3 and hits[0].vector_similarity > 0
    assert degraded.embedder_breaker.state == "closed"
