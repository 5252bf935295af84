"""A call on a user whose hash slot migrates, read from both its nodes instead of waiting.

While a reshard moves the user's slot, the source primary holds the user's keys not moved yet
(it answers ASK for the others) and the importing primary those moved already (it answers for
them only after ASKING); each primary's own index holds exactly its half (the search module
indexes every key of its node, whatever its slot). `ShardIndexes.on_owner` (indexes.py) hands
such a call here (`read_both_halves`): a search to the caller's `both` (moving_search.py), a call
that reads the user's keys by name to a client that asks the source first and the importing node
for what moved (`BothHalvesClient`). Either failing, the search waits for the move as before.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterNode
from redis.exceptions import AskError, RedisError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex

from memlane.store.cluster.owner_probe import NodeClient, checking_owner

if TYPE_CHECKING:
    from memlane.store.cluster.indexes import ShardIndexes

logger = logging.getLogger(__name__)
Answer = TypeVar("Answer")


class AskingClient(NodeClient):
    """A client of the node importing the user's slot (on the pool of its plain client, not owned):
    each command of its pipelines goes after ASKING, so the node answers for the slot it imports."""

    def __init__(self, node: aioredis.Redis) -> None:
        super().__init__(connection_pool=node.connection_pool)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return _AskingPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


class _AskingPipeline(Pipeline):
    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        commands, self.command_stack = self.command_stack, []
        for command in commands:
            self.command_stack += [(("ASKING",), {}), command]
        replies = await super().execute(raise_on_error)
        return replies[1::2]


class BothHalvesClient(NodeClient):
    """A client of the source node whose pipelines read keys of the moving slot wherever they are:
    each command is sent to the source, and those it answers ASK for (the key has moved) are sent
    again to the importing node, after ASKING. For calls that read the user's keys by name."""

    def __init__(self, source: aioredis.Redis, importing: aioredis.Redis) -> None:
        super().__init__(connection_pool=source.connection_pool)
        self.importing = AskingClient(importing)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        pipe = _BothHalvesPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.importing = self.importing
        return pipe


class _BothHalvesPipeline(Pipeline):
    importing: AskingClient

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        commands = list(self.command_stack)
        replies = await super().execute(raise_on_error=False)
        moved = [at for at, reply in enumerate(replies) if isinstance(reply, AskError)]
        if moved:
            again = self.importing.pipeline(transaction=False)
            for at in moved:
                args, options = commands[at]
                again.execute_command(*args, **options)
            for at, reply in zip(moved, await again.execute(raise_on_error=False)):
                replies[at] = reply
        if raise_on_error:
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
        return replies


async def read_both_halves(
    shards: ShardIndexes,
    node: ClusterNode,
    asked: AskError,
    call: Callable[[AsyncSearchIndex], Awaitable[Answer]],
    both: Callable[[AsyncSearchIndex, AsyncSearchIndex | None], Awaitable[Answer]] | None,
    *,
    reads_index: bool,
) -> tuple[Answer] | None:
    """(the answer,) of a call on a user whose slot moves off `node` to the node `asked` names, read
    from both (a search through `both`, a call that reads only the user's keys through a
    `BothHalvesClient`); None when it cannot be (no `both`, the importing node unknown, either
    node's index still reading, or either node failing), and the caller waits as before."""
    importing = shards.cluster.get_node(host=asked.host, port=asked.port)
    if importing is None or (reads_index and both is None):
        return None
    try:
        source_index = await shards.index_of(node)
        with checking_owner(None):  # the two halves are read as they are: no owner to check
            if not reads_index:
                client = BothHalvesClient(shards.node_client(node), shards.node_client(importing))
                return (await call(AsyncSearchIndex(source_index.schema, redis_client=client)),)
            importing_index = await shards.index_of(importing)
            for half, index in ((node, source_index), (importing, importing_index)):
                if await shards._caught_up(half, index.name) is not None:
                    return None  # an index still reading its memories: the wait covers it
            assert both is not None
            return (await both(source_index, importing_index),)
    except (RedisError, RedisSearchError, OSError) as error:
        logger.info(
            "could not read the moving slot %s from both nodes (%s); waiting for the move", asked.slot_id, error
        )
        return None
