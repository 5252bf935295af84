"""The extract step: slots, strict mode, unusable items."""

from __future__ import annotations

import pytest
from memory_graph_helpers import CHINESE_CHAT, CHINESE_FACTS, add_chat, scripted
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.parsing import ParseFailed
from memlane.nodes.profile_config import default_profile_config

PET_FACT = {"topic": "pets", "subtopic": "cat", "content": "养了一只猫", "messages": [1]}


async def test_strict_mode_drops_facts_outside_the_slots(store, make_context):
    strict = default_profile_config().model_copy(update={"strict": True})
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph(
        "u", make_context(scripted(facts=CHINESE_FACTS + [PET_FACT]), config=strict)
    )

    topics = {entry.topic for entry in await store.get_profile("u")}
    assert "pets" not in topics and len(result.added) == 3
    assert any("strict mode: dropped pets/cat" in note for note in result.notes)


async def test_lenient_mode_keeps_new_slots(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    await run_memory_graph("u", make_context(scripted(facts=CHINESE_FACTS + [PET_FACT])))
    assert ("pets", "cat") in {(entry.topic, entry.subtopic) for entry in await store.get_profile("u")}


async def test_slot_names_take_the_configured_spelling(store, make_context):
    fact = {"topic": " Lifestyle ", "subtopic": "SLEEP_SCHEDULE", "content": "晚睡", "messages": [1]}
    await add_chat(store, "u", CHINESE_CHAT)
    await run_memory_graph("u", make_context(scripted(facts=[fact])))
    [entry] = await store.get_profile("u")
    assert (entry.topic, entry.subtopic) == ("lifestyle", "sleep_schedule")


async def test_invalid_items_are_skipped_the_rest_kept(store, make_context):
    facts = [
        {"topic": "work", "subtopic": "", "content": "x"},
        {"topic": "work", "content": "no subtopic"},
    ] + CHINESE_FACTS[:1]
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(scripted(facts=facts)))
    assert len(await store.get_profile("u")) == 1
    assert sum("extract: item" in note for note in result.notes) == 2


async def test_no_facts_still_records_the_event(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(scripted(facts=[])))
    assert result.event_id and result.added == [] and await store.get_profile("u") == []


async def test_unusable_extraction_fails_the_run_and_keeps_the_buffer(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    with pytest.raises(ParseFailed, match="extract"):
        await run_memory_graph("u", make_context(scripted(facts="I found these facts: none really")))
    assert await store.get_cursor("u") == 0 and await store.list_events("u") == []
