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

import traceback
from typing import Any, TypeGuard
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis.asyncio.cluster import RedisCluster
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

CLUSTER_HELP = "set REDIS_URL to a node of a running Redis Cluster, or run `memlane redis start --cluster 3`"
# a search that met a moved slot or a node that went away is tried this many times more
SEARCH_RETRIES = 2
# what a node says while its slots move or its replica takes over: refresh the slot map, try again
_RETRYABLE_REPLIES = ("CLUSTERDOWN", "TRYAGAIN", "LOADING", "READONLY")


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


def cluster_client(url: str, *, store: StoreSettings) -> RedisCluster:
    """redis-py's asyncio cluster client for `url`, sized by the store's settings."""
    return RedisCluster.from_url(
        first_node_url(url),
        max_connections=store.redis_max_connections,
        socket_timeout=30,
        socket_connect_timeout=5,
        # a MOVED patches the slot map (redis-py's default closes every connection each 5th MOVED,
        # under the commands using them: a reshard's stream of MOVED broke calls in flight)
        reinitialize_steps=0,
    )


def is_connection_race(error: BaseException) -> bool:
    """redis-py (8.1) closes a cluster node's connections when the node fails or the cluster is
    down, also those other calls are using: such a call fails with an AttributeError inside
    redis.asyncio.connection (its writer is gone). It is a lost connection, not a bug of ours.

    The same for an ASK redirection to a primary the client's node map does not hold yet (one
    just added, slots migrating onto it): redis-py's cluster client looks the node up, gets None
    and fails on it inside redis.asyncio.cluster (`'NoneType' object has no attribute ...`),
    seen about once a rebalance in bench/cluster_rebalance_misses.py. The next try, with the
    map refreshed, reaches the node."""
    if not isinstance(error, AttributeError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    where = frames[-1].filename.replace("\\", "/")
    return where.endswith("redis/asyncio/connection.py") or (
        where.endswith("redis/asyncio/cluster.py") and "'NoneType' object" in str(error)
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
