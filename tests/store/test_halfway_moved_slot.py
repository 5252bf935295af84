"""A command over several of a user's keys while the user's slot is halfway moved (store/cluster/client.py
`WaitingRedisCluster.execute_command`): each node refuses it (ASK, then TRYAGAIN) until the move ends, and
redis-py gives up after its 16 tries ("TTL exhausted", about 0.4 s). memlane tries it again until the move
is over (a recall in bench/cluster.py's rebalance had answered without memory)."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ClusterError
from test_messages import chat
from test_moving_slot_search import half_moved

from memlane.store.cluster import client as cluster_client
from memlane.store.redis.store import RedisMemoryStore

pytestmark = pytest.mark.usefixtures("cluster_slots_kept")  # slots moved here go back after each test

BOTH_EXIST = "return redis.call('EXISTS', KEYS[1], KEYS[2])"


async def test_a_command_over_keys_on_both_nodes_waits_for_the_move_to_end(
    cluster_store: RedisMemoryStore, redis_cluster
):
    store = cluster_store
    await store.add_messages(chat("alice", "s1", "my cat is called Miso", "I hike every Saturday"))
    with half_moved(store, redis_cluster, "alice") as (moved, left):
        call = asyncio.create_task(store.client.eval(BOTH_EXIST, 2, moved[0], left[0]))
        await asyncio.sleep(1.5)  # well past redis-py's own tries
        assert not call.done()  # still waiting, not failed
    assert await asyncio.wait_for(call, 10) == 2  # the move is over: run once, on the new primary


async def test_past_its_bound_the_command_fails_as_redis_py_says(
    cluster_store: RedisMemoryStore, redis_cluster, monkeypatch
):
    store = cluster_store
    await store.add_messages(chat("alice", "s1", "my cat is called Miso", "I hike every Saturday"))
    monkeypatch.setattr(cluster_client, "SLOT_SETTLE_SECONDS", 0.5)
    with half_moved(store, redis_cluster, "alice") as (moved, left):
        with pytest.raises(ClusterError, match="TTL exhausted"):
            await store.client.eval(BOTH_EXIST, 2, moved[0], left[0])
