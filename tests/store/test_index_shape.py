"""The memory index's shape (store/redis/index_shape.py): made without term offsets, created_at not sortable, its
vector index the setting's (FLAT by default); an index an older memlane made (offsets, a sortable created_at, HNSW) is
made again when a store opens, every memory found as before and no hash rewritten; and the HNSW option, whose graph is
walked for a user past `search_exact_max_memories`."""

from __future__ import annotations

import asyncio
import copy

import pytest_asyncio
import redis.asyncio as aioredis
from redis.commands.search.field import NumericField
from redis.commands.search.index_definition import IndexDefinition, IndexType

from memlane.config import Settings
from memlane.store.records import Memory
from memlane.store.redis.index_shape import reshaped
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore
from memlane.store.schema import INDEX_LANGUAGE, MemoryField

MEMORIES = [
    Memory(id="coffee", user_id="alice", kind="event", text="I drink black coffee every morning", session_id="s1"),
    Memory(id="sister", user_id="alice", kind="profile", text="My sister lives in Lyon"),
    Memory(
        id="tea", user_id="alice", kind="message", text="我喜欢喝绿茶，不加糖", speaker="朋友A", speaker_role="other"
    ),
    Memory(id="chess", user_id="bob", kind="event", text="Bob plays chess on Sundays"),
]
QUERIES = ["what coffee do I drink", "where does my sister live", "绿茶", "chess"]


@pytest_asyncio.fixture(loop_scope="session")
async def clients(settings: Settings):
    """The test Redis's clients the test opens, and its keys and index removed afterwards."""
    opened: list[aioredis.Redis] = []
    yield opened
    client = aioredis.Redis.from_url(settings.redis_url)
    try:
        await client.ft(f"{settings.key_prefix}_memories").dropindex(delete_documents=True)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{settings.key_prefix}:*")]
        if keys:
            await client.unlink(*keys)
        for each in [client, *opened]:
            await each.aclose()


async def opened(settings: Settings, embeddings, clients: list, **changes) -> RedisMemoryStore:
    client = aioredis.Redis.from_url(settings.redis_url)
    clients.append(client)
    store = RedisMemoryStore(client, embeddings, **settings.model_copy(update=changes).parts(*STORE_PARTS))
    await store.ensure_indexes()
    return store


async def indexed(store: RedisMemoryStore, documents: int = len(MEMORIES)) -> dict:
    """FT.INFO once the index holds every memory (a rebuilt index reads the hashes in the background)."""
    for _ in range(100):
        info = await store.client.ft(store.layout.memory_index_name).info()
        if int(info["num_docs"]) == documents and not int(info.get("indexing", 0)):
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"the index did not reach {documents} documents: {info['num_docs']}")


async def answers(store: RedisMemoryStore) -> list[list[str]]:
    return [
        [hit.memory.id for hit in await store.search_memories(user, query, limit=3)]
        for user in ("alice", "bob")
        for query in QUERIES
    ]


async def as_older_index(store: RedisMemoryStore) -> None:
    """The index as an older memlane made it: term offsets kept, created_at sortable."""
    client, name = store.client, store.layout.memory_index_name
    await client.ft(name).dropindex(delete_documents=False)
    fields = copy.deepcopy(store.schema.redis_fields)
    fields = [
        NumericField(MemoryField.CREATED_AT, sortable=True) if field.name == MemoryField.CREATED_AT else field
        for field in fields
    ]
    definition = IndexDefinition(
        prefix=[store.layout.memory_key_prefix], index_type=IndexType.HASH, language=INDEX_LANGUAGE
    )
    await client.ft(name).create_index(fields, definition=definition)


async def test_an_older_index_is_made_again_without_offsets_and_every_memory_is_found_as_before(
    settings: Settings, embeddings, clients
):
    store = await opened(settings, embeddings, clients)
    await store.add_memories(MEMORIES)
    info = await indexed(store)
    assert reshaped(info, "flat") == [] and "NOOFFSETS" in info["index_options"]
    before = await answers(store)
    assert before[0][0] == "coffee" and before[1][0] == "sister" and before[7] == ["chess"]
    key = store.layout.memory("alice", "coffee")
    digest = await store.client.hget(key, MemoryField.CONTENT_DIGEST)
    await as_older_index(store)
    assert reshaped(await indexed(store), "flat") == ["term offsets kept", "created_at sortable"]

    again = await opened(settings, embeddings, clients)  # made again as it opens
    info = await indexed(again)
    assert reshaped(info, "flat") == [] and int(info["hash_indexing_failures"]) == 0
    assert await again.client.hget(key, MemoryField.CONTENT_DIGEST) == digest  # the hashes kept as they were
    assert await answers(again) == before
    documents = int(info["max_doc_id"])
    await again.add_memories(MEMORIES)  # the same memories again: nothing rewritten
    assert int((await again.client.ft(again.layout.memory_index_name).info())["max_doc_id"]) == documents


