"""A burst on a fresh store: 60,000 `MemlaneStore.aget`s started at once with `asyncio.gather`, on a
Redis and on a 3-primary Redis Cluster (both embedded, started here), beside LangGraph's
`InMemoryStore` given the same burst:

    python bench/burst.py                   # 60,000 gets, the default pool (MEMLANE_REDIS_MAX_CONNECTIONS)
    python bench/burst.py --calls 10000     # a smaller burst
    python bench/burst.py --recalls 200     # and 200 recalls at once (one recall holds about 5 connections)
    python bench/burst.py --no-cluster      # the standalone Redis only
    python bench/burst.py --mixed 100       # and LangGraph's test_large_batches_async: 100 keys x 10 rounds x 6 ops

The store is opened just before the burst, so its pool holds one connection and must open the
rest under the burst (LangGraph's test_large_batches_async pattern); a second burst on the same,
now warm, store follows. Prints, per deployment: the calls that raised (by error) and the wall
time, with the machine's load average before and after. Target: 0 errors everywhere, as
InMemoryStore.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from langgraph.store.memory import InMemoryStore  # noqa: E402
from load import load_average  # noqa: E402  (bench/load.py)

_spec = importlib.util.spec_from_file_location("bench_store", HERE / "store.py")
bench_store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_store)  # its hash embedder: a get embeds nothing
HashEmbeddings = bench_store.HashEmbeddings

from memlane import MemlaneStore, Settings, open_store  # noqa: E402
from memlane.recall import RecallParts, recall  # noqa: E402

USERS = 100


async def burst(store: Any, calls: int) -> tuple[Counter[str], float]:
    """`calls` gets at once, of items that exist (one in five) and that do not; (errors by kind, seconds)."""
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(store.aget(("memories", f"u{number % USERS}"), f"k{number % 5}") for number in range(calls)),
        return_exceptions=True,
    )
    return errors_of(answers), time.perf_counter() - started


async def recall_burst(store: Any, settings: Settings, recalls: int) -> tuple[Counter[str], float]:
    started = time.perf_counter()
    parts = RecallParts.of(settings)
    answers = await asyncio.gather(
        *(recall(store, f"u{number}", "s", "what do I like?", parts=parts) for number in range(recalls)),
        return_exceptions=True,
    )
    return errors_of(answers), time.perf_counter() - started


async def mixed_burst(store: Any, keys: int, rounds: int = 10) -> tuple[Counter[str], float]:
    """LangGraph's test_large_batches_async (its Postgres store's: 1,000 keys, 60,000 calls): for
    each round and key, a put, a get, a namespace listing, a search, a put and a delete, all at once."""
    calls = []
    for round_ in range(rounds):
        namespace = ("test", "foo", "bar", "baz", str(round_ % 2))
        for key in range(keys):
            calls += [
                store.aput(namespace, f"key{key}", value={"foo": f"bar{key}"}),
                store.aget(namespace, f"key{key}"),
                store.alist_namespaces(prefix=None, max_depth=round_ + 1),
                store.asearch(("test",)),
                store.aput(namespace, f"key{key}", value={"foo": f"bar{key}"}),
                store.adelete(namespace, f"key{key}"),
            ]
    started = time.perf_counter()
    answers = await asyncio.gather(*calls, return_exceptions=True)
    return errors_of(answers), time.perf_counter() - started


def errors_of(answers: list[Any]) -> Counter[str]:
    return Counter(
        f"{type(answer).__name__}: {str(answer)[:110]}" for answer in answers if isinstance(answer, BaseException)
    )


def line(name: str, calls: int, errors: Counter[str], seconds: float, load_before: str) -> None:
    failed = sum(errors.values())
    after = os.getloadavg()[0]
    print(f"  {name:<42} {failed:>6} of {calls:>6,} failed  {seconds:6.1f} s   load {load_before} -> {after:.2f}")
    for error, count in errors.most_common(3):
        print(f"      {count:>6} x {error}")


async def on_memlane(name: str, url: str, args: argparse.Namespace) -> None:
    settings = Settings(redis_url=url, key_prefix=f"burst{uuid.uuid4().hex[:8]}", openai_api_key=None)
    store = await open_store(settings, embeddings=HashEmbeddings())
    memlane_store = MemlaneStore(store, user_of=1)
    try:
        for user in range(USERS):
            await memlane_store.aput(("memories", f"u{user}"), "k0", {"text": f"user {user} likes tea"})
        await store.aclose()  # a fresh store: its pool holds the one connection that opening it made
        store = await open_store(settings, embeddings=HashEmbeddings())
        memlane_store = MemlaneStore(store, user_of=1)
        for warmth in ("fresh", "warm"):
            load_before = load_average()
            errors, seconds = await burst(memlane_store, args.calls)
            line(f"{name}, {warmth}", args.calls, errors, seconds, load_before)
        if args.recalls:
            load_before = load_average()
            errors, seconds = await recall_burst(store, settings, args.recalls)
            line(f"{name}, {args.recalls} recalls", args.recalls, errors, seconds, load_before)
        if args.mixed:
            await mixed_on(name, settings, args.mixed)
    finally:
        for user in range(USERS):
            await memlane_store.adelete(("memories", f"u{user}"), "k0")
        await store.aclose()


async def mixed_on(name: str, settings: Settings, keys: int) -> None:
    """LangGraph's large-batch pattern on a store of its own, opened just before (its pool cold)."""
    store = await open_store(settings, embeddings=HashEmbeddings(), key_prefix=f"{settings.store.key_prefix}m")
    try:
        load_before = load_average()
        errors, seconds = await mixed_burst(MemlaneStore(store), keys)
        line(f"{name}, LangGraph's large batches", keys * 60, errors, seconds, load_before)
    finally:
        await store.reset()  # its items, under its own prefix
        await store.aclose()


