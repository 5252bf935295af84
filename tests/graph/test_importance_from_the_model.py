"""Importance set by the memory model (issue 54): the extraction's optional "importance" reaches the
profile entry and its search memory, in English and Chinese; a fact the model gives none is neutral
(0.5), and a later run that says nothing of it keeps what the entry had."""

from __future__ import annotations

import pytest
from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.extract import ExtractedFact


@pytest.mark.parametrize(
    ("chat", "facts", "query"),
    [
        (
            [("user", None, "I'm severely allergic to peanuts."), ("user", None, "I had pasta for lunch.")],
            [
                {"topic": "health", "subtopic": "allergies", "content": "severe peanut allergy", "importance": 0.95},
                {"topic": "diet", "subtopic": "lunch", "content": "had pasta for lunch"},
            ],
            "peanut allergy",
        ),
        (
            [("user", None, "我对花生严重过敏。"), ("user", None, "我中午吃了面条。")],
            [
                {"topic": "health", "subtopic": "allergies", "content": "对花生严重过敏", "importance": "95"},
                {"topic": "diet", "subtopic": "lunch", "content": "中午吃了面条", "importance": None},
            ],
            "花生过敏",
        ),
    ],
)
async def test_the_models_importance_reaches_the_entry_and_its_search_memory(store, make_context, chat, facts, query):
    await add_chat(store, "u", chat, session_id="s")
    await run_memory_graph("u", make_context(scripted(facts=facts)))
    importance = {entry.subtopic: entry.importance for entry in await store.get_profile("u")}
    assert importance == {"allergies": 0.95, "lunch": 0.5}
    [hit] = await store.search_memories("u", query, kinds=["profile"], limit=1)
    assert hit.memory.importance == 0.95


def test_the_models_importance_is_read_leniently():
    def read(value: object) -> float:
        return ExtractedFact(topic="t", subtopic="s", content="c", importance=value).importance

    assert [read(v) for v in (0.9, "0.2", 80, 7e9, -3, None, "high", float("nan"))] == [
        0.9,
        0.2,
        0.8,
        1.0,
        0.0,
        0.5,
        0.5,
        0.5,
    ]
    assert ExtractedFact(topic="t", subtopic="s", content="c").importance == 0.5
