"""The memory graph's one write (store/redis/updates.py): profile, event, memories and cursor in one
transaction, idempotent, for one user only."""

from __future__ import annotations

import pytest
from test_messages import chat

from memlane.store.errors import StoreError
from memlane.store.ids import profile_memory_id
from memlane.store.records import Event, Memory, MemoryUpdate, ProfileChange, ProfileEntry
from memlane.store.redis.store import RedisMemoryStore


async def test_apply_update_writes_profile_event_memories_and_cursor_idempotently(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "我喜欢黑咖啡，不加糖", "我在加班"), index_for_search=False)
    entry = ProfileEntry(
        user_id="alice", topic="饮食", subtopic="咖啡", content="喜欢黑咖啡，不加糖", source_message_ids=["m0"]
    )
    event = Event(
        id="e1",
        user_id="alice",
        summary="用户说喜欢黑咖啡",
        tags=["饮食偏好"],
        profile_delta=[
            ProfileChange(action="add", entry_id=entry.id, topic="饮食", subtopic="咖啡", content=entry.content)
        ],
        source_message_ids=["m0", "m1"],
    )
    update = MemoryUpdate(
        user_id="alice",
        upsert_profile=[entry],
        event=event,
        memories=[
            Memory(
                id=profile_memory_id(entry.id),
                user_id="alice",
                kind="profile",
                text="饮食/咖啡: 喜欢黑咖啡，不加糖",
                source_message_ids=["m0"],
                ref_id=entry.id,
            ),
            Memory(id="event:e1", user_id="alice", kind="event", text=event.summary, source_message_ids=["m0", "m1"]),
        ],
        advance_cursor_to=2,
    )
    await store.apply_update(update)
    await store.apply_update(update)  # at-least-once delivery: a second apply changes nothing
    profile = await store.get_profile("alice")
    assert [(e.topic, e.subtopic, e.content) for e in profile] == [("饮食", "咖啡", "喜欢黑咖啡，不加糖")]
    events = await store.list_events("alice")
    assert [e.id for e in events] == ["e1"] and events[0].tags == ["饮食偏好"]
    assert await store.get_cursor("alice") == 2
    assert await store.unprocessed_messages("alice") == []
    hits = await store.search_memories("alice", "咖啡")
    assert sorted(hit.memory.kind for hit in hits) == ["event", "profile"]
    assert all(hit.memory.source_message_ids for hit in hits)

    await store.apply_update(MemoryUpdate(user_id="alice", delete_profile_ids=[entry.id]))
    assert await store.get_profile("alice") == []
    assert [hit.memory.kind for hit in await store.search_memories("alice", "咖啡")] == ["event"]


async def test_apply_update_refuses_records_of_another_user(store: RedisMemoryStore):
    entry = ProfileEntry(user_id="mallory", topic="work", subtopic="role", content="admin")
    with pytest.raises(StoreError, match="another user"):
        await store.apply_update(MemoryUpdate(user_id="alice", upsert_profile=[entry]))
    assert await store.get_profile("alice") == [] and await store.get_profile("mallory") == []