async def on_langgraph(args: argparse.Namespace) -> None:
    reference = InMemoryStore()
    for user in range(USERS):
        await reference.aput(("memories", f"u{user}"), "k0", {"text": f"user {user} likes tea"})
    load_before = load_average()
    errors, seconds = await burst(reference, args.calls)
    line("LangGraph InMemoryStore", args.calls, errors, seconds, load_before)
    if args.mixed:
        load_before = load_average()
        errors, seconds = await mixed_burst(InMemoryStore(), args.mixed)
        line("InMemoryStore, LangGraph's large batches", args.mixed * 60, errors, seconds, load_before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=60_000)
    parser.add_argument("--recalls", type=int, default=0, help="also this many recalls at once (0: none)")
    parser.add_argument(
        "--mixed", type=int, default=0, help="also LangGraph's large batches with this many keys (0: not)"
    )
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()

    from memlane.store.embedded.cluster import EmbeddedCluster
    from memlane.store.embedded.server import EmbeddedRedis

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-burst-"))
    defaults = Settings(data_dir=data_dir, redis_url=None)
    print(
        f"{args.calls:,} MemlaneStore.aget at once; pool: MEMLANE_REDIS_MAX_CONNECTIONS="
        f"{defaults.store.redis_max_connections}, MEMLANE_REDIS_POOL_TIMEOUT_SECONDS="
        f"{defaults.store.redis_pool_timeout_seconds:g}; {os.cpu_count()} cores"
    )
    server = EmbeddedRedis(Settings(data_dir=data_dir / "standalone", redis_url=None).store)
    cluster = (
        None
        if args.no_cluster
        else EmbeddedCluster(Settings(data_dir=data_dir / "cluster", redis_url=None).store, primaries=3)
    )
    try:
        asyncio.run(on_langgraph(args))
        asyncio.run(on_memlane("Redis", server.start(), args))
        if cluster is not None:
            asyncio.run(on_memlane("Redis Cluster (3 primaries)", cluster.start(), args))
    finally:
        server.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
