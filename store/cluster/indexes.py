"""The memory index on each primary of a Redis Cluster, decided by the cluster, not by a client.

The search module of Redis Stack 7.4 has no coordinator: each primary indexes its own keys, and
it treats an index name as a key, so a node refuses (MOVED) an index name whose hash slot it does
not own. Each primary's index is therefore named with a hash tag of one of its slots
(`KeyLayout.shard_index_name`). What this module keeps true:

- **One index per primary, whatever the number of processes.** Which index a primary has is
  read from the primary itself (FT._LIST, then FT.INFO sent to it: it answers only for names whose
  slot it owns now), never judged from a client's slot map. A process adopts the index it finds;
  one is made only when the primary has none it can name, under a lock key (`index_lock`) taken
  through the cluster, after looking again, under the highest slot the primary itself says it owns.
- **A slot move cannot leave an index behind.** When the slot of an index's name moves away, the
  primary gets a new index; the old one (stale: it still indexes every write there, and no
  command can name it) is dropped once the new one has read all the memories. Only the node that
  is importing a slot accepts a command for it after ASKING, so the stale index is dropped by
  marking its slot as importing on its node for the one command (`on_stale_name`,
  previous_index.py), and the mark taken off again at once; never while that slot really
  migrates. The new index is made on every primary whose name moved as soon as this process
  notices one moved name, not when a search first reaches that primary; and an index left beside
  the chosen one (stale, or a previous one whose name's slot came back) goes once the chosen one
  has read everything (index_upkeep.py).
- **Never a silent partial answer.** A search goes to the primary that owns the user's slot, with
  an `EXISTS` of a key in that slot first *in the same pipeline* (owner_probe.py: no round
  trip of its own): MOVED there means the user moved (the slot map is patched, the search tried
  again), ASK means the user's slot is migrating: that primary holds part of the user's
  memories, the importing one the rest, and both are read and merged (moving_slot.py; the search
  waits for the move only where that fails). A search on a new index still reading its
  memories (FT.INFO `indexing`; a paced rebuild, paced_rebuild.py) is answered from the primary's
  previous index while there is one (previous_index.py: complete, no wait), else waits for the new
  one. All the trips of one search share one wait (`redis_cluster_index_wait_seconds`,
  `SearchNotes.deadline`); when it ends first, the search answers from what is there and says so
  (`SearchNotes`, a warning line, `incomplete_searches`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import AskError, MovedError, ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.schema import IndexSchema

from memlane.store.cluster.client import CLUSTER_HELP, SEARCH_RETRIES, retryable, tag_of_slot
from memlane.store.cluster.index_parts import (
    POLL_SECONDS,
    IndexLock,
    IndexReport,
    check_indexes,
    info_number,
    moved_index_name,
    node_command,
    percent_read,
    text,
    unknown_index,
)
from memlane.store.cluster.index_upkeep import IndexSweep, after_rebuild, drop_extras
from memlane.store.cluster.moving_slot import read_both_halves
from memlane.store.cluster.owner_probe import NodeClient, checking_owner
from memlane.store.cluster.paced_rebuild import PacedRebuild, begin, progress, progress_key, start, stop_all
from memlane.store.cluster.previous_index import SlotBusy, on_stale_name, open_previous_index
from memlane.store.errors import RedisUnavailable
from memlane.store.schema import KeyLayout

logger = logging.getLogger(__name__)

Answer = TypeVar("Answer")
_POLL_SECONDS = POLL_SECONDS
_LOOK_AGAIN_SECONDS = 0.25  # a node without a usable previous index is asked again after this


class SearchNotes(list[str]):
    """What a search could not do in full, one line each (empty: the answer is whole). Recall
    shows a non-empty one as a degraded search. The trips of one search (its count, text and
    vector queries) share one wait: the first that waits sets `deadline`, the others keep it."""

    deadline: float | None = None
    waited: bool = False  # whether a trip waited (for an index still reading, or a slot moving)


@dataclass(eq=False)
class ShardIndexes:
    """The memory index on each primary of a cluster, one plain connection per primary."""

    cluster: RedisCluster
    schema: IndexSchema
    layout: KeyLayout
    # longest a search waits for a primary's new index, or for the user's slot to finish moving
    wait_seconds: float = 3.0
    # makes (or updates) the index `name` on `client`'s node (Memories sets it; skip_initial_scan: paced_rebuild.py)
    ensure_index: Callable[..., Awaitable[None]] | None = None
    rebuild_batch: int = 5  # a paced rebuild's keys per step (paced_rebuild.py; 0: RediSearch's own scan)
    rebuild_pause_seconds: float = 0.02  # and its pause between two steps
    # searches that answered from part of the user's memories, and said so
    incomplete_searches: int = 0
    # trips answered from a primary's previous index while its new one read; trips that waited
    previous_index_trips: int = 0
    waited_trips: int = 0
    both_halves_trips: int = 0  # trips on a migrating slot answered from both its nodes, merged
    _clients: dict[str, aioredis.Redis] = field(default_factory=dict)
    _indexes: dict[str, AsyncSearchIndex] = field(default_factory=dict)
    _ready: set[str] = field(default_factory=set)  # nodes whose index has read every memory
    _stale: dict[str, list[str]] = field(default_factory=dict)  # node -> stale index names (previous indexes)
    _crowded: set[str] = field(default_factory=set)  # nodes whose index was chosen beside others: they go once ready
    # node -> its previous (stale, complete) index, searched until the new one has read everything
    # (None: none, looked for again after `_LOOK_AGAIN_SECONDS`: its slot may have been moving)
    _previous: dict[str, tuple[AsyncSearchIndex | None, float]] = field(default_factory=dict)
    _read_checked: dict[str, float] = field(default_factory=dict)  # node -> when its new index's progress was read
    _choosing: dict[str, asyncio.Lock] = field(default_factory=dict)
    _rebuilds: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # node -> its paced rebuild here
    _sweep: IndexSweep = field(default_factory=IndexSweep)  # rebuilds started where a name moved (index_upkeep.py)

    @property
    def base_name(self) -> str:
        name: str = self.schema.index.name
        return name

    def node_client(self, node: ClusterNode) -> aioredis.Redis:
        """A plain client of `node` (same credentials and timeouts as the cluster client)."""
        client = self._clients.get(node.name)
        if client is None:
            from memlane.store.redis.connections import WaitingConnectionPool

            kwargs = node.connection_kwargs
            # its calls wait their turn at the cluster client's gate, as the client's own calls do
            gate = getattr(self.cluster, "gate", None)
            pool = WaitingConnectionPool(
                gate=gate,
                host=node.host,
                port=int(node.port),
                username=kwargs.get("username"),
                password=kwargs.get("password"),
                socket_timeout=kwargs.get("socket_timeout", 30),
                socket_connect_timeout=kwargs.get("socket_connect_timeout", 5),
                max_connections=node.max_connections,
            )
            client = self._clients[node.name] = NodeClient.from_pool(pool)
        return client

    # what a primary holds, asked of the primary ------------------------------------------------
    async def _myself(self, client: aioredis.Redis) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the node's own line of CLUSTER NODES, the whole table) as the node sees it now."""
        table = await node_command(client, "CLUSTER NODES")
        for node in table.values():
            if "myself" in node["flags"]:
                return node, table
        raise RedisUnavailable(f"a cluster node did not list itself in CLUSTER NODES; {CLUSTER_HELP}")

    @staticmethod
    def _slots(node: dict[str, Any]) -> list[int]:
        slots: list[int] = []
        for pair in node["slots"]:
            first, last = (pair[0], pair[-1])
            slots.extend(range(int(first), int(last) + 1))
        return slots

    async def survey(self, node: ClusterNode, *, deep: bool = False) -> list[IndexReport]:
        """The memory indexes on `node`, usable first (the one to use at the head: fully read, then
        most documents, then name); a name whose slot the node gave away is `stale` (with `deep`,
        its documents are read too, through `_on_stale_name`)."""
        client = self.node_client(node)
        names = sorted(
            name
            for name in (text(found) for found in await node_command(client, "FT._LIST"))
            if name.startswith(self.base_name + "{")
        )
        usable: list[IndexReport] = []
        stale: list[IndexReport] = []
        for name in names:
            try:
                info = await node_command(client, "FT.INFO", name)
            except MovedError:
                try:
                    info = await on_stale_name(client, name, "FT.INFO", name) if deep else None
                except ResponseError as error:
                    if unknown_index(error):  # dropped since FT._LIST (another process's new index caught up)
                        continue
                    raise
                stale.append(IndexReport(node.name, name, "stale", int(info_number(info or {}, "num_docs", 0))))
                continue
            except ResponseError as error:
                if unknown_index(error):  # dropped since FT._LIST
                    continue
                raise
            paced = await progress(client, self.layout, name)  # a paced rebuild not done yet
            read = percent_read(info) if paced is None else paced
            usable.append(IndexReport(node.name, name, "in use", int(info_number(info, "num_docs", 0)), read))
        usable.sort(key=lambda report: (report.percent_indexed < 1, -report.docs, report.name))
        duplicates = [IndexReport(r.node, r.name, "duplicate", r.docs, r.percent_indexed) for r in usable[1:]]
        return usable[:1] + duplicates + stale

    async def drop(self, node: ClusterNode, report: IndexReport) -> None:
        """Drop a duplicate or stale index (its documents stay: they are the primary's memories)."""
        if report.state == "stale":
            await on_stale_name(self.node_client(node), report.name, "FT.DROPINDEX", report.name)
        else:
            await node_command(self.node_client(node), "FT.DROPINDEX", report.name)
            await self.cluster.delete(progress_key(self.layout, report.name))  # a paced rebuild of it stops
        logger.warning(
            "dropped the %s memory index %s on %s (%d documents)", report.state, report.name, node.name, report.docs
        )

    # choosing a primary's index --------------------------------------------------------------
    async def index_of(self, node: ClusterNode) -> AsyncSearchIndex:
        """The memory index on the primary `node`: the one it holds (adopted), or one made there
        when it has none it can name (a primary added to the cluster, or one whose index's slot moved)."""
        index = self._indexes.get(node.name)
        if index is not None:
            return index
        async with self._choosing.setdefault(node.name, asyncio.Lock()):  # one survey per node per process
            index = self._indexes.get(node.name)
            if index is None:
                index = await self._choose(node)
        return index

    async def _choose(self, node: ClusterNode) -> AsyncSearchIndex:
        client = self.node_client(node)
        found = await self.survey(node)
        if not found or found[0].state != "in use":
            async with IndexLock(self, client):
                found = await self.survey(node)  # another process may have made it meanwhile
                if not found or found[0].state != "in use":
                    name = self.layout.shard_index_name(tag_of_slot(await self._highest_slot(client, node)))
                    if found:
                        logger.warning(
                            "the slot of %s's memory index moved to another primary; indexing its memories again as %s",
                            node.name,
                            name,
                        )
                    if self.ensure_index is not None and found and self.rebuild_batch:  # the previous answers meanwhile
                        await begin(client, self.layout, name, max(report.docs for report in found))
                        await self.ensure_index(client, name, skip_initial_scan=True)
                    elif self.ensure_index is not None:
                        await self.ensure_index(client, name)
                    found = await self.survey(node)
        if not found or found[0].state != "in use":
            raise RedisUnavailable(f"the primary {node.name} has no memory index it can name; {CLUSTER_HELP}")
        chosen = found[0]
        if self.ensure_index is not None:
            await self.ensure_index(client, chosen.name)  # brings an older memlane's index up to date
        self._stale[node.name] = [report.name for report in found if report.state == "stale"]
        if self._stale[node.name]:  # an index name moved: every primary is looked at (index_upkeep.py)
            self._sweep.soon(self)
        if len(found) > 1:  # stale or duplicate ones beside it (index_upkeep.py drop_extras)
            logger.info("%s holds %d memory indexes; using %s", node.name, len(found), chosen.name)
            self._crowded.add(node.name)
        self._ready.discard(node.name)
        if chosen.percent_indexed >= 1:
            await self._mark_ready(node)
        elif await progress(client, self.layout, chosen.name) is not None:
            self._pace(node, chosen.name)
        schema = IndexSchema.from_dict(
            {**self.schema.to_dict(), "index": {**self.schema.to_dict()["index"], "name": chosen.name}}
        )
        index = self._indexes[node.name] = AsyncSearchIndex(schema, redis_client=client)
        return index

    async def _highest_slot(self, client: aioredis.Redis, node: ClusterNode) -> int:
        """The highest slot the node itself says it owns and is not giving away (a reshard moves a
        primary's lowest slots first)."""
        myself, _ = await self._myself(client)
        leaving = {int(move["slot"]) for move in myself.get("migrations", [])}
        owned = [slot for slot in self._slots(myself) if slot not in leaving]
        if not owned:
            raise RedisUnavailable(f"the cluster's primary {node.name} owns no hash slot; {CLUSTER_HELP}")
        return max(owned)

    def _pace(self, node: ClusterNode, name: str) -> None:
        """Read the memories into the node's new index `name` in paced batches (paced_rebuild.py)."""
        batch, pause = self.rebuild_batch, self.rebuild_pause_seconds
        done = lambda: after_rebuild(self, node, name)  # noqa: E731
        start(self._rebuilds, node.name, PacedRebuild(self.node_client(node), self.layout, name, batch, pause, done))

    async def _mark_ready(self, node: ClusterNode) -> None:
        """The node's index has read every memory: searches stop checking, the indexes beside it go."""
        self._ready.add(node.name)
        self._previous.pop(node.name, None)
        self._stale.pop(node.name, None)
        if node.name in self._crowded:
            self._crowded.discard(node.name)
            await drop_extras(self, node)

    async def _caught_up(self, node: ClusterNode, name: str) -> str | None:
        """None when the node's index `name` has read all its memories (then marked ready), else how far it got."""
        if node.name in self._ready:
            return None
        paced = await progress(self.node_client(node), self.layout, name)
        if paced is not None:
            self._pace(node, name)  # a process that stopped midway: this one goes on
            return f"the memory index {name} on {node.name} has read {paced:.0%} of its memories (paced)"
        info = await node_command(self.node_client(node), "FT.INFO", name)
        percent = percent_read(info)
        if percent >= 1:
            await self._mark_ready(node)
            return None
        return f"the memory index {name} on {node.name} has read {percent:.0%} of its memories"

    # searching ------------------------------------------------------------------------------
    async def on_owner(
        self,
        key: str,
        call: Callable[[AsyncSearchIndex], Awaitable[Answer]],
        notes: SearchNotes | None = None,
        *,
        reads_index: bool = True,
        both: Callable[[AsyncSearchIndex, AsyncSearchIndex | None], Awaitable[Answer]] | None = None,
    ) -> Answer:
        """`call` on the index of the primary that owns `key`'s slot, its pipeline checking first
        that the primary still owns the slot (`checking_owner`, owner_probe.py). A moved slot patches
        the slot map and the call is tried again. A migrating one is read from both its nodes
        (moving_slot.py; `both`: the search over the source's and the importing node's index);
        where it cannot be, or an index still reads its memories, it is waited for up to
        `wait_seconds`, then the answer is noted as incomplete in `notes` (`reads_index=False`: the
        call reads only keys of the user, through the index's client, found on either node)."""
        notes = SearchNotes() if notes is None else notes
        failures = 0
        self._sweep.due(self)  # every primary looked at once a minute at least (index_upkeep.py)
        while True:
            node = self.cluster.get_node_from_key(key)
            if node is None:  # redis-py answers None only when asked for a replica
                raise RedisUnavailable(f"no primary owns the slot of {key}; {CLUSTER_HELP}")
            try:
                index = await self.index_of(node)
                searched, missing = await self._readable(node, index, notes) if reads_index else (index, None)
                with checking_owner(key):
                    answer = await call(searched)
                if missing is not None:
                    self._note(notes, missing)
                return answer
            except Exception as raised:
                error = (
                    raised.__cause__
                    if isinstance(raised, RedisSearchError) and raised.__cause__ is not None
                    else raised
                )
                if isinstance(error, AskError) and not isinstance(error, MovedError):
                    halves = await read_both_halves(self, node, error, call, both, reads_index=reads_index)
                    if halves is not None:
                        self.both_halves_trips += 1
                        return halves[0]
                    if time.monotonic() < self._deadline(notes):  # the user's slot is moving: its keys are on two nodes
                        self._waiting(notes)
                        await asyncio.sleep(_POLL_SECONDS)
                        continue
                    answer = await self._unprobed(node, call, both)
                    self._note(notes, f"the user's slot {error.slot_id} was still moving off {node.name}")
                    return answer
                if isinstance(error, SlotBusy):  # the previous index's slot really moves: wait for the new one
                    self._previous[node.name] = (None, time.monotonic())
                    continue
                if moved_index_name(error, key) or unknown_index(error):
                    self.forget_index(node.name)  # its name's slot moved away, or it was dropped: choose again
                    self._sweep.soon(self)  # and every primary whose name moved too, in the background
                    failures += 1
                    if failures <= SEARCH_RETRIES + 1:
                        continue
                    raise
                failures += 1
                if failures > SEARCH_RETRIES or not retryable(error):
                    raise
                logger.info("search on %s failed (%s); refreshing the cluster's slot map", node.name, error)
                if isinstance(error, MovedError):  # the user's slot moved: patch the map, as redis-py does
                    await self.cluster.nodes_manager.move_slot(error)
                    self._sweep.soon(self)  # a reshard: index names may move too (index_upkeep.py)
                    continue
                await self.forget_node(node.name)
                await asyncio.sleep(0.2 * failures)
                await self.refresh()
                self._sweep.soon(self)  # a node failed or slots moved: every primary looked at again

    async def _readable(
        self, node: ClusterNode, index: AsyncSearchIndex, notes: SearchNotes
    ) -> tuple[AsyncSearchIndex, str | None]:
        """The index to search on `node` and, when it has not read every memory, why the answer is
        incomplete: the node's index once it has read everything; while it reads, the node's previous
        index (complete; the new one's progress read at most every `_POLL_SECONDS * 5`); without one,
        the new index, waited for until the search's one deadline (a previous index found meanwhile,
        its slot done moving, answers at once)."""
        while node.name not in self._ready:
            previous = await self._previous_of(node)
            if previous is not None:
                if time.monotonic() - self._read_checked.get(node.name, float("-inf")) >= _POLL_SECONDS * 5:
                    self._read_checked[node.name] = time.monotonic()
                    if await self._caught_up(node, index.name) is None:
                        break
                self.previous_index_trips += 1
                return previous, None
            missing = await self._caught_up(node, index.name)
            if missing is None:
                break
            if time.monotonic() >= self._deadline(notes):
                return index, missing
            self._waiting(notes)
            await asyncio.sleep(_POLL_SECONDS)
        return index, None

    async def _previous_of(self, node: ClusterNode) -> AsyncSearchIndex | None:
        """The node's previous index while its new one reads (previous_index.py), None when it has
        none usable now (asked again after `_LOOK_AGAIN_SECONDS`)."""
        previous, looked_at = self._previous.get(node.name, (None, float("-inf")))
        stale = self._stale.get(node.name, [])
        if previous is None and stale and time.monotonic() - looked_at >= _LOOK_AGAIN_SECONDS:
            previous = await open_previous_index(self.node_client(node), self.schema, stale)
            self._previous[node.name] = (previous, time.monotonic())
        return previous

    def _deadline(self, notes: SearchNotes) -> float:
        """The one deadline of a search's waits, set by its first trip that asks."""
        if notes.deadline is None:
            notes.deadline = time.monotonic() + self.wait_seconds
        return notes.deadline

    def _waiting(self, notes: SearchNotes) -> None:
        if not notes.waited:
            notes.waited = True
            self.waited_trips += 1

    async def _unprobed(
        self,
        node: ClusterNode,
        call: Callable[[AsyncSearchIndex], Awaitable[Answer]],
        both: Callable[[AsyncSearchIndex, AsyncSearchIndex | None], Awaitable[Answer]] | None,
    ) -> Answer:
        """What the node holds of the user, unchecked (a search with `both`: the source's half alone)."""
        with checking_owner(None):
            index = await self.index_of(node)
            return await (call(index) if both is None else both(index, None))

    def _note(self, notes: SearchNotes | None, line: str) -> None:
        self.incomplete_searches += 1
        logger.warning("an incomplete search answer: %s (the search waited %gs)", line, self.wait_seconds)
        if notes is not None:
            notes.append(line)

    async def refresh(self) -> None:
        """Read the slot map again (after a failover or a reshard)."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            await self.cluster.nodes_manager.initialize()
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            logger.warning("could not refresh the cluster's slot map: %s", error)

    def chosen_name(self, node: ClusterNode) -> str | None:
        """The name of the index this process uses on `node` (None: none chosen yet)."""
        index = self._indexes.get(node.name)
        return None if index is None else index.name

    def forget_index(self, name: str) -> None:
        self._indexes.pop(name, None)
        self._ready.discard(name)
        self._crowded.discard(name)
        self._previous.pop(name, None)

    async def forget_node(self, name: str) -> None:
        self.forget_index(name)
        client = self._clients.pop(name, None)
        if client is not None:
            await client.aclose()

    async def every_index(self) -> list[AsyncSearchIndex]:
        """The memory index of every primary, each asked of its primary again (adopted, or made
        where the primary has none it can name): a primary no search reached since its index's
        slot moved away gets its new index here."""
        await self.refresh()
        for node in self.cluster.get_primaries():
            self.forget_index(node.name)
        return [await self.index_of(node) for node in self.cluster.get_primaries()]

    async def check(self, *, fix: bool) -> list[IndexReport]:
        """Every memory index on every primary, with its documents (`memlane redis cluster-check`);
        with `fix`, duplicates and stale ones are dropped and a primary without one gets one."""
        return await check_indexes(self, fix=fix)

    async def aclose(self) -> None:
        await self._sweep.stop()
        await stop_all(self._rebuilds)  # a paced rebuild goes on from its cursor in the next process
        for name in list(self._clients):
            await self.forget_node(name)
