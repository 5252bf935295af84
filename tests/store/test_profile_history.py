"""Profile entry edits and their history: edit_profile_entry, profile_history, revisions from
apply_update and delete_profile_entry, history in export and gone with delete_user."""

from __future__ import annotations

import math

import pytest
from memory_graph_helpers import said_then_changed

from memlane.store.errors import InvalidInput
from memlane.store.ids import message_memory_id, profile_memory_id
from memlane.store.records import Event, Memory, MemoryUpdate, Message, ProfileEntry, UserExport
from memlane.store.redis.store import RedisMemoryStore


def entry_update(user_id: str, content: str, *, confidence: float = 0.8, event_id: str | None = "e1") -> MemoryUpdate:
    entry = ProfileEntry(user_id=user_id, topic="work", subtopic="title", content=content, confidence=confidence)
    memory = Memory(
        id=profile_memory_id(entry.id),
        user_id=user_id,
        kind="profile",
        text=f"work / title: {content}",
        ref_id=entry.id,
    )
    event = Event(id=event_id, user_id=user_id, summary=f"learned: {content}") if event_id else None
    return MemoryUpdate(user_id=user_id, upsert_profile=[entry], memories=[memory], event=event)


async def test_edits_are_recorded_oldest_first_with_actor_and_before_after(store: RedisMemoryStore):
    await store.apply_update(entry_update("alice", "nurse", event_id="run-1"))
    entry_id = (await store.get_profile("alice"))[0].id
    await store.apply_update(entry_update("alice", "nurse", event_id="run-1"))  # redelivered: no revision
    edited = await store.edit_profile_entry("alice", entry_id, content="head nurse", actor="api:ops")
    assert edited is not None and edited.content == "head nurse"
    assert (await store.edit_profile_entry("alice", entry_id, confidence=0.3)).confidence == 0.3
    await store.edit_profile_entry("alice", entry_id, content="head nurse")  # unchanged: no revision
    await store.apply_update(entry_update("alice", "ward manager", event_id="run-2"))
    assert await store.delete_profile_entry("alice", entry_id, actor="cli") is True

    history = await store.profile_history("alice", entry_id)
    assert [(r.action, r.actor) for r in history] == [
        ("add", "run:run-1"),
        ("update", "api:ops"),
        ("update", "user"),
        ("update", "run:run-2"),
        ("delete", "cli"),
    ]
    assert (history[0].before_content, history[0].after_content) == (None, "nurse")
    assert (history[1].before_content, history[1].after_content) == ("nurse", "head nurse")
    assert (history[2].before_confidence, history[2].after_confidence) == (0.8, 0.3)
    assert (history[4].before_content, history[4].after_content) == ("ward manager", None)
    assert all(r.topic == "work" and r.subtopic == "title" and r.entry_id == entry_id for r in history)
    assert [r.at for r in history] == sorted(r.at for r in history)


async def test_an_update_without_an_event_is_a_plain_run(store: RedisMemoryStore):
    await store.apply_update(entry_update("alice", "nurse", event_id=None))
    update = entry_update("alice", "doctor", event_id=None).model_copy(update={"actor": "tool"})
    await store.apply_update(update)
    entry_id = (await store.get_profile("alice"))[0].id
    assert [r.actor for r in await store.profile_history("alice", entry_id)] == ["run", "tool"]


async def test_editing_content_re_embeds_the_mirror_memory(store: RedisMemoryStore):
    await store.apply_update(entry_update("alice", "drinks black coffee"))
    entry_id = (await store.get_profile("alice"))[0].id
    await store.edit_profile_entry("alice", entry_id, content="drinks green tea")
    hits = await store.search_memories("alice", "green tea", kinds=["profile"])
    assert [hit.memory.text for hit in hits] == ["work / title: drinks green tea"]
    assert hits[0].vector_similarity > 0.9
    assert all("coffee" not in hit.memory.text for hit in await store.search_memories("alice", "coffee"))


async def test_edits_are_validated_and_a_missing_entry_is_none(store: RedisMemoryStore):
    await store.apply_update(entry_update("alice", "nurse"))
    entry_id = (await store.get_profile("alice"))[0].id
    for bad in (
        {"content": "   "},
        {"content": "\x00"},
        {"confidence": 1.5},
        {"confidence": -0.1},
        {"confidence": math.nan},
    ):
        with pytest.raises(InvalidInput):
            await store.edit_profile_entry("alice", entry_id, **bad)
    assert (await store.get_profile("alice"))[0].content == "nurse"
    assert await store.edit_profile_entry("alice", "no-such-entry", content="x") is None
    assert await store.edit_profile_entry("bob", entry_id, content="x") is None  # another user's id
    assert len(await store.profile_history("alice", entry_id)) == 1


