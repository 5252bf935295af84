"""Keeping each primary of a cluster to one complete memory index, whether a search reaches it or not
(the upkeep of `ShardIndexes`, store/cluster/indexes.py).

- **A rebuild starts wherever a name moved.** A primary whose index name's slot moved away gets a
  new index when its index is next chosen (`ShardIndexes.index_of`). That used to wait for a search
  to reach the primary, so one that a reshard left almost without users started its rebuild minutes
  late (a drill in docs/operations/cluster.md). Now, when this process notices a moved name (a
  search meets MOVED or "unknown index" on its index's name, a choice finds a stale index, a paced
  rebuild's name moves) or the cluster changing under it (a user's slot moved, a node failed),
  `IndexSweep` looks at every primary in the background: one whose usable index is not the one this
  process uses is chosen again (adopted, or made under the index lock with its paced rebuild). The
  search that noticed does not wait; a pass runs at most once a second; a failure is logged, and
  the next notice looks again. And while searches come, a pass runs once a minute at least
  (`IndexSweep.due`): a name moved with nothing this process did meeting it is found too.
- **Nothing left beside the chosen index.** Once a primary's chosen index has read every memory,
  the other indexes there go (`drop_extras`): stale ones (their name's slot moved away) and
  duplicates (a previous index whose name's slot came back while the new one read: both can be
  named then). Under the primary's index lock the primary is surveyed again; its first index (the
  survey's order: fully read first, then most documents, then name; the same in every process) is
  kept, and the others are dropped only when that one has read every memory. A process whose index
  was dropped chooses again: its paced rebuild stops (its progress key goes with the index) and its
  next search meets "unknown index", as after any index dropped under it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis.asyncio.cluster import ClusterNode
from redis.exceptions import MovedError, RedisError
from redisvl.exceptions import RedisSearchError

from memlane.store.cluster.index_parts import IndexLock, unknown_index
from memlane.store.errors import StoreError

if TYPE_CHECKING:
    from memlane.store.cluster.indexes import ShardIndexes

logger = logging.getLogger(__name__)

# what the background work here logs and goes on after (Redis or RediSearch refusing, a node away)
_FAILURES = (RedisError, RedisSearchError, StoreError, OSError)
SWEEP_GAP_SECONDS = 1.0  # one pass over every primary at most this often (a reshard notices many moves)
SWEEP_EVERY_SECONDS = 60.0  # and one at least this often while searches come (`IndexSweep.due`)


@dataclass(eq=False)
class IndexSweep:
    """Looks at every primary's index in the background (`soon`), one pass at a time."""

    gap_seconds: float = SWEEP_GAP_SECONDS
    every_seconds: float = SWEEP_EVERY_SECONDS
    wanted: bool = False  # a pass asked for since the last one began
    closed: bool = False
    task: asyncio.Task[None] | None = None
    last_began: float = field(default_factory=time.monotonic)  # the latest pass (at first: the store's opening)

    def due(self, shards: ShardIndexes) -> None:
        """A pass when none began for `every_seconds` (a search asks): a name that moved with nothing
        this process did noticing it (no MOVED it met, no slot of its users moved) is found all the same."""
        if time.monotonic() - self.last_began >= self.every_seconds:
            self.last_began = time.monotonic()
            self.soon(shards)

    def soon(self, shards: ShardIndexes) -> None:
        """A pass now, or after the one under way (`gap_seconds` after it began)."""
        self.wanted = True
        if not self.closed and (self.task is None or self.task.done()):
            # in a context of its own: a search's owner probe (owner_probe.py) is not its business
            self.task = asyncio.create_task(self._passes(shards), context=contextvars.Context())

    async def _passes(self, shards: ShardIndexes) -> None:
        # ends once a pass went by without a new `soon` (a pass that chose nothing asks for none)
        while self.wanted:
            self.wanted = False
            self.last_began = time.monotonic()
            began = asyncio.get_running_loop().time()
            await rebuild_where_moved(shards)
            if self.wanted:
                await asyncio.sleep(max(0.0, began + self.gap_seconds - asyncio.get_running_loop().time()))

    async def stop(self) -> None:
        self.closed = True
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None


async def rebuild_where_moved(shards: ShardIndexes) -> None:
    """One pass: each primary whose usable index is not the one this process uses (its name moved, or
    none is chosen here yet) has its index chosen again (made, with its paced rebuild, where the
    primary has none it can name). A primary that fails is logged and left to the next pass."""
    for node in shards.cluster.get_primaries():
        try:
            found = await shards.survey(node)
            if found and found[0].state == "in use" and shards.chosen_name(node) == found[0].name:
                continue
            shards.forget_index(node.name)
            await shards.index_of(node)
        except _FAILURES as error:
            logger.warning("could not look at the memory index on %s (a search there will): %s", node.name, error)


async def after_rebuild(shards: ShardIndexes, node: ClusterNode, name: str) -> None:
    """A paced rebuild of `node`'s index `name` ended: the index is marked ready (the others there
    go). Dropped meanwhile (another process kept another index) or its name moved, this process
    chooses again; a failure is logged (a search there looks again)."""
    try:
        await shards._caught_up(node, name)
    except _FAILURES as error:
        logger.warning("after reading memories into %s on %s: %s", name, node.name, error)
        if isinstance(error, MovedError) or unknown_index(error):
            if shards.chosen_name(node) == name:
                shards.forget_index(node.name)
            shards._sweep.soon(shards)


async def drop_extras(shards: ShardIndexes, node: ClusterNode) -> None:
    """Drop every index on `node` beside its first one, once that one has read every memory, under
    the node's index lock (so that processes agree on the one kept). Failures are logged: what is
    left is for `memlane redis cluster-check --fix`."""
    try:
        async with IndexLock(shards, shards.node_client(node)):
            found = await shards.survey(node)
            if not found or found[0].state != "in use" or found[0].percent_indexed < 1:
                return  # an index there still reads its memories: nothing goes before it has read them
            kept = found[0].name
            for report in found[1:]:
                try:
                    await shards.drop(node, report)
                except _FAILURES as error:
                    if unknown_index(error):  # another process dropped it first
                        logger.debug("the memory index %s on %s is gone already", report.name, node.name)
                    else:
                        logger.warning(
                            "could not drop the %s memory index %s on %s: %s",
                            *(report.state, report.name, node.name, error),
                        )
    except _FAILURES as error:
        logger.warning("could not look at the memory indexes on %s to drop the extra ones: %s", node.name, error)
        return
    if shards.chosen_name(node) not in (None, kept):
        shards.forget_index(node.name)  # this process used one of those dropped: it chooses again
