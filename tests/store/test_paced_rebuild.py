"""A primary's index rebuilt at memlane's pace (store/cluster/paced_rebuild.py): made with
SKIPINITIALSCAN while the previous index answers, it reads every memory exactly once in paced
batches, goes on where a stopped process left it, and only then is the previous index dropped."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis
from conftest import close_dropping_everything
from test_shard_indexes import _indexes_by_node, _move_index_name_off, _write_memories

from memlane.config import Settings
from memlane.store.cluster.index_parts import info_number, node_command, text
from memlane.store.cluster.paced_rebuild import lease_key, progress_key
from memlane.store.redis.store import open_store

pytestmark = pytest.mark.usefixtures("cluster_slots_kept")  # slots moved here go back after each test

MEMORIES = 3000
EXACT = f"zanzibar number {MEMORIES - 1} and a quokka"


async def _state(store, node, name: str) -> dict[str, str]:
    found = await node_command(store.core.shards.node_client(node), "HGETALL", progress_key(store.layout, name))
    return {text(key): text(value) for key, value in found.items()}


async def _search_is_whole(store) -> None:
    hits = await store.search_memories("alice", "quokka", limit=5)
    assert EXACT in [hit.memory.text for hit in hits] and not hits.incomplete


async def test_a_paced_rebuild_reads_every_memory_once_and_goes_on_after_a_stop(
    redis_cluster, settings: Settings, embeddings
):
    slow = settings.model_copy(
        update={
            "redis_url": redis_cluster[0],
            "redis_cluster_rebuild_batch": 2,  # SCAN pages of 40 keys, each read in 20 steps
            "redis_cluster_rebuild_pause_seconds": 0.05,
        }
    )
    first = await open_store(slow, embeddings=embeddings)
    try:
        await _write_memories(first, "alice", MEMORIES, "zanzibar")
        node = first.client.get_node_from_key(first.layout.slot_key("alice"))
        await first.search_memories("alice", "zanzibar")
        before = first.core.shards._indexes[node.name].name
        _move_index_name_off(first, redis_cluster, node)

        # the new index is made empty (no RediSearch scan) and read at the set pace; searches are whole
        await _search_is_whole(first)
        name = first.core.shards._indexes[node.name].name
        assert name != before
        for _ in range(10):
            await asyncio.sleep(0.2)
            await _search_is_whole(first)
        stopped = await _state(first, node, name)
        assert stopped["done"] == "0" and stopped["cursor"] != "0" and 0 < int(stopped["read"]) < MEMORIES
        info = await node_command(first.core.shards.node_client(node), "FT.INFO", name)
        assert 0 < info_number(info, "num_docs", 0) < MEMORIES  # what the batches showed it, no more
        assert first.core.shards.waited_trips == 0 and first.core.shards.incomplete_searches == 0
    finally:
        await first.aclose()  # stops midway: the cursor stays in Redis, the lease is released

    # another process holds the rebuild's lease (taken before the second store opens, which starts the
    # rebuild): the second one waits it out, and meanwhile its searches answer from the previous index
    holder = aioredis.Redis.from_url(redis_cluster[1].node_url(node.port))
    lease = lease_key(first.layout, name)
    await holder.set(lease, "another process", px=60_000)
    second = await open_store(
        slow.model_copy(update={"redis_cluster_rebuild_batch": 20, "redis_cluster_rebuild_pause_seconds": 0.02}),
        embeddings=embeddings,
    )
    shards = second.core.shards
    try:
        await _search_is_whole(second)  # from the previous index still: the new one has not read all
        assert shards.previous_index_trips > 0
        assert await _state(second, node, name) == stopped  # nobody read while the lease was held elsewhere
        await holder.delete(lease)  # that process is done with it: this one goes on
        await holder.aclose()
        deadline = time.monotonic() + 120
        while node.name not in shards._ready and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert node.name in shards._ready
        done = await _state(second, node, name)
        assert done["done"] == "1" and done["cursor"] == "0"
        assert int(done["read"]) >= MEMORIES  # from the kept cursor: a stopped page is read again, no more
        info = await node_command(shards.node_client(node), "FT.INFO", name)
        assert int(info_number(info, "num_docs", 0)) == MEMORIES  # none missed, none twice
        # the old one gone: the rebuild's task drops it right after it marks the new one ready (under the
        # node's index lock: store/cluster/index_upkeep.py `drop_extras`), so it may still be there a moment
        while len((await _indexes_by_node(second))[node.name]) > 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert [state for _, state in (await _indexes_by_node(second))[node.name]] == ["in use"]
        await _search_is_whole(second)
        assert await second.search.memory_count("alice") == MEMORIES
        assert shards.waited_trips == 0 and shards.incomplete_searches == 0
    finally:
        await close_dropping_everything(second)
