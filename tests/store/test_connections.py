"""The store's connection pool: bursts of chats wait for a connection; a busy pool says so."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio
from conftest import close_dropping_everything, drop_prefix

from memlane import MemlaneStore
from memlane.recall import RecallParts, recall
from memlane.store.errors import RedisUnavailable
from memlane.store.records import Message
from memlane.store.redis.connections import RedisPoolExhausted, patient, within_listening_time
from memlane.store.redis.store import open_store


@pytest_asyncio.fixture(loop_scope="session")
async def open_store_for(settings, embeddings):
    """`await open_store_for(**setting_overrides)`: stores made by `open_store`, dropped afterwards."""
    stores = []

    async def make(**overrides):
        store = await open_store(settings.model_copy(update=overrides), embeddings=embeddings)
        stores.append(store)
        return store

    yield make
    for store in stores:
        if store.core.shards is not None:
            await close_dropping_everything(store)
            continue
        await drop_prefix(store.client, settings.key_prefix)
        await store.aclose()


def _connect_timeouts_of(store, seconds: float) -> None:
    """Make the connections `store` opens from now on give up connecting after `seconds` (5 s in use)."""
    if store.core.shards is None:
        store.client.connection_pool.connection_kwargs["socket_connect_timeout"] = seconds
        return
    for node in store.client.get_nodes():
        node.connection_kwargs["socket_connect_timeout"] = seconds


@pytest.mark.parametrize("deployment", ["standalone", "cluster"])
async def test_a_burst_on_a_fresh_store_waits_for_its_connections(open_store_for, request, deployment):
    # LangGraph's test_large_batches_async pattern, smaller: 60,000 agets at once on a fresh store
    # failed 29,726 (the connects a cold pool had started timed out while the loop was still
    # starting the others, and the queue behind them ran past the pool timeout); on a cluster,
    # redis-py's node pool failed every call beyond max_connections at once
    overrides = {"redis_max_connections": 3, "redis_pool_timeout_seconds": 0.5}
    if deployment == "cluster":
        overrides["redis_url"] = request.getfixturevalue("redis_cluster")[0]
    store = await open_store_for(**overrides)
    _connect_timeouts_of(store, 0.2)
    memlane_store = MemlaneStore(store, user_of=1)
    await memlane_store.aput(("memories", "u1"), "k1", {"text": "likes tea"})

    def hold_the_loop() -> None:  # thousands of calls starting at once keep the loop this busy
        time.sleep(0.5)

    asyncio.get_running_loop().call_soon(hold_the_loop)
    # 3,000 calls through 3 connections take several pool timeouts in all: each waits its turn
    answers = await asyncio.gather(
        *(memlane_store.aget(("memories", f"u{i % 7}"), f"k{i % 5}") for i in range(3000)),
        return_exceptions=True,
    )
    assert [answer for answer in answers if isinstance(answer, BaseException)] == []
    assert sum(1 for answer in answers if answer is not None) == len(range(1, 3000, 35))


async def test_a_connect_counts_the_time_the_loop_could_hear_it():
    async def answers_soon() -> str:
        await asyncio.sleep(0.05)
        return "connected"

    connecting = asyncio.ensure_future(within_listening_time(answers_soon(), 0.2))
    await asyncio.sleep(0)  # the connect is under way
    time.sleep(0.5)  # the loop busy with other work for longer than the timeout
    assert await connecting == "connected"
    with pytest.raises(TimeoutError):  # an answer that never comes still times out
        await within_listening_time(asyncio.sleep(10), 0.2)


async def test_many_chats_at_once_wait_for_a_connection_instead_of_failing(open_store_for, settings):
    store = await open_store_for(redis_max_connections=8)
    # one recall holds about five connections at once: 25 of them used to fail 21 of 25
    recalls = await asyncio.gather(
        *(recall(store, f"u{i}", "s", "what do I like?", parts=RecallParts.of(settings)) for i in range(25)),
        return_exceptions=True,
    )
    assert [r for r in recalls if isinstance(r, BaseException)] == []

    turns = [
        [
            Message(id=f"m{i}-{role}", user_id=f"u{i}", session_id="s", role=role, content=f"{role} {i}")
            for role in ("user", "assistant")
        ]
        for i in range(60)
    ]
    saved = await asyncio.gather(*(store.add_messages(turn) for turn in turns), return_exceptions=True)
    assert [r for r in saved if isinstance(r, BaseException)] == []
    assert [len(await store.recent_messages(f"u{i}", "s")) for i in range(60)] == [2] * 60
    assert store.client.connection_pool.max_connections == 8


async def test_a_pool_that_stays_busy_says_which_setting_to_raise(open_store_for):
    store = await open_store_for(redis_max_connections=1, redis_pool_timeout_seconds=0.2)
    pool = store.client.connection_pool
    held = await pool.get_connection()  # another call holds the only connection
    try:
        with pytest.raises(RedisPoolExhausted, match="MEMLANE_REDIS_MAX_CONNECTIONS") as failure:
            await store.get_cursor("u")
        assert not isinstance(failure.value, RedisUnavailable)
        assert "stopped answering" not in str(failure.value)
    finally:
        await pool.release(held)
    assert await store.get_cursor("u") == 0  # the connection is back: the next call goes through


async def test_a_cluster_whose_calls_stay_busy_says_so_with_the_cluster_s_advice(open_store_for, redis_cluster):
    store = await open_store_for(redis_url=redis_cluster[0], redis_max_connections=2, redis_pool_timeout_seconds=0.2)
    gate = store.client.gate
    for _ in range(2):  # two calls in flight that do not end
        await gate.acquire()
    try:
        with pytest.raises(RedisPoolExhausted, match="Redis Cluster") as failure:
            await store.get_cursor("u")
        assert "MEMLANE_REDIS_MAX_CONNECTIONS" in str(failure.value)
        assert "connection per node" in str(failure.value)
    finally:
        gate.release()
        gate.release()
    assert await store.get_cursor("u") == 0


async def test_the_store_knows_when_redis_last_answered(open_store_for):
    # what tells a busy process (its calls still get replies) from a frozen Redis: memlane/turns.py
    store = await open_store_for()
    await store.get_cursor("u")
    assert store.answered_within(5.0)
    await asyncio.sleep(0.3)
    assert not store.answered_within(0.2)


async def test_a_connect_whose_caller_gives_up_as_the_socket_opens_leaves_no_half_made_connection(settings):
    """The socket opened in a task of its own just as its caller gave up (a readiness probe's or a
    recall's budget ending): the handshake the caller would have done never ran. Left open, the
    next user took it for connected and failed inside redis-py ("'_AsyncHiredisParser' object has
    no attribute '_connected'", seen 287 times in a failover drill); it is closed instead, and
    the next use connects again, whole."""
    from redis.asyncio import ConnectionPool
    from redis.asyncio.connection import Connection

    callers: list[asyncio.Future[None]] = []

    class CallerGivesUpAsTheSocketOpens(Connection):
        async def _connect(self) -> None:
            await super()._connect()
            callers[0].cancel()  # the caller's budget ends the moment the socket is open

    kwargs = {**ConnectionPool.from_url(settings.redis_url).connection_kwargs, "socket_connect_timeout": 5.0}
    connection = patient(CallerGivesUpAsTheSocketOpens)(**kwargs)
    connecting = asyncio.ensure_future(connection.connect_check_health(check_health=False))
    callers.append(connecting)
    with pytest.raises(asyncio.CancelledError):
        await connecting
    assert not connection.is_connected  # no socket left without its handshake
    try:
        await connection.send_command("PING")
        assert await connection.read_response() in (b"PONG", "PONG")
    finally:
        await connection.disconnect()
