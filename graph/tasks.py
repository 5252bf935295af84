"""The memory graph's pydocket tasks, and the deployment's queue they go on.

The tasks carry only the user id and the scheduler's name; the process that runs one finds
its `MemoryScheduler` (graph/scheduler.py) by that name, so a `memlane worker` in another
process registers its own under the same name. `ConcurrencyLimit("user_id", max_concurrent=1)`
serializes one user's runs while different users run in parallel.

The queue (`default_docket_url`): `memory_docket_url`, else the store's Redis, else one in this
process's memory; on a Redis Cluster in pydocket's spelling (`docket_spelling`). A process
without a scheduler (`memlane runs retry`, `memlane mcp`) queues on the same one
(`retry_parked_runs`, `queue_memory_run`). What a failed run waits before its retry
(`retry_delay`) and what it shows once parked (`describe_error`, `parked_run_id`) are here too,
so that every process on the queue agrees on them.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from docket import ConcurrencyLimit, Disposition, Docket, Retry, TaskKey

from memlane.config import Settings
from memlane.masking import mask_secrets
from memlane.nodes.llm import ModelPaused
from memlane.store.base import MemoryStore, ParkedRun, stable_id

if TYPE_CHECKING:
    from memlane.graph.scheduler import MemoryScheduler

_SCHEDULERS: dict[str, "MemoryScheduler"] = {}
_MAX_RETRY_DELAY_SECONDS = 600.0
_MAX_ERROR_CHARS = 2000


def _scheduler(name: str) -> "MemoryScheduler":
    try:
        return _SCHEDULERS[name]
    except KeyError:
        raise RuntimeError(
            f"no MemoryScheduler named {name!r} runs in this process; start one with "
            f"`async with MemoryScheduler(context, name={name!r})` before its worker takes tasks"
        ) from None


def register_scheduler(scheduler: "MemoryScheduler") -> None:
    """Make `scheduler` the one this process's worker hands the tasks of its name to."""
    if scheduler.name in _SCHEDULERS:
        raise RuntimeError(f"a MemoryScheduler named {scheduler.name!r} already runs in this process")
    _SCHEDULERS[scheduler.name] = scheduler


def unregister_scheduler(name: str) -> None:
    _SCHEDULERS.pop(name, None)


def scheduler_name(settings: Settings) -> str:
    """The queue's name of a deployment: every process on the same Redis and key prefix shares it."""
    return f"{settings.key_prefix}-memory-graph"


async def memory_run_task(
    user_id: str,
    scheduler_name: str,
    through_seq: int | None = None,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    retry: Retry = Retry(),
    key: str = TaskKey(),
) -> None:
    """One memory-graph run for `user_id` (a pydocket task); with `through_seq`, over the
    buffer up to that message only (a topic shift closes the turns before it).

    `Retry()` retries nothing by itself: the run decides, from the settings of the
    process that runs it, whether a failure is retried (and after how long) or parked.
    """
    await _scheduler(scheduler_name)._run(user_id, key, retry, through_seq)


async def idle_flush_task(user_id: str, scheduler_name: str) -> None:
    """Flush the user's buffer: no message came for `memory_idle_flush_seconds` (a pydocket task)."""
    await _scheduler(scheduler_name)._idle_flush(user_id)


async def session_summary_task(
    user_id: str,
    session_id: str,
    scheduler_name: str,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    key: str = TaskKey(),
) -> None:
    """Fold new messages of a session into its rolling summary (a pydocket task)."""
    await _scheduler(scheduler_name)._summarize_session(user_id, session_id, key)


# what a scheduler's docket registers (a worker runs only the tasks its docket knows)
async def follow_up_check_task(user_id: str, scheduler_name: str) -> None:
    """Take up a follow-up that a lost run held back (a pydocket task; see
    `MemoryScheduler._schedule_follow_up_check`)."""
    await _scheduler(scheduler_name)._check_follow_up(user_id)


TASKS = (memory_run_task, session_summary_task, idle_flush_task, follow_up_check_task)


def retry_delay(settings: Settings, attempt: int, error: BaseException) -> float:
    """Seconds before retrying a run whose attempt number `attempt` failed with `error`.

    `memory_run_retry_delay_seconds`, doubled with each attempt, at most 10 minutes; a run the
    memory model's open breaker refused waits at least until the breaker lets a trial through.
    """
    delay = min(settings.memory_run_retry_delay_seconds * 2 ** max(attempt - 1, 0), _MAX_RETRY_DELAY_SECONDS)
    if isinstance(error, ModelPaused):
        delay = max(delay, error.retry_in)
    return delay


class MemoryRunFailed(RuntimeError):
    """What a failed memory run hands the queue, instead of its own error: pydocket keeps what a
    task raised for its execution TTL, as text in the run's record ("error") and pickled in its
    result store, so the raw error (a model's, echoing its API key) would sit in Redis. This one
    holds only `describe_error`'s text, secrets masked, and no cause."""


