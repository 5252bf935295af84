"""Where a deployment's runs queue, and queueing from a process without a scheduler.

The queue (`default_docket_url`): `memory_docket_url`, else the store's Redis, else one in this
process's memory; on a Redis Cluster in pydocket's spelling (`queue.docket_spelling`). Every
process on the same Redis and key prefix shares it by name (`scheduler_name`). A process without
a scheduler (`memlane runs retry`, `memlane mcp`) queues on the same one (`retry_parked_runs`,
`queue_memory_run`), and an app or a `memlane worker` on that Redis runs what it queued.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta

from memlane.config import SchedulerSettings, StoreSettings
from memlane.graph.queue import RunQueue, docket_spelling
from memlane.store.protocols import AdminStore, LocatedStore, RunStore
from memlane.store.records import ParkedRun
from memlane.store.schema import QueueKeys


def scheduler_name(*, store: StoreSettings) -> str:
    """The queue's name of a deployment: every process on the same Redis and key prefix shares it."""
    return f"{store.key_prefix}-memory-graph"


def default_docket_url(admin: LocatedStore, name: str, *, store: StoreSettings, scheduler: SchedulerSettings) -> str:
    """Where runs queue: `memory_docket_url`, else the Redis the store is connected to (so runs
    survive a crash and `memlane worker` sees them), else an in-process `memory://` queue."""
    if scheduler.docket_url:
        return docket_spelling(scheduler.docket_url, cluster=False)
    url = admin.url or store.redis_url
    return docket_spelling(url, cluster=store.redis_cluster) if url else f"memory://{name}"


def redelivery_timeout(*, scheduler: SchedulerSettings) -> timedelta:
    """How long a run taken by a worker that died waits before another worker gets it.

    pydocket's default is 5 minutes. A live worker renews the lease of the runs it holds
    every quarter of this, so a run longer than it is not taken away while its worker lives.
    """
    return timedelta(seconds=scheduler.run_expected_seconds)


def retry_key(user_id: str) -> str:
    """The task key of a run that retries a parked one: fresh, so it never merges with the spent run."""
    return QueueKeys.run_task(user_id, f"retry-{uuid.uuid4().hex}")


async def parked_to_retry(store: RunStore, run_ids: Sequence[str] | None) -> list[ParkedRun]:
    """The parked runs named (every one when `run_ids` is None), oldest first."""
    runs = await store.parked_runs()
    return runs if run_ids is None else [run for run in runs if run.id in set(run_ids)]


async def retry_parked_runs(
    admin: AdminStore,
    run_ids: Sequence[str] | None = None,
    *,
    store: StoreSettings,
    scheduler: SchedulerSettings,
    docket_url: str | None = None,
) -> list[ParkedRun]:
    """Queue a fresh run for the users of these parked runs (all when `run_ids` is None) on the
    deployment's queue, and drop them from the list. Returns the runs retried.

    For a process without a scheduler (`memlane runs retry`): an app or `memlane worker` on
    the same Redis takes the runs. A run that fails again is parked again.
    """
    name, url = _shared_queue(admin, docket_url, "retry from the app, or ", store=store, scheduler=scheduler)
    runs = await parked_to_retry(admin, run_ids)
    if runs:
        async with RunQueue(name, url) as queue:
            for user_id in dict.fromkeys(run.user_id for run in runs):  # one run per user does it
                await queue.add_run(user_id, retry_key(user_id))
    for run in runs:
        await admin.drop_parked_run(run.id)
    return runs


async def queue_memory_run(
    admin: LocatedStore,
    user_id: str,
    *,
    store: StoreSettings,
    scheduler: SchedulerSettings,
    docket_url: str | None = None,
) -> None:
    """Queue a run for `user_id` now on the deployment's queue, from a process without a scheduler
    (`memlane mcp`'s remember_now): an app or `memlane worker` on the same Redis runs it. An
    empty buffer makes a run that stops at once."""
    name, url = _shared_queue(admin, docket_url, store=store, scheduler=scheduler)
    async with RunQueue(name, url) as queue:
        await queue.add_run(user_id, QueueKeys.run_task(user_id, f"asked-{uuid.uuid4().hex}"))


def _shared_queue(
    admin: LocatedStore, docket_url: str | None, hint: str = "", *, store: StoreSettings, scheduler: SchedulerSettings
) -> tuple[str, str]:
    """The deployment's queue (name, URL) for a process without a scheduler; one in this
    process's memory is refused, as no worker could see what is put on it."""
    name = scheduler_name(store=store)
    url = docket_url or default_docket_url(admin, name, store=store, scheduler=scheduler)
    if url.startswith("memory://"):
        raise RuntimeError(
            "runs queue in this process's memory (memory://), where no worker can see them; "
            f"{hint}unset MEMLANE_MEMORY_DOCKET_URL to queue in the store's Redis"
        )
    return name, url
