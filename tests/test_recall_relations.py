"""Recall that follows links (memlane/recall_relations.py): a message naming an entity or a role of the
user's gets the links one or two hops out as relation items inside the budget; the past only when
asked; nothing for a message naming none; memory_recall_follow_relations off: none."""

from __future__ import annotations

from memlane.recall import RecallParts, recall
from memlane.recall_relations import linked
from memlane.store.relations import Entity, Relation, RelationStatement

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


async def family(store, user_id: str) -> None:
    await store.record_relations(
        user_id,
        [
            said("me", "sister", "Bea", 1, "m1", exclusive=False),
            said("Bea", "lives_in", "Lisbon", 2, "m2"),
            said("Bea", "lives_in", "Porto", 9, "m3"),
            said("me", "boss", "王总", 3, "m4"),
            said("王总", "daughter", "小雨", 4, "m5", exclusive=False),
            said("小雨", "lives_in", "杭州", 5, "m6"),
            said("Tom", "works_at", "Google", 6, "m7"),
        ],
    )


def relations_of(recalled) -> list[str]:
    return [item.text for item in recalled.memories if item.layer == "relation"]


async def test_two_hops_from_a_role_or_a_name_in_both_languages(store, settings):
    await family(store, "u")
    parts = RecallParts.of(settings)
    sister = await recall(store, "u", None, "Where does my sister live?", parts=parts)
    assert relations_of(sister) == ["the user → sister → Bea", "Bea → lives in → Porto"]
    item = next(item for item in sister.memories if item.text.startswith("Bea"))
    assert item.source_message_ids == ["m3"] and "Porto" in sister.text
    boss = await recall(store, "u", None, "我上司的女儿住在哪里？", parts=parts)
    assert relations_of(boss) == ["用户 → 上司 → 王总", "王总 → 女儿 → 小雨", "小雨 → 住在 → 杭州"]
    named = await recall(store, "u", None, "What is Tom up to these days?", parts=parts)
    assert relations_of(named) == ["Tom → works at → Google"]


async def test_the_past_when_asked_and_nothing_for_a_message_naming_nothing(store, settings):
    await family(store, "p")
    parts = RecallParts.of(settings)
    before = await recall(store, "p", None, "Where did Bea live before?", parts=parts)
    lines = [(item.text, item.status) for item in before.memories if item.layer == "relation"]
    assert ("Bea → lives in → Porto", "current") in lines and ("Bea → lives in → Lisbon", "earlier") in lines
    assert relations_of(await recall(store, "p", None, "How do I bake sourdough bread?", parts=parts)) == []
    off = RecallParts.of(settings.model_copy(update={"recall_follow_relations": False}))
    assert relations_of(await recall(store, "p", None, "Where does my sister live?", parts=off)) == []


async def test_relations_stay_inside_the_budget(store, settings):
    from memlane.store.text.tokens import count_tokens

    await family(store, "b")
    parts = RecallParts.of(settings)
    small = await recall(store, "b", None, "我上司的女儿住在哪里？", parts=parts, max_tokens=64)
    assert count_tokens(small.text, parts.store.token_encoding) <= 64
    assert 1 <= len(relations_of(small)) < 3 and small.dropped >= 1


def test_the_walk_stops_at_two_hops():
    entities = [Entity(id=name, name=name) for name in ("user", "A", "B", "C", "D")]
    chain = [
        Relation(id=f"r{index}", subject=a, predicate="knows", object=b, valid_from=1.0)
        for index, (a, b) in enumerate([("A", "B"), ("B", "C"), ("C", "D")])
    ]
    assert [relation.id for relation in linked("tell me about A", entities, chain)] == ["r0", "r1"]


def test_the_walk_leaves_a_reached_place_by_its_own_links_only():
    entities = [Entity(id=name, name=name) for name in ("user", "Vera", "Porto", "Zoe")]
    links = [
        Relation(id="home", subject="Vera", predicate="lives_in", object="Porto", valid_from=2.0),
        Relation(id="other", subject="Zoe", predicate="lives_in", object="Porto", valid_from=1.0),
    ]
    assert [relation.id for relation in linked("where is Vera now", entities, links)] == ["home"]
    assert {relation.id for relation in linked("who lives in Porto", entities, links)} == {"home", "other"}
