"""A cluster that answers while a primary's index is rebuilt (store/cluster/previous_index.py and
`ShardIndexes.on_owner`): after the slot of a primary's index name moved, its searches are answered
whole from the previous index while the new one reads, and without a previous index a search waits
once for all its trips, not once per trip."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import close_dropping_everything
from test_shard_indexes import _indexes_by_node, _move_index_name_off, _write_memories

from memlane import MemlaneStore
from memlane.config import Settings
from memlane.store.cluster.index_parts import IndexReport
from memlane.store.records import Memory
from memlane.store.redis.store import open_store

pytestmark = pytest.mark.usefixtures("cluster_slots_kept")  # slots moved here go back after each test

MEMORIES = 8000  # enough that the new index is still reading when the search comes, on any machine
EXACT = f"zanzibar number {MEMORIES - 1} and a quokka"
EXACT_OF_THREE = f"zanzibar number {3 * MEMORIES - 1} and a quokka"  # the last of MEMORIES * 3


async def test_a_search_while_the_new_index_reads_is_whole_from_the_previous_one(
    redis_cluster, settings: Settings, embeddings
):
    # steps of 50 (the default 5 made this test wait 40 s for the rebuild's end): still 160 steps to read
    paced = {"redis_url": redis_cluster[0], "redis_cluster_rebuild_batch": 50}
    store = await open_store(settings.model_copy(update=paced), embeddings=embeddings)
    shards = store.core.shards
    try:
        await _write_memories(store, "alice", MEMORIES, "zanzibar")
        node = store.client.get_node_from_key(store.layout.slot_key("alice"))
        await store.search_memories("alice", "zanzibar")
        before = shards._indexes[node.name].name
        _move_index_name_off(store, redis_cluster, node)

        hits = await store.search_memories("alice", "quokka", limit=5)
        assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete
        assert await store.search.memory_count("alice") == MEMORIES
        assert shards.previous_index_trips > 0  # the new index was still reading: the previous one answered
        assert shards.waited_trips == 0 and shards.incomplete_searches == 0

        # once the new index has read everything, it answers and the previous one is dropped
        deadline = time.monotonic() + 120
        while node.name not in shards._ready and time.monotonic() < deadline:
            hits = await store.search_memories("alice", "quokka", limit=5)
            assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete
        assert node.name in shards._ready
        # the previous one is dropped by the rebuild's task right after it marks the new one ready
        # (under the node's index lock: store/cluster/index_upkeep.py `drop_extras`)
        while len(after := (await _indexes_by_node(store))[node.name]) > 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert [state for _, state in after] == ["in use"] and after[0][0] != before
        hits = await store.search_memories("alice", "quokka", limit=5)
        assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete
        assert shards.waited_trips == 0 and shards.incomplete_searches == 0
    finally:
        await close_dropping_everything(store)


async def test_without_a_previous_index_a_search_waits_once_for_all_its_trips(
    redis_cluster, settings: Settings, embeddings
):
    """Its count, text and vector trips share one wait (`SearchNotes.deadline`): 3 s once, where each
    trip used to wait its own 3 s; what it could not read it says."""
    wait = 3.0
    store = await open_store(
        settings.model_copy(update={"redis_url": redis_cluster[0], "redis_cluster_index_wait_seconds": wait}),
        embeddings=embeddings,
    )
    shards = store.core.shards
    try:
        await _write_memories(store, "alice", MEMORIES * 3, "zanzibar")
        node = store.client.get_node_from_key(store.layout.slot_key("alice"))
        await store.search_memories("alice", "zanzibar")
        previous = shards._indexes[node.name].name
        _move_index_name_off(store, redis_cluster, node)
        await shards.drop(node, IndexReport(node.name, previous, "stale"))  # no previous index to answer from
        shards.forget_index(node.name)
        store.search.counts_changed(["alice"])  # the count is asked again: a trip of its own

        started = time.monotonic()
        hits = await store.search_memories("alice", "quokka", limit=5)
        took = time.monotonic() - started
        if hits.incomplete:  # the new index did not finish within the wait
            assert "has read" in hits.incomplete[0]
            assert took < 2 * wait, took  # one wait, not one per trip (three trips waited 3 x 3 s)
            assert shards.waited_trips == 1
        else:
            assert EXACT_OF_THREE in [hit.memory.text for hit in hits]
        assert shards.previous_index_trips == 0
    finally:
        await close_dropping_everything(store)


async def test_a_previous_index_whose_name_comes_back_to_its_node_still_answers(
    redis_cluster, settings: Settings, embeddings
):
    """The slot of the index's name moved off and, while the new index read, back again (a rebalance):
    marking the node as importing a slot it owns is refused ("I'm already the owner of hash slot"),
    and every search and save raised that until the new index finished. Now the answer stands."""
    store = await open_store(settings.model_copy(update={"redis_url": redis_cluster[0]}), embeddings=embeddings)
    shards = store.core.shards
    try:
        await _write_memories(store, "alice", MEMORIES, "zanzibar")
        node = store.client.get_node_from_key(store.layout.slot_key("alice"))
        await store.search_memories("alice", "zanzibar")
        name = shards._indexes[node.name].name
        _move_index_name_off(store, redis_cluster, node)
        hits = await store.search_memories("alice", "quokka", limit=5)
        assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete
        if node.name in shards._ready:
            pytest.skip("the new index read everything before the slot came back (a very fast machine)")
        other = next(primary for primary in store.client.get_primaries() if primary.name != node.name)  # as moved
        redis_cluster[1].move_slot(store.client.keyslot(name), other.port, node.port)  # and back, mid-read

        hits = await store.search_memories("alice", "quokka", limit=5)
        assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete
        note = Memory(id="n1", user_id="alice", kind="event", text="a note written after the move back")
        assert await store.add_memories([note]) == ["n1"]  # its near-duplicate search reads the index too
        assert shards.incomplete_searches == 0
    finally:
        await close_dropping_everything(store)


async def test_a_search_of_anyones_items_while_a_name_moved_is_whole(redis_cluster, settings: Settings, embeddings):
    """A LangGraph search under a prefix that names no user reads every primary
    (store/cluster/every_primary.py): where a primary's index name moved, it used to raise (MOVED on
    the old name) or answer from the new index's part read so far; now the previous index answers."""
    store = await open_store(settings.model_copy(update={"redis_url": redis_cluster[0]}), embeddings=embeddings)
    shards = store.core.shards
    graph_store = MemlaneStore(store, user_of=1)
    try:
        owners = ["alice", "bob", "carol", "dave", "erin"]
        for owner in owners:
            for number in range(4):
                await graph_store.aput(("docs", owner), f"note-{number}", {"text": f"{owner}'s note {number}"})
        await _write_memories(store, "alice", MEMORIES, "zanzibar")  # a rebuild there takes a while
        assert len(await graph_store.asearch(("docs",), limit=100)) == 20
        node = store.client.get_node_from_key(store.layout.slot_key("alice"))
        _move_index_name_off(store, redis_cluster, node)

        found = await graph_store.asearch(("docs",), limit=100)
        assert sorted((item.namespace[1], item.key) for item in found) == sorted(
            (owner, f"note-{number}") for owner in owners for number in range(4)
        )
        assert node.name not in shards._ready and shards.previous_index_trips > 0  # the previous one answered
        assert shards.waited_trips == 0 and shards.incomplete_searches == 0
    finally:
        await close_dropping_everything(store)
