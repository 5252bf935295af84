"""The re-summarize step: only entries over the token limit, never stored over it."""

from __future__ import annotations

from memory_graph_helpers import add_chat, calls_for, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.profile_config import ProfileConfig, TopicConfig
from memlane.store.text.tokens import count_tokens

CONFIG = ProfileConfig(topics=[TopicConfig(name="work", validate_merge=False)], max_tokens_per_entry=20)
LONG = "works as a nurse in the night shift at the children's hospital of Lyon, mostly in the emergency ward, four nights a week"


def facts(content: str) -> list[dict]:
    return [{"topic": "work", "subtopic": "occupation", "content": content, "messages": [1]}]


async def test_not_triggered_for_short_entries(store, make_context):
    model = scripted(facts=facts("night-shift nurse"), resummarize=AssertionError("must not be asked"))
    await add_chat(store, "u", [("user", None, "I'm a night-shift nurse.")])
    await run_memory_graph("u", make_context(model, config=CONFIG))
    assert calls_for(model, "shorten") == 0
    assert [entry.content for entry in await store.get_profile("u")] == ["night-shift nurse"]


async def test_triggered_for_a_long_entry(store, make_context):
    model = scripted(facts=facts(LONG), resummarize='{"content": "night-shift ER nurse, children\'s hospital, Lyon"}')
    await add_chat(store, "u", [("user", None, LONG)])
    result = await run_memory_graph("u", make_context(model, config=CONFIG))
    assert calls_for(model, "shorten") == 1
    [entry] = await store.get_profile("u")
    assert entry.content == "night-shift ER nurse, children's hospital, Lyon"
    assert result.profile_delta[0].content == entry.content


async def test_an_answer_still_too_long_is_cut_to_the_limit(store, make_context):
    model = scripted(facts=facts(LONG), resummarize='{"content": "' + LONG + " and more " * 5 + '"}')
    await add_chat(store, "u", [("user", None, LONG)])
    await run_memory_graph("u", make_context(model, config=CONFIG))
    [entry] = await store.get_profile("u")
    assert count_tokens(entry.content) <= 20


async def test_an_empty_answer_falls_back_to_cutting(store, make_context):
    model = scripted(facts=facts(LONG), resummarize="")
    await add_chat(store, "u", [("user", None, LONG)])
    result = await run_memory_graph("u", make_context(model, config=CONFIG))
    [entry] = await store.get_profile("u")
    assert count_tokens(entry.content) <= 20 and LONG.startswith(entry.content)
    assert any("resummarize: cut work/occupation" in note for note in result.notes)
