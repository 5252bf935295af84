"""A search while the user's hash slot migrates (store/cluster/moving_slot.py, moving_search.py):
half the user's memories moved to the importing primary, the other half still on the source; the
search reads both and answers whole, without waiting for the move."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
from redis.exceptions import ResponseError
from redisvl.index import AsyncSearchIndex
from test_messages import chat

from memlane.config import Settings
from memlane.recall import RecallParts, recall
from memlane.store.cluster.indexes import SearchNotes
from memlane.store.cluster.moving_search import search_both_halves
from memlane.store.cluster.search import search_then_read
from memlane.store.redis.core import as_text
from memlane.store.redis.memory_docs import RETURN_FIELDS
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField

pytestmark = pytest.mark.usefixtures("cluster_slots_kept")  # slots moved here go back after each test

# one statement per pet, each holding "pet" and its own name: every one matches the text and the vector query
PETS = ["Biscuit", "Pepper", "Mango", "Juniper", "Waffles", "Noodle", "Clover", "Pickle"]
STATEMENTS = [f"my pet {name} sleeps on the blue sofa" for name in PETS]


@contextmanager
def half_moved(store: RedisMemoryStore, redis_cluster, user: str) -> Iterator[tuple[list[str], list[str]]]:
    """The user's slot marked migrating from its primary to another, half the user's memory hashes
    moved (what a reshard does while it runs); yields (keys moved, keys left). Finishes the move after."""
    cluster = redis_cluster[1]
    password = str(cluster._read_state()["password"])
    slot = store.client.keyslot(store.layout.slot_key(user))
    source_node = store.client.get_node_from_key(store.layout.slot_key(user))
    target_node = next(node for node in store.client.get_primaries() if node.name != source_node.name)
    source = redis.Redis(host="127.0.0.1", port=source_node.port, password=password, decode_responses=True)
    target = redis.Redis(host="127.0.0.1", port=target_node.port, password=password, decode_responses=True)

    def migrate(keys: list[str]) -> None:
        if keys:
            source.execute_command(
                "MIGRATE", "127.0.0.1", target_node.port, "", 0, 10_000, "AUTH", password, "KEYS", *keys
            )

    try:
        target.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", source.execute_command("CLUSTER MYID"))
        source.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target.execute_command("CLUSTER MYID"))
        memories = sorted(key for key in source.execute_command("CLUSTER GETKEYSINSLOT", slot, 1000) if ":mem:" in key)
        moved, left = memories[::2], memories[1::2]
        migrate(moved)
        yield moved, left
    finally:
        while rest := source.execute_command("CLUSTER GETKEYSINSLOT", slot, 1000):
            migrate(rest)
        target_id = target.execute_command("CLUSTER MYID")
        for node in (target, source):
            node.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)
        source.close()
        target.close()


async def test_a_search_while_half_the_users_memories_moved_is_whole_without_waiting(
    cluster_store: RedisMemoryStore, redis_cluster, settings: Settings
):
    store, shards = cluster_store, cluster_store.core.shards
    await store.add_messages(chat("alice", "s1", *STATEMENTS))
    assert len(await store.search_memories("alice", "pet sofa", limit=20)) == len(PETS)
    shards.wait_seconds = 30.0  # a search that waited for the move would show in the time
    waited, incomplete = shards.waited_trips, shards.incomplete_searches

    with half_moved(store, redis_cluster, "alice") as (moved, left):
        assert len(moved) == len(left) == len(PETS) // 2
        started = time.monotonic()
        hits = await store.search_memories("alice", "pet sofa", limit=20)
        took = time.monotonic() - started
        assert sorted(hit.memory.text for hit in hits) == sorted(STATEMENTS) and not hits.incomplete

        # the vector trip and the text trip, each on its own: every memory, nearest or best first, the limit kept
        vector = await store.core.embed_query("my pet sleeps on the sofa")
        user = store.search.user_filter("alice", None, None, None, None)
        [nearest] = await store.search._search_user(
            "alice", [store.search.vector_query(vector, user, 20, approximate=False)], vector
        )
        distances = [float(doc["vector_distance"]) for doc in nearest]
        assert len(nearest) == len(PETS) and distances == sorted(distances)
        [by_text] = await store.search._search_user("alice", [store.search.text_query(["pet"], user, 20)])
        scores = [float(doc["score"]) for doc in by_text]
        assert len(by_text) == len(PETS) and scores == sorted(scores, reverse=True)
        [three] = await store.search._search_user("alice", [store.search.text_query(["pet"], user, 3)])
        assert len(three) == 3

        # recall: its search, and its read of the memories it shows, find both halves
        # (the relations' walk left out: its one script over several of the user's keys is refused
        # while they sit on two nodes, a matter of its own)
        parts = RecallParts.of(settings.model_copy(update={"recall_follow_relations": False}))
        recalled = await recall(store, "alice", None, "Which of my pets sleeps on the blue sofa?", parts=parts)
        assert not recalled.search_incomplete
        shown = " / ".join(item.text for item in recalled.memories)
        halves = [{as_text(await store.client.hget(key, MemoryField.TEXT)) for key in keys} for keys in (moved, left)]
        assert all(any(text in shown for text in half) for half in halves), (shown, halves)  # both nodes' memories

        assert shards.waited_trips == waited and shards.incomplete_searches == incomplete
        assert shards.both_halves_trips > 0
        assert took < 5.0, took  # no wait: the move is not over

    hits = await store.search_memories("alice", "pet sofa", limit=20)  # after the move: all on the new primary
    assert sorted(hit.memory.text for hit in hits) == sorted(STATEMENTS) and not hits.incomplete


async def test_when_the_importing_half_cannot_be_read_the_search_waits_then_says_so(
    cluster_store: RedisMemoryStore, redis_cluster
):
    """Either half failing, the search falls back to what it did before: it waits for the move
    (`wait_seconds`), then answers from the source's half and notes the answer as incomplete. (Not
    alice: the first test made her slot the highest of its new primary, which names its index after
    it in a later store, and a slot that holds an index's name is another matter.)"""
    store, shards = cluster_store, cluster_store.core.shards
    await store.add_messages(chat("bea", "s1", *STATEMENTS))
    shards.wait_seconds = 0.5
    user = store.search.user_filter("bea", None, None, None, None)
    queries = [store.search.text_query(["pet"], user, 20)]

    async def one_trip(index: AsyncSearchIndex) -> list[list[dict[str, Any]]]:
        return await search_then_read(index, queries, RETURN_FIELDS, None)

    async def importing_half_refused(
        source: AsyncSearchIndex, importing: AsyncSearchIndex | None
    ) -> list[list[dict[str, Any]]]:
        if importing is not None:
            raise ResponseError("the importing node refused the search")
        return await search_both_halves(source, None, queries, RETURN_FIELDS, None)

    with half_moved(store, redis_cluster, "bea") as (_, left):
        notes = SearchNotes()
        started = time.monotonic()
        [found] = await shards.on_owner(store.layout.slot_key("bea"), one_trip, notes, both=importing_half_refused)
        took = time.monotonic() - started
    assert len(found) == len(left) and notes and "still moving" in notes[0]
    assert notes.waited and 0.5 <= took < 5.0, took
