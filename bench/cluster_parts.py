"""The pieces of bench/cluster.py that are not the drill itself: reading the embedded cluster, the
ballast each primary's index is rebuilt over, what the drill counts beside its own counters (recalls
answered without memory, search trips that waited), the shard / standalone cost on the drill's own
memories, and the bounds the drill holds its figures to (its exit status)."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from load import percentile

from memlane import Settings, open_store
from memlane.store.embedded.cluster import EmbeddedCluster
from memlane.store.errors import RedisUnavailable, StoreError
from memlane.store.records import Message

BALLAST_TURNS = 100  # messages per ballast user: users enough to spread over every primary's slots


def cluster_nodes(cluster: EmbeddedCluster) -> list[dict[str, Any]]:
    """Every live node: {"port", "pid", "id", "primary", "slots"}, from CLUSTER NODES of a live node."""
    alive = {int(node["port"]): node for node in cluster.nodes() if cluster.alive(node.get("pid"))}
    with redis.Redis.from_url(cluster.node_url(next(iter(alive)))) as client:
        table = client.execute_command("CLUSTER NODES")  # redis-py: {"host:port": {...}}
    nodes = []
    for address, node in table.items():
        port = int(address.split("@")[0].rsplit(":", 1)[1])
        if port in alive and "fail" not in node["flags"]:
            slots = sum(
                int(last) - int(first) + 1
                for first, last in (pair if len(pair) == 2 else (pair[0], pair[0]) for pair in node["slots"])
            )
            nodes.append({**alive[port], "id": node["node_id"], "primary": "master" in node["flags"], "slots": slots})
    return nodes


def users_per_primary(store: Any, users: list[str]) -> dict[str, int]:
    owners = Counter(store.client.get_node_from_key(store.layout.slot_key(user)).name for user in users)
    return dict(sorted(owners.items()))


async def patiently(call: Any, *args: Any, **kwargs: Any) -> Any:
    """`call(...)`, tried again for up to a minute while a shard has no primary (a failover not done yet)."""
    deadline = time.monotonic() + 60.0
    while True:
        try:
            return await call(*args, **kwargs)
        except RedisUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


async def wait_for_failover(cluster: EmbeddedCluster, timeout: float = 60.0, primaries: int = 3) -> float:
    """Seconds until every live node says cluster_state:ok again (the replica took over)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            nodes = cluster_nodes(cluster)
            states = []
            for node in nodes:
                with redis.Redis.from_url(cluster.node_url(node["port"]), socket_timeout=1) as client:
                    states.append(client.cluster("info").get("cluster_state"))
            if all(state == "ok" for state in states) and len([n for n in nodes if n["primary"]]) == primaries:
                return time.monotonic() - started
        except redis.RedisError:  # the killed node, not marked failed yet: ask again
            pass
        await asyncio.sleep(0.25)
    return float("nan")


# the ballast: memories each primary's index is rebuilt over ------------------------------------
def ballast_messages(user: str) -> list[Message]:
    """A ballast user's messages (the same on the cluster and on the standalone of the cost check)."""
    return [
        Message(
            id=f"b{turn}",
            user_id=user,
            session_id="ballast",
            role="user",
            content=f"ballast note {turn} of {user}: the {('red', 'blue', 'green', 'amber')[turn % 4]} kite {turn * 7}",
        )
        for turn in range(BALLAST_TURNS)
    ]


async def write_ballast(store: Any, users: list[str], concurrency: int = 4) -> float:
    """Every ballast user's messages stored (and indexed) through the store; seconds it took."""
    started = time.monotonic()
    queue = list(users)

    async def writer() -> None:
        while queue:
            user = queue.pop()
            await patiently(store.add_messages, ballast_messages(user))

    await asyncio.gather(*(writer() for _ in range(concurrency)))
    return time.monotonic() - started


async def wait_rebuilt(store: Any, timeout: float = 300.0) -> tuple[float, list[Any]]:
    """Seconds until every primary's memory index in use has read all its memories and no stale
    one is left (the drill's searches make the new ones and drop the old), and the last reports."""
    started = time.monotonic()
    reports: list[Any] = []
    while time.monotonic() - started < timeout:
        try:
            reports = await patiently(store.check_cluster_indexes)
        except StoreError as error:  # a stale index's slot moving: asked again
            print(f"checking the indexes: {error}", file=sys.stderr)
            await asyncio.sleep(0.5)
            continue
        in_use = [report for report in reports if report.state == "in use"]
        primaries = len(store.client.get_primaries())
        if (
            len(in_use) == primaries
            and all(report.percent_indexed >= 1 for report in in_use)
            and not any(report.state != "in use" for report in reports)
        ):
            return time.monotonic() - started, reports
        await asyncio.sleep(0.5)
    return float("nan"), reports


# what the drill counts beside its own counters ---------------------------------------------------
# redis-py 8.1 following an ASK to a primary its node map does not hold yet fails inside itself (an
# AttributeError the store reports as Redis away): docs/operations/cluster.md says so, for a new primary
REDIS_PY_UNKNOWN_NODE = "the client does not know yet"


