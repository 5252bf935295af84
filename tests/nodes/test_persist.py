"""The one write: idempotent, and the cursor moves only after it."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from memory_graph_helpers import CHINESE_CHAT, add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import compile_memory_graph, run_memory_graph
from memlane.nodes.persist import build_update, profile_delta
from memlane.store.records import ProfileEntry


async def test_crash_between_merge_and_persist_then_rerun(store, make_context):
    stored = await add_chat(store, "u", CHINESE_CHAT)
    context = make_context(scripted())

    # the worker dies after merge/organize/resummarize/tag, before persist
    crashed = compile_memory_graph(checkpointer=InMemorySaver(), interrupt_before=["persist"])
    config = {"configurable": {"thread_id": "crash"}}
    await crashed.ainvoke({"user_id": "u", "messages": await store.unprocessed_messages("u")}, config, context=context)
    snapshot = await crashed.aget_state(config)
    assert snapshot.next == ("persist",) and len(snapshot.values["working_profile"]) == 3

    assert await store.get_cursor("u") == 0
    assert await store.get_profile("u") == [] and await store.list_events("u") == []

    first = await run_memory_graph("u", context)
    assert await store.get_cursor("u") == stored[-1].seq

    # at-least-once delivery: the same buffer processed again must not duplicate anything
    replay = await compile_memory_graph().ainvoke(
        {"user_id": "u", "messages": stored}, context=make_context(scripted())
    )
    assert replay["result"].event_id == first.event_id
    assert len(await store.get_profile("u")) == 3
    assert len(await store.list_events("u")) == 1
    export = await store.export_user("u")
    assert len([memory for memory in export.memories if memory.kind == "profile"]) == 3
    assert len([memory for memory in export.memories if memory.kind == "event"]) == 1
    assert await store.get_cursor("u") == stored[-1].seq


async def test_a_failing_write_keeps_the_cursor(store, make_context, monkeypatch):
    stored = await add_chat(store, "u", CHINESE_CHAT)
    context = make_context(scripted())

    async def redis_went_away(update):
        raise ConnectionError("redis went away mid-write")

    monkeypatch.setattr(store, "apply_update", redis_went_away)
    with pytest.raises(ConnectionError):
        await run_memory_graph("u", context)
    monkeypatch.undo()
    assert await store.get_cursor("u") == 0 and await store.get_profile("u") == []

    result = await run_memory_graph("u", context)
    assert result.processed_through_seq == stored[-1].seq and len(await store.get_profile("u")) == 3


def entry(subtopic: str, content: str) -> ProfileEntry:
    return ProfileEntry(user_id="u", topic="work", subtopic=subtopic, content=content)


def test_profile_delta_names_adds_updates_and_deletes():
    before = [entry("job", "student"), entry("school", "MIT")]
    after = [entry("job", "engineer"), entry("company", "ACME")]
    changes = {(change.action, change.subtopic): change for change in profile_delta(before, after)}
    assert set(changes) == {("update", "job"), ("add", "company"), ("delete", "school")}
    assert changes[("update", "job")].previous_content == "student"


def test_empty_summary_writes_only_the_cursor():
    from memlane.store.records import Message

    messages = [Message(id="a", user_id="u", session_id="s", role="user", content="hi", seq=7)]
    update, changes = build_update("u", messages, messages, "", [], [], [])
    assert update.advance_cursor_to == 7 and update.event is None and update.upsert_profile == [] and changes == []


async def test_the_same_buffer_delivered_twice_at_once_is_written_once(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    first, second = await asyncio.gather(
        run_memory_graph("u", make_context(scripted())), run_memory_graph("u", make_context(scripted()))
    )
    assert first.event_id == second.event_id
    assert len(await store.list_events("u")) == 1 and len(await store.get_profile("u")) == 3


def test_the_event_card_names_every_message_the_run_consumed():
    # a blank line the model never read moves the cursor too: the card accounts for it (issue 34, item 13)
    from memlane.store.records import Message

    messages = [
        Message(id=f"m{seq}", user_id="u", session_id="s", role=role, content=text, seq=seq)
        for seq, (role, text) in enumerate(
            [("user", "I drink my coffee black"), ("assistant", " "), ("user", "我周末去爬山")], 1
        )
    ]
    read = [message for message in messages if message.content.strip()]
    update, _ = build_update("u", messages, read, "Coffee black; hikes on weekends.", [], [], [])
    assert update.event.source_message_ids == ["m1", "m2", "m3"] and update.advance_cursor_to == 3
