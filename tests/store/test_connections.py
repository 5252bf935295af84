"""The store's connection pool: bursts of chats wait for a connection; a busy pool says so."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from conftest import drop_prefix

from memlane.recall import RecallParts, recall
from memlane.store.errors import RedisUnavailable
from memlane.store.records import Message
from memlane.store.redis.connections import RedisPoolExhausted
from memlane.store.redis.store import open_store


@pytest_asyncio.fixture(loop_scope="session")
async def open_store_for(settings, embeddings):
    """`await open_store_for(**setting_overrides)`: stores made by `open_store`, dropped afterwards."""
    stores = []

    async def make(**overrides):
        store = await open_store(settings.model_copy(update=overrides), embeddings=embeddings)
        stores.append(store)
        return store

    yield make
    for store in stores:
        await drop_prefix(store.client, settings.key_prefix)
        await store.aclose()


async def test_many_chats_at_once_wait_for_a_connection_instead_of_failing(open_store_for, settings):
    store = await open_store_for(redis_max_connections=8)
    # one recall holds about five connections at once: 25 of them used to fail 21 of 25
    recalls = await asyncio.gather(
        *(recall(store, f"u{i}", "s", "what do I like?", parts=RecallParts.of(settings)) for i in range(25)),
        return_exceptions=True,
    )
    assert [r for r in recalls if isinstance(r, BaseException)] == []

    turns = [
        [
            Message(id=f"m{i}-{role}", user_id=f"u{i}", session_id="s", role=role, content=f"{role} {i}")
            for role in ("user", "assistant")
        ]
        for i in range(60)
    ]
    saved = await asyncio.gather(*(store.add_messages(turn) for turn in turns), return_exceptions=True)
    assert [r for r in saved if isinstance(r, BaseException)] == []
    assert [len(await store.recent_messages(f"u{i}", "s")) for i in range(60)] == [2] * 60
    assert store.client.connection_pool.max_connections == 8


async def test_a_pool_that_stays_busy_says_which_setting_to_raise(open_store_for):
    store = await open_store_for(redis_max_connections=1, redis_pool_timeout_seconds=0.2)
    pool = store.client.connection_pool
    held = await pool.get_connection()  # another call holds the only connection
    try:
        with pytest.raises(RedisPoolExhausted, match="MEMLANE_REDIS_MAX_CONNECTIONS") as failure:
            await store.get_cursor("u")
        assert not isinstance(failure.value, RedisUnavailable)
        assert "stopped answering" not in str(failure.value)
    finally:
        await pool.release(held)
    assert await store.get_cursor("u") == 0  # the connection is back: the next call goes through


async def test_the_store_knows_when_redis_last_answered(open_store_for):
    # what tells a busy process (its calls still get replies) from a frozen Redis: memlane/turns.py
    store = await open_store_for()
    await store.get_cursor("u")
    assert store.answered_within(5.0)
    await asyncio.sleep(0.3)
    assert not store.answered_within(0.2)