class RecallsWithoutMemory(logging.Handler):
    """Counts the turns whose recall failed and went out without memory (memlane/turns.py logs each
    one: 'recall for … failed, answering without memory'), by phase and with when it happened; those
    of redis-py's unknown-node failure (REDIS_PY_UNKNOWN_NODE) apart too."""

    def __init__(self, phase: Callable[[], str]) -> None:
        super().__init__(logging.WARNING)
        self.phase = phase
        self.by_phase: Counter[str] = Counter()
        self.unknown_node: Counter[str] = Counter()
        self.times: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "answering without memory" in str(record.msg):
            self.by_phase[self.phase()] += 1
            self.unknown_node[self.phase()] += REDIS_PY_UNKNOWN_NODE in record.getMessage()
            self.times.append(time.monotonic())


def owner_of(store: Any, user: str) -> str:
    """The primary the store's slot map names for the user (where its search goes)."""
    return store.core.shards.cluster.get_node_from_key(store.layout.slot_key(user)).name


async def has_search_entry(store: Any, user: str, text: str) -> bool:
    """Whether the user's turn saying `text` has its search entry (a turn is stored, then indexed:
    an indexing that fails, in a failover, is tried again later, and a search cannot find it meanwhile)."""
    try:
        turns = await store.recent_messages(user, "default", limit=20)
        ids = [turn.id for turn in turns if turn.content == text]
        return bool(ids) and bool(await store.client.exists(store.layout.memory(user, f"message:{ids[-1]}")))
    except Exception:  # the cluster mid-failover: let the search say what it says
        return True


class Reading:
    """When a paced rebuild (store/cluster/paced_rebuild.py) was under way in any of the drill's
    stores, sampled every 0.2 s: the rebuild phase's searches begun then are those that met it."""

    def __init__(self, stores: list[Any]) -> None:
        self.stores = stores
        self.samples: list[tuple[float, bool]] = []

    async def watch(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            shards = [store.core.shards for store in self.stores]
            self.samples.append((time.monotonic(), any(not t.done() for s in shards for t in s._rebuilds.values())))
            await asyncio.sleep(0.2)

    def during(self, searches: list[tuple[float, float]]) -> list[float]:
        """The seconds of the `searches` ((started, seconds)) begun while a rebuild was under way."""
        times = [at for at, _ in self.samples]
        return [seconds for at, seconds in searches if (i := bisect_right(times, at)) and self.samples[i - 1][1]]


def trips(stores: list[Any]) -> tuple[int, int, int]:
    """Search trips so far over every store: (waited, answered from a previous index, said incomplete)."""
    shards = [store.core.shards for store in stores]
    return (
        sum(s.waited_trips for s in shards),
        sum(s.previous_index_trips for s in shards),
        sum(s.incomplete_searches for s in shards),
    )


# the shard / standalone search cost on the drill's own memories -------------------------------------
async def search_cost(
    cluster_store: Any,
    histories: dict[str, list[Message]],
    asked: list[tuple[str, str]],
    embeddings: Any,
    data_dir: Path,
    rounds: int,
) -> tuple[dict[str, list[float]], int]:
    """Seconds per search of the same (user, text) pairs `asked` on the cluster and on one standalone
    Redis Stack (embedded, started here) holding the same memories (`histories`, copied), interleaved
    so both meet the same load; and how many memories were copied."""
    from memlane.store.embedded.server import EmbeddedRedis

    standalone_server = EmbeddedRedis(Settings(data_dir=data_dir / "standalone", redis_url=None).store)
    url = standalone_server.start()
    standalone = await open_store(
        Settings(redis_url=url, key_prefix="bench-standalone", data_dir=data_dir), embeddings=embeddings
    )
    try:
        copied = 0
        for messages in histories.values():
            for start in range(0, len(messages), 500):
                await standalone.add_messages(messages[start : start + 500])
            copied += len(messages)
        timings: dict[str, list[float]] = {"cluster": [], "standalone": []}
        for round_number in range(rounds + 1):
            user, text = asked[round_number % len(asked)]
            for name, store in (("cluster", cluster_store), ("standalone", standalone)):
                started = time.perf_counter()
                await store.search_memories(user, text, limit=10)
                if round_number:  # the first round warms both
                    timings[name].append(time.perf_counter() - started)
        return timings, copied
    finally:
        await standalone.aclose()
        standalone_server.stop()


def cost_line(cost: dict[str, list[float]], copied: int, load_at_start: Any, load_at_end: Any) -> str:
    shard, one = cost["cluster"], cost["standalone"]
    return (
        f"search cost on the drill's memories ({copied} copied to the standalone), {len(shard)} searches each "
        f"(load {load_at_start} .. {load_at_end}): one shard p50 {percentile(shard, 50) * 1000:.2f} ms, "
        f"p95 {percentile(shard, 95) * 1000:.2f} ms; standalone p50 {percentile(one, 50) * 1000:.2f} ms, "
        f"p95 {percentile(one, 95) * 1000:.2f} ms; p50 ratio {percentile(shard, 50) / percentile(one, 50):.2f}, "
        f"p95 ratio {percentile(shard, 95) / percentile(one, 95):.2f}"
    )


# the bounds (the drill's exit status) -------------------------------------------------------------
@dataclass
class Verdict:
    """What the drill found past its documented bounds (bench/cluster.py's docstring), one line each."""

    failures: list[str] = field(default_factory=list)

    def at_most(self, what: str, value: float, bound: float) -> None:
        if not value <= bound:  # NaN fails too
            self.failures.append(f"{what}: {value:g} (bound {bound:g})")
