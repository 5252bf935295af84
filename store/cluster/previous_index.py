"""A primary's previous memory index, searched while its new one reads the primary's memories.

When the slot of a primary's index name moves to another primary (a reshard), the primary gets a
new index (indexes.py), which reads every memory there in the background: about 25 s for 7,800
documents on a loaded machine, during which a search had to wait for it or answer incomplete.
The previous index is complete all along (RediSearch indexes every key of the node, whatever the
slot of the index's name), but the node refuses its name (MOVED). A node accepts a command for a
slot it is importing after ASKING, so `ImportingSlotClient` sends each command between marking
that slot as importing on the node and taking the mark off again, in one pipeline (one write,
which Redis runs through before it reads another client's commands; ~1 ms for a search). It
is used only while the new index reads, and never while the node really imports or exports the
slot (the mark would cut into the move): that is checked before use and again every second.
A stale index is read or dropped the same way (`on_stale_name`: `memlane redis cluster-check`,
and the drop once the new index has read everything).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redisvl.index import AsyncSearchIndex
from redisvl.schema import IndexSchema

from memlane.store.cluster.client import CLUSTER_HELP
from memlane.store.cluster.owner_probe import NodeClient
from memlane.store.errors import RedisUnavailable, StoreError

logger = logging.getLogger(__name__)

# how often the node's own view of the slot is read again while the previous index is used
_RECHECK_SECONDS = 1.0


class SlotBusy(Exception):
    """The node really imports or exports the previous index name's slot: its name cannot be borrowed."""


class ImportingSlotClient(NodeClient):
    """A client of one node that names an index whose name's slot `slot` belongs to the primary
    `owner_id`: each command goes between `CLUSTER SETSLOT slot IMPORTING owner_id` + `ASKING` and
    `CLUSTER SETSLOT slot STABLE`, in one pipeline (its pipelines still check the search's owner first)."""

    def __init__(self, node: aioredis.Redis, slot: int, owner_id: str) -> None:
        super().__init__(connection_pool=node.connection_pool)  # the node's pool, not owned: never closed here
        self.node, self.slot, self.owner_id = node, slot, owner_id
        self.checked_at = float("-inf")

    async def check_slot(self) -> None:
        """Raise SlotBusy when the node really moves the slot (read at most once a second)."""
        if time.monotonic() - self.checked_at < _RECHECK_SECONDS:
            return
        table = await self.node.execute_command("CLUSTER NODES")  # type: ignore[no-untyped-call]
        myself = next(entry for entry in table.values() if "myself" in entry["flags"])
        if any(int(move["slot"]) == self.slot for move in myself.get("migrations", [])):
            raise SlotBusy(f"slot {self.slot} is moving on this node")
        self.checked_at = time.monotonic()

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        await self.check_slot()
        # shielded: a search cancelled under it (recall's budget) must not cut the pipeline between
        # the mark and its removal, which would leave the node importing the slot
        marking = asyncio.ensure_future(self._marked(args, options))
        marking.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved, if left
        marked, answer = await asyncio.shield(marking)
        if isinstance(answer, Exception):
            raise answer  # a refused mark (the owner changed) shows here as MOVED: the index is chosen again
        if isinstance(marked, Exception) and not _owned_again(marked):
            raise marked
        return answer

    async def _marked(self, args: tuple[Any, ...], options: dict[str, Any]) -> tuple[Any, Any]:
        """(the mark's reply, the command's) from one pipeline: mark, ASKING, the command, unmark."""
        pipe: Pipeline = self.pipeline(transaction=False)
        pipe.execute_command("CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.owner_id)
        pipe.execute_command("ASKING")
        pipe.execute_command(*args, **options)
        pipe.execute_command("CLUSTER", "SETSLOT", self.slot, "STABLE")
        try:
            marked, _, answer, _ = await pipe.execute(raise_on_error=False)
        except (RedisConnectionError, RedisTimeoutError, OSError):
            await self._unmark()  # part of the pipeline may have reached the node
            raise
        return marked, answer

    async def _unmark(self) -> None:
        try:
            await self.node.execute_command("CLUSTER", "SETSLOT", self.slot, "STABLE")  # type: ignore[no-untyped-call]
        except (RedisConnectionError, RedisTimeoutError, OSError, ResponseError) as error:
            logger.warning(
                "could not take the importing mark off slot %d (`CLUSTER SETSLOT %d STABLE` on that node does): %s",
                self.slot,
                self.slot,
                error,
            )


async def open_previous_index(node: aioredis.Redis, schema: IndexSchema, names: list[str]) -> AsyncSearchIndex | None:
    """The fully read index among `names` (indexes of the node whose name's slot another primary
    owns now) holding the most memories, searchable through `ImportingSlotClient`; None when none is
    (none fully read, the owner unknown, or the slot moving on the node)."""
    table = await node.execute_command("CLUSTER NODES")  # type: ignore[no-untyped-call]
    best: tuple[int, AsyncSearchIndex] | None = None
    for name in names:
        slot = key_slot(name.encode())
        owner = _owner_of(table, slot)
        if owner is None:
            continue
        client = ImportingSlotClient(node, slot, owner)
        try:
            info = await client.execute_command("FT.INFO", name)
        except (SlotBusy, ResponseError):  # moving, dropped meanwhile, or the mark refused: not this one
            continue
        fields = {_text(key): value for key, value in info.items()}
        if int(_text(fields.get("indexing", 0)) or 0):
            continue  # it never finished reading: not complete either
        docs = int(float(_text(fields.get("num_docs", 0)) or 0))
        named = IndexSchema.from_dict({**schema.to_dict(), "index": {**schema.to_dict()["index"], "name": name}})
        if best is None or docs > best[0]:
            best = (docs, AsyncSearchIndex(named, redis_client=client))
    return best[1] if best is not None else None


async def on_stale_name(node: aioredis.Redis, name: str, *command: Any) -> Any:
    """`command` about the index `name`, whose slot `node` no longer owns (dropping it, or reading
    its documents): sent through `ImportingSlotClient`. Refused while the node really moves that
    slot (the mark would cut into the move)."""
    slot = key_slot(name.encode())
    table = await node.execute_command("CLUSTER NODES")  # type: ignore[no-untyped-call]
    myself: dict[str, Any] = next((entry for entry in table.values() if "myself" in entry["flags"]), {})
    if any(int(move["slot"]) == slot for move in myself.get("migrations", [])):
        where = "{host}:{port}".format(**node.connection_pool.connection_kwargs)
        raise StoreError(f"slot {slot} of the index {name} on {where} is moving; run this again when it has moved")
    owner = _owner_of(table, slot)
    if owner is None:
        raise RedisUnavailable(f"no primary owns slot {slot} of the index {name}; {CLUSTER_HELP}")
    return await ImportingSlotClient(node, slot, owner).execute_command(*command)  # mark, command, unmark


def _owner_of(table: dict[str, Any], slot: int) -> str | None:
    """The id of the primary that owns `slot` in a CLUSTER NODES reply (None: no primary does)."""
    return next(
        (
            entry["node_id"]
            for entry in table.values()
            if "master" in entry["flags"] and any(int(pair[0]) <= slot <= int(pair[-1]) for pair in entry["slots"])
        ),
        None,
    )


def _owned_again(refused: Exception) -> bool:
    """Whether the mark was refused because the node owns the slot again (a rebalance moved it
    back while the new index read): the command after it ran as on any slot of the node's, and
    its answer stands (a bench/cluster.py drill raised "I'm already the owner of hash slot 5460"
    in 158 turns and searches after the rebalance)."""
    return isinstance(refused, ResponseError) and "already the owner" in str(refused)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
