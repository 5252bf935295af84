"""The confidence floor (issue 54): a fact the memory model extracts under memory_min_confidence is
held for review, not merged into the profile, not searched, not recalled; the user confirms it (it
becomes a profile entry) or drops it. Held per user and scope, exported and deleted with the user."""

from __future__ import annotations

from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.recall import RecallParts, recall
from memlane.store.scopes import scoped_user_id

CHAT = [
    ("user", None, "I work as a nurse at the children's hospital."),
    ("user", None, "Maybe I'll take up the cello one day, who knows."),
]
FACTS = [
    {"topic": "work", "subtopic": "occupation", "content": "nurse at a children's hospital", "confidence": 0.9},
    {"topic": "interests", "subtopic": "music", "content": "might take up the cello", "confidence": 0.1},
]
CHAT_ZH = [("user", None, "我在上海当护士。"), ("user", None, "也许以后会学大提琴吧，谁知道呢。")]
FACTS_ZH = [
    {"topic": "work", "subtopic": "occupation", "content": "在上海当护士", "confidence": 0.95},
    {"topic": "interests", "subtopic": "music", "content": "也许以后学大提琴", "confidence": 0.2},
]


async def _held_after_a_run(store, make_context, user_id, chat, facts, **settings):
    await add_chat(store, user_id, chat, session_id="s")
    run = await run_memory_graph(user_id, make_context(scripted(facts=facts), **settings))
    return run, await store.held_facts(user_id)


async def test_a_fact_under_the_floor_is_held_not_merged_searched_or_recalled(store, make_context, settings):
    run, held = await _held_after_a_run(store, make_context, "u", CHAT, FACTS)
    profile = {(entry.topic, entry.subtopic): entry.content for entry in await store.get_profile("u")}
    assert profile == {("work", "occupation"): "nurse at a children's hospital"}
    [fact] = held
    assert (fact.entry.topic, fact.entry.subtopic, fact.entry.content) == (
        "interests",
        "music",
        "might take up the cello",
    )
    assert fact.entry.confidence == 0.1 and fact.entry.source_message_ids
    assert any("held 1 facts under memory_min_confidence" in note for note in run.notes)
    hits = await store.search_memories("u", "cello", kinds=["profile"])
    assert all("cello" not in hit.memory.text for hit in hits)
    recalled = await recall(
        store, "u", "s", "What instrument might I learn, the cello?", parts=RecallParts.of(settings)
    )
    assert "might take up the cello" not in recalled.text

    # confirmed: a profile entry like any other, searchable, no longer held
    entry = await store.confirm_held_fact("u", fact.id)
    assert entry is not None and entry.confidence == 1.0
    profile = {(entry.topic, entry.subtopic): entry.content for entry in await store.get_profile("u")}
    assert profile[("interests", "music")] == "might take up the cello"
    assert await store.held_facts("u") == []
    hits = await store.search_memories("u", "cello", kinds=["profile"])
    assert any("cello" in hit.memory.text for hit in hits)
    assert await store.confirm_held_fact("u", fact.id) is None  # once only


async def test_a_dropped_fact_leaves_nothing_and_the_floor_is_a_setting(store, make_context):
    _, [fact] = await _held_after_a_run(store, make_context, "zh", CHAT_ZH, FACTS_ZH)
    assert fact.entry.content == "也许以后学大提琴"
    assert await store.drop_held_fact("zh", fact.id) is True
    assert await store.drop_held_fact("zh", fact.id) is False
    assert await store.held_facts("zh") == []
    assert {entry.subtopic for entry in await store.get_profile("zh")} == {"occupation"}

    # floor 0: nothing held, every fact merged (the behaviour before the floor)
    _, held = await _held_after_a_run(store, make_context, "open", CHAT, FACTS, memory_min_confidence=0.0)
    assert held == []
    assert {entry.subtopic for entry in await store.get_profile("open")} == {"occupation", "music"}


async def test_held_facts_are_per_user_and_scope_exported_and_deleted_with_the_user(store, make_context):
    scope = scoped_user_id("u", "coach")
    await _held_after_a_run(store, make_context, scope, CHAT, FACTS)
    assert await store.held_facts("u") == [] and await store.held_facts("v") == []
    [fact] = await store.held_facts(scope)
    assert await store.drop_held_fact("u", fact.id) is False  # another scope's id drops nothing
    assert await store.confirm_held_fact("v", fact.id) is None
    export = await store.export_user("u")
    assert [entry.content for entry in export.agents["coach"].held_for_review] == ["might take up the cello"]
    await store.delete_user("u")
    assert await store.held_facts(scope) == []
