"""MemlaneStore's search and listing as index queries (issue 52, item 1), against the brute force it
replaced: every item of every owner read and ranked in Python (`reference_search`, the rules
tests/test_langgraph_differential.py proves against LangGraph's InMemoryStore). Random searches
over items in many namespaces, with memlane's own embedder (an exact KNN in Redis) and with an
index config's own vectors, filters that the index can express and filters it cannot."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hash_embeddings import CharacterHashEmbeddings
from langgraph.store.base import MatchCondition

from memlane import MemlaneStore
from memlane.langgraph_rules import (
    NO_USER,
    matches,
    rank_page,
    select_namespaces,
    under,
    vector_rows,
)
from memlane.store.item_fields import filter_tags, value_tags

LABELS = ["a", "b", "u1", "u2", "x*y", "中文"]
WORDS = ["coffee", "tea", "Lyon", "sister", "marathon", "cat", "black", "green", "咖啡", "北京"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"tag": "red"},
    {"tag": {"$eq": "blue"}},
    {"tag": {"$ne": "red"}},
    {"n": {"$gt": 4}},
    {"n": {"$lte": 6}, "tag": "绿"},
    {"nested": {"note": "cat"}},
    {"nested.note": "tea"},
    {"nested": {"level": 2}},
]


async def reference_search(lg: MemlaneStore, prefix: tuple[str, ...], *, query, filter, offset, limit):
    """The search as MemlaneStore did it before the index: the items of the prefix's owner (of every
    owner when the prefix names none), all read and ranked in Python."""
    store = lg.store
    owner = lg.users.prefix_owner(prefix)
    owners = [owner] if owner is not None else await store.item_owners()
    own = lg._index is not None
    candidates = []
    for owner in owners:
        for item, raw in await store.list_items_with_vectors(owner, own=own):
            if under(tuple(item.namespace), prefix) and matches(item.value, filter):
                candidates.append((item, raw))
    candidates.sort(key=lambda c: (-c[0].updated_at, c[0].namespace, c[0].key))
    if not query:
        return [(tuple(i.namespace), i.key, None) for i, _ in candidates[offset : offset + limit]]
    vector = (await lg.embeddings.aembed_query(query)) if own else await store.embed_query(query)
    dims = CharacterHashEmbeddings.dims if own else 0
    page = rank_page(
        [(item, vector_rows(raw, dims)) for item, raw in candidates], np.asarray(vector, dtype=np.float32), "cosine",
        offset, limit,
    )  # fmt: skip
    return [(tuple(i.namespace), i.key, s) for i, s in page]


def _value(rng: random.Random, serial: int) -> dict[str, Any]:
    # a serial word keeps every text apart: no two items tie at a page's edge
    value: dict[str, Any] = {"text": " ".join([*rng.choices(WORDS, k=2), f"w{serial}"]), "n": rng.randint(0, 9)}
    if rng.random() < 0.7:
        value["tag"] = rng.choice(["red", "blue", "绿"])
    if rng.random() < 0.4:
        value["nested"] = {"note": rng.choice(["cat", "tea", "Lyon"]), "level": rng.randint(0, 3)}
    return value


async def _compare(lg: MemlaneStore, rng: random.Random, namespaces: list[tuple[str, ...]], searches: int) -> None:
    for round_ in range(searches):
        prefix = rng.choice(namespaces)[: rng.randint(0, 2)]
        filter, query = rng.choice(FILTERS), rng.choice([None, *WORDS])
        offset, limit = rng.choice([0, 0, 2, 7]), rng.choice([1, 3, 10, 40])
        got = [
            (tuple(i.namespace), i.key, i.score)
            for i in await lg.asearch(prefix, query=query, filter=filter, offset=offset, limit=limit)
        ]
        expected = await reference_search(lg, prefix, query=query, filter=filter, offset=offset, limit=limit)
        where = f"round {round_}: search {prefix} query={query!r} filter={filter} offset={offset} limit={limit}"
        assert [hit[:2] for hit in got] == [hit[:2] for hit in expected], (where, got, expected)
        for (_, _, score), (_, _, want) in zip(got, expected):
            assert (score is None) == (want is None) and (score is None or abs(score - want) < 1e-4), where
        suffix = (rng.choice(LABELS),) if rng.random() < 0.5 else None
        conditions = [MatchCondition("prefix", prefix)] if prefix else []
        conditions += [MatchCondition("suffix", suffix)] if suffix else []
        depth = rng.choice([None, 1, 2])
        listed = await lg.alist_namespaces(prefix=prefix or None, suffix=suffix, max_depth=depth, limit=100)
        owner = lg.users.conditions_owner(conditions)
        owners = [owner] if owner is not None else await lg.store.item_owners()
        everything = {tuple(i.namespace) for o in owners for i in await lg.store.list_items(o)}
        assert listed == select_namespaces(everything, conditions, depth, 0, 100), where


async def test_searches_and_listings_match_the_brute_force_whatever_the_user_mapping(store):
    rng = random.Random(52)
    namespaces = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 3))) for _ in range(12)]
    for user_of in (None, 1):
        lg = MemlaneStore(store, user_of=user_of)
        for serial in range(60):
            namespace = rng.choice(namespaces)
            await lg.aput(namespace, rng.choice("kpqrs"), _value(rng, serial), index=None if serial % 9 else False)
        await _compare(lg, rng, namespaces, 40)
    assert await store.item_owners() != [NO_USER]  # user_of=1 put items under several owners too


async def test_index_config_vectors_rank_the_items_under_the_prefix(store):
    rng = random.Random(7)
    namespaces = [tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 3))) for _ in range(8)]
    lg = MemlaneStore(store, index={"dims": CharacterHashEmbeddings.dims, "embed": CharacterHashEmbeddings()})
    for serial in range(50):
        await lg.aput(rng.choice(namespaces), rng.choice("kpq"), _value(rng, serial))
    await _compare(lg, rng, namespaces, 30)


def test_filters_map_to_value_tags_only_where_equal_strings_decide():
    value = {"tag": "red", "n": 3, "nested": {"note": "cat", "level": 2}, "a.b": "x"}
    tags = set(value_tags(value))
    assert set(filter_tags({"tag": "red", "nested": {"note": "cat"}})) <= tags
    assert set(filter_tags({"nested.note": "cat", "a.b": {"$eq": "x"}})) <= tags
    assert filter_tags({"tag": "blue"})[0] not in tags
    assert filter_tags({"n": 3}) == filter_tags({"tag": {"$ne": "red"}}) == filter_tags({"n": {"$gt": 1}}) == []
    assert filter_tags({"nested": {"level": 2}}) == []
