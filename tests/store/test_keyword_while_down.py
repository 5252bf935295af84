"""Keyword-findable while the embedder is down (issue 54): a message stored during an outage is
indexed at once without its vector, so its exact words find it (in both languages), and it is
embedded when the embedder is back, after which a search by meaning finds it too."""

from __future__ import annotations

from test_messages import chat, flaky_store

from memlane.store.ids import message_memory_id
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField


async def test_a_message_stored_while_the_embedder_is_down_is_found_by_its_words_then_by_meaning(
    store: RedisMemoryStore, settings, embeddings
):
    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    await degraded.add_messages(chat("alice", "s1", "My locker code at the gym is 7319", "我下周去成都出差"))
    key = store.layout.memory("alice", message_memory_id("m0"))
    assert not await store.client.hexists(key, MemoryField.EMBEDDING)  # indexed without its vector
    for query, text in [("locker code 7319", "My locker code at the gym is 7319"), ("成都出差", "我下周去成都出差")]:
        hits = await degraded.search_memories("alice", query)
        assert hits and hits[0].memory.text == text and hits[0].vector_similarity == 0
    assert await store.search_memories("alice", "locker code 7319")  # a store whose embedder works finds it too

    flaky.down = False
    assert await degraded.reindex_pending("alice") == 2  # the embedder is back: embedded now
    assert await store.client.hexists(key, MemoryField.EMBEDDING)
    by_meaning = await degraded.search_memories("alice", "the combination for my gym locker", kinds=["message"])
    assert by_meaning[0].memory.text == "My locker code at the gym is 7319" and by_meaning[0].vector_similarity > 0
    vector = await embeddings.aembed_query("the combination for my gym locker")
    [(nearest, similarity)] = await degraded.search.nearest_memories("alice", vector, limit=1)  # by its vector alone
    assert nearest.id == "message:m0" and similarity > 0.5
    assert await degraded.reindex_pending("alice") == 0
