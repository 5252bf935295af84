"""The run queue: the only code that knows pydocket.

Memory-graph runs, idle flushes, follow-up checks, session summaries, the sweep of unindexed
messages and the retention sweep are pydocket tasks
that carry only ids and the queue's name; the process that takes one hands it to the
`RunHandlers` registered under that name (a `MemoryScheduler`, whose `RunExecutor` runs it),
so a `memlane worker` in another process registers its own under the same name.
`ConcurrencyLimit("user_id", max_concurrent=1)` serializes one user's runs while different
users run in parallel. A handler asks for its run to be tried again by raising `RetryLater`
from `take_run`; the queue turns that into pydocket's `Retry` under the same task key.

Beside pydocket's own keys, the queue keeps the runs noted per user and the follow-ups noted
per user (`store.schema.QueueKeys`), and reads each task's state through pydocket's public
`get_execution`. Processes without a scheduler (`memlane runs retry`, `memlane mcp`) open a
`RunQueue` without a worker to put runs on it.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from docket import ConcurrencyLimit, Disposition, Docket, Retry, TaskKey, Worker
from docket.execution import ExecutionState

from memlane.store.schema import QueueKeys

logger = logging.getLogger(__name__)

_POLL_INTERVAL = timedelta(milliseconds=20)


class RunState(enum.Enum):
    """Where a task stands in the queue: not ended yet (scheduled, queued, running, or waiting
    for its retry), or ended (completed, failed, cancelled)."""

    UNDER_WAY = "under way"
    ENDED = "ended"


_STATES = {
    ExecutionState.SCHEDULED: RunState.UNDER_WAY,
    ExecutionState.QUEUED: RunState.UNDER_WAY,
    ExecutionState.RUNNING: RunState.UNDER_WAY,
    ExecutionState.COMPLETED: RunState.ENDED,
    ExecutionState.FAILED: RunState.ENDED,
    ExecutionState.CANCELLED: RunState.ENDED,
}


class RetryLater(Exception):
    """Raised by a handler's `run` to have the queue try the run again after `delay_seconds`, under
    the same key. `message` is what the queue records of the failure (secrets masked by the caller)."""

    def __init__(self, delay_seconds: float, message: str) -> None:
        super().__init__(message)
        self.delay_seconds = delay_seconds


class MemoryRunFailed(RuntimeError):
    """What a failed memory run hands the queue, instead of its own error: pydocket keeps what a
    task raised for its execution TTL, as text in the run's record ("error") and pickled in its
    result store, so the raw error (a model's, echoing its API key) would sit in Redis. This one
    holds only the masked description of the error, and no cause."""


class RunHandlers(Protocol):
    """What the queue's tasks call, in the process that takes them (`graph/executor.py`)."""

    async def take_run(self, user_id: str, key: str, attempt: int, through_seq: int | None) -> None:
        """One memory-graph run (attempt 1 first); raise `RetryLater` to be tried again."""

    async def idle_flush(self, user_id: str) -> None:
        """The user sent nothing for the idle time: flush their buffer."""

    async def summarize_session(self, user_id: str, session_id: str, key: str) -> None:
        """Fold the session's new messages into its rolling summary."""

    async def check_follow_up(self, user_id: str) -> None:
        """Take up a follow-up that a lost run held back."""

    async def sweep_unindexed(self) -> None:
        """Index every user's stored messages still waiting for their search entry."""

    async def sweep_garbage(self) -> None:
        """Remove what expiry cannot, for every user (`memlane gc`)."""


_HANDLERS: dict[str, RunHandlers] = {}


def register_handlers(name: str, handlers: RunHandlers) -> None:
    """Make `handlers` the ones this process's worker hands the tasks of queue `name` to."""
    if name in _HANDLERS:
        raise RuntimeError(f"a MemoryScheduler named {name!r} already runs in this process")
    _HANDLERS[name] = handlers


def unregister_handlers(name: str) -> None:
    _HANDLERS.pop(name, None)


def _handlers(name: str) -> RunHandlers:
    try:
        return _HANDLERS[name]
    except KeyError:
        raise RuntimeError(
            f"no MemoryScheduler named {name!r} runs in this process; start one with "
            f"`async with MemoryScheduler(context, name={name!r})` before its worker takes tasks"
        ) from None


# the tasks (a worker runs only the tasks its docket registered) ------------------------------
async def memory_run_task(
    user_id: str,
    scheduler_name: str,
    through_seq: int | None = None,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    retry: Retry = Retry(),
    key: str = TaskKey(),
) -> None:
    """One memory-graph run for `user_id`; with `through_seq`, over the buffer up to that message
    only (a topic shift closes the turns before it).

    `Retry()` retries nothing by itself: the handler decides, from the settings of the process
    that runs it, whether a failure is retried (`RetryLater`, and after how long) or parked.
    """
    try:
        await _handlers(scheduler_name).take_run(user_id, key, retry.attempt, through_seq)
    except RetryLater as later:
        # pydocket reschedules this task under its key once it raises
        retry.attempts, retry.delay = retry.attempt + 1, timedelta(seconds=later.delay_seconds)
        raise MemoryRunFailed(str(later)) from None


async def idle_flush_task(user_id: str, scheduler_name: str) -> None:
    """Flush the user's buffer: no message came for `memory_idle_flush_seconds`."""
    await _handlers(scheduler_name).idle_flush(user_id)


async def session_summary_task(
    user_id: str,
    session_id: str,
    scheduler_name: str,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    key: str = TaskKey(),
) -> None:
    """Fold new messages of a session into its rolling summary."""
    await _handlers(scheduler_name).summarize_session(user_id, session_id, key)


async def follow_up_check_task(user_id: str, scheduler_name: str) -> None:
    """Take up a follow-up that a lost run held back (see `MemoryScheduler`)."""
    await _handlers(scheduler_name).check_follow_up(user_id)


async def reindex_sweep_task(scheduler_name: str) -> None:
    """Index the stored messages still waiting for their search entry, whoever's they are."""
    await _handlers(scheduler_name).sweep_unindexed()


async def gc_sweep_task(scheduler_name: str) -> None:
    """The retention sweep: what expiry cannot remove, whoever's it is (`memlane gc`)."""
    await _handlers(scheduler_name).sweep_garbage()


# the webhook senders of this process, by queue name (memlane/webhooks.py): (tenant, target, body) -> None
Deliver = Callable[[str, int, str], Awaitable[None]]
_DELIVERERS: dict[str, Deliver] = {}


def register_deliverer(name: str, deliver: Deliver) -> None:
    """Make `deliver` what this process's worker hands the webhook deliveries of queue `name` to."""
    _DELIVERERS[name] = deliver


def unregister_deliverer(name: str) -> None:
    _DELIVERERS.pop(name, None)


class WebhookFailed(RuntimeError):
    """What a failed delivery hands the queue: the target's answer, never the body or the secret."""


async def webhook_task(
    tenant: str,
    target: int,
    body: str,
    queue_name: str,
    attempts: int,
    backoff_seconds: float,
    retry: Retry = Retry(),
    key: str = TaskKey(),
) -> None:
    """Deliver one change event to one of the tenant's webhook targets; a failure is retried under
    the same key after `backoff_seconds`, doubled each time (at most an hour), `attempts` tries in
    all, then given up and logged. Delivered once: a success ends the task."""
    deliver = _DELIVERERS.get(queue_name)
    try:
        if deliver is None:
            raise RuntimeError(f"no webhook sender for {queue_name!r} in this process")
        await deliver(tenant, target, body)
    except Exception as error:
        reason = f"{type(error).__name__}: {error}"
        if retry.attempt >= attempts:
            logger.error("webhook %s of tenant %s given up after %d tries: %s", key, tenant, retry.attempt, reason)
            return
        delay = min(backoff_seconds * 2.0 ** (retry.attempt - 1), 3600.0)
        logger.warning(
            "webhook %s of tenant %s failed (%s); try %d in %.1fs", key, tenant, reason, retry.attempt + 1, delay
        )
        retry.attempts, retry.delay = retry.attempt + 1, timedelta(seconds=delay)
        raise WebhookFailed(reason) from None


TASKS = (
    memory_run_task,
    session_summary_task,
    idle_flush_task,
    follow_up_check_task,
    reindex_sweep_task,
    gc_sweep_task,
    webhook_task,
)


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
    return urlunsplit(
        parts._replace(
            scheme=parts.scheme + "+cluster",
            netloc=credentials + at + hosts.split(",")[0],
            path="",  # a cluster has one database
            query=urlencode([(name, value) for name, value in query if name.lower() != "cluster"]),
        )
    )


class RunQueue:
    """One deployment's queue of background runs (pydocket on Redis, or in this process's memory
    for a `memory://` URL), with the run state kept beside it. Use as `async with`."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self._docket: Docket | None = None
        self._worker: Worker | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self._worker_context = contextvars.Context()  # where the worker was entered (`start_worker`)
        self.keys: QueueKeys | None = None

    async def __aenter__(self) -> RunQueue:
        self._docket = await Docket(name=self.name, url=self.url).__aenter__()
        for task in TASKS:
            self._docket.register(task)
        self.keys = QueueKeys(self._docket.prefix)
        return self

    async def start_worker(self, *, concurrency: int, redelivery_timeout: timedelta) -> None:
        """Take tasks in this process too: a worker that hands them to the registered handlers.

        The worker is entered and left in a context of its own: pydocket's worker sets context
        variables on the way in and resets them on the way out, which fails (ValueError, and the
        docket was left open) unless both happen in one context, and a door may start the
        queue in one task (a request's, a UI handler's) and stop it in another."""
        docket = self._require_docket()
        self._worker_context = contextvars.copy_context()
        worker = Worker(
            docket,
            concurrency=concurrency,
            redelivery_timeout=redelivery_timeout,
            minimum_check_interval=_POLL_INTERVAL,
            scheduling_resolution=_POLL_INTERVAL,
        )
        self._worker = await asyncio.create_task(worker.__aenter__(), context=self._worker_context)
        self._worker_task = asyncio.create_task(
            self._worker.run_forever(), name=f"{self.name}-worker", context=self._worker_context.copy()
        )

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self._worker is not None:
                await asyncio.create_task(self._worker.__aexit__(None, None, None), context=self._worker_context)
                if self._worker_task is not None:
                    await self._worker_task
            if self._docket is not None:
                await self._docket.__aexit__(None, None, None)
        finally:
            self._worker = self._worker_task = self._docket = None

    @property
    def started(self) -> bool:
        return self._docket is not None

    def _require_docket(self) -> Docket:
        if self._docket is None:
            raise RuntimeError("MemoryScheduler is not started; use `async with MemoryScheduler(...)`")
        return self._docket

    def _keys(self) -> QueueKeys:
        self._require_docket()
        assert self.keys is not None
        return self.keys

    # putting tasks on the queue ---------------------------------------------------------------
    async def add_run(self, user_id: str, key: str, through_seq: int | None = None) -> bool:
        """Queue a memory run under `key`; False when a task of that key is already queued."""
        schedule = self._require_docket().add(memory_run_task, key=key)
        if through_seq is None:
            execution = await schedule(user_id=user_id, scheduler_name=self.name)
        else:
            execution = await schedule(user_id=user_id, scheduler_name=self.name, through_seq=through_seq)
        return execution.disposition == Disposition.SCHEDULED

    async def add_webhook(self, tenant: str, target: int, body: str, attempts: int, backoff_seconds: float) -> None:
        """Queue the delivery of `body` to the tenant's target at `target` (`webhook_task`)."""
        await self._require_docket().add(webhook_task, key=f"webhook-{uuid.uuid4().hex}")(
            tenant=tenant,
            target=target,
            body=body,
            queue_name=self.name,
            attempts=attempts,
            backoff_seconds=backoff_seconds,
        )

    async def add_session_summary(self, user_id: str, session_id: str, key: str) -> bool:
        execution = await self._require_docket().add(session_summary_task, key=key)(
            user_id=user_id, session_id=session_id, scheduler_name=self.name
        )
        return execution.disposition == Disposition.SCHEDULED

    async def replace_idle_flush(self, user_id: str, when: datetime) -> None:
        """One pending flush per user: this one replaces the one before."""
        await self._require_docket().replace(idle_flush_task, when=when, key=QueueKeys.idle_flush_task(user_id))(
            user_id=user_id, scheduler_name=self.name
        )

    async def replace_reindex_sweep(self, when: datetime) -> None:
        """One pending sweep per queue: this one replaces the one before."""
        await self._require_docket().replace(reindex_sweep_task, when=when, key=QueueKeys.reindex_sweep_task())(
            scheduler_name=self.name
        )

    async def replace_gc_sweep(self, when: datetime) -> None:
        """One pending retention sweep per queue: this one replaces the one before."""
        await self._require_docket().replace(gc_sweep_task, when=when, key=QueueKeys.gc_sweep_task())(
            scheduler_name=self.name
        )

    async def replace_follow_up_check(self, user_id: str, when: datetime) -> None:
        """One pending follow-up check per user: this one replaces the one before."""
        await self._require_docket().replace(
            follow_up_check_task, when=when, key=QueueKeys.follow_up_check_task(user_id)
        )(user_id=user_id, scheduler_name=self.name)

    async def states(self, task_keys: Sequence[str]) -> list[RunState | None]:
        """Each task's state as pydocket records it (None: no record of it)."""
        docket = self._require_docket()
        executions = [await docket.get_execution(key) for key in task_keys]
        return [None if execution is None else _STATES.get(execution.state) for execution in executions]

    # the runs noted per user ------------------------------------------------------------------
    async def note_run(self, user_id: str, task_key: str, at: float) -> None:
        async with self._require_docket().redis() as redis:
            await redis.zadd(self._keys().runs(user_id), {task_key: at})

    async def noted_runs(self, user_id: str) -> list[tuple[str, float]]:
        """The user's noted run keys, each with when it was noted (unix time), oldest first."""
        async with self._require_docket().redis() as redis:
            noted = await redis.zrange(self._keys().runs(user_id), 0, -1, withscores=True)
        return [(member.decode(), float(at)) for member, at in noted]

    async def drop_runs(self, user_id: str, *task_keys: str) -> None:
        if task_keys:
            async with self._require_docket().redis() as redis:
                await redis.zrem(self._keys().runs(user_id), *task_keys)

    # the follow-ups noted per user ------------------------------------------------------------
    async def note_follow_up(self, user_id: str, fields: dict[str, str]) -> None:
        async with self._require_docket().redis() as redis:
            # a dict built from the items: redis-py's mapping type has other keys than str (and is invariant in them)
            await redis.hset(self._keys().follow_up(user_id), mapping=dict(fields.items()))

    async def follow_up_noted(self, user_id: str) -> bool:
        async with self._require_docket().redis() as redis:
            return bool(await redis.exists(self._keys().follow_up(user_id)))

    async def take_follow_up(self, user_id: str) -> dict[str, str]:
        """The user's noted follow-up fields, removed (atomically: one process takes them); {} when none."""
        key = self._keys().follow_up(user_id)
        async with self._require_docket().redis() as redis:
            async with redis.pipeline() as pipe:  # the in-memory docket's pipeline takes no arguments
                pipe.hgetall(key)
                pipe.delete(key)
                fields, _ = await pipe.execute()
        return {name.decode(): value.decode() for name, value in fields.items()}
