"""Relations by the memory model (nodes/relation_extract.py, graph/build.py's persist with
memory_relations_model): the user's lines the rules read nothing in go to the model's step
'relations'; its entities, aliases and links are stored, checked one by one; garbage never fails
the run and never loses what the rules read."""

from __future__ import annotations

import json

import pytest
from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.llm import Step
from memlane.store.relations import RelationStore

CHAT = [
    ("user", None, "My sister is Bea."),
    ("assistant", None, "Nice! What does she do?"),
    ("user", None, "She got a job at Acme Labs last month, and she calls herself 贝亚 at work."),
    ("user", None, "Where should I go for dinner?"),
]
ANSWER = {
    "entities": [
        {"name": "Bea", "type": "person", "aliases": ["贝亚", "my sister"]},
        {"name": "Acme Labs", "type": "organisation"},
    ],
    "relations": [{"subject": "Bea", "predicate": "works at", "object": "Acme Labs", "line": 1, "confidence": 0.9}],
}


async def links_of(store, user_id: str) -> set[tuple[str, str, str]]:
    names = {entity.id: entity.name for entity in await store.list_entities(user_id)}
    return {(names[r.subject], r.predicate, names[r.object]) for r in await store.list_relations(user_id)}


async def test_the_model_reads_what_the_rules_do_not_and_aliases_name_one_entity(store, make_context):
    assert isinstance(store, RelationStore)
    await add_chat(store, "u", CHAT, session_id="s")
    model = scripted(relations=ANSWER)
    result = await run_memory_graph("u", make_context(model, llm_timeout_seconds=30, memory_relations_model=True))
    assert await links_of(store, "u") == {("user", "sister", "Bea"), ("Bea", "works_at", "Acme Labs")}
    bea = await store.find_entity("u", "贝亚")
    assert bea is not None and bea.name == "Bea" and bea.type == "person"
    [asked] = [prompt for prompt, step in zip(model.prompts, model.steps, strict=True) if step == Step.RELATIONS]
    assert "Acme Labs" in asked and "My sister is Bea" not in asked and "dinner" not in asked  # unread lines only
    job = next(r for r in await store.list_relations("u") if r.predicate == "works_at")
    assert job.source_message_ids == ["s-m2"] and job.confidence == 0.9
    assert result.model_calls >= 1


async def test_chinese_lines_and_an_alias_said_in_brackets(store, make_context):
    chat = [("user", None, "我姐姐贝亚（Bea）很忙。"), ("user", None, "她现在给一家叫星辰科技的公司做设计。")]
    await add_chat(store, "zh", chat, session_id="s")
    answer = {"relations": [{"subject": "贝亚", "predicate": "works_at", "object": "星辰科技", "line": 1}]}
    await run_memory_graph(
        "zh", make_context(scripted(relations=answer), llm_timeout_seconds=30, memory_relations_model=True)
    )
    assert await links_of(store, "zh") == {("user", "sister", "贝亚"), ("贝亚", "works_at", "星辰科技")}
    assert (await store.find_entity("zh", "bea")) == (await store.find_entity("zh", "贝亚"))  # by the rules


UGLY = {
    "not JSON": "I could not find any relations, sorry!",
    "relations not a list": '{"relations": "none", "entities": 7}',
    "wrong types": '{"relations": [{"subject": 5, "predicate": [], "object": null}, "Bea -> Tom", 3]}',
    "empty lists": '{"entities": [], "relations": []}',
    "unknown predicate": '{"relations": [{"subject": "Bea", "predicate": "is somehow!! related to", "object": "Tom"}]}',
    "10 KB name": json.dumps({"relations": [{"subject": "Bea", "predicate": "friend", "object": "x" * 10_000}]}),
    "10 KB alias": json.dumps({"entities": [{"name": "Bea", "type": "robot", "aliases": ["y" * 10_000, {"a": 1}]}]}),
    "a thing linked to itself": '{"relations": [{"subject": "me", "predicate": "sister", "object": "I"}]}',
    "the model fails": ValueError("the endpoint fell over"),
}


@pytest.mark.parametrize("answer", UGLY.values(), ids=UGLY.keys())
async def test_garbage_never_fails_the_run_nor_loses_the_rules_links(store, make_context, answer):
    await add_chat(store, "g", CHAT, session_id="s")
    context = make_context(
        scripted(relations=answer), llm_timeout_seconds=30, memory_relations_model=True, llm_max_retries=0
    )
    result = await run_memory_graph("g", context)
    assert ("user", "sister", "Bea") in await links_of(store, "g")
    assert all(
        len(entity.name) <= 200 and all(len(a) <= 200 for a in entity.aliases)
        for entity in await store.list_entities("g")
    )
    assert result.skipped_reason is None or result.message_count == len(CHAT)
    if answer not in (UGLY["empty lists"],):
        assert any("relations" in note for note in result.notes), result.notes


async def test_off_by_default_the_model_is_not_asked(store, make_context):
    await add_chat(store, "off", CHAT, session_id="s")
    model = scripted(relations=ANSWER)
    await run_memory_graph("off", make_context(model, llm_timeout_seconds=30))
    assert Step.RELATIONS not in model.steps
    assert await links_of(store, "off") == {("user", "sister", "Bea")}


async def test_names_the_chat_says_are_one_become_one_entity_across_windows(store, make_context):
    await add_chat(store, "one", [("user", None, "我姐姐贝亚住在杭州。")], session_id="s")
    await run_memory_graph("one", make_context(scripted(), llm_timeout_seconds=30))
    await add_chat(store, "one", [("user", None, "My sister Bea moved to Porto.")], session_id="s", start=5)
    await run_memory_graph("one", make_context(scripted(), llm_timeout_seconds=30))
    assert len([r for r in await store.list_relations("one") if r.predicate == "sister"]) == 2  # two sisters, so far
    await add_chat(store, "one", [("user", None, "Bea (贝亚) says hi!")], session_id="s", start=9)
    await run_memory_graph("one", make_context(scripted(), llm_timeout_seconds=30))
    assert await links_of(store, "one") == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}  # the first named
    assert (await store.find_entity("one", "Bea")) == (await store.find_entity("one", "贝亚"))
