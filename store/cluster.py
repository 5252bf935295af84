"""Redis Cluster: the cluster client, and the memory index on every primary.

A cluster is asked for with RedisVL's spelling, `REDIS_URL=redis://host:port?cluster=true`
(or several `host:port` separated by commas), or with `MEMLANE_REDIS_CLUSTER=true`.

The search module has no coordinator on Redis Stack or a self-run Redis Cluster: an FT.*
command acts on the node it is sent to, over that node's keys only. Every key of one user
shares one hash slot (`schema.KeyLayout`, hash tags), so the user's memories all sit on the
primary that owns that slot: the store creates the index on every primary (`every_index`)
and sends a user's searches to the owner of the user's slot (`ShardIndexes.on_owner`). After
a failover or a reshard the slot map is refreshed and the search tried again.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import AskError, ClusterDownError, MovedError, ResponseError, TryAgainError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.schema import IndexSchema

from memlane.config import Settings
from memlane.store.errors import RedisUnavailable

logger = logging.getLogger(__name__)

Answer = TypeVar("Answer")

CLUSTER_HELP = "set REDIS_URL to a node of a running Redis Cluster, or run `memlane redis start --cluster 3`"
# a search that met a moved slot or a node that went away is tried this many times more
SEARCH_RETRIES = 2
# what a node says while its slots move or its replica takes over: refresh the slot map, try again
_RETRYABLE_REPLIES = ("CLUSTERDOWN", "TRYAGAIN", "LOADING", "READONLY")


def wants_cluster(url: str, settings: Settings) -> bool:
    """Whether `url` names a Redis Cluster: `?cluster=true` or several hosts (RedisVL's rule), or the setting."""
    from redisvl.redis.utils import is_cluster_url

    return settings.store.redis_cluster or is_cluster_url(url)


def _first_node_url(url: str) -> str:
    """`url` without RedisVL's `cluster` query parameter (redis-py's cluster client refuses it) and
    with only its first host of several (`h1:1,h2:2`): the client finds the other nodes from it."""
    parts = urlsplit(url)
    credentials, at, hosts = parts.netloc.rpartition("@")
    query = [(name, value) for name, value in parse_qsl(parts.query) if name.lower() != "cluster"]
    return urlunsplit(parts._replace(netloc=credentials + at + hosts.split(",")[0], query=urlencode(query)))


def cluster_client(url: str, settings: Settings) -> RedisCluster:
    """redis-py's asyncio cluster client for `url`, sized by the settings."""
    return RedisCluster.from_url(
        _first_node_url(url),
        max_connections=settings.store.redis_max_connections,
        socket_timeout=30,
        socket_connect_timeout=5,
        # a MOVED patches the slot map (redis-py's default closes every connection each 5th MOVED,
        # under the commands using them: a reshard's stream of MOVED broke calls in flight)
        reinitialize_steps=0,
    )


def is_connection_race(error: BaseException) -> bool:
    """redis-py (8.1) closes a cluster node's connections when the node fails or the cluster is
    down, also those other calls are using: such a call fails with an AttributeError inside
    redis.asyncio.connection (its writer is gone). It is a lost connection, not a bug of ours."""
    if not isinstance(error, AttributeError):
        return False
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.replace("\\", "/").endswith("redis/asyncio/connection.py")


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster)


def _retryable(error: BaseException) -> bool:
    if isinstance(error, RedisSearchError) and error.__cause__ is not None:
        error = error.__cause__
    if is_connection_race(error):
        return True
    if isinstance(error, (RedisConnectionError, RedisTimeoutError, OSError, MovedError, AskError, ClusterDownError, TryAgainError)):
        return True
    return isinstance(error, ResponseError) and str(error).split(" ", 1)[0].upper() in _RETRYABLE_REPLIES


def tag_of_slot(slot: int) -> str:
    """A short hash tag whose keys fall in `slot` (the first decimal number that does)."""
    number = 0
    while key_slot(str(number).encode()) != slot:
        number += 1
    return "{" + str(number) + "}"


