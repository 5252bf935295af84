"""Each primary kept to one complete memory index without a search reaching it
(store/cluster/index_upkeep.py): a primary whose index name moved starts its rebuild as soon as a
process notices any moved name, and an index left beside the chosen one (a previous index whose
name's slot came back while the new one read) is dropped once the chosen one has read everything."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

import pytest
from conftest import close_dropping_everything
from test_shard_indexes import _move_index_name_off, _write_memories

from memlane.config import Settings
from memlane.store.cluster.paced_rebuild import progress_key
from memlane.store.redis.store import RedisMemoryStore, open_store

pytestmark = pytest.mark.usefixtures("cluster_slots_kept")  # slots moved here go back after each test


def _user_on(store: RedisMemoryStore, node) -> str:
    """A user whose slot is on the primary `node`."""
    return next(
        user
        for user in (f"bob{number}" for number in itertools.count())
        if store.client.get_node_from_key(store.layout.slot_key(user)).name == node.name
    )


async def _sweeps_done(store: RedisMemoryStore) -> None:
    """Wait until the store's background look at every primary (if one runs) has ended."""
    while (task := store.core.shards._sweep.task) is not None and not task.done():
        await asyncio.sleep(0.05)


async def test_a_primary_no_search_reaches_starts_its_rebuild_when_another_name_moved(
    redis_cluster, settings: Settings, embeddings
):
    """A reshard moved the index names of two primaries; searches reach only one of them (the other
    has few users). Before, the other primary's rebuild waited for its first search (minutes in a
    drill); now both processes that noticed the moved name look at every primary in the background,
    and that primary gets one new index, which reads its memories, its stale one dropped after."""
    cluster_settings = settings.model_copy(update={"redis_url": redis_cluster[0]})
    stores = [await open_store(cluster_settings, embeddings=embeddings) for _ in range(2)]  # two processes
    first = stores[0]
    try:
        shards = first.core.shards
        searched = first.client.get_node_from_key(first.layout.slot_key("alice"))
        # both names go to the primary of the highest slots (its own index's name stays its highest)
        quiet, third = sorted(
            (node for node in first.client.get_primaries() if node.name != searched.name),
            key=lambda node: first.client.keyslot(shards.chosen_name(node)),
        )
        bob = _user_on(first, quiet)
        await _write_memories(first, "alice", 10, "zanzibar")
        await _write_memories(first, bob, 300, "yarrow")
        before = shards.chosen_name(quiet)
        for node, user in ((searched, "alice"), (quiet, bob)):
            name_slot = first.client.keyslot(shards.chosen_name(node))
            assert name_slot != first.client.keyslot(first.layout.slot_key(user))  # the user stays
            redis_cluster[1].move_slot(name_slot, node.port, third.port)

        for store in stores:
            hits = await store.search_memories("alice", "quokka", limit=5)
            assert "zanzibar number 9 and a quokka" in [hit.memory.text for hit in hits] and not hits.incomplete
            assert store.core.shards.waited_trips == 0

        # no search reaches `quiet`; it gets its new index all the same, which reads bob's memories
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = [
                (report.state, report.docs, report.percent_indexed) for report in await first.core.shards.survey(quiet)
            ]
            if found == [("in use", 300, 1.0)]:
                break
            await asyncio.sleep(0.2)
        assert found == [("in use", 300, 1.0)]  # one index (both processes noticed), whole, the stale one gone
        made = (await first.core.shards.survey(quiet))[0].name
        assert made != before
        await asyncio.gather(*(_sweeps_done(store) for store in stores))
        assert {store.core.shards.chosen_name(quiet) for store in stores} == {made}  # made once, adopted by the other
        hits = await stores[1].search_memories(bob, "quokka", limit=5)
        assert "yarrow number 299 and a quokka" in [hit.memory.text for hit in hits] and not hits.incomplete
        assert all(store.core.shards.incomplete_searches == 0 for store in stores)
    finally:
        await stores[1].aclose()
        await close_dropping_everything(first)