async def test_the_hnsw_option_walks_its_graph_for_a_large_user_and_flat_is_made_again_after_it(
    settings: Settings, embeddings, clients
):
    store = await opened(settings, embeddings, clients)  # the default: FLAT, every search exact
    await store.add_memories(MEMORIES)
    info = await indexed(store)
    assert reshaped(info, "flat") == [] and reshaped(info, "hnsw") == ["a FLAT vector index, not hnsw"]
    before = await answers(store)
    assert before[0][0] == "coffee" and before[1][0] == "sister"

    # HNSW, every user past the exact bound: the graph is walked (BATCHES, EF_RUNTIME), per user still
    hnsw = await opened(settings, embeddings, clients, vector_index="hnsw", search_exact_max_memories=1)
    assert reshaped(await indexed(hnsw), "hnsw") == []
    alice = hnsw.search.user_filter("alice", None, None, None, None)
    assert "HYBRID_POLICY BATCHES" in hnsw.search.vector_query([0.1] * 384, alice, 3, approximate=True).query_string()
    assert await answers(hnsw) == before and "alice" in hnsw.search._counts  # counted: the count picks the mode
    hits = await hnsw.search_memories("alice", "coffee in the morning", limit=1)
    assert hits[0].memory.id == "coffee" and hits[0].vector_similarity > 0.5
    texts = ["drinks black coffee", "runs marathons", "lives in Lyon", "plays chess", "learns Japanese"]
    await hnsw.add_memories([Memory(id=f"a{i}", user_id="a|b", kind="profile", text=t) for i, t in enumerate(texts)])
    await hnsw.add_memories([Memory(id="v", user_id="a", kind="profile", text="drinks black coffee")])
    hits = await hnsw.search_memories("a|b", "what coffee do I drink", limit=3)  # the graph, one user's part
    assert hits[0].memory.id == "a0" and {hit.memory.user_id for hit in hits} == {"a|b"}

    back = await opened(settings, embeddings, clients)  # and back to FLAT, where no user is too large to be exact
    assert reshaped(await indexed(back, len(MEMORIES) + 6), "flat") == []
    assert "HYBRID_POLICY ADHOC_BF" in back.search.vector_query([0.1] * 384, alice, 3, approximate=True).query_string()
    assert await answers(back) == before
    assert back.search._counts == {}  # FLAT has no graph to walk: a search asks no count


def _iterators(profile: object) -> list[dict]:
    """Every iterator of an FT.PROFILE reply (RESP3), depth first."""
    found = []
    if isinstance(profile, dict):
        text = {(key.decode() if isinstance(key, bytes) else key): value for key, value in profile.items()}
        if "Type" in text:
            found.append(text)
        for value in text.values():
            found += _iterators(value)
    elif isinstance(profile, list):
        for value in profile:
            found += _iterators(value)
    return found


async def test_the_expiry_clause_reads_nothing_of_the_memories_that_never_expire(store: RedisMemoryStore):
    """`-@xa:[(0 now]` was answered from the numeric tree's leaf of every 0 (every memory of every user that never
    expires), read record by record in every search: a user's search grew with the index (docs/operations/redis.md)."""
    await store.add_memories(MEMORIES)
    query = str(store.search.user_filter("alice", None, None, None, None))
    reply = await store.client.execute_command(
        "FT.PROFILE", store.layout.memory_index_name, "SEARCH", "QUERY", query, "LIMIT", 0, 0, "DIALECT", 2
    )
    negated = [iterator for iterator in _iterators(reply) if iterator["Type"] in (b"NOT", "NOT")]
    assert len(negated) == 1
    [child] = _iterators(negated[0].get(b"Child iterator", negated[0].get("Child iterator")))
    assert child["Type"] in (b"EMPTY", "EMPTY"), child
    assert await store.search.memory_count("alice") == 3


def test_an_index_whose_info_names_no_options_is_not_made_again_on_every_open():
    """A Redis whose FT.INFO says nothing of the index's options: taken as made (no rebuild at each open)."""
    vector = ["identifier", "v", "attribute", "v", "type", "VECTOR", "algorithm", "HNSW", "dim", 384]
    assert reshaped({"attributes": [vector]}, "hnsw") == []
    assert reshaped({"attributes": [vector], "index_options": []}, "hnsw") == ["term offsets kept"]
    assert reshaped({"attributes": [vector]}, "flat") == ["a HNSW vector index, not flat"]


async def test_a_rebuilt_index_has_read_every_memory_when_the_store_opens(settings: Settings, embeddings, clients):
    """An upgrade rebuilds the index as the store opens (index_shape.py `wait_until_read`): the first
    search after it finds every memory, where it used to answer from the part read so far."""
    store = await opened(settings, embeddings, clients)
    await store.add_memories([Memory(id="m0", user_id="carol", kind="event", text="a note about a quokka")])
    template = await store.client.hgetall(store.layout.memory("carol", "m0"))
    many = 6000  # copies of its hash (embedding 6,000 texts would take a minute): enough for a scan that takes a while
    pipe = store.client.pipeline(transaction=False)
    for n in range(1, many):
        pipe.hset(store.layout.memory("carol", f"m{n}"), mapping={**template, MemoryField.ID.encode(): f"m{n}"})
    await pipe.execute()
    await as_older_index(store)

    again = await opened(settings, embeddings, clients)  # made again as it opens
    info = await again.client.ft(again.layout.memory_index_name).info()
    assert float(info["percent_indexed"]) == 1 and int(info["num_docs"]) == many
    assert await again.search.memory_count("carol") == many
