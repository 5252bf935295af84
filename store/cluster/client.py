"""Redis Cluster: the cluster client, and the memory index on every primary.

A cluster is asked for with RedisVL's spelling, `REDIS_URL=redis://host:port?cluster=true`
(or several `host:port` separated by commas), or with `MEMLANE_REDIS_CLUSTER=true`.

The search module has no coordinator on Redis Stack or a self-run Redis Cluster: an FT.*
command acts on the node it is sent to, over that node's keys only. Every key of one user
shares one hash slot (`schema.KeyLayout`, hash tags), so the user's memories all sit on the
primary that owns that slot: the store creates the index on every primary (`every_index`)
and sends a user's searches to the owner of the user's slot (store/cluster/indexes.py). After
a failover or a reshard the slot map is refreshed and the search tried again.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeGuard, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redisvl.exceptions import RedisSearchError

from memlane.config import StoreSettings

if TYPE_CHECKING:
    from memlane.store.redis.connections import ConnectionGate

CLUSTER_HELP = "set REDIS_URL to a node of a running Redis Cluster, or run `memlane redis start --cluster 3`"
# a search that met a moved slot or a node that went away is tried this many times more
SEARCH_RETRIES = 2
# what a node says while its slots move or its replica takes over: refresh the slot map, try again
_RETRYABLE_REPLIES = ("CLUSTERDOWN", "TRYAGAIN", "LOADING", "READONLY")
# a command redis-py gave up on after its 16 redirections ("TTL exhausted": a multi-key command on a slot
# halfway moved answers TRYAGAIN until the move ends, about 0.4 s of redis-py's tries) is tried again, each
# `_SETTLE_POLL_SECONDS`, for this long: a recall in a rebalance had answered without memory (bench/cluster.py)
SLOT_SETTLE_SECONDS = 5.0
_SETTLE_POLL_SECONDS = 0.1
# set while a call holds its place at the cluster client's gate (the tasks it starts see it too)
_HOLDING_GATE: ContextVar[bool] = ContextVar("memlane_holding_cluster_gate", default=False)


def wants_cluster(url: str, *, store: StoreSettings) -> bool:
    """Whether `url` names a Redis Cluster: `?cluster=true` or several hosts (RedisVL's rule), or the setting."""
    from redisvl.redis.utils import is_cluster_url

    return store.redis_cluster or is_cluster_url(url)


def first_node_url(url: str) -> str:
    """`url` without RedisVL's `cluster` query parameter (redis-py's cluster client refuses it) and
    with only its first host of several (`h1:1,h2:2`): the client finds the other nodes from it."""
    parts = urlsplit(url)
    credentials, at, hosts = parts.netloc.rpartition("@")
    query = [(name, value) for name, value in parse_qsl(parts.query) if name.lower() != "cluster"]
    return urlunsplit(parts._replace(netloc=credentials + at + hosts.split(",")[0], query=urlencode(query)))


class WaitingRedisCluster(RedisCluster):
    """redis-py's cluster client whose calls wait their turn for a connection as the standalone
    store's do (store/redis/connections.py): redis-py's node pool raised MaxConnectionsError at
    `max_connections` (200 recalls at once on a cluster: 152 failed, none standalone).

    At most `gate.limit` commands and pipelines are in flight at once, each holding at most one
    connection per node, so no node's pool ever runs out; the others wait at the gate. Connects
    count listening time only (`patient`), as the standalone pool's."""

    gate: ConnectionGate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from memlane.store.redis.connections import ConnectionGate, patient

        pool_timeout = kwargs.pop("pool_timeout", 20.0)
        super().__init__(*args, **kwargs)
        self.gate = ConnectionGate(self.connection_kwargs["max_connections"], pool_timeout, deployment="cluster")
        # the nodes made from here on (the slot map's) and the startup nodes made already
        self.connection_kwargs["connection_class"] = patient(self.connection_kwargs["connection_class"])
        for node in [*self.startup_nodes, *self.nodes_manager.startup_nodes.values()]:
            node.connection_class = self.connection_kwargs["connection_class"]

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        """The command, tried again while its slot is halfway moved (`SLOT_SETTLE_SECONDS`): redis-py's
        "TTL exhausted" means no try ran it (each was redirected or refused), so a write is safe to repeat."""
        settled_by = time.monotonic() + SLOT_SETTLE_SECONDS
        while True:
            try:
                return await self._execute_at_gate(*args, **kwargs)
            except ClusterError as error:
                if type(error) is not ClusterError or "TTL exhausted" not in str(error):
                    raise
                if time.monotonic() >= settled_by:
                    raise
            await asyncio.sleep(_SETTLE_POLL_SECONDS)

    async def _execute_at_gate(self, *args: Any, **kwargs: Any) -> Any:
        if _HOLDING_GATE.get():  # a call within a call (redis-py's own): its caller waited already
            return await super().execute_command(*args, **kwargs)
        await self.gate.acquire()
        token = _HOLDING_GATE.set(True)
        try:
            return await super().execute_command(*args, **kwargs)
        finally:
            _HOLDING_GATE.reset(token)
            self.gate.release()

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)  # redis-py's error
        return _WaitingClusterPipeline(self, transaction)  # type: ignore[abstract]  # as redis-py makes its own


