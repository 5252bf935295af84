"""The organize step: only over the subtopic limit, and only with a sound answer."""

from __future__ import annotations

from memory_graph_helpers import add_chat, as_json, calls_for, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.profile_config import ProfileConfig, TopicConfig
from memlane.store.ids import profile_memory_id

CONFIG = ProfileConfig(topics=[TopicConfig(name="interests", validate_merge=False)], max_subtopics_per_topic=2)
FACTS = [
    {"topic": "interests", "subtopic": "chess", "content": "plays chess", "messages": [1]},
    {"topic": "interests", "subtopic": "go", "content": "plays go", "messages": [1]},
    {"topic": "interests", "subtopic": "cello", "content": "learns the cello", "messages": [1]},
]
GOOD_ANSWER = as_json(
    {
        "subtopics": [
            {"subtopic": "board_games", "content": "plays chess and go", "merged_from": ["chess", "go"]},
            {"subtopic": "music", "content": "learns the cello", "merged_from": ["cello"]},
        ]
    }
)


async def subtopics(store) -> dict[str, str]:
    return {entry.subtopic: entry.content for entry in await store.get_profile("u")}


async def test_not_triggered_within_the_limit(store, make_context):
    model = scripted(facts=FACTS[:2], organize=AssertionError("organize must not be asked"))
    await add_chat(store, "u", [("user", None, "I play chess and go.")])
    await run_memory_graph("u", make_context(model, config=CONFIG))
    assert calls_for(model, "organize") == 0 and set(await subtopics(store)) == {"chess", "go"}


async def test_triggered_over_the_limit_regroups_the_topic(store, make_context):
    model = scripted(facts=FACTS, organize=GOOD_ANSWER)
    stored = await add_chat(store, "u", [("user", None, "I play chess and go, and I learn the cello.")])
    result = await run_memory_graph("u", make_context(model, config=CONFIG))

    assert calls_for(model, "organize") == 1
    assert await subtopics(store) == {"board_games": "plays chess and go", "music": "learns the cello"}
    assert len(result.added) == 2 and result.deleted == []  # the old slots never reached the store
    profile = await store.get_profile("u")
    assert all(entry.source_message_ids == [stored[0].id] for entry in profile)


async def test_regrouping_stored_entries_deletes_the_old_slots(store, make_context):
    await add_chat(store, "u", [("user", None, "I play chess and go.")])
    await run_memory_graph("u", make_context(scripted(facts=FACTS[:2]), config=CONFIG))
    await add_chat(store, "u", [("user", None, "And the cello.")], start=5)
    result = await run_memory_graph("u", make_context(scripted(facts=FACTS[2:], organize=GOOD_ANSWER), config=CONFIG))
    assert set(await subtopics(store)) == {"board_games", "music"}
    assert len(result.deleted) == 2 and len(result.added) == 2
    deleted = {change.subtopic for change in result.profile_delta if change.action == "delete"}
    assert deleted == {"chess", "go"}
    memories = {memory.id for memory in (await store.export_user("u")).memories if memory.kind == "profile"}
    assert memories == {profile_memory_id(entry.id) for entry in await store.get_profile("u")}


async def test_an_answer_that_drops_a_subtopic_leaves_the_topic_as_it_was(store, make_context):
    lossy = as_json(
        {"subtopics": [{"subtopic": "board_games", "content": "chess, go", "merged_from": ["chess", "go"]}]}
    )
    model = scripted(facts=FACTS, organize=lossy)
    await add_chat(store, "u", [("user", None, "I play chess and go, and I learn the cello.")])
    result = await run_memory_graph("u", make_context(model, config=CONFIG))
    assert set(await subtopics(store)) == {"chess", "go", "cello"}
    assert any("organize: left interests as it was" in note and "cello" in note for note in result.notes)


async def test_a_malformed_answer_leaves_the_topic_as_it_was(store, make_context):
    model = scripted(facts=FACTS, organize="Sure, I'd group them as board games and music.")
    await add_chat(store, "u", [("user", None, "I play chess and go, and I learn the cello.")])
    result = await run_memory_graph("u", make_context(model, config=CONFIG))
    assert set(await subtopics(store)) == {"chess", "go", "cello"} and result.event_id


async def test_a_regrouped_subtopic_with_a_runaway_name_leaves_the_topic_as_it_was(store, make_context):
    answer = as_json(
        {
            "subtopics": [
                {"subtopic": "games " * 2000, "content": "plays chess and go", "merged_from": ["chess", "go"]},
                {"subtopic": "music", "content": "learns the cello", "merged_from": ["cello"]},
            ]
        }
    )
    await add_chat(store, "u", [("user", None, "I play chess and go, and I learn the cello.")])
    result = await run_memory_graph("u", make_context(scripted(facts=FACTS, organize=answer), config=CONFIG))
    assert set(await subtopics(store)) == {"chess", "go", "cello"}
    assert any("memory_slot_max_chars" in note for note in result.notes)


async def test_people_are_never_regrouped_however_many(store, make_context):
    """Past max_subtopics_per_topic people, organize leaves people / <name> alone: regrouping
    could make two people one."""
    friends = ["朋友A", "朋友B", "Maria", "Tom"]
    model = scripted(
        facts=[
            {"about": name, "topic": "people", "subtopic": name, "content": f"{name} 喜欢爬山", "messages": [1]}
            for name in friends
        ],
        organize=AssertionError("organize must not be asked about people"),
    )
    await add_chat(store, "u", [("user", None, "朋友A、朋友B、Maria 和 Tom 都喜欢爬山。")])
    config = ProfileConfig(
        topics=[TopicConfig(name="people", validate_merge=False, open_subtopics=True)], max_subtopics_per_topic=2
    )
    await run_memory_graph("u", make_context(model, config=config))
    assert calls_for(model, "organize") == 0
    assert await subtopics(store) == {name: f"{name} 喜欢爬山" for name in friends}
