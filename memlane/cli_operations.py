"""The operator's commands of `memlane`: the embedded Redis (and `cluster-check`), the worker, the
parked runs, the retention sweep (`gc`) and the facts held for review (`review`). The parser
(memlane/cli.py) wires them; each imports what it uses when it runs."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memlane.cli_support import run_async, with_store

if TYPE_CHECKING:
    from memlane.config import Settings


def cmd_redis(args: argparse.Namespace, settings: Settings) -> int:
    from memlane.masking import mask_secrets, mask_url
    from memlane.store.embedded.cluster import EmbeddedCluster
    from memlane.store.embedded.server import EmbeddedRedis, stop_running
    from memlane.store.errors import StoreError

    if args.action == "start":
        try:
            if args.cluster:
                url = EmbeddedCluster(settings.store, primaries=args.cluster, replicas=args.replicas).start()
            else:
                url = EmbeddedRedis(settings.store, detach=True).start()
        except (StoreError, ValueError) as error:
            print(f"memlane: {mask_secrets(str(error), settings.parts().values())}", file=sys.stderr)
            return 2
        print(url if args.show_password else mask_url(url))
        if args.cluster:
            hint = (
                "set REDIS_URL to its URL for memlane and other clients: "
                f"`memlane redis status --cluster {args.cluster} --show-password` prints it whole"
            )
        else:
            hint = (
                f"memlane commands and apps with MEMLANE_DATA_DIR={settings.store.data_dir} use it as it is; "
                "other clients need its password: `memlane redis status --show-password` prints the whole URL"
            )
        print(hint, file=sys.stderr)
        return 0
    if args.action == "cluster-check":
        return check_cluster(args, settings)
    if args.action == "stop":  # the server and the cluster of this data dir, whichever runs
        stopped = [stop_running(settings.store), EmbeddedCluster(settings.store).stop()]
        print("stopped" if any(stopped) else "no embedded Redis Stack is running")
        return 0
    server = EmbeddedCluster(settings.store) if args.cluster else EmbeddedRedis(settings.store)
    running = server.running_url()
    print((running if args.show_password else mask_url(running)) if running else "not running")
    return 0 if running else 1


def check_cluster(args: argparse.Namespace, settings: Settings) -> int:
    """`memlane redis cluster-check [--fix]`: one line per memory index per primary; exit 1 when a
    duplicate, stale or missing index is left (without --fix)."""

    async def check(store: Any) -> list[Any]:
        reports: list[Any] = await store.check_cluster_indexes(fix=args.fix)
        return reports

    reports = run_async(lambda: with_store(settings, check))
    for report in reports:
        print(report.line())
    left = [report for report in reports if report.state != "in use" and report.action != "dropped"]
    if left:
        print(f"{len(left)} index(es) to drop or make: run again with --fix", file=sys.stderr)
    return 1 if left else 0


async def work(settings: Settings, *, model: Any = None, ready: Callable[[str], None] | None = None) -> None:
    """Take memory-graph runs from the shared queue until cancelled (`memlane worker`).

    Its pydocket worker redelivers a crashed worker's runs after `memory_run_expected_seconds`.
    """
    from memlane.doors import memory_context
    from memlane.graph import MemoryScheduler
    from memlane.models import HOW_TO_CONFIGURE, memory_model_from_settings
    from memlane.store.errors import StoreError
    from memlane.store.redis.store import open_store

    model = model or memory_model_from_settings(settings.models)
    if model is None:
        raise StoreError(HOW_TO_CONFIGURE.replace("restart", "start the worker again"))
    store = await open_store(settings)
    try:
        context = memory_context(settings, store, model)
        async with MemoryScheduler(context) as scheduler:  # queues in the store's Redis, idle flushes too
            if ready is not None:
                ready(scheduler.name)
            await asyncio.Event().wait()
    finally:
        await store.aclose()


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    def ready(name: str) -> None:
        print(
            f"memlane worker: taking runs of {name!r}; a run whose worker died comes back after "
            f"{settings.scheduler.run_expected_seconds:g} s (MEMLANE_MEMORY_RUN_EXPECTED_SECONDS). Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )

    try:
        run_async(lambda: work(settings, ready=ready))
    except KeyboardInterrupt:  # a run cut off here is delivered again to the next worker
        pass
    return 0


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    """List, retry or drop parked runs (`memlane runs`)."""
    from datetime import datetime

    from memlane.masking import mask_secrets

    if args.action != "list" and not (args.all or args.ids):
        print(f"memlane runs {args.action}: name the run ids, or --all", file=sys.stderr)
        return 2

    def when(timestamp: float) -> str:
        return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")

    async def runs(store: Any) -> int:
        parked = await store.parked_runs(args.user)
        if args.action == "list":
            if not parked:
                print("no parked runs")
                return 0
            print("id\tuser\tattempts\tfirst failed\tlast failed\terror")
            for run in parked:  # errors were redacted when parked; again, in case of an older entry
                error = _one_line(mask_secrets(run.error, settings.parts().values()))
                print(
                    f"{run.id}\t{run.user_id}\t{run.attempts}\t{when(run.first_failed_at)}\t{when(run.last_failed_at)}\t{error}"
                )
            return 0
        chosen = parked if args.all else [run for run in parked if run.id in args.ids]
        unknown = [] if args.all else [run_id for run_id in args.ids if run_id not in {run.id for run in parked}]
        for run_id in unknown:
            print(f"memlane runs: no parked run {run_id!r} (`memlane runs` lists them)", file=sys.stderr)
        if args.action == "drop":
            for run in chosen:
                if await store.drop_parked_run(run.id) is not None:
                    print(f"dropped {run.id} ({run.user_id}); its messages stay unprocessed until the user's next run")
        else:
            from memlane.graph.tasks import retry_parked_runs  # the queue, only to retry

            try:
                retried = await retry_parked_runs(
                    store, [run.id for run in chosen], store=settings.store, scheduler=settings.scheduler
                )
            except RuntimeError as error:
                print(f"memlane runs: {error}", file=sys.stderr)
                return 2
            for run in retried:
                print(f"queued a run for {run.user_id} ({run.id}); an app or `memlane worker` on this Redis runs it")
        if not chosen and not unknown:
            print("no parked runs")
        return 1 if unknown else 0

    return run_async(lambda: with_store(settings, runs))


def cmd_gc(args: argparse.Namespace, settings: Settings) -> int:
    """`memlane gc [--user U] [--recount]`: one retention sweep, now; prints what it removed."""

    async def sweep(store: Any) -> Any:
        return await store.collect_garbage(args.user, recount=args.recount)

    report = run_async(lambda: with_store(settings, sweep))
    for line in report.lines():
        print(line)
    return 0


def cmd_review(args: argparse.Namespace, settings: Settings) -> int:
    """`memlane review USER [confirm|drop ID...]`: list the facts held under memory_min_confidence;
    confirm (into the profile) or drop the ones named."""
    from datetime import datetime

    if args.action != "list" and not args.ids:
        print(f"memlane review {args.action}: name the held fact ids (the first column of the list)", file=sys.stderr)
        return 2

    async def review(store: Any) -> int:
        if args.action == "list":
            held = await store.held_facts(args.user)
            if not held:
                print("no facts held for review")
                return 0
            print("id\tconfidence\tsaid\tslot\tcontent")
            for fact in held:
                said = datetime.fromtimestamp(fact.entry.since).strftime("%Y-%m-%d %H:%M")
                entry = fact.entry
                print(f"{fact.id}\t{entry.confidence:.2f}\t{said}\t{entry.topic} / {entry.subtopic}\t{entry.content}")
            return 0
        missing = 0
        for held_id in args.ids:
            if args.action == "confirm":
                entry = await store.confirm_held_fact(args.user, held_id, actor="cli")
                if entry is not None:
                    print(f"confirmed {held_id}: {entry.topic} / {entry.subtopic}: {entry.content}")
                    continue
            elif await store.drop_held_fact(args.user, held_id):
                print(f"dropped {held_id}")
                continue
            missing += 1
            print(
                f"memlane review: no fact {held_id!r} held for {args.user!r} (`memlane review USER` lists them)",
                file=sys.stderr,
            )
        return 1 if missing else 0

    return int(run_async(lambda: with_store(settings, review)))