def describe_error(error: BaseException, settings: Settings) -> str:
    """What a parked run shows of its error: type and message, secrets removed, bounded."""
    text = mask_secrets(f"{type(error).__name__}: {error}", settings)
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def parked_run_id(user_id: str, cursor: int) -> str:
    """The id a run is parked under: one per stuck buffer (the user and where their buffer
    starts), so the same buffer failing again is one entry with its attempts added up."""
    return stable_id("parked-run", user_id, str(cursor))[:12]


def default_docket_url(store: MemoryStore, settings: Settings, name: str) -> str:
    """Where runs queue: `memory_docket_url`, else the Redis the store is connected to (so runs
    survive a crash and `memlane worker` sees them), else an in-process `memory://` queue."""
    if settings.memory_docket_url:
        return docket_spelling(settings.memory_docket_url, cluster=False)
    url = getattr(store, "url", None) or settings.redis_url
    return docket_spelling(url, cluster=settings.redis_cluster) if url else f"memory://{name}"


def docket_spelling(url: str, *, cluster: bool) -> str:
    """`url` as pydocket reads it. pydocket (0.27) runs on a Redis Cluster when its URL says
    `redis+cluster://` (its keys then share the hash tag of the queue's name: one slot, one
    primary); a URL in RedisVL's spelling (`?cluster=true`, or several hosts) or with
    MEMLANE_REDIS_CLUSTER set is given that scheme, as pydocket would otherwise talk to the
    one node named and meet MOVED on most of its keys."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    flagged = any(name.lower() == "cluster" and value.lower() == "true" for name, value in query)
    if not (cluster or flagged or "," in parts.netloc) or parts.scheme.endswith("+cluster"):
        return url
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"a Redis Cluster URL must start with redis:// or rediss://, not {parts.scheme}://")
    credentials, at, hosts = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(
        scheme=parts.scheme + "+cluster",
        netloc=credentials + at + hosts.split(",")[0],
        path="",  # a cluster has one database
        query=urlencode([(name, value) for name, value in query if name.lower() != "cluster"]),
    ))


async def _queue_memory_run(docket: Docket, user_id: str, name: str, key: str, through_seq: int | None = None) -> bool:
    bound = {"through_seq": through_seq} if through_seq is not None else {}
    execution = await docket.add(memory_run_task, key=key)(user_id=user_id, scheduler_name=name, **bound)
    return execution.disposition == Disposition.SCHEDULED


def _retry_key(user_id: str) -> str:
    return f"memlane-run:{user_id}:retry-{uuid.uuid4().hex}"


async def _parked_to_retry(store: MemoryStore, run_ids: Sequence[str] | None) -> list[ParkedRun]:
    runs = await store.parked_runs()
    return runs if run_ids is None else [run for run in runs if run.id in set(run_ids)]


async def retry_parked_runs(
    store: MemoryStore, settings: Settings, run_ids: Sequence[str] | None = None, *, docket_url: str | None = None
) -> list[ParkedRun]:
    """Queue a fresh run for the users of these parked runs (all when `run_ids` is None) on the
    deployment's queue, and drop them from the list. Returns the runs retried.

    For a process without a scheduler (`memlane runs retry`): an app or `memlane worker` on
    the same Redis takes the runs. A run that fails again is parked again.
    """
    name, url = _shared_queue(store, settings, docket_url, "retry from the app, or ")
    runs = await _parked_to_retry(store, run_ids)
    if runs:
        async with Docket(name=name, url=url) as docket:
            for user_id in dict.fromkeys(run.user_id for run in runs):  # one run per user does it
                await _queue_memory_run(docket, user_id, name, _retry_key(user_id))
    for run in runs:
        await store.drop_parked_run(run.id)
    return runs


async def queue_memory_run(store: MemoryStore, settings: Settings, user_id: str, *, docket_url: str | None = None) -> None:
    """Queue a run for `user_id` now on the deployment's queue, from a process without a scheduler
    (`memlane mcp`'s remember_now): an app or `memlane worker` on the same Redis runs it. An
    empty buffer makes a run that stops at once."""
    name, url = _shared_queue(store, settings, docket_url)
    async with Docket(name=name, url=url) as docket:
        await _queue_memory_run(docket, user_id, name, f"memlane-run:{user_id}:asked-{uuid.uuid4().hex}")


def _shared_queue(store: MemoryStore, settings: Settings, docket_url: str | None, hint: str = "") -> tuple[str, str]:
    """The deployment's queue (name, URL) for a process without a scheduler; one in this
    process's memory is refused, as no worker could see what is put on it."""
    name = scheduler_name(settings)
    url = docket_url or default_docket_url(store, settings, name)
    if url.startswith("memory://"):
        raise RuntimeError(
            "runs queue in this process's memory (memory://), where no worker can see them; "
            f"{hint}unset MEMLANE_MEMORY_DOCKET_URL to queue in the store's Redis"
        )
    return name, url


def redelivery_timeout(settings: Settings) -> timedelta:
    """How long a run taken by a worker that died waits before another worker gets it.

    pydocket's default is 5 minutes. A live worker renews the lease of the runs it holds
    every quarter of this, so a run longer than it is not taken away while its worker lives.
    """
    return timedelta(seconds=settings.memory_run_expected_seconds)
