"""The relation store (store/relations.py, store/redis/relations.py): entities found by any of their
names, links that know when they held, a newer exclusive link ending the older one, isolated per
user, agent scope and tenant, in the user's hash slot, deleted with the user."""

from __future__ import annotations

import pytest
from conftest import HOSTILE_IDS
from redis.cluster import key_slot

from memlane import scoped_user_id
from memlane.store.errors import InvalidInput
from memlane.store.redis.relations import entities_key, entity_names_key, relations_key
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.relations import RelationStatement, closed_by, links_at, normalized_name
from memlane.tenants import store_user_id

DAY = 86_400.0


def said(subject: str, predicate: str, target: str, day: float, *sources: str, **more) -> RelationStatement:
    return RelationStatement(
        subject=subject,
        predicate=predicate,
        object=target,
        valid_from=day * DAY,
        source_message_ids=list(sources),
        **more,
    )


def test_names_are_looked_up_case_and_width_aside():
    assert normalized_name("  Bea. ") == normalized_name("BEA") == normalized_name("ｂｅａ") == "bea"
    assert normalized_name("王总。") == "王总"


@pytest.mark.parametrize(
    "bad",
    [
        {"subject": "", "predicate": "sister", "object": "Bea"},
        {"subject": "...", "predicate": "sister", "object": "Bea"},
        {"subject": "me", "predicate": "has sister!", "object": "Bea"},
        {"subject": "me", "predicate": "sister", "object": "B" * 201},
        {"subject": "me", "predicate": "sister", "object": "Bea\x00"},
        {"subject": "me", "predicate": "sister", "object": "Bea", "confidence": 2},
    ],
)
def test_bad_statements_are_refused_saying_why(bad):
    with pytest.raises(ValueError):
        RelationStatement(**bad)


def test_a_newer_exclusive_link_ends_the_older_one_and_a_shared_one_does_not():
    from memlane.store.relations import Relation

    lisbon = Relation(id="1", subject="bea", predicate="lives_in", object="lisbon", valid_from=1 * DAY)
    porto = Relation(id="2", subject="bea", predicate="lives_in", object="porto", valid_from=5 * DAY)
    [ended] = closed_by([lisbon], porto)
    assert ended.valid_until == 5 * DAY and ended.holds_at(4 * DAY) and not ended.holds_at(5 * DAY)
    assert closed_by([lisbon], porto.model_copy(update={"exclusive": False})) == []
    assert [r.object for r in links_at([ended, porto], as_of=3 * DAY)] == ["lisbon"]
    assert [r.object for r in links_at([ended, porto], as_of=6 * DAY)] == ["porto"]
    assert [r.object for r in links_at([ended, porto], include_past=True)] == ["lisbon", "porto"]


async def test_two_hops_are_stored_and_a_move_ends_the_old_home(store: RedisMemoryStore):
    user = "ana"
    await store.record_relations(
        user,
        [
            said("me", "sister", "Bea", 1, "m1", object_type="person"),
            said("Bea", "lives_in", "Lisbon", 2, "m2", object_type="place"),
        ],
    )
    written = await store.record_relations(user, [said("Bea", "lives_in", "Porto", 9, "m3", object_type="place")])
    assert len(written) == 2  # Porto, and Lisbon ended

    bea = await store.find_entity(user, "bea")
    me = await store.find_entity(user, "我")
    assert bea is not None and bea.type == "person" and me is not None and me.name == "user"
    names = {entity.id: entity.name for entity in await store.list_entities(user)}
    assert sorted(names.values()) == ["Bea", "Lisbon", "Porto", "user"]

    now_links = await store.list_relations(user)
    assert {(names[r.subject], r.predicate, names[r.object]) for r in now_links} == {
        ("user", "sister", "Bea"),
        ("Bea", "lives_in", "Porto"),
    }
    back_then = await store.list_relations(user, as_of=5 * DAY, entity=bea.id)
    assert [(names[r.subject], names[r.object], r.source_message_ids) for r in back_then] == [
        ("user", "Bea", ["m1"]),
        ("Bea", "Lisbon", ["m2"]),
    ]
    everything = await store.list_relations(user, include_past=True, entity=bea.id)
    lisbon = next(r for r in everything if names[r.object] == "Lisbon")
    assert lisbon.valid_until == 9 * DAY


