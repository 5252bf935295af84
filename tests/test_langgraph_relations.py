"""`MemlaneStore`'s relation collections (issue 53, item 4; memlane/langgraph_relations.py):
("memlane_entities", user) and ("memlane_relations", user) read, searched, listed and forgotten
through LangGraph's BaseStore, per user; a put is refused."""

from __future__ import annotations

import pytest

from memlane import MemlaneStore
from memlane.store.errors import StoreError
from memlane.store.relations import RelationStatement

DAY = 86_400.0


async def family(store, user_id: str) -> None:
    await store.record_relations(
        user_id,
        [
            RelationStatement(subject="me", predicate="sister", object="Bea", valid_from=DAY, exclusive=False),
            RelationStatement(subject="Bea", predicate="lives_in", object="Lisbon", valid_from=2 * DAY),
            RelationStatement(subject="me", predicate="boss", object="王总", valid_from=3 * DAY),
            RelationStatement(subject="王总", predicate="daughter", object="小雨", valid_from=3 * DAY, exclusive=False),
        ],
    )
    await store.record_relations(
        user_id, [RelationStatement(subject="Bea", predicate="lives_in", object="Porto", valid_from=9 * DAY)]
    )


def triples(items) -> list[tuple[str, str, str]]:
    return [(i.value["subject_name"], i.value["predicate"], i.value["object_name"]) for i in items]


async def test_entities_and_relations_read_as_collections(store):
    await family(store, "alice")
    await store.record_relations("bob", [RelationStatement(subject="me", predicate="friend", object="Zoe")])
    lg = MemlaneStore(store)

    entities = await lg.asearch(("memlane_entities", "alice"), limit=50)
    assert sorted(i.value["name"] for i in entities) == ["Bea", "Lisbon", "Porto", "user", "小雨", "王总"]
    bea = next(i for i in entities if i.value["name"] == "Bea")
    assert (await lg.aget(("memlane_entities", "alice"), bea.key)).value == bea.value
    assert await lg.aget(("memlane_entities", "bob"), bea.key) is None  # bob has no Bea

    every = await lg.asearch(("memlane_relations", "alice"), limit=50)  # oldest first, ended ones too
    assert triples(every)[:2] == [("user", "sister", "Bea"), ("Bea", "lives_in", "Lisbon")]
    lisbon = next(i for i in every if i.value["object_name"] == "Lisbon")
    assert lisbon.value["holds"] is False and lisbon.value["valid_until"] == 9 * DAY
    current = await lg.asearch(("memlane_relations", "alice"), filter={"holds": True}, limit=50)
    assert ("Bea", "lives_in", "Porto") in triples(current) and ("Bea", "lives_in", "Lisbon") not in triples(current)
    assert len(await lg.asearch(("memlane_relations", "alice"), limit=2, offset=1)) == 2

    # a query walks from what it names, as recall does: my sister -> Bea -> Porto; 我上司的女儿 -> 王总 -> 小雨
    found = await lg.asearch(("memlane_relations", "alice"), query="Where does my sister live?", filter={"holds": True})
    assert triples(found) == [("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")] and found[0].score is None
    zh = await lg.asearch(("memlane_relations", "alice"), query="我上司的女儿叫什么？")
    assert triples(zh) == [("user", "boss", "王总"), ("王总", "daughter", "小雨")]
    people = await lg.asearch(("memlane_entities", "alice"), query="王总")
    assert [i.value["name"] for i in people][0] == "王总" and {i.value["name"] for i in people} == {
        "user",
        "王总",
        "小雨",
    }
    assert await lg.asearch(("memlane_relations", "alice"), query="what should I cook?") == []

    assert set(await lg.alist_namespaces(prefix=("*", "alice"))) >= {
        ("memlane_entities", "alice"),
        ("memlane_relations", "alice"),
    }
    assert ("memlane_relations", "carol") not in await lg.alist_namespaces(prefix=("*", "carol"))
    assert await lg.asearch(("memlane_relations", "bob"), query="Bea") == []

    with pytest.raises(StoreError, match="memory graph"):
        await lg.aput(("memlane_relations", "alice"), "x", {"subject": "me"})
    # a delete forgets: the link alone, or the entity with every link touching it
    await lg.adelete(("memlane_relations", "alice"), lisbon.key)
    assert lisbon.key not in {r.id for r in await store.list_relations("alice", include_past=True)}
    await lg.adelete(("memlane_entities", "alice"), bea.key)
    assert await store.find_entity("alice", "Bea") is None
    assert ("Bea", "lives_in", "Porto") not in triples(await lg.asearch(("memlane_relations", "alice"), limit=50))
    await lg.adelete(("memlane_entities", "alice"), "no-such-entity")  # unknown: nothing changes
    assert len(await store.list_entities("bob")) == 2  # bob's own are untouched