async def test_a_previous_index_whose_name_came_back_is_kept_and_the_reading_one_dropped(
    redis_cluster, settings: Settings, embeddings, caplog
):
    """The slot of a primary's index name moved off and, while the new index read, came back (a
    rebalance): the primary holds two indexes it can name, the previous one complete. A process that
    chooses then (another one, or one after a failover) used to keep the complete one and leave the
    other, 99 % read, for `memlane redis cluster-check --fix`; now it drops it. The process that was
    reading into the dropped one chooses again, its searches whole all along."""
    caplog.set_level(logging.INFO, logger="memlane.store.cluster.paced_rebuild")
    cluster_settings = settings.model_copy(update={"redis_url": redis_cluster[0]})
    memories = 3000
    exact = f"zanzibar number {memories - 1} and a quokka"
    slow = cluster_settings.model_copy(
        update={"redis_cluster_rebuild_batch": 2, "redis_cluster_rebuild_pause_seconds": 0.05}  # ~75 s to read
    )
    first = await open_store(slow, embeddings=embeddings)
    second = None
    try:
        shards = first.core.shards
        await _write_memories(first, "alice", memories, "zanzibar")
        node = first.client.get_node_from_key(first.layout.slot_key("alice"))
        previous = shards.chosen_name(node)
        assert previous is not None
        _move_index_name_off(first, redis_cluster, node)
        hits = await first.search_memories("alice", "quokka", limit=5)
        assert exact in [hit.memory.text for hit in hits] and not hits.incomplete
        reading = shards.chosen_name(node)
        assert reading not in (None, previous) and node.name not in shards._ready
        await _sweeps_done(first)
        other = next(primary for primary in first.client.get_primaries() if primary.name != node.name)  # as moved
        redis_cluster[1].move_slot(first.client.keyslot(previous), other.port, node.port)  # back, mid-read

        second = await open_store(cluster_settings, embeddings=embeddings)  # chooses every primary's index
        assert second.core.shards.chosen_name(node) == previous  # the complete one
        reports = await second.core.shards.check(fix=False)  # `memlane redis cluster-check`
        assert [(report.name, report.state, report.action) for report in reports if report.node == node.name] == [
            (previous, "in use", "")
        ]
        assert all(report.state == "in use" and not report.action for report in reports)

        # the first process, reading into the dropped index, chooses again; no search of it fails
        deadline = time.monotonic() + 30
        while shards.chosen_name(node) != previous and time.monotonic() < deadline:
            hits = await first.search_memories("alice", "quokka", limit=5)
            assert exact in [hit.memory.text for hit in hits] and not hits.incomplete
            await asyncio.sleep(0.1)
        assert shards.chosen_name(node) == previous
        hits = await first.search_memories("alice", "quokka", limit=5)
        assert exact in [hit.memory.text for hit in hits] and not hits.incomplete
        assert shards.incomplete_searches == 0
        await asyncio.wait_for(asyncio.gather(*shards._rebuilds.values()), 30)  # its rebuild stopped
        said = [record.getMessage() for record in caplog.records if reading in record.getMessage()]
        assert not any("has read every memory" in line for line in said), said  # it says it stopped
        assert not await first.client.exists(progress_key(first.layout, reading))  # and left no progress
        assert [report.state for report in await shards.survey(node)] == ["in use"]
    finally:
        if second is not None:
            await second.aclose()
        await close_dropping_everything(first)


async def test_a_name_moved_where_no_search_of_this_process_goes_is_found_within_the_minute(
    redis_cluster, settings: Settings, embeddings
):
    """Nothing this process does meets the moved name (its searches reach another primary, none of
    its users' slots moved): the pass searches ask for once a minute (here half a second) finds it."""
    store = await open_store(settings.model_copy(update={"redis_url": redis_cluster[0]}), embeddings=embeddings)
    try:
        shards = store.core.shards
        shards._sweep.every_seconds = 0.5
        searched = store.client.get_node_from_key(store.layout.slot_key("alice"))
        quiet = next(node for node in store.client.get_primaries() if node.name != searched.name)
        bob = _user_on(store, quiet)
        await _write_memories(store, "alice", 10, "zanzibar")
        await _write_memories(store, bob, 200, "yarrow")
        await store.search_memories(bob, "yarrow")
        before = shards.chosen_name(quiet)
        assert before is not None
        name_slot = store.client.keyslot(before)
        assert name_slot != store.client.keyslot(store.layout.slot_key(bob))
        elsewhere = next(node for node in store.client.get_primaries() if node.name not in (quiet.name, searched.name))
        redis_cluster[1].move_slot(name_slot, quiet.port, elsewhere.port)

        deadline = time.monotonic() + 30
        while shards.chosen_name(quiet) == before and time.monotonic() < deadline:
            hits = await store.search_memories("alice", "quokka", limit=5)  # alice's primary only
            assert "zanzibar number 9 and a quokka" in [hit.memory.text for hit in hits]
            await asyncio.sleep(0.2)
        assert shards.chosen_name(quiet) not in (None, before)  # chosen again: a new index there
        await _sweeps_done(store)
        hits = await store.search_memories(bob, "quokka", limit=5)
        assert "yarrow number 199 and a quokka" in [hit.memory.text for hit in hits] and not hits.incomplete
    finally:
        await close_dropping_everything(store)
