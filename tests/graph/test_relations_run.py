"""A memory run stores the links its window's templated statements name (graph/build.py's persist,
nodes/relations.py), resolved through the links stored before; memory_extract_relations turns it off."""

from __future__ import annotations

from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph


async def links_of(store, user_id: str) -> set[tuple[str, str, str]]:
    names = {entity.id: entity.name for entity in await store.list_entities(user_id)}
    return {(names[r.subject], r.predicate, names[r.object]) for r in await store.list_relations(user_id)}


async def test_a_run_links_what_the_owner_states_in_both_languages(store, make_context):
    chat = [("user", None, "My sister is Bea."), ("assistant", None, "Nice! Where does she live?"), ("user", None, "Bea lives in Lisbon.")]  # fmt: skip
    await add_chat(store, "u", chat, session_id="s")
    await run_memory_graph("u", make_context(scripted()))
    assert await links_of(store, "u") == {("user", "sister", "Bea"), ("Bea", "lives_in", "Lisbon")}

    # a later window: "my sister" is resolved through the stored link; the move ends the old home
    await add_chat(store, "u", [("user", None, "My sister moved to Porto.")], session_id="s", start=10)
    await run_memory_graph("u", make_context(scripted()))
    assert await links_of(store, "u") == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
    past = [r for r in await store.list_relations("u", include_past=True) if r.valid_until is not None]
    assert len(past) == 1 and past[0].source_message_ids == ["s-m2"]

    await add_chat(store, "zh", [("user", None, "我的上司是王总。王总的女儿叫小雨，小雨住在杭州。")], session_id="s")
    await run_memory_graph("zh", make_context(scripted()))
    assert await links_of(store, "zh") == {
        ("user", "boss", "王总"),
        ("王总", "daughter", "小雨"),
        ("小雨", "lives_in", "杭州"),
    }


async def test_the_setting_turns_it_off(store, make_context):
    await add_chat(store, "off", [("user", None, "My sister is Bea.")], session_id="s")
    await run_memory_graph("off", make_context(scripted(), memory_extract_relations=False))
    assert await store.list_entities("off") == []