class _WaitingClusterPipeline(ClusterPipeline):
    """A cluster pipeline that waits at its client's gate (one connection per node it sends to)."""

    cluster_client: WaitingRedisCluster

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> list[Any]:
        if _HOLDING_GATE.get():
            return await super().execute(raise_on_error, allow_redirections)
        await self.cluster_client.gate.acquire()
        token = _HOLDING_GATE.set(True)
        try:
            return await super().execute(raise_on_error, allow_redirections)
        finally:
            _HOLDING_GATE.reset(token)
            self.cluster_client.gate.release()


def cluster_client(url: str, *, store: StoreSettings) -> WaitingRedisCluster:
    """redis-py's asyncio cluster client for `url`, sized and timed by the store's settings."""
    client = WaitingRedisCluster.from_url(
        first_node_url(url),
        max_connections=store.redis_max_connections,
        pool_timeout=store.redis_pool_timeout_seconds,
        socket_timeout=30,
        socket_connect_timeout=5,
        # a MOVED patches the slot map (redis-py's default closes every connection each 5th MOVED,
        # under the commands using them: a reshard's stream of MOVED broke calls in flight)
        reinitialize_steps=0,
    )
    return cast(WaitingRedisCluster, client)  # from_url makes the class it is called on


def is_connection_race(error: BaseException) -> bool:
    """redis-py (8.1) closes a cluster node's connections when the node fails or the cluster is
    down, also those other calls are using: such a call fails with an AttributeError inside
    redis.asyncio.connection (its writer is gone). It is a lost connection, not a bug of ours.

    The same for an ASK redirection to a primary the client's node map does not hold yet (one
    just added, slots migrating onto it): redis-py's cluster client looks the node up, gets None
    and fails on it inside redis.asyncio.cluster (`'NoneType' object has no attribute ...`),
    seen about once a rebalance in bench/cluster_rebalance_misses.py. The next try, with the
    map refreshed, reaches the node.

    And for a reply read through a parser never told of its connection's socket (`'_connected'`,
    inside redis._parsers): a socket opened for a caller that gave up before its handshake
    (store/redis/connections.py `_PatientConnect` closes those now; any other left is the same
    lost connection)."""
    if not isinstance(error, AttributeError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    where = frames[-1].filename.replace("\\", "/")
    return (
        where.endswith("redis/asyncio/connection.py")
        or (where.endswith("redis/asyncio/cluster.py") and "'NoneType' object" in str(error))
        or ("/redis/_parsers/" in where and "'_connected'" in str(error))
    )


# what redis-py raises while a cluster reshapes itself, all meaning "try again shortly": a node
# saying CLUSTERDOWN or TRYAGAIN, a slot with no primary (a failover under way), redirections that
# did not settle (ClusterError "TTL exhausted" after a storm of MOVED), a MOVED or ASK left over
_CLUSTER_AWAY = (ClusterError, ClusterDownError, TryAgainError, AskError, SlotNotCoveredError)


def cluster_is_away(error: BaseException) -> bool:
    """Whether `error` is a cluster answering "not now" (failover, reshard): the store treats it as
    Redis away (`RedisUnavailable`), so saves are tried again and recall goes on without memory."""
    if isinstance(error, _CLUSTER_AWAY) or is_connection_race(error):
        return True
    return isinstance(error, ResponseError) and str(error).split(" ", 1)[0].upper() in _RETRYABLE_REPLIES


def is_cluster(client: Any) -> TypeGuard[RedisCluster]:
    return isinstance(client, RedisCluster)


def retryable(error: BaseException) -> bool:
    if isinstance(error, RedisSearchError) and error.__cause__ is not None:
        error = error.__cause__
    if is_connection_race(error):
        return True
    if isinstance(
        error, (RedisConnectionError, RedisTimeoutError, OSError, MovedError, AskError, ClusterDownError, TryAgainError)
    ):
        return True
    return isinstance(error, ResponseError) and str(error).split(" ", 1)[0].upper() in _RETRYABLE_REPLIES


def tag_of_slot(slot: int) -> str:
    """A short hash tag whose keys fall in `slot` (the first decimal number that does)."""
    number = 0
    while key_slot(str(number).encode()) != slot:
        number += 1
    return "{" + str(number) + "}"
