"""Two entities the chat says are one (store/redis/relations.py remember_entity(merge=True)): one id,
every name, every link (one where both had it; a newer home ending the older), the link index
following, and the user never merged into anyone."""

from __future__ import annotations

from memlane.recall_relations import linked_in_store
from memlane.store.redis.relation_index import entity_links_key, index_fields
from memlane.store.relations import RelationStatement

DAY = 86_400.0


def said(subject: str, predicate: str, target: str, day: float, source: str, exclusive: bool = True):
    return RelationStatement(
        subject=subject,
        predicate=predicate,
        object=target,
        valid_from=day * DAY,
        source_message_ids=[source],
        exclusive=exclusive,
    )


async def test_bea_and_贝亚_become_one_with_every_link(store):
    user = "merge"
    await store.record_relations(
        user, [said("me", "sister", "贝亚", 1, "m1", exclusive=False), said("贝亚", "lives_in", "杭州", 1, "m1")]
    )
    await store.record_relations(
        user, [said("me", "sister", "Bea", 5, "m5", exclusive=False), said("Bea", "lives_in", "Porto", 5, "m5")]
    )
    bea = await store.remember_entity(user, "Bea", aliases=["贝亚"], merge=True)
    assert {name for name in bea.names()} == {"Bea", "贝亚"}
    assert (await store.find_entity(user, "贝亚")).id == bea.id  # type: ignore[union-attr]
    assert sorted(e.name for e in await store.list_entities(user)) == ["Bea", "Porto", "user", "杭州"]
    names = {e.id: e.name for e in await store.list_entities(user)}
    every = await store.list_relations(user, include_past=True)
    sister = [r for r in every if r.predicate == "sister"]
    assert len(sister) == 1 and sister[0].source_message_ids == ["m1", "m5"] and sister[0].valid_from == DAY
    homes = {names[r.object]: r.valid_until for r in every if r.predicate == "lives_in"}
    assert homes == {"杭州": 5 * DAY, "Porto": None}  # the newer home ended the older
    stored = {
        k.decode(): v.decode() for k, v in (await store.client.hgetall(entity_links_key(store.layout, user))).items()
    }
    assert stored == index_fields(every)
    found, shown = await linked_in_store(store, user, "我姐姐住在哪里？")
    assert [(shown[r.subject], shown[r.object]) for r in found] == [("user", "Bea"), ("Bea", "Porto")]


async def test_without_merge_or_with_the_user_nothing_is_merged(store):
    user = "nomerge"
    await store.record_relations(
        user, [said("Bea", "lives_in", "Porto", 1, "m1"), said("Tom", "lives_in", "Faro", 1, "m1")]
    )
    await store.remember_entity(user, "Bea", aliases=["Tom"])
    assert sorted(e.name for e in await store.list_entities(user)) == ["Bea", "Faro", "Porto", "Tom"]
    await store.remember_entity(user, "me", aliases=["Tom"], merge=True)
    assert {"Tom", "user"} <= {e.name for e in await store.list_entities(user)}
    assert await store.find_entity(user, "Tom") is not None
