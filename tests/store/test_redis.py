"""The facade (store/redis/store.py): `RedisMemoryStore` is the `MemoryStore` protocol, each method
answered by the part its module names, and a Redis that goes away is a clear error (store/redis/core.py).
What each part does is tested in the file named after its module (test_messages.py, test_search.py …)."""

from __future__ import annotations

import inspect

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from test_messages import chat

from memlane.store.errors import RedisUnavailable
from memlane.store.protocols import MemoryStore
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore


def test_the_store_is_the_protocol_with_its_signatures(store: RedisMemoryStore):
    assert isinstance(store, MemoryStore)
    for name, declared in inspect.getmembers(MemoryStore, inspect.isfunction):
        if name.startswith("_"):
            continue
        answered = getattr(RedisMemoryStore, name)
        assert inspect.signature(answered) == inspect.signature(declared), name
        assert inspect.iscoroutinefunction(answered) == inspect.iscoroutinefunction(declared), name


async def test_a_redis_that_goes_away_gives_a_clear_error(settings, embeddings):
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    dead = RedisMemoryStore(client, embeddings, **settings.parts(*STORE_PARTS))
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await dead.add_messages(chat("alice", "s1", "hello"))
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await dead.search_memories("alice", "hello")
    await client.aclose()
