"""memlane.testing's scripted models: they answer by the step a call is tagged with, never by the
prompt's words."""

from __future__ import annotations

import pytest
from memory_graph_helpers import CHINESE_CHAT, add_chat, make_context, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.llm import MEMORY_MODEL_TAG, ModelCaller, Step, memory_model_config, step_of, step_tag
from memlane.testing import STEPS, ScriptedChatModel, memory_rules


def test_every_step_has_one_tag_read_back_from_the_calls_tags():
    assert STEPS == tuple(step.value for step in Step) and "merge_batch" in STEPS
    config = memory_model_config(Step.SUMMARIZE)
    assert MEMORY_MODEL_TAG in config["tags"] and step_tag("summarize") == "memlane:step:summarize" in config["tags"]
    # tags inherited from an enclosing run come first: the call's own step is the last one
    assert step_of(["memlane:step:rewrite", "seq:step:1", "memlane:step:extract"]) == "extract"
    assert step_of(["memlane:memory-model"]) is None and step_of(None) is None


async def test_a_call_carries_its_callers_step_or_the_one_it_names(settings):
    model = ScriptedChatModel(rules=[("extract", "facts"), ("merge_batch", "decisions")], default="reply")
    caller = ModelCaller(model, settings.models, Step.EXTRACT)
    assert await caller.ask("Any system prompt at all.", "Any text.") == "facts"
    assert await caller.ask("Any system prompt at all.", "Any text.", step=Step.MERGE_BATCH) == "decisions"
    assert (await model.ainvoke("hello")).content == "reply"  # an untagged call: an agent's reply
    assert model.steps == ["extract", "merge_batch", None]
    assert model.prompts[-1] == "hello"


async def test_the_memory_graph_is_answered_by_step_when_every_prompt_is_reworded(store, make_context, monkeypatch):
    """The rules match the step tags: prompts that say nothing of "TASK: ..." get the same answers."""
    from memlane.nodes import extract, merge, organize, resummarize, summarize, tag

    for module, name in [
        (summarize, "SUMMARIZE_PROMPT"),
        (extract, "EXTRACT_PROMPT"),
        (merge, "MERGE_PROMPT"),
        (merge, "MERGE_BATCH_PROMPT"),
        (organize, "ORGANIZE_PROMPT"),
        (resummarize, "RESUMMARIZE_PROMPT"),
        (tag, "TAG_PROMPT"),
    ]:
        monkeypatch.setattr(module, name, f"Reworded instructions ({name.lower()}); answer in JSON.")
    model = ScriptedChatModel(rules=memory_rules())
    await add_chat(store, "reworded", CHINESE_CHAT)

    result = await run_memory_graph("reworded", make_context(model))

    assert not any("TASK:" in prompt for prompt in model.prompts)
    assert {"summarize", "extract", "tag"} <= set(model.steps)
    profile = {(entry.topic, entry.subtopic): entry.content for entry in await store.get_profile("reworded")}
    assert set(profile) == {("lifestyle", "sleep_schedule"), ("work", "workload"), ("lifestyle", "diet")}
    assert result.event_id is not None


def test_a_rule_keyed_by_a_prompts_words_is_refused():
    with pytest.raises(ValueError, match="keyed by step"):
        ScriptedChatModel(rules=[("TASK: summarize", "{}")])


async def test_a_call_streamed_inside_a_streaming_run_is_answered_by_its_step(settings):
    """Inside an agent's stream LangChain streams every model call, and hands `_astream` no
    run_manager: the step still picks the answer (the app's titles and topic checks run so)."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        answer: str

    model = ScriptedChatModel(rules=[("session_title", '{"title": "Trails"}')], default="a reply")

    async def title_inside(state: State) -> State:
        return {
            "answer": await ModelCaller(model, settings.models, Step.SESSION_TITLE).ask("Title this.", "<chat></chat>")
        }

    graph = StateGraph(State).add_node("title", title_inside).add_edge(START, "title").add_edge("title", END).compile()
    chunks = [chunk async for chunk in graph.astream({"answer": ""}, stream_mode=["messages", "values"])]

    assert chunks[-1] == ("values", {"answer": '{"title": "Trails"}'})
    assert model.steps == ["session_title"]
    assert not [chunk for mode, chunk in chunks if mode == "messages"]  # a memory-model call is never streamed out


async def test_memory_rules_answer_any_other_step_by_its_name(settings):
    """A step added to the graph is scripted through memory_rules with no change to memlane.testing."""
    model = ScriptedChatModel(rules=memory_rules(session_title={"title": "Trails"}, topic_shift="yes"))
    assert await ModelCaller(model, settings.models, Step.SESSION_TITLE).ask("Title this.", "<chat></chat>") == (
        '{"title": "Trails"}'
    )
    assert await ModelCaller(model, settings.models, Step.TOPIC_SHIFT).ask("Related?", "<chat></chat>") == "yes"
    with pytest.raises(ValueError, match="not no_such_step"):
        memory_rules(no_such_step="{}")