async def test_a_statement_said_again_is_stored_once_and_an_older_one_arrives_ended(store: RedisMemoryStore):
    user = "ben"
    await store.record_relations(user, [said("Bea", "lives_in", "Porto", 9, "m3")])
    await store.record_relations(user, [said("Bea", "lives_in", "Porto", 12, "m7")])  # said again
    await store.record_relations(user, [said("Bea", "lives_in", "Porto", 12, "m7")])  # delivered twice
    late = await store.record_relations(user, [said("Bea", "lives_in", "Lisbon", 2, "m1")])  # an old fact, told late
    assert late[0].valid_until == 9 * DAY
    current = await store.list_relations(user)
    assert len(current) == 1 and current[0].source_message_ids == ["m3", "m7"] and current[0].valid_from == 9 * DAY
    assert len(await store.list_relations(user, include_past=True)) == 2


async def test_aliases_in_both_languages_name_one_entity(store: RedisMemoryStore):
    user = "cai"
    bea = await store.remember_entity(user, "Bea", aliases=["贝亚", "Beatriz"], type="person")
    await store.record_relations(user, [said("贝亚", "lives_in", "Porto", 3)])
    assert (await store.find_entity(user, "BEATRIZ")) == (await store.find_entity(user, "贝亚"))
    assert [r.subject for r in await store.list_relations(user)] == [bea.id]
    again = await store.remember_entity(user, "Beatriz", aliases=["Bia"])
    assert again.id == bea.id and again.aliases == ["贝亚", "Beatriz", "Bia"]
    assert await store.find_entity(user, "Porto") is not None and await store.find_entity(user, "Lisbon") is None


async def test_bad_input_is_refused_and_nothing_is_written(store: RedisMemoryStore):
    with pytest.raises(InvalidInput):
        await store.record_relations("dee", [said("Bea", "is", "bea", 1)])  # one entity, linked to itself
    with pytest.raises(InvalidInput):
        await store.remember_entity("dee", "  ")
    with pytest.raises(InvalidInput):
        await store.find_entity("dee", "")
    assert await store.list_entities("dee") == [] and await store.list_relations("dee", include_past=True) == []


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_relations_are_isolated_per_user_scope_and_tenant(store: RedisMemoryStore, hostile: str):
    owners = [
        hostile,
        hostile + "2",
        scoped_user_id(hostile, "coach"),
        store_user_id("acme", "u" + hostile.replace("/", "")),
        store_user_id("globex", "u" + hostile.replace("/", "")),
    ]
    for index, owner in enumerate(owners):
        await store.record_relations(owner, [said("Bea", "lives_in", f"City{index}", 1, f"m{index}")])
    for index, owner in enumerate(owners):
        entities = {entity.id: entity.name for entity in await store.list_entities(owner)}
        assert [entities[r.object] for r in await store.list_relations(owner)] == [f"City{index}"]
        assert await store.find_entity(owner, f"City{index + 1}") is None
    # deleting the user deletes its relations and its agents' scopes', not another user's
    await store.delete_user(hostile)
    assert (
        await store.list_entities(hostile) == [] and await store.list_relations(scoped_user_id(hostile, "coach")) == []
    )
    assert len(await store.list_relations(hostile + "2")) == 1


async def test_every_relation_key_is_in_the_users_hash_slot(store: RedisMemoryStore):
    for user in ["ana", scoped_user_id("ana", "coach")]:
        slots = {key_slot(key(store.layout, user).encode()) for key in (entities_key, entity_names_key, relations_key)}
        assert slots == {key_slot(store.layout.slot_key("ana").encode())}


async def test_relations_on_a_cluster(cluster_store: RedisMemoryStore):
    for user in ["ana", "bob", "cai", "dee"]:
        await cluster_store.record_relations(user, [said("me", "sister", "Bea", 1), said("Bea", "lives_in", user, 2)])
        await cluster_store.record_relations(user, [said("Bea", "lives_in", "Porto", 3)])
        current = await cluster_store.list_relations(user)
        names = {entity.id: entity.name for entity in await cluster_store.list_entities(user)}
        assert {names[r.object] for r in current} == {"Bea", "Porto"}


async def test_the_users_export_holds_its_entities_and_every_relation(store: RedisMemoryStore):
    await store.record_relations("eve", [said("Bea", "lives_in", "Lisbon", 1)])
    await store.record_relations("eve", [said("Bea", "lives_in", "Porto", 2)])
    await store.record_relations(scoped_user_id("eve", "coach"), [said("me", "boss", "王总", 1)])
    export = await store.export_user("eve")
    assert sorted(entity.name for entity in export.entities) == ["Bea", "Lisbon", "Porto"]
    assert [relation.valid_until for relation in export.relations] == [2 * DAY, None]
    assert [relation.predicate for relation in export.agents["coach"].relations] == ["boss"]
