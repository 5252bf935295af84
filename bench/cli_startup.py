"""CLI start-up: how long `memlane` commands take as whole processes (issue 34, item 14).

    python bench/cli_startup.py                         # this checkout's `memlane`, 7 runs each
    python bench/cli_startup.py --memlane OTHER/bin/memlane --runs 5   # another install, to compare

Starts an embedded Redis Stack in a temporary data dir, stores a few memories for one user, then
times each command from outside (start to exit, in a fresh process), after one warm-up run:
`--help`, `--version`, `runs` (no parked runs), `search` (the embedding model's load included).
Prints min / median / max seconds per command, and the load average before and after, since a
busy machine stretches every figure. Targets on a quiet machine: --help and --version <= 0.3 s,
search <= 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memlane import SearchMemory, Settings, open_store  # noqa: E402
from memlane.store.embedded.server import EmbeddedRedis  # noqa: E402

USER = "bench-cli"
COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "runs": ["runs"],
    "search": ["search", USER, "what coffee do I drink?"],
}


def timed(command: list[str], env: dict[str, str]) -> float | None:
    """Seconds the command took, or None when it failed (an older memlane without --version)."""
    started = time.perf_counter()
    finished = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - started
    return took if finished.returncode == 0 else None


async def seed(settings: Settings) -> None:
    store = await open_store(settings)
    try:
        await store.add_memories(
            [
                SearchMemory(id="coffee", user_id=USER, kind="profile", text="diet / coffee: black coffee, no sugar"),
                SearchMemory(id="city", user_id=USER, kind="profile", text="home / city: lives in Lyon"),
            ]
        )
    finally:
        await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--memlane", default=str(Path(sys.executable).parent / "memlane"), help="the memlane executable to time"
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-cli-bench-"))
    server = EmbeddedRedis(Settings(data_dir=data_dir / "redis-data", redis_url=None).store)
    url = server.start()
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    try:
        settings = Settings(redis_url=url, key_prefix=prefix, data_dir=data_dir)
        asyncio.run(seed(settings))
        env = {**os.environ, "REDIS_URL": url, "MEMLANE_KEY_PREFIX": prefix, "MEMLANE_DATA_DIR": str(data_dir)}
        load_before = os.getloadavg()
        print(
            f"{args.memlane}, {args.runs} runs each after one warm-up; load before {load_before[0]:.2f} {load_before[1]:.2f}"
        )
        print(f"{'command':<12}{'min s':>8}{'median s':>10}{'max s':>8}")
        for name, arguments in COMMANDS.items():
            command = [args.memlane, *arguments]
            if timed(command, env) is None:  # the warm-up: files in the page cache
                print(f"{name:<12}{'failed (this memlane has no such command)':>26}")
                continue
            times = [took for _ in range(args.runs) if (took := timed(command, env)) is not None]
            print(f"{name:<12}{min(times):>8.3f}{statistics.median(times):>10.3f}{max(times):>8.3f}")
        load_after = os.getloadavg()
        print(f"load after {load_after[0]:.2f} {load_after[1]:.2f} (2 cores)")
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
