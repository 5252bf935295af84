"""The whole user (store/redis/users.py): export holds everything, delete removes everything, and
hostile ids see nothing of other users."""

from __future__ import annotations

import json

import pytest
from conftest import HOSTILE_IDS
from test_messages import chat

from memlane.store.records import Event, Memory, MemoryUpdate, ProfileEntry, SessionSummary
from memlane.store.redis.store import RedisMemoryStore


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_hostile_ids_work_and_never_see_other_users(store: RedisMemoryStore, hostile: str):
    await store.add_messages(chat("victim", "s", "victim secret coffee order"))
    await store.add_messages(chat(hostile, hostile, "my own coffee note"))
    await store.add_memories(
        [Memory(id=hostile, user_id=hostile, kind="profile", text="coffee lover", session_id=hostile)]
    )
    await store.apply_update(
        MemoryUpdate(
            user_id=hostile,
            upsert_profile=[ProfileEntry(user_id=hostile, topic=hostile, subtopic=hostile, content="x")],
            event=Event(id=hostile, user_id=hostile, summary="coffee event"),
        )
    )
    hits = await store.search_memories(hostile, "coffee", session_id=None, limit=50)
    assert hits and all(hit.memory.user_id == hostile for hit in hits)
    assert {h.memory.id for h in await store.search_memories(hostile, "coffee", session_id=hostile)} == {
        hostile,
        "message:m0",
    }
    assert [m.content for m in await store.recent_messages(hostile, hostile)] == ["my own coffee note"]
    assert len(await store.get_profile(hostile)) == 1 and len(await store.list_events(hostile)) == 1
    assert await store.list_sessions(hostile) == [hostile]
    export = await store.export_user(hostile)
    assert export.user_id == hostile and len(export.memories) == 2
    assert await store.delete_user(hostile) > 0
    assert await store.search_memories(hostile, "coffee") == []
    victim_hits = await store.search_memories("victim", "coffee")
    assert [hit.memory.text for hit in victim_hits] == ["victim secret coffee order"]


async def test_delete_user_removes_everything_and_export_holds_everything(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "I am a nurse in Lyon", "我喜欢黑咖啡"))
    await store.set_session_summary(SessionSummary(user_id="alice", session_id="s1", summary="nurse, coffee"))
    entry = ProfileEntry(user_id="alice", topic="work", subtopic="title", content="nurse", source_message_ids=["m0"])
    await store.apply_update(
        MemoryUpdate(
            user_id="alice",
            upsert_profile=[entry],
            event=Event(id="e", user_id="alice", summary="work"),
            advance_cursor_to=1,
        )
    )
    await store.add_messages(chat("bob", "s1", "bob's message"))

    exported = json.loads((await store.export_user("alice")).model_dump_json())
    assert [m["content"] for m in exported["messages"]] == ["I am a nurse in Lyon", "我喜欢黑咖啡"]
    assert exported["profile"][0]["content"] == "nurse"
    assert exported["events"][0]["id"] == "e"
    assert exported["session_summaries"][0]["summary"] == "nurse, coffee"
    assert len(exported["memories"]) == 2 and exported["cursor"] == 1

    assert await store.delete_user("alice") > 0
    empty = await store.export_user("alice")
    assert (empty.messages, empty.profile, empty.events, empty.memories, empty.cursor) == ([], [], [], [], 0)
    assert [m.content for m in await store.recent_messages("bob", "s1")] == ["bob's message"]
