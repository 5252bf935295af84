"""Forgetting an entity or a relation (store/redis/relations.py forget_entity, forget_relation): by id,
name or alias in either language, the entity's names and every link touching it gone in one
write, isolated per user, agent scope and tenant, on one Redis and on a cluster."""

from __future__ import annotations

import pytest
from conftest import HOSTILE_IDS

from memlane import scoped_user_id
from memlane.store.errors import InvalidInput
from memlane.store.redis.relations import entity_names_key
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.relations import RelationStatement, RelationStore
from memlane.tenants import store_user_id

DAY = 86_400.0


def said(subject: str, predicate: str, target: str, day: float, *sources: str) -> RelationStatement:
    return RelationStatement(
        subject=subject, predicate=predicate, object=target, valid_from=day * DAY, source_message_ids=list(sources)
    )


async def _family(store: RedisMemoryStore, user: str) -> None:
    await store.remember_entity(user, "Bea", aliases=["贝亚"], type="person")
    await store.record_relations(
        user,
        [
            said("me", "sister", "Bea", 1, "m1"),
            said("Bea", "lives_in", "Lisbon", 2, "m2"),
            said("Bea", "lives_in", "Porto", 9, "m3"),
            said("me", "boss", "王总", 3, "m4"),
        ],
    )


async def _links(store: RedisMemoryStore, user: str) -> set[tuple[str, str, str]]:
    names = {entity.id: entity.name for entity in await store.list_entities(user)}
    return {
        (names[r.subject], r.predicate, names[r.object]) for r in await store.list_relations(user, include_past=True)
    }


async def test_forgetting_an_entity_by_an_alias_drops_its_names_and_every_link(store: RedisMemoryStore):
    assert isinstance(store, RelationStore)
    await _family(store, "ana")
    assert await store.forget_entity("ana", "贝亚") == 4  # Bea, sister, lives in Lisbon (ended), lives in Porto
    assert await _links(store, "ana") == {("user", "boss", "王总")}
    assert await store.find_entity("ana", "Bea") is None and await store.find_entity("ana", "贝亚") is None
    assert {entity.name for entity in await store.list_entities("ana")} == {"user", "Lisbon", "Porto", "王总"}
    names = await store.client.hgetall(entity_names_key(store.layout, "ana"))
    assert {value.decode() for value in names.values()} == {e.id for e in await store.list_entities("ana")}
    assert await store.forget_entity("ana", "Bea") == 0  # already gone: nothing, no error
    # said again later, Bea is a new entity with only what is said then
    await store.record_relations("ana", [said("Bea", "lives_in", "Faro", 20, "m9")])
    assert await _links(store, "ana") == {("user", "boss", "王总"), ("Bea", "lives_in", "Faro")}


async def test_forgetting_by_id_and_one_relation(store: RedisMemoryStore):
    await _family(store, "ben")
    boss = await store.find_entity("ben", "王总")
    assert boss is not None
    assert await store.forget_entity("ben", boss.id) == 2
    porto = next(r for r in await store.list_relations("ben") if r.predicate == "lives_in")
    assert await store.forget_relation("ben", porto.id) is True
    assert await store.forget_relation("ben", porto.id) is False
    assert await _links(store, "ben") == {("user", "sister", "Bea"), ("Bea", "lives_in", "Lisbon")}
    # the link Porto ended stays ended: forgetting is not a statement that Lisbon holds again
    assert {r.predicate for r in await store.list_relations("ben")} == {"sister"}
    assert await store.find_entity("ben", "Porto") is not None  # a relation's entities stay


async def test_a_shared_alias_names_the_other_entity_after_a_forget(store: RedisMemoryStore):
    await store.remember_entity("cai", "Bea")
    await store.remember_entity("cai", "Bob", aliases=["B"])
    bea = await store.remember_entity("cai", "Bea", aliases=["B"])  # "B" stays Bob's in the lookup
    assert bea.aliases == ["B"] and (await store.find_entity("cai", "b")).name == "Bob"  # type: ignore[union-attr]
    assert await store.forget_entity("cai", "Bob") == 1
    assert (await store.find_entity("cai", "b")).name == "Bea"  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["", "  ", "x" * 201, "Bea\x00", 7])
async def test_bad_names_and_ids_are_refused_and_nothing_is_forgotten(store: RedisMemoryStore, bad):
    await _family(store, "dee")
    before = await _links(store, "dee")
    with pytest.raises(InvalidInput):
        await store.forget_entity("dee", bad)
    with pytest.raises(InvalidInput):
        await store.forget_relation("dee", bad)
    assert await _links(store, "dee") == before


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_a_forget_is_isolated_per_user_scope_and_tenant(store: RedisMemoryStore, hostile: str):
    owners = [
        hostile,
        hostile + "2",
        scoped_user_id(hostile, "coach"),
        store_user_id("acme", "u" + hostile.replace("/", "")),
        store_user_id("globex", "u" + hostile.replace("/", "")),
    ]
    for owner in owners:
        await store.record_relations(owner, [said("me", "sister", "Bea", 1, "m1"), said("Bea", "lives_in", "Porto", 2)])
    relation = (await store.list_relations(owners[3]))[0].id  # ids come from content: the same in every owner
    assert await store.forget_entity(owners[0], "Bea") == 3
    assert await store.forget_relation(owners[3], relation) is True
    assert await _links(store, owners[0]) == set()
    assert len(await _links(store, owners[3])) == 1
    for owner in (owners[1], owners[2], owners[4]):
        assert await _links(store, owner) == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
    # hostile text as the entity or relation to forget is only a name nobody has
    assert await store.forget_entity(owners[1], "x" + hostile[:199]) == 0
    assert await store.forget_relation(owners[1], "x" + hostile[:199]) is False


async def test_forgetting_on_a_cluster(cluster_store: RedisMemoryStore):
    for user in ["ana", "bob", "cai", "dee"]:
        await cluster_store.record_relations(user, [said("me", "sister", "Bea", 1), said("Bea", "lives_in", user, 2)])
        assert await cluster_store.forget_entity(user, "bea") == 3
        assert await cluster_store.list_relations(user, include_past=True) == []
        assert {e.name for e in await cluster_store.list_entities(user)} == {"user", user}
