"""The merge step: ADD, UPDATE, APPEND, ABORT, and answers that cannot be parsed."""

from __future__ import annotations

from memory_graph_helpers import add_chat, calls_for, scripted
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.profile_config import ProfileConfig, SubtopicConfig, TopicConfig
from memlane.store.base import profile_entry_id

CHAT = [("user", None, "I'm a nurse in Lyon, and I just started learning the cello.")]


def fact(topic: str, subtopic: str, content: str) -> dict:
    return {"topic": topic, "subtopic": subtopic, "content": content, "confidence": 0.9, "messages": [1]}


async def seed(store, make_context, *facts: dict) -> None:
    """A profile made by an earlier run (validation off: plain ADDs)."""
    config = ProfileConfig(
        topics=[
            TopicConfig(name="work", validate_merge=False),
            TopicConfig(name="interests", validate_merge=False),
        ]
    )
    await add_chat(store, "u", [("user", None, "earlier chat")], session_id="s0")
    await run_memory_graph(
        "u", make_context(scripted(summary="earlier", facts=list(facts), tags=[]), config=config)
    )


async def profile_of(store) -> dict[tuple[str, str], str]:
    return {(entry.topic, entry.subtopic): entry.content for entry in await store.get_profile("u")}


async def test_add_without_a_model_call_when_validation_is_off_and_the_slot_is_empty(store, make_context):
    config = ProfileConfig(
        topics=[TopicConfig(name="work", validate_merge=False, subtopics=[SubtopicConfig(name="occupation")])]
    )
    model = scripted(
        facts=[fact("work", "occupation", "nurse")], merge=AssertionError("merge must not be asked")
    )
    await add_chat(store, "u", CHAT)

    result = await run_memory_graph("u", make_context(model, config=config))

    assert calls_for(model, "merge") == 0
    assert await profile_of(store) == {("work", "occupation"): "nurse"}
    assert result.added == [profile_entry_id("u", "work", "occupation")]


async def test_validation_on_asks_the_model_even_for_an_empty_slot(store, make_context):
    config = ProfileConfig(topics=[TopicConfig(name="work", validate_merge=True)])
    model = scripted(facts=[fact("work", "occupation", "nurse")], merge='{"action": "ABORT", "content": ""}')
    await add_chat(store, "u", CHAT)
    result = await run_memory_graph("u", make_context(model, config=config))
    assert calls_for(model, "merge") == 1 and result.added == [] and await profile_of(store) == {}


async def test_update_replaces_the_entry(store, make_context):
    await seed(store, make_context, fact("work", "occupation", "student"))
    model = scripted(
        facts=[fact("work", "occupation", "nurse")],
        merge='{"action": "UPDATE", "content": "nurse (was a student)"}',
    )
    await add_chat(store, "u", CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {("work", "occupation"): "nurse (was a student)"}
    assert result.updated == [profile_entry_id("u", "work", "occupation")] and result.added == []
    prompt = next(prompt for prompt in model.prompts if "TASK: merge" in prompt)
    assert "Slot holds: student" in prompt and "New fact: nurse" in prompt


async def test_append_adds_to_the_entry(store, make_context):
    await seed(store, make_context, fact("interests", "hobbies", "plays chess"))
    model = scripted(
        facts=[fact("interests", "hobbies", "learning the cello")],
        merge='{"action": "append", "content": "learning the cello"}',
    )
    await add_chat(store, "u", CHAT)
    await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {("interests", "hobbies"): "plays chess; learning the cello"}


async def test_append_in_chinese_uses_a_chinese_separator(store, make_context):
    await seed(store, make_context, fact("interests", "hobbies", "下象棋"))
    model = scripted(
        facts=[fact("interests", "hobbies", "学大提琴")], merge='{"action": "APPEND", "content": "学大提琴"}'
    )
    await add_chat(store, "u", [("user", None, "我开始学大提琴了")])
    await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {("interests", "hobbies"): "下象棋；学大提琴"}


async def test_abort_leaves_the_entry(store, make_context):
    await seed(store, make_context, fact("work", "occupation", "nurse"))
    model = scripted(facts=[fact("work", "occupation", "nurse")], merge='{"action": "ABORT"}')
    await add_chat(store, "u", CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {("work", "occupation"): "nurse"}
    assert result.updated == [] and result.event_id


async def test_unparseable_answer_skips_that_fact_only(store, make_context):
    await seed(store, make_context, fact("work", "occupation", "nurse"))
    answers = {"occupation": "UPDATE it to doctor please", "location": '{"action": "ADD", "content": "Lyon"}'}
    model = scripted(
        facts=[fact("work", "occupation", "doctor"), fact("basic_info", "location", "Lyon")],
        merge=lambda messages: answers[
            "occupation" if "work / occupation" in messages[-1].content else "location"
        ],
    )
    await add_chat(store, "u", CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {("work", "occupation"): "nurse", ("basic_info", "location"): "Lyon"}
    assert any("merge: skipped work/occupation" in note for note in result.notes)


async def test_facts_for_one_slot_cost_one_merge_call(store, make_context):
    await seed(store, make_context, fact("interests", "hobbies", "plays chess"))
    model = scripted(
        facts=[
            fact("interests", "hobbies", "cello"),
            fact("work", "occupation", "nurse"),
            fact("interests", "hobbies", "piano"),
        ],
        merge=lambda messages: (
            '{"action": "APPEND", "content": "cello; piano"}'
            if "New fact: cello; piano" in messages[-1].content
            else '{"action": "ADD", "content": "nurse"}'
        ),
    )
    await add_chat(store, "u", CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert await profile_of(store) == {
        ("interests", "hobbies"): "plays chess; cello; piano",
        ("work", "occupation"): "nurse",
    }
    assert calls_for(model, "merge") == 2 and len(result.added) == 1 and len(result.updated) == 1
