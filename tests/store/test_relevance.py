"""The relevance every door shows (store/relevance.py): of the query and the memory alone. Pure
parts without Redis; then the store's search and `relevances` on one Redis and on a cluster."""

from __future__ import annotations

import time
from datetime import UTC

from memlane.store.records import Memory, Message
from memlane.store.relevance import QueryReading, read_query, relevance_of
from memlane.store.text.time_words import TimeScope

TOLERANCE = 1e-6


def test_the_relevance_reads_the_pair_alone():
    reading = read_query("what coffee do I drink?", reference_time=time.time(), zone=UTC)
    weighed = relevance_of(reading, "I drink black coffee", time.time(), 0.6)
    assert 0 < weighed < 1
    assert relevance_of(reading, "I drink black coffee", time.time(), 0.6) == weighed  # nothing else counts
    assert relevance_of(reading, "I drink black coffee", time.time(), 0.9) > weighed  # nearer
    assert relevance_of(reading, "the weather in Lyon", time.time(), 0.6) < weighed  # none of its words
    unrelated = relevance_of(QueryReading((), TimeScope(), UTC), "anything", time.time(), 0.0)
    assert unrelated < 0.01  # an everyday request's best hit is not shown as sure


def test_a_time_the_query_names_counts_for_the_memories_of_that_time():
    now = time.time()
    reading = read_query("what did I eat yesterday?", reference_time=now, zone=UTC)
    assert reading.scope and "yesterday" not in reading.terms
    assert relevance_of(reading, "pasta", now - 86_400, 0.5) > relevance_of(reading, "pasta", now - 30 * 86_400, 0.5)


async def relevance_at_every_search(store, user_id: str, query: str) -> dict[str, set[float]]:
    """Each memory's relevance in every search that finds it: every kind alone and together, at
    every limit."""
    seen: dict[str, set[float]] = {}
    for kinds in (None, ["message"], ["event"], ["profile"], ["event", "message"]):
        for limit in (1, 2, 5, 20):
            for hit in await store.search_memories(user_id, query, kinds=kinds, limit=limit):
                seen.setdefault(hit.memory.id, set()).add(hit.relevance)
    return seen


async def check_one_relevance(store, user_id: str) -> None:
    query = "Which coffee does Alice like?"
    said = [("Alice", "I like my coffee black."), ("Bob", "Alice likes flat whites, I think.")]
    await store.add_messages(
        [
            Message(id=f"m{n}", user_id=user_id, session_id="s1", role="user", name=name, content=text)
            for n, (name, text) in enumerate(said)
        ]
    )
    await store.add_memories(
        [
            Memory(id="event:n1", user_id=user_id, kind="event", text="Alice roasts her own coffee beans"),
            Memory(id="profile:p1", user_id=user_id, kind="profile", text="diet / coffee: black, no sugar"),
        ]
    )
    before = await relevance_at_every_search(store, user_id, query)
    assert len(before) == 4
    reference = await store.relevances(user_id, query, sorted(before))
    for memory_id, values in before.items():
        assert max(values) - min(values) <= TOLERANCE, (memory_id, values)
        assert abs(reference[memory_id] - min(values)) <= TOLERANCE, (memory_id, values, reference[memory_id])
    # whatever else is found: more memories, nearer ones too, change no one's relevance
    await store.add_memories(
        [
            Memory(id=f"event:more{n}", user_id=user_id, kind="event", text=f"Alice's coffee cup number {n}")
            for n in range(8)
        ]
    )
    after = await relevance_at_every_search(store, user_id, query)
    for memory_id, values in after.items():
        if memory_id in reference:
            assert all(abs(value - reference[memory_id]) <= TOLERANCE for value in values), (memory_id, values)
    assert set(after) > set(before)
    assert await store.relevances(user_id, query, ["event:nobody-has-it"]) == {}


async def test_one_memory_one_relevance_whatever_was_asked_or_found(store):
    await check_one_relevance(store, "alice")


async def test_one_memory_one_relevance_on_a_cluster(cluster_store):
    await check_one_relevance(cluster_store, "alice")
