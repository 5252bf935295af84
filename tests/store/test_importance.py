"""Importance (store/fusion.py's `importance_ranking`): a memory marked above the neutral 0.5 gets a
vote in the fusion that grows with its importance; at 0.5 (the default, and every memory written
before importance was kept) nothing votes and no order changes. Stored on notes and profile entries
through their search memory."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memlane.store.fusion import importance_ranking
from memlane.store.records import REMEMBERED_TAG, Event, Memory, ProfileEntry
from memlane.store.redis.search import Ranking
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField


def test_the_ranking_holds_only_what_is_above_neutral_most_important_first(store: RedisMemoryStore):
    docs = [
        {"id": "a", MemoryField.IMPORTANCE: "0.5"},
        {"id": "b", MemoryField.IMPORTANCE: "0.75"},
        {"id": "c", MemoryField.IMPORTANCE: b"1.0"},
        {"id": "d", MemoryField.IMPORTANCE: "0.2"},
        {"id": "e"},  # written before importance was kept: neutral
    ]
    ranking = importance_ranking([Ranking("vector", 1.0, docs)], store.core.search)
    assert ranking is not None and [doc["id"] for doc in ranking.docs] == ["c", "b"]
    assert ranking.factors == [pytest.approx(1.0), pytest.approx(0.5)]
    neutral = [{"id": "a", MemoryField.IMPORTANCE: "0.5"}, {"id": "e"}]
    assert importance_ranking([Ranking("vector", 1.0, neutral)], store.core.search) is None
    off = store.with_settings(search_importance_weight=0.0)
    assert importance_ranking([Ranking("vector", 1.0, docs)], off.core.search) is None


def test_importance_outside_zero_to_one_is_refused_with_what_it_must_be():
    with pytest.raises(ValidationError, match="importance"):
        Memory(id="m", user_id="ann", kind="event", text="x", importance=1.5)
    with pytest.raises(ValidationError, match="importance"):
        ProfileEntry(user_id="ann", topic="work", subtopic="title", content="x", importance=-0.1)


@pytest.mark.parametrize(
    ("texts", "query"),
    [
        (("Ann's dentist appointment is on Friday", "Ann's dentist appointment is on Monday"), "When is the dentist?"),
        (("安的牙医预约在周五", "安的牙医预约在周一"), "牙医预约是什么时候？"),
    ],
)
async def test_a_note_at_0_9_ranks_above_an_equal_one_at_0_5(
    store: RedisMemoryStore, texts: tuple[str, str], query: str
):
    notes = [
        Event(id=f"n{i}", user_id="ann", summary=text, tags=[REMEMBERED_TAG], created_at=1_790_000_000.0)
        for i, text in enumerate(texts)
    ]
    await store.add_memories([note.as_memory() for note in notes])
    neutral = [hit.memory.ref_id for hit in await store.search_memories("ann", query, limit=2)]
    assert sorted(neutral) == ["n0", "n1"]
    second = next(note for note in notes if note.id == neutral[1])
    await store.add_memories([second.model_copy(update={"importance": 0.9}).as_memory()])
    hits = await store.search_memories("ann", query, limit=2)
    assert [hit.memory.ref_id for hit in hits] == neutral[::-1]  # the one marked 0.9 first now
    assert {hit.memory.ref_id: hit.memory.importance for hit in hits} == {neutral[0]: 0.5, neutral[1]: 0.9}
    off = store.with_settings(search_importance_weight=0.0)  # its ablation: the order without the vote
    assert [hit.memory.ref_id for hit in await off.search_memories("ann", query, limit=2)] == neutral


async def test_neutral_importance_everywhere_changes_no_order(store: RedisMemoryStore):
    texts = [
        "I moved to Lyon in March",
        "My sister lives in Lyon too",
        "We hiked near Lyon last weekend",
        "我在里昂工作",
        "I prefer tea to coffee",
        "The launch moved to May",
    ]
    await store.add_memories(
        [
            Memory(id=f"m{i}", user_id="ann", kind="event", text=text, created_at=1_790_000_000.0 + i)
            for i, text in enumerate(texts)
        ]
    )
    off = store.with_settings(search_importance_weight=0.0)
    for query in ("Where do I live?", "Lyon", "里昂", "launch"):
        with_vote = [(hit.memory.id, hit.relevance) for hit in await store.search_memories("ann", query, limit=6)]
        without = [(hit.memory.id, hit.relevance) for hit in await off.search_memories("ann", query, limit=6)]
        assert with_vote == without


async def test_a_profile_entry_keeps_its_importance_through_its_search_memory(store: RedisMemoryStore):
    entry = ProfileEntry(user_id="ann", topic="work", subtopic="deadline", content="report due Monday", importance=0.8)
    await store.add_memories([entry.as_memory()])
    [hit] = await store.search_memories("ann", "report deadline", limit=1)
    assert hit.memory.importance == 0.8 and hit.memory.ref_id == entry.id
