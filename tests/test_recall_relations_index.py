"""Recall's relation step through the link index (memlane/recall_relations.py linked_in_store,
store/redis/relation_index.py): the same links as the walk over every entity and relation
(`linked`), reading only what the message names; the index kept by every write and forget, and
built on first use for a store written before it."""

from __future__ import annotations

import random

import pytest

from memlane.recall_relations import _walk_order, candidate_names, linked, linked_in_store
from memlane.store.redis.relation_index import entity_links_key, index_fields
from memlane.store.relations import RelationStatement

DAY = 86_400.0
PEOPLE = ["Bea", "Tom", "Ana Maria", "王总", "小雨", "贝亚", "Li Wei", "Zoe", "老张", "Kim"]
PLACES = ["Porto", "Lisbon", "杭州", "New York", "北京", "Faro"]
ROLES = ["sister", "boss", "friend", "daughter", "brother", "colleague", "表哥"]
WORDS = [
    "where",
    "does",
    "my",
    "live",
    "who",
    "is",
    "的",
    "住在哪里",
    "我",
    "上司",
    "女儿",
    "before",
    "now",
    "lives in",
]


def world(rng: random.Random) -> list[RelationStatement]:
    statements = []
    for day in range(1, 25):
        kind = rng.random()
        if kind < 0.3:
            subject, predicate, target = "me", rng.choice(ROLES), rng.choice(PEOPLE)
        elif kind < 0.6:
            subject, predicate, target = rng.choice(PEOPLE), "lives_in", rng.choice(PLACES)
        else:
            subject, predicate, target = rng.choice(PEOPLE), rng.choice(ROLES), rng.choice(PEOPLE)
        if subject != target:
            statements.append(
                RelationStatement(
                    subject=subject,
                    predicate=predicate,
                    object=target,
                    valid_from=day * DAY,
                    exclusive=predicate in ("lives_in", "boss"),
                    source_message_ids=[f"m{day}"],
                )
            )
    return statements


def message(rng: random.Random) -> str:
    parts = rng.sample(WORDS, 3) + rng.sample(PEOPLE + PLACES + ROLES, rng.randint(0, 2))
    rng.shuffle(parts)
    joiner = "" if rng.random() < 0.3 else " "
    return joiner.join(parts) + rng.choice(["?", "？", ""])


async def reference(store, user: str, text: str, *, as_of: float | None, past: bool):
    """What the walk over every entity and relation finds (as recall read it before the index)."""
    entities = await store.list_entities(user)
    relations = sorted(await store.list_relations(user, as_of=as_of, include_past=past), key=_walk_order)
    return [relation.id for relation in linked(text, entities, relations)]


@pytest.mark.parametrize("seed", range(6))
async def test_the_indexed_walk_finds_what_the_walk_over_everything_finds(store, seed: int):
    rng = random.Random(seed)
    user = f"w{seed}"
    await store.remember_entity(user, "Bea", aliases=["Beatriz"], type="person")
    await store.record_relations(user, world(rng))
    checked = 0
    for _ in range(60):
        text = message(rng)
        as_of, past = rng.choice([(None, False), (10 * DAY, False), (None, True)])
        found, names = await linked_in_store(store, user, text, as_of=as_of, include_past=past)
        assert [relation.id for relation in found] == await reference(store, user, text, as_of=as_of, past=past), text
        assert all(relation.subject in names and relation.object in names for relation in found)
        checked += bool(found)
    assert checked >= 10  # the messages do name what the users hold


async def test_the_index_follows_every_write_and_forget(store):
    rng = random.Random(7)
    user = "idx"
    await store.record_relations(user, world(rng))
    key = entity_links_key(store.layout, user)

    async def index_is_derived() -> None:
        stored = {k.decode(): v.decode() for k, v in (await store.client.hgetall(key)).items()}
        assert stored == index_fields(await store.list_relations(user, include_past=True))

    await index_is_derived()
    await store.record_relations(user, world(rng))
    await index_is_derived()
    await store.forget_entity(user, "Bea")
    await index_is_derived()
    await store.forget_relation(user, (await store.list_relations(user))[0].id)
    await index_is_derived()


async def test_a_store_written_before_the_index_is_read_and_gets_one(store):
    user = "old"
    await store.record_relations(
        user,
        [
            RelationStatement(subject="me", predicate="sister", object="Bea", valid_from=DAY),
            RelationStatement(subject="Bea", predicate="lives_in", object="Porto", valid_from=2 * DAY),
        ],
    )
    key = entity_links_key(store.layout, user)
    await store.client.delete(key)  # as a store of the first slice left it
    found, names = await linked_in_store(store, user, "Where does my sister live?")
    assert [(names[r.subject], r.predicate, names[r.object]) for r in found] == [
        ("user", "sister", "Bea"),
        ("Bea", "lives_in", "Porto"),
    ]
    assert await store.client.hexists(key, "~built")


async def test_the_index_on_a_cluster(cluster_store):
    for user in ["ana", "bob", "cai"]:
        await cluster_store.record_relations(
            user,
            [
                RelationStatement(subject="me", predicate="boss", object="王总", valid_from=DAY),
                RelationStatement(subject="王总", predicate="daughter", object="小雨", valid_from=2 * DAY),
                RelationStatement(subject="小雨", predicate="lives_in", object=user, valid_from=3 * DAY),
            ],
        )
        found, names = await linked_in_store(cluster_store, user, "我上司的女儿住在哪里？")
        assert [names[r.object] for r in found] == ["王总", "小雨", user]


def test_candidate_names_are_word_runs_and_chinese_substrings():
    names = candidate_names("Where does Ana Maria live? 我姐姐贝亚")
    assert {"ana maria", "ana", "where does ana maria live", "贝亚", "我姐姐贝亚", "姐"} <= set(names)
    assert (
        candidate_names(" ".join(f"w{n}" for n in range(5_000))) is None
    )  # too many: matched against the user's names instead


async def test_a_very_long_message_is_matched_against_the_users_names(store):
    await store.record_relations(
        "long", [RelationStatement(subject="Bea", predicate="lives_in", object="Porto", valid_from=DAY)]
    )
    text = " ".join(f"w{n}" for n in range(3_000)) + " where does Bea live? " + "的" * 600
    found, names = await linked_in_store(store, "long", text)
    assert [(names[r.subject], names[r.object]) for r in found] == [("Bea", "Porto")]
