"""A primary's new memory index reading the memories already there at a pace memlane sets.

RediSearch's own first scan of a new index (FT.CREATE without SKIPINITIALSCAN) runs on Redis's
main thread in bursts of about a hundred documents and holds up every search on that primary
meanwhile. When a primary's index is rebuilt while its previous index still answers searches
(`ShardIndexes._choose`), the new index is made with SKIPINITIALSCAN instead, and memlane shows it
the existing memories itself: a SCAN page, then its memories in steps of `batch`: in one pipeline,
each memory hash has its user tag written again with the value it holds (a script, so that no
concurrent write is undone; RediSearch indexes a hash again on any write to an indexed field),
then a pause of `pause_seconds`. A search waits behind one step at most. Each memory written again
is indexed by the previous index too (both cover the same keys), so a paced rebuild costs about
three times RediSearch's scan in CPU, spread out (docs/operations/cluster.md has the figures).

The progress is kept in Redis beside the index (`progress_key`: the SCAN cursor, how many were
read, and `done`), written in the same pipeline as the batch, so that a process that stops midway
is followed by the next one from the cursor (a SCAN cursor stays valid: every key there for the
whole scan is returned at least once). One process reads at a time (a lease key, refreshed each
batch). Until `done`, the index counts as still reading (`progress`), the previous index answers
searches, and it is dropped only after. An index dropped while it reads (another process kept
another index there: index_upkeep.py) takes its progress key with it, and its rebuild stops.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MovedError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memlane.store.cluster.client import retryable
from memlane.store.cluster.index_parts import node_command, text
from memlane.store.schema import KeyLayout, MemoryField, glob_escaped

logger = logging.getLogger(__name__)

LEASE_MS = 10_000  # a process that stopped holding the lease is followed after this
_PAGE_STEPS = 20  # a SCAN page holds about this many steps (the lease is renewed once a page)

# write the user tag again, unchanged: RediSearch then indexes the hash in every index over it
_TOUCH = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then
    redis.call('HSET', KEYS[1], ARGV[1], value)
    return 1
end
return 0
"""
# count a step's memories as read and (a page's last step) keep the cursor; nothing once the progress
# is gone: the index was dropped (another process kept another one, index_upkeep.py) and the rebuild stops
_ADVANCE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'read', ARGV[1])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'cursor', ARGV[2], 'done', ARGV[3]) end
return 1
"""
# take the lease, or keep it while it is ours
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def progress_key(layout: KeyLayout, index_name: str) -> str:
    """Hash: a paced rebuild's progress (cursor, read, total, done), in the slot of the index's own
    name (its hash tag comes first), so on the primary whose index it is."""
    return f"{layout.prefix}:index_rebuild:{index_name}"


def lease_key(layout: KeyLayout, index_name: str) -> str:
    """String (expires): held by the one process reading memories into `index_name`."""
    return f"{layout.prefix}:index_rebuild_lease:{index_name}"


async def begin(client: aioredis.Redis, layout: KeyLayout, index_name: str, total: int) -> None:
    """Mark `index_name` as reading from the start (before the index exists: no process may take
    it for complete). `total`: how many memories the previous index holds (for the percentage)."""
    key = progress_key(layout, index_name)
    await node_command(client, "HSET", key, "cursor", "0", "read", "0", "total", str(total), "done", "0")


async def progress(client: aioredis.Redis, layout: KeyLayout, index_name: str) -> float | None:
    """How far a paced rebuild of `index_name` got (0..0.99), None when the index reads no more
    (done, or made with RediSearch's own scan)."""
    found = await node_command(client, "HGETALL", progress_key(layout, index_name))
    state = {text(name): text(value) for name, value in (found or {}).items()}
    if not state or state.get("done") == "1":
        return None
    total = max(int(state.get("total", "0") or 0), 1)
    return min(int(state.get("read", "0") or 0) / total, 0.99)


@dataclass(eq=False)
class PacedRebuild:
    """Reads the memories on one primary (`client`) into its new index `index_name`."""

    client: aioredis.Redis
    layout: KeyLayout
    index_name: str
    batch: int = 5  # memories per step, written again in one pipeline
    pause_seconds: float = 0.02  # between two steps, for the searches
    on_done: Callable[[], Awaitable[object]] | None = None  # the previous index may go
    _token: str = field(default_factory=lambda: secrets.token_hex(8))
    _held: bool = False
    steps: int = 0  # what this process did, for its log line
    step_seconds: float = 0.0
    paused_seconds: float = 0.0

    async def run(self) -> None:
        """Read until done (resuming from the kept cursor); another process holding the lease is
        waited out. Connection trouble is retried; cancelling releases the lease."""
        touch = self.client.register_script(_TOUCH)
        advance = self.client.register_script(_ADVANCE)
        lease = self.client.register_script(_LEASE)
        key = progress_key(self.layout, self.index_name)
        match = glob_escaped(self.layout.memory_key_prefix) + "*"
        try:
            while True:
                try:
                    if not await lease(keys=[lease_key(self.layout, self.index_name)], args=[self._token, LEASE_MS]):
                        self._held = False
                        if await progress(self.client, self.layout, self.index_name) is None:
                            break
                        await asyncio.sleep(LEASE_MS / 4000)
                        continue
                    self._held = True
                    state = await node_command(self.client, "HMGET", key, "cursor", "done")
                    if state[0] is None or text(state[1]) == "1":  # done (here or elsewhere), or its index dropped
                        break
                    # one SCAN page (cheap: no indexing), then its memories in steps of `batch`; the
                    # cursor is kept with the page's last step (a stop midway reads that page again)
                    cursor, keys = await node_command(
                        self.client, "SCAN", text(state[0]), "MATCH", match, "COUNT", self.batch * _PAGE_STEPS
                    )
                    dropped = False
                    for start in range(0, max(len(keys), 1), self.batch):
                        step = keys[start : start + self.batch]
                        pipe = self.client.pipeline(transaction=False)
                        for memory_key in step:
                            await touch(keys=[memory_key], args=[MemoryField.USER], client=pipe)
                        last = start + self.batch >= len(keys)  # the page's last step keeps the cursor
                        kept = [str(cursor), "1" if int(cursor) == 0 else "0"] if last else ["", ""]
                        await advance(keys=[key], args=[len(step), *kept], client=pipe)
                        # a key of a slot moving away answers ASK: its new node's index reads it there
                        began = time.monotonic()
                        replies = await pipe.execute(raise_on_error=False)
                        if replies and replies[-1] == 0:  # the progress is gone: its index was dropped
                            logger.info("stopped reading memories into %s: the index was dropped", self.index_name)
                            dropped = True
                            break
                        if step:
                            await self._pause(time.monotonic() - began)
                    if dropped:
                        break
                    if int(cursor) == 0:
                        logger.info(
                            "the memory index %s has read every memory (here: %d steps, %.1f s in them, %.1f s paused)",
                            self.index_name,
                            self.steps,
                            self.step_seconds,
                            self.paused_seconds,
                        )
                        break
                except (RedisConnectionError, RedisTimeoutError, OSError) as error:
                    logger.warning("reading memories into %s paused: %s", self.index_name, error)
                    await asyncio.sleep(LEASE_MS / 2000)
                except ResponseError as error:
                    if isinstance(error, MovedError) or not retryable(error):  # the index's slot moved away
                        logger.warning("stopped reading memories into %s: %s", self.index_name, error)
                        return  # that primary rebuilds
                    # CLUSTERDOWN (a failover), TRYAGAIN, LOADING: nobody would start it again after a stop
                    logger.warning("reading memories into %s paused: %s", self.index_name, error)
                    await asyncio.sleep(LEASE_MS / 2000)
        finally:
            if self._held:
                await self._release()
        if self.on_done is not None:
            await self.on_done()

    async def _pause(self, took: float) -> None:
        """Count a step that took `took` seconds (for the log line), then pause. (A pause grown with the
        step's time, so that steps hold at most a quarter of the time, left the drill's search p95 where
        it was and made a rebuild three times longer: docs/operations/cluster.md.)"""
        self.steps += 1
        self.step_seconds += took
        self.paused_seconds += self.pause_seconds
        await asyncio.sleep(self.pause_seconds)

    async def _release(self) -> None:
        try:
            release = self.client.register_script(_RELEASE)
            await asyncio.shield(release(keys=[lease_key(self.layout, self.index_name)], args=[self._token]))
        except (RedisConnectionError, RedisTimeoutError, OSError, ResponseError):
            pass  # it expires
        self._held = False


def start(running: dict[str, asyncio.Task[None]], node: str, rebuild: PacedRebuild) -> None:
    """Run `rebuild` for `node` unless one runs for it in this process already."""
    task = running.get(node)
    if task is None or task.done():
        # in a context of its own: a search's owner probe (owner_probe.py) is not its business
        running[node] = asyncio.create_task(rebuild.run(), context=contextvars.Context())


async def stop_all(running: dict[str, asyncio.Task[None]]) -> None:
    """Stop this process's paced rebuilds (each releases its lease; the cursor stays)."""
    for task in running.values():
        task.cancel()
    await asyncio.gather(*running.values(), return_exceptions=True)
    running.clear()
