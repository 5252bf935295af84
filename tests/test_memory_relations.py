"""The mem0-shaped facade's `relations` key (issue 53, item 4; memlane/memory_relations.py): `add`
answers the links its run added and ended, `search` the links from what the query names, `get_all`
every current link, as mem0's graph memory answers them; none when relations are off."""

from __future__ import annotations

from memlane.memory import AsyncMemory
from memlane.testing import ScriptedChatModel, memory_rules


def triples(relations: list[dict], target: str = "target") -> set[tuple[str, str, str]]:
    return {(link["source"], link["relationship"], link[target]) for link in relations}


def added(answer: dict) -> set[tuple[str, str, str]]:
    return triples([link for group in answer["relations"]["added_entities"] for link in group])


async def test_add_search_and_get_all_answer_relations_as_mem0_does(store, settings):
    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=settings)
    first = await memory.add(
        [
            {"role": "user", "content": "My sister is Bea."},
            {"role": "assistant", "content": "Where does she live?"},
            {"role": "user", "content": "Bea lives in Lisbon."},
        ],
        user_id="alice",
    )
    # mem0 names the user by the call's user_id; each added link in a list of its own
    assert added(first) == {("alice", "sister", "Bea"), ("Bea", "lives_in", "Lisbon")}
    assert first["relations"]["deleted_entities"] == []
    link = first["relations"]["added_entities"][0][0]
    assert link["id"] and link["valid_from"].endswith("+00:00") and link["valid_until"] is None

    moved = await memory.add("My sister moved to Porto.", user_id="alice")
    assert added(moved) == {("Bea", "lives_in", "Porto")}
    (ended,) = moved["relations"]["deleted_entities"]  # mem0 deletes it; memlane ends it
    assert triples(ended) == {("Bea", "lives_in", "Lisbon")} and ended[0]["valid_until"] is not None

    found = await memory.search("Where does my sister live?", user_id="alice")
    assert triples(found["relations"], "destination") == {("alice", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
    assert {link["destination_type"] for link in found["relations"]} <= {"person", "place", "other"}
    assert (await memory.search("What should I cook tonight?", user_id="alice"))["relations"] == []
    every = await memory.get_all(user_id="alice")
    assert triples(every["relations"]) == {("alice", "sister", "Bea"), ("Bea", "lives_in", "Porto")}

    # Chinese, and another user sees none of alice's
    zh = await memory.add("我的上司是王总。王总的女儿叫小雨，小雨住在杭州。", user_id="小王")
    assert added(zh) == {("小王", "boss", "王总"), ("王总", "daughter", "小雨"), ("小雨", "lives_in", "杭州")}
    answer = await memory.search("我上司的女儿住在哪里？", user_id="小王")
    assert ("小雨", "lives_in", "杭州") in triples(answer["relations"], "destination")
    assert (await memory.get_all(user_id="bob"))["relations"] == []
    assert (await memory.search("Bea", user_id="bob"))["relations"] == []
    stored_only = await memory.add("Bea has a dog.", user_id="alice", infer=False)
    assert stored_only["relations"] == {"added_entities": [], "deleted_entities": []}
    later = await memory.add("My boss is Carla.", user_id="alice", wait=False)  # the run in the background
    done = await memory.get_run(later["memory_run_id"], wait=True)
    assert done["status"] == "done" and added(done) == {("alice", "boss", "Carla")}


async def test_no_relations_key_when_relations_are_off(store, settings):
    off = settings.model_copy(update={"graph": settings.graph.model_copy(update={"extract_relations": False})})
    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=off)
    answer = await memory.add("My sister is Bea.", user_id="carol")
    assert "relations" not in answer
    assert "relations" not in await memory.search("my sister", user_id="carol")
    assert "relations" not in await memory.get_all(user_id="carol")
