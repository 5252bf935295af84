"""MemlaneStore against LangGraph's reference store: the same random operation sequences run on
`InMemoryStore` and on `MemlaneStore` (async in the test's loop, and sync through
`MemlaneStore.open()`), and every answer is compared, scores included.

Both stores get the same index config (a small deterministic embedder of ours), so query
searches rank by the same similarities. Where the contract leaves a choice, the comparison
says so: a search without a query returns its matches in no promised order (InMemoryStore:
insertion order; the SQL stores and memlane: newest first), so those pages are compared as sets;
and pages past the first that reach unembedded items differ on purpose (InMemoryStore repeats the
unscored items on every page, memlane pages through them once). Three reference quirks are
corrected (`Reference`): InMemoryStore keeps an item's old vectors when it is put again (with
`index=False` or other fields), so its search would score the old text; it raises when two
items of one batch share a text; and it lists namespaces that hold no item.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
import pytest_asyncio
from conftest import drop_prefix_sync
from hash_embeddings import CharacterHashEmbeddings
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memlane import MemlaneStore

ASYNC_SEQUENCES = 2000
SYNC_SEQUENCES = 1000
LABELS = ["a", "b", "users", "u1", "u2", "memories", "x*y", "{t}", "中文", "a|b"]
WORDS = ["coffee", "tea", "Lyon", "sister", "marathon", "cat", "black", "green", "咖啡", "北京", "上海", "花生", "过敏"]
TAGS = ["red", "blue", "绿"]


def index_config(rng: random.Random) -> dict[str, Any]:
    fields = rng.choice([None, ["text"], ["text", "tag"], ["nested.note"]])
    return {
        "dims": CharacterHashEmbeddings.dims,
        "embed": CharacterHashEmbeddings(),
        **({"fields": fields} if fields else {}),
    }


def random_namespace(rng: random.Random) -> tuple[str, ...]:
    return tuple(rng.choice(LABELS) for _ in range(rng.randint(1, 3)))


def random_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"text": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))), "n": rng.randint(0, 9)}
    if rng.random() < 0.6:
        value["tag"] = rng.choice(TAGS)
    if rng.random() < 0.3:
        value["nested"] = {"note": rng.choice(WORDS), "level": rng.randint(0, 3)}
    return value


def random_filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice(
        [
            None,
            None,
            {"tag": rng.choice(TAGS)},
            {"tag": {"$ne": rng.choice(TAGS)}},
            {"n": {"$gt": rng.randint(0, 9)}},
            {"n": {"$lte": rng.randint(0, 9)}, "tag": rng.choice(TAGS)},
            {"n": {"$gte": 2, "$lt": 7}},
            {"nested": {"level": rng.randint(0, 3)}},
        ]
    )


def random_op(rng: random.Random, known: list[tuple[tuple[str, ...], str]]):
    roll = rng.random()
    if roll < 0.45 or not known:
        namespace, key = (
            rng.choice(known) if known and rng.random() < 0.4 else (random_namespace(rng), rng.choice("kpq"))
        )
        if rng.random() < 0.15:
            return PutOp(namespace, key, None)
        index = rng.choice([None, None, None, False, ["text"], ["tag"], ["nested.note", "text"]])
        return PutOp(namespace, key, random_value(rng), index=index)
    if roll < 0.6:
        namespace, key = rng.choice(known) if rng.random() < 0.8 else (random_namespace(rng), "k")
        return GetOp(namespace, key)
    if roll < 0.9:
        namespace = rng.choice(known)[0] if rng.random() < 0.7 else random_namespace(rng)
        prefix = namespace[: rng.randint(0, len(namespace))]
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 2))) if rng.random() < 0.6 else None
        return SearchOp(prefix, random_filter(rng), rng.randint(1, 8), rng.choice([0, 0, 0, 1, 2]), query)
    conditions = []
    if rng.random() < 0.7:
        conditions.append(MatchCondition("prefix", tuple(rng.choice([*LABELS, "*"]) for _ in range(rng.randint(1, 2)))))
    if rng.random() < 0.3:
        conditions.append(MatchCondition("suffix", (rng.choice([*LABELS, "*"]),)))
    return ListNamespacesOp(
        tuple(conditions) or None, rng.choice([None, None, 1, 2]), rng.randint(1, 12), rng.choice([0, 0, 1])
    )


def random_sequence(seed: int) -> tuple[dict[str, Any], list[list[Any]]]:
    """An index config and 2-6 batches of 1-3 ops each."""
    rng = random.Random(seed)
    known: list[tuple[tuple[str, ...], str]] = []
    batches = []
    for _ in range(rng.randint(2, 6)):
        batch = []
        for _ in range(rng.randint(1, 3)):
            op = random_op(rng, known)
            if isinstance(op, PutOp):
                known.append((op.namespace, op.key))
            batch.append(op)
        batches.append(batch)
    return index_config(random.Random(seed)), batches


class Reference(InMemoryStore):
    """InMemoryStore with three quirks corrected, each where it happens: a put replaces the item's
    vectors (after the batch's reads, where InMemoryStore embeds); a batch in which two items
    share a text embeds (InMemoryStore raises "Number of embeddings does not match"); and a
    namespace is listed while it holds items (InMemoryStore lists every namespace it was ever
    asked about, a `get` of a missing key included)."""

    def _extract_texts(self, put_ops):  # type: ignore[override]
        for namespace, key in put_ops:
            self._vectors[namespace].pop(key, None)
        return super()._extract_texts(put_ops)

    def _handle_list_namespaces(self, op):  # type: ignore[override]
        for namespace in [ns for ns, items in self._data.items() if not items]:
            del self._data[namespace]  # a namespace exists while it holds items, as in the SQL stores
        return super()._handle_list_namespaces(op)

    def _insertinmem_store(self, to_embed, embeddings):  # type: ignore[override]
        for places, vector in zip(to_embed.values(), embeddings):  # one vector per distinct text
            for namespace, key, path in places:
                self._vectors[namespace][key][path] = vector


def run_reference(reference: InMemoryStore, batch: list[Any]) -> list[Any]:
    return reference.batch(batch)


def same_answer(op: Any, expected: Any, got: Any, where: str) -> None:
    if isinstance(op, PutOp):
        assert got is None, where
    elif isinstance(op, GetOp):
        assert (None if expected is None else (expected.namespace, expected.key, expected.value)) == (
            None if got is None else (got.namespace, got.key, got.value)
        ), where
    elif isinstance(op, ListNamespacesOp):
        assert got == expected, where
    elif op.query is None:
        assert len(got) == len(expected), where
        assert (
            {(i.namespace, i.key) for i in got} <= {(i.namespace, i.key) for i in expected}
            or op.offset
            or len(expected) == op.limit
        ), where
        if op.offset == 0 and len(expected) < op.limit:
            assert {(i.namespace, i.key, str(i.value)) for i in got} == {
                (i.namespace, i.key, str(i.value)) for i in expected
            }, where
    else:
        same_ranking(op, expected, got, where)


def same_ranking(op: SearchOp, expected: list[Any], got: list[Any], where: str) -> None:
    """Scored hits: the same items with the same scores, in score order (ties in any order)."""
    expected_scored = [i for i in expected if i.score is not None]
    got_scored = [i for i in got if i.score is not None]
    if op.offset == 0 or not (len(expected_scored) < len(expected) or len(got_scored) < len(got)):
        assert len(got) == len(expected), where
    shared = min(len(expected_scored), len(got_scored))
    assert [i.score for i in got_scored[:shared]] == pytest.approx(
        [i.score for i in expected_scored[:shared]], abs=1e-5
    ), where
    last_score = expected_scored[shared - 1].score if shared else None
    assert {(i.namespace, i.key) for i in got_scored[:shared] if abs(i.score - last_score) > 1e-5} == {
        (i.namespace, i.key) for i in expected_scored[:shared] if abs(i.score - last_score) > 1e-5
    }, where
    if op.offset == 0:
        assert len(got_scored) == len(expected_scored), where
        expected_unscored = {(i.namespace, i.key) for i in expected if i.score is None}
        got_unscored = {(i.namespace, i.key) for i in got if i.score is None}
        assert len(got_unscored) == len(expected_unscored), where


async def _clear(lg: MemlaneStore, batches: list[list[Any]]) -> None:
    touched = {(op.namespace, op.key) for batch in batches for op in batch if isinstance(op, PutOp)}
    await lg.abatch([PutOp(namespace, key, None) for namespace, key in touched])


@pytest_asyncio.fixture(loop_scope="session")
async def memlane_stores(hashed_store):
    """One MemlaneStore per (index config, user mapping), over the test's store."""
    store = hashed_store
    made: dict[tuple[str, Any], MemlaneStore] = {}

    def get(config: dict[str, Any], user_of: Any) -> MemlaneStore:
        key = (str(config.get("fields")), user_of)
        if key not in made:
            made[key] = MemlaneStore(store, index=config, user_of=user_of)
        return made[key]

    return get


async def test_random_sequences_answer_as_inmemorystore_does(memlane_stores):
    for seed in range(ASYNC_SEQUENCES):
        config, batches = random_sequence(seed)
        reference = Reference(index=config)
        lg = memlane_stores(config, [None, 0, 1][seed % 3])
        for number, batch in enumerate(batches):
            expected = run_reference(reference, batch)
            got = await lg.abatch(batch)
            for op, want, have in zip(batch, expected, got):
                same_answer(op, want, have, f"seed {seed}, batch {number}: {op}\nexpected {want}\ngot {have}")
        await _clear(lg, batches)


def test_random_sequences_through_the_sync_api(settings):
    stores: dict[str, MemlaneStore] = {}
    try:
        for seed in range(ASYNC_SEQUENCES, ASYNC_SEQUENCES + SYNC_SEQUENCES):
            config, batches = random_sequence(seed)
            fields = str(config.get("fields"))
            if fields not in stores:
                stores[fields] = MemlaneStore.open(
                    settings, embeddings=CharacterHashEmbeddings(), index=config, user_of=seed % 2
                )
            lg = stores[fields]
            reference = Reference(index=config)
            for number, batch in enumerate(batches):
                expected = run_reference(reference, batch)
                got = lg.batch(batch)
                for op, want, have in zip(batch, expected, got):
                    same_answer(op, want, have, f"seed {seed}, batch {number}: {op}\nexpected {want}\ngot {have}")
            touched = {(op.namespace, op.key) for batch in batches for op in batch if isinstance(op, PutOp)}
            lg.batch([PutOp(namespace, key, None) for namespace, key in touched])
    finally:
        for lg in stores.values():
            lg.close()
        drop_prefix_sync(settings.redis_url, settings.key_prefix)


async def test_concurrent_callers_answer_as_one_caller_would(memlane_stores):
    """Many sequences at once on one store, each under its own root label: the coalesced writes
    of concurrent callers must leave every caller's answers as the reference gives them."""
    config = {"dims": CharacterHashEmbeddings.dims, "embed": CharacterHashEmbeddings()}
    lg = memlane_stores(config, None)

    async def one(seed: int) -> None:
        _, batches = random_sequence(seed)
        root = f"caller{seed}"
        batches = [[_rooted(op, root) for op in batch] for batch in batches]
        reference = Reference(index=config)
        for number, batch in enumerate(batches):
            expected = run_reference(reference, batch)
            got = await lg.abatch(batch)
            for op, want, have in zip(batch, expected, got):
                if isinstance(op, ListNamespacesOp):
                    continue  # other callers' namespaces are listed too
                same_answer(op, want, have, f"seed {seed}, batch {number}: {op}\nexpected {want}\ngot {have}")
        await _clear(lg, batches)

    await asyncio.gather(*(one(seed) for seed in range(5000, 5060)))


def _rooted(op: Any, root: str) -> Any:
    if isinstance(op, PutOp):
        return op._replace(namespace=(root, *op.namespace))
    if isinstance(op, GetOp):
        return op._replace(namespace=(root, *op.namespace))
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=(root, *op.namespace_prefix))
    return op
