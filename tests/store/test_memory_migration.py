"""A keyspace written in the previous layout (float32 vectors, the longer field names) opened by a store that
keeps float16 vectors (store/vectors.py) and short names (store/redis/memory_migration.py): every memory is still
there, found as before, unchanged to the content digest; and the way back to float32."""

from __future__ import annotations

import asyncio
import copy

import redis.asyncio as aioredis
from redis.commands.search.index_definition import IndexDefinition, IndexType

from memlane.config import Settings
from memlane.store.records import Memory
from memlane.store.redis.memory_migration import PREVIOUS_NAMES
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore
from memlane.store.schema import INDEX_LANGUAGE, MemoryField

MEMORIES = [
    Memory(id="coffee", user_id="alice", kind="event", text="I drink black coffee every morning", session_id="s1"),
    Memory(id="sister", user_id="alice", kind="profile", text="My sister lives in Lyon"),
    Memory(
        id="tea", user_id="alice", kind="message", text="我喜欢喝绿茶，不加糖", speaker="朋友A", speaker_role="other"
    ),
    Memory(id="chess", user_id="bob", kind="event", text="Bob plays chess on Sundays", metadata={"project": "p1"}),
]
QUERIES = ["what coffee do I drink", "where does my sister live", "绿茶", "chess"]


async def opened(settings: Settings, embeddings, datatype: str) -> RedisMemoryStore:
    client = aioredis.Redis.from_url(settings.redis_url)
    parts = settings.model_copy(update={"vector_datatype": datatype}).parts(*STORE_PARTS)
    store = RedisMemoryStore(client, embeddings, **parts)
    await store.ensure_indexes()
    return store


async def indexed(store: RedisMemoryStore, count: int) -> dict:
    """FT.INFO once the index holds `count` documents (a rebuilt index reads the hashes in the background)."""
    for _ in range(100):
        info = await store.client.ft(store.layout.memory_index_name).info()
        if int(info["num_docs"]) == count and not int(info.get("indexing", 0)):
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"the index did not reach {count} documents: {info['num_docs']}")


async def as_previous_layout(store: RedisMemoryStore) -> None:
    """The store's keyspace as the previous memlane wrote it: each hash's fields under their longer names, an
    index over those names."""
    client, name = store.client, store.layout.memory_index_name
    await client.ft(name).dropindex(delete_documents=False)
    async for key in client.scan_iter(match=store.layout.memory_key_prefix + "*"):
        row = {field.decode(): value for field, value in (await client.hgetall(key)).items()}
        await client.hset(key, mapping={PREVIOUS_NAMES.get(field, field): value for field, value in row.items()})
        await client.hdel(key, *[field for field in row if field in PREVIOUS_NAMES])
    fields = copy.deepcopy(store.schema.redis_fields)
    for field in fields:
        field.name = PREVIOUS_NAMES.get(field.name, field.name)
    definition = IndexDefinition(
        prefix=[store.layout.memory_key_prefix], index_type=IndexType.HASH, language=INDEX_LANGUAGE
    )
    await client.ft(name).create_index(fields, definition=definition)


def vector_type(info: dict) -> str:
    for attribute in info["attributes"]:
        flat = [item.decode() if isinstance(item, bytes) else item for item in attribute]
        if {MemoryField.EMBEDDING, "embedding"} & set(flat):
            return str(flat[flat.index("data_type") + 1])
    raise AssertionError("no vector field")


async def answers(store: RedisMemoryStore) -> list[list[tuple[str, float]]]:
    """Each query's hits (id, cosine similarity) for each user."""
    return [
        [(hit.memory.id, hit.vector_similarity) for hit in await store.search_memories(user, query, limit=3)]
        for user in ("alice", "bob")
        for query in QUERIES
    ]


def same_answers(found: list[list[tuple[str, float]]], expected: list[list[tuple[str, float]]]) -> bool:
    """The same hits in the same order, each similarity within float16's rounding of the other."""
    return all(
        [hit for hit, _ in got] == [hit for hit, _ in wanted]
        and all(abs(a - b) < 0.005 for (_, a), (_, b) in zip(got, wanted))
        for got, wanted in zip(found, expected, strict=True)
    )


async def test_a_keyspace_of_the_previous_layout_is_moved_to_this_one_and_back_with_every_memory(
    settings: Settings, embeddings
):
    old = await opened(settings, embeddings, "float32")
    try:
        await old.add_memories(MEMORIES)
        assert vector_type(await indexed(old, len(MEMORIES))) == "FLOAT32"
        before = await answers(old)
        stored_before = {user: await old.memories.of_user(user) for user in ("alice", "bob")}
        key = old.layout.memory("alice", "coffee")
        assert len(await old.client.hget(key, MemoryField.EMBEDDING)) == 4 * old.core.dims
        digest = await old.client.hget(key, MemoryField.CONTENT_DIGEST)
        await as_previous_layout(old)
        assert await old.client.hget(key, "embedding") and not await old.client.hget(key, MemoryField.EMBEDDING)
        assert vector_type(await indexed(old, len(MEMORIES))) == "FLOAT32"

        new = await opened(settings, embeddings, "float16")  # the migration runs as it opens
        info = await indexed(new, len(MEMORIES))
        assert vector_type(info) == "FLOAT16" and int(info["hash_indexing_failures"]) == 0
        assert len(await new.client.hget(key, MemoryField.EMBEDDING)) == 2 * new.core.dims
        assert not set(PREVIOUS_NAMES.values()) & {field.decode() for field in await new.client.hkeys(key)}
        assert await new.client.hget(key, MemoryField.CONTENT_DIGEST) == digest  # unchanged: not rewritten again
        assert {user: await new.memories.of_user(user) for user in ("alice", "bob")} == stored_before
        assert same_answers(await answers(new), before)
        documents = int(info["max_doc_id"])
        await new.add_memories(MEMORIES)  # the same memories again: nothing rewritten
        assert int((await new.client.ft(new.layout.memory_index_name).info())["max_doc_id"]) == documents
        await new.client.aclose()

        back = await opened(settings, embeddings, "float32")  # and the way back
        assert vector_type(await indexed(back, len(MEMORIES))) == "FLOAT32"
        assert len(await back.client.hget(key, MemoryField.EMBEDDING)) == 4 * back.core.dims
        assert same_answers(await answers(back), before)
        await back.client.aclose()
    finally:
        await old.client.ft(old.layout.memory_index_name).dropindex(delete_documents=True)
        keys = [key async for key in old.client.scan_iter(match=f"{settings.key_prefix}:*")]
        if keys:
            await old.client.unlink(*keys)
        await old.client.aclose()
