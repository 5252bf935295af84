"""The pieces of store/cluster/indexes.py that are not `ShardIndexes` itself: what a survey reports
of one index, the commands sent to one node, how an error is read, the lock under which a
primary's index is made, and the check of every primary's indexes (`memlane redis cluster-check`)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import redis.asyncio as aioredis
from redis.crc import key_slot
from redis.exceptions import MovedError, ResponseError

from memlane.store.cluster.client import CLUSTER_HELP
from memlane.store.errors import RedisUnavailable

if TYPE_CHECKING:
    from memlane.store.cluster.indexes import ShardIndexes

IndexState = Literal["in use", "duplicate", "stale", "missing"]

# how long the index lock is held at most (a process that died holding it is waited out)
_LOCK_MS = 30_000
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class IndexReport:
    """One memory index on one primary, as `memlane redis cluster-check` lists it."""

    node: str
    name: str
    state: IndexState  # in use; duplicate (another usable one holds more); stale (its name's slot moved away); missing
    docs: int = 0
    percent_indexed: float = 1.0
    action: str = ""  # what was done (or, without --fix, would be done) about it

    def line(self) -> str:
        reading = "" if self.percent_indexed >= 1 else f", {self.percent_indexed:.0%} read"
        action = f": {self.action}" if self.action else ""
        return f"{self.node:<22} {self.name:<40} {self.state:<9} {self.docs:>9} docs{reading}{action}"


async def node_command(client: aioredis.Redis, *args: Any) -> Any:
    """One command sent to one node, its reply as redis-py parses it (redis-py leaves
    `Redis.execute_command` untyped: what it answers depends on the command)."""
    execute: Callable[..., Awaitable[Any]] = client.execute_command
    return await execute(*args)


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def info_number(info: dict[Any, Any], name: str, default: float) -> float:
    for key, value in info.items():
        if text(key) == name:
            try:
                return float(text(value))
            except ValueError:
                return default
    return default


def percent_read(info: dict[Any, Any]) -> float:
    """How much of its memories an index has read by RediSearch's own scan (FT.INFO), 0..1."""
    return 1.0 if not info_number(info, "indexing", 0) else info_number(info, "percent_indexed", 0.0)


def moved_index_name(error: BaseException, probe: str) -> bool:
    """Whether a MOVED is about the index's name (its slot moved), not about the user's slot."""
    return isinstance(error, MovedError) and error.slot_id != key_slot(probe.encode())


def unknown_index(error: BaseException) -> bool:
    """The node has no index of that name, or (a script's search, store/cluster/search.py) the
    name's slot is no longer the node's: either way, the node's index is chosen again."""
    text = str(error).lower()
    return isinstance(error, ResponseError) and (
        "unknown index" in text or "no such index" in text or "non local key" in text
    )


class IndexLock:
    """The lock key of one node's index (`KeyLayout.index_lock`, by node id), through the cluster:
    whoever holds it looks again and makes the index; the others wait, then adopt it."""

    def __init__(self, shards: ShardIndexes, client: aioredis.Redis) -> None:
        self.shards, self.client = shards, client
        self.token = secrets.token_hex(8)
        self.key = ""

    async def __aenter__(self) -> None:
        node_id = text(await node_command(self.client, "CLUSTER MYID"))
        self.key = self.shards.layout.index_lock(node_id)
        deadline = time.monotonic() + _LOCK_MS / 1000 + 5
        while not await self.shards.cluster.set(self.key, self.token, nx=True, px=_LOCK_MS):
            if time.monotonic() > deadline:
                raise RedisUnavailable(f"the lock {self.key} stayed taken; {CLUSTER_HELP}")
            await asyncio.sleep(POLL_SECONDS)

    async def __aexit__(self, *exc: Any) -> None:
        if text(await self.shards.cluster.get(self.key) or b"") == self.token:
            await self.shards.cluster.delete(self.key)


async def check_indexes(shards: ShardIndexes, *, fix: bool) -> list[IndexReport]:
    """Every memory index on every primary of `shards`, with its documents (`memlane redis cluster-check`);
    with `fix`, duplicates and stale ones are dropped and a primary without one gets one."""
    await shards.refresh()
    reports: list[IndexReport] = []
    for node in shards.cluster.get_primaries():
        found = await shards.survey(node, deep=True)
        if not found or found[0].state != "in use":
            if fix:
                shards.forget_index(node.name)
                chosen = await shards.index_of(node)
                found = [
                    report for report in await shards.survey(node, deep=True) if report.name == chosen.name
                ] + found
                found[0] = IndexReport(**{**found[0].__dict__, "action": "made"})
            else:
                reports.append(IndexReport(node.name, "-", "missing", action="would make one (--fix)"))
        for report in found:
            if report.state in ("duplicate", "stale"):
                if fix:
                    await shards.drop(node, report)
                    report = IndexReport(**{**report.__dict__, "action": "dropped"})
                else:
                    report = IndexReport(**{**report.__dict__, "action": "would drop (--fix)"})
            reports.append(report)
    return reports