@dataclass(eq=False)
class ShardIndexes:
    """The memory index on each primary of a cluster, one plain connection per primary.

    Without a coordinator the search module still treats an index name as a key: a node
    refuses FT.CREATE / FT.SEARCH (MOVED) for a name whose hash slot it does not own. So each
    primary's index is named `<prefix>_memories{<tag>}`, the tag taken from the last slot the
    primary owns when the index is made; the names are found again with FT._LIST. When a
    reshard moves that slot away, the primary gets a new index under a slot it still owns
    (the old one can no longer be named there: FT.DROPINDEX is refused too, see the README).
    """

    cluster: RedisCluster
    schema: IndexSchema
    # makes (or brings up to date) the index `name` on the node `client` talks to (Memories sets it)
    ensure_index: Callable[[aioredis.Redis, str], Awaitable[None]] | None = None
    _clients: dict[str, aioredis.Redis] = field(default_factory=dict)
    _indexes: dict[str, AsyncSearchIndex] = field(default_factory=dict)

    @property
    def base_name(self) -> str:
        return self.schema.index.name

    def node_client(self, node: ClusterNode) -> aioredis.Redis:
        """A plain client of `node` (same credentials and timeouts as the cluster client)."""
        client = self._clients.get(node.name)
        if client is None:
            kwargs = node.connection_kwargs
            client = self._clients[node.name] = aioredis.Redis(
                host=node.host,
                port=node.port,
                username=kwargs.get("username"),
                password=kwargs.get("password"),
                socket_timeout=kwargs.get("socket_timeout", 30),
                socket_connect_timeout=kwargs.get("socket_connect_timeout", 5),
                max_connections=node.max_connections,
            )
        return client

    def _owner_name(self, key: str) -> str | None:
        owners = self.cluster.nodes_manager.slots_cache.get(self.cluster.keyslot(key))
        return owners[0].name if owners else None

    def _last_slot(self, node: ClusterNode) -> int:
        cache = self.cluster.nodes_manager.slots_cache
        owned = [slot for slot, owners in cache.items() if owners and owners[0].name == node.name]
        if not owned:
            raise RedisUnavailable(f"the cluster's primary {node.name} owns no hash slot; {CLUSTER_HELP}")
        return max(owned)

    async def index_of(self, node: ClusterNode) -> AsyncSearchIndex:
        """The memory index on the primary `node`, under a name whose slot it owns; made there
        when it has none (a primary added to the cluster, or one whose index's slot moved away)."""
        index = self._indexes.get(node.name)
        if index is not None and self._owner_name(index.name) == node.name:
            return index
        client = self.node_client(node)
        names = [name.decode() if isinstance(name, bytes) else str(name) for name in await client.execute_command("FT._LIST")]
        mine = [
            name for name in names
            if name.startswith(self.base_name + "{") and self._owner_name(name) == node.name
        ]
        if mine:
            name = sorted(mine)[0]
        else:
            name = self.base_name + tag_of_slot(self._last_slot(node))
            if any(found.startswith(self.base_name + "{") for found in names):
                logger.warning(
                    "the slot of %s's memory index moved to another primary; indexing its memories again as %s",
                    node.name, name,
                )
        if self.ensure_index is not None:
            await self.ensure_index(client, name)
        schema = IndexSchema.from_dict({**self.schema.to_dict(), "index": {**self.schema.to_dict()["index"], "name": name}})
        index = self._indexes[node.name] = AsyncSearchIndex(schema, redis_client=client)
        return index

    async def on_owner(self, key: str, call: Callable[[AsyncSearchIndex], Awaitable[Answer]]) -> Answer:
        """`call` on the index of the primary that owns `key`'s slot; after a moved slot or a node
        that went away (failover), the slot map is refreshed and `call` tried again."""
        for attempt in range(SEARCH_RETRIES + 1):
            node = self.cluster.get_node_from_key(key)
            try:
                index = await self.index_of(node)
                await self._check_owner(node, key)
                return await call(index)
            except Exception as error:
                if attempt == SEARCH_RETRIES or not _retryable(error):
                    raise
                logger.info("search on %s failed (%s); refreshing the cluster's slot map", node.name, error)
                if isinstance(error, (MovedError, AskError)):  # the slot moved: patch the map, as redis-py does
                    await self.cluster.nodes_manager.move_slot(error)
                    continue
                await self.forget_node(node.name)
                await asyncio.sleep(0.2 * (attempt + 1))
                await self.refresh()
        raise AssertionError("unreachable: the last attempt raises")

    async def _check_owner(self, node: ClusterNode, key: str) -> None:
        """Raise MovedError unless `node` still owns `key`'s slot: a search on a node that gave the
        slot away would answer "nothing found", not MOVED. During a slot's migration (ASK) the
        node that gives it away still answers, with what it still holds."""
        try:
            await self.node_client(node).exists(key)
        except AskError as error:
            if isinstance(error, MovedError):  # redis-py's MovedError is an AskError
                raise

    async def refresh(self) -> None:
        """Read the slot map again (after a failover or a reshard)."""
        try:
            await self.cluster.nodes_manager.initialize()
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            logger.warning("could not refresh the cluster's slot map: %s", error)

    async def forget_node(self, name: str) -> None:
        self._indexes.pop(name, None)
        client = self._clients.pop(name, None)
        if client is not None:
            await client.aclose()

    async def every_index(self) -> list[AsyncSearchIndex]:
        """The memory index of every primary (each made or brought up to date on the way)."""
        return [await self.index_of(node) for node in self.cluster.get_primaries()]

    async def aclose(self) -> None:
        for name in list(self._clients):
            await self.forget_node(name)