async def test_history_is_exported_and_goes_with_the_user(store: RedisMemoryStore):
    await store.apply_update(entry_update("alice", "nurse"))
    entry_id = (await store.get_profile("alice"))[0].id
    await store.edit_profile_entry("alice", entry_id, content="doctor")
    await store.apply_update(entry_update("bob", "pilot"))
    export = await store.export_user("alice")
    assert [(r.action, r.after_content) for r in export.profile_history] == [("add", "nurse"), ("update", "doctor")]
    assert UserExport.model_validate_json(export.model_dump_json()).profile_history == export.profile_history
    legacy = export.model_dump(exclude={"profile_history"})
    assert UserExport.model_validate(legacy).profile_history == []  # exports made before history still load

    await store.delete_user("alice")
    assert await store.profile_history("alice", entry_id) == []
    assert (await store.export_user("alice")).profile_history == []
    bob_entry = (await store.get_profile("bob"))[0].id
    assert len(await store.profile_history("bob", bob_entry)) == 1


async def test_history_keeps_the_newest_revisions(store: RedisMemoryStore):
    store = store.with_settings(profile_history_max_revisions=3)
    await store.apply_update(entry_update("alice", "v0"))
    entry_id = (await store.get_profile("alice"))[0].id
    for version in range(1, 6):
        await store.edit_profile_entry("alice", entry_id, content=f"version {version}")
    assert [r.after_content for r in await store.profile_history("alice", entry_id)] == [
        "version 3",
        "version 4",
        "version 5",
    ]


# --- facts that change (issue 22) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "topic", "subtopic", "question"),
    [
        ("我住在北京", "我上周搬到上海了", "居住", "城市", "我以前住哪？"),
        ("I live in Boston", "I moved to Denver last week", "home", "city", "Where did I live before?"),
    ],
)
async def test_an_update_keeps_the_replaced_content_as_a_dated_searchable_past_value(
    store: RedisMemoryStore, old: str, new: str, topic: str, subtopic: str, question: str
):
    changed_at = await said_then_changed(store, "ann", old, new, topic=topic, subtopic=subtopic)
    [entry] = await store.get_profile("ann")
    assert entry.content == new and entry.valid_from == pytest.approx(
        changed_at
    )  # when it was said, not the run's clock
    [past] = await store.past_values("ann")
    assert (past.content, past.valid_until) == (old, pytest.approx(changed_at))
    assert past.valid_from is not None and past.valid_from < changed_at
    hits = await store.search_memories("ann", question, limit=5)
    found = {hit.memory.id: hit.memory for hit in hits}
    assert past.as_memory().id in found and found[past.as_memory().id].status == "earlier"
    # the turn that said the old fact is marked; the one that said the new is not
    turns = {hit.memory.id: hit.memory for hit in await store.search_memories("ann", old, kinds=["message"], limit=5)}
    assert turns[message_memory_id("ann-1")].valid_until == pytest.approx(changed_at)
    assert turns[message_memory_id("ann-2")].valid_until is None
    # so is the first run's event card, made of the old turn alone (dated by it, not by the run)
    cards = sorted((event for event in await store.list_events("ann")), key=lambda event: event.created_at)
    assert [card.source_message_ids for card in cards] == [["ann-1"], ["ann-2"]]
    assert cards[0].created_at == pytest.approx(past.valid_from) and cards[1].created_at == pytest.approx(changed_at)
    events = {
        hit.memory.ref_id: hit.memory for hit in await store.search_memories("ann", old, kinds=["event"], limit=5)
    }
    assert events[cards[0].id].valid_until == pytest.approx(changed_at) and events[cards[1].id].valid_until is None


async def test_an_append_or_a_user_edit_keeps_no_past_value(store: RedisMemoryStore):
    await store.apply_update(entry_update("bo", "nurse", event_id="run-1"))
    entry_id = (await store.get_profile("bo"))[0].id
    await store.apply_update(entry_update("bo", "nurse; night shifts", event_id="run-2"))  # an APPEND
    await store.edit_profile_entry("bo", entry_id, content="head nurse")  # a correction, not a change over time
    assert await store.past_values("bo") == []


@pytest.mark.parametrize(
    ("old", "new", "topic", "subtopic"),
    [
        ("我住在北京", "我上周搬到上海了", "居住", "城市"),
        ("I live in Boston", "I moved to Denver last week", "home", "city"),
    ],
)
@pytest.mark.parametrize("how", ["forget", "delete_profile_entry"])
async def test_forgetting_a_fact_forgets_its_past_values(
    store: RedisMemoryStore, old: str, new: str, topic: str, subtopic: str, how: str
):
    await said_then_changed(store, "ann", old, new, topic=topic, subtopic=subtopic)
    [entry] = await store.get_profile("ann")
    assert [value.content for value in await store.past_values("ann")] == [old]
    if how == "forget":  # the slot's name is the fact: every value it held goes
        await store.forget("ann", f"{topic} {subtopic}")
    else:
        assert await store.delete_profile_entry("ann", entry.id)
    assert await store.get_profile("ann") == []
    hits = await store.search_memories("ann", old, limit=20)
    assert not [hit for hit in hits if hit.memory.kind == "profile"]  # no "earlier: …" left to recall
    assert await store.past_values("ann") == []
    history = await store.profile_history("ann", entry.id)
    if how == "forget":
        assert all(r.before_content is None and r.after_content is None for r in history)
    else:  # a delete keeps the audit of the entry (forget is what scrubs history)
        assert history[-1].action == "delete" and history[-1].before_content == new
