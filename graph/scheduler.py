"""Background memory-graph runs with pydocket: the scheduler (its tasks and queue: graph/tasks.py).

`MemoryScheduler` applies the policy on `notify` and queues a run when one is due. Runs
carry only the user id; the worker finds the `MemoryContext` by the scheduler's name, so
a `memlane worker` in another process registers its own context under the same name.
`ConcurrencyLimit("user_id", max_concurrent=1)` serializes one user's runs while
different users run in parallel. Task keys carry the last buffered seq, so notifying
twice about the same buffer queues one run.

A failed run is retried by pydocket (`Retry`) under the same key, after
`memory_run_retry_delay_seconds`, doubling each time; after `memory_run_retries` retries it
is parked in the store's dead-letter list with its error (`memlane runs` lists, retries and
drops parked runs). The buffer is never lost: the cursor moves only when a run persists, so
a retry, the user's next run or an idle flush processes it. A run that succeeds drops the
user's parked runs: their messages are processed now.

Idle flush: each notify about a new message (re)schedules one delayed task per user (key
`memlane-idle:<user>`, replaced by the next message) that flushes the buffer after
`memory_idle_flush_seconds` without messages, so a user who says one fact and leaves is
still processed.

Run state lives in Redis, beside the queue, the same for every process on it (apps,
`memlane serve` instances, `memlane worker`s): each run's key is noted in the user's set of
runs (`<docket>:memlane-runs:<user>`) before `docket.add`, and a run counts as under way
while pydocket's own record of it (its runs hash) says scheduled, queued or running (a run
waiting for its retry is scheduled). A key whose record says it ended, or that has no record
a minute after it was noted (the add failed, its process died), is dropped when read.
`user_busy` reads that, so a run queued by one process and finished by another leaves no
process thinking the user busy. A notify that comes while the user's run is under way is
noted in Redis too (`<docket>:memlane-follow-up:<user>`), and whichever process ends the run
takes it and queues the follow-up run.

`is_busy` and `wait_idle` are this process's view: the runs it queued, each dropped when its
task ends here, or when Redis says it ended elsewhere (`wait_idle` and `user_busy` look).
Idle-flush tasks are not counted: `wait_idle` does not wait for a flush that is due in ten
minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Awaitable, Callable, Sequence

from docket import Disposition, Docket, Retry, Worker

from memlane.graph.policy import RunDecision, decide_run
from memlane.masking import register_model_secrets
from memlane.graph.run import StepCallback, run_memory_graph
from memlane.graph.tasks import (
    TASKS,
    MemoryRunFailed,
    _parked_to_retry,
    _queue_memory_run,
    _retry_key,
    default_docket_url,
    describe_error,
    follow_up_check_task,
    idle_flush_task,
    parked_run_id,
    redelivery_timeout,
    register_scheduler,
    retry_delay,
    scheduler_name,
    session_summary_task,
    unregister_scheduler,
)
from memlane.nodes.context import MemoryContext
from memlane.nodes.llm import ModelCaller
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.session_summary import update_session_summary as fold_session_summary
from memlane.store.base import ParkedRun

logger = logging.getLogger(__name__)

ResultCallback = Callable[[str, "MemoryRunResult | BaseException"], Awaitable[None]]
QueuedCallback = Callable[[str], Awaitable[None]]

_POLL_INTERVAL = timedelta(milliseconds=20)
# pydocket's states of a task that has not ended (its runs hash's "state")
_UNDER_WAY = frozenset({b"scheduled", b"queued", b"running"})
_ENDED = frozenset({b"completed", b"failed", b"cancelled"})
# a run key is noted before its `docket.add`: this long without pydocket's record, the add never happened
_NOTED_GRACE_SECONDS = 60.0


@dataclass
class _FollowUp:
    session_ended: bool = False
    flush: bool = False
    through_seq: int | None = None  # the furthest bound asked for, unless `unbounded`
    unbounded: bool = False  # a notify without a bound asked too: the follow-up takes the whole buffer

    @classmethod
    def from_redis(cls, fields: dict[bytes, bytes]) -> "_FollowUp":
        """The follow-up noted in the user's hash: a field per flag, and `through:<seq>` per bound asked for."""
        bounds = [int(name[8:]) for name in fields if name.startswith(b"through:")]
        return cls(
            session_ended=b"session_ended" in fields,
            flush=b"flush" in fields,
            through_seq=max(bounds) if bounds else None,
            unbounded=b"unbounded" in fields,
        )



class MemoryScheduler:
    """Queues memory-graph runs by policy and runs them in an in-process pydocket worker."""

    def __init__(
        self,
        context: MemoryContext,
        docket_url: str | None = None,
        *,
        name: str | None = None,
        on_result: ResultCallback | None = None,
        run_worker: bool = True,
        on_step: StepCallback | None = None,
        on_queued: QueuedCallback | None = None,
    ) -> None:
        """on_step: awaited as each step of a run this process works on starts and finishes.
        on_queued: awaited with the user id each time this scheduler puts a run on the queue."""
        settings = context.settings
        self.context = context
        register_model_secrets(context.llm)  # its key is masked in what a failed run leaves, whatever its shape
        # one name per deployment, so `memlane worker` processes on the same Redis share the queue
        self.name = name or scheduler_name(settings)
        self.docket_url = docket_url or default_docket_url(context.store, settings, self.name)
        self.on_result = on_result
        self.on_step = on_step
        self.on_queued = on_queued
        self.run_worker = run_worker
        self._docket: Docket | None = None
        self._worker: Worker | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self._results: dict[str, MemoryRunResult | BaseException] = {}
        self._decisions: dict[str, RunDecision] = {}
        self._pending_runs: dict[str, str] = {}  # task key → user: runs queued here, not seen to end
        self._noted_at: dict[str, float] = {}  # task key → when it was noted (time.time())
        self._pending_summaries: set[str] = set()  # task keys of session summaries queued here
        self._parked_keys: dict[str, set[str]] = {}  # user → keys of runs parked here since their last success
        self._idle = asyncio.Event()
        self._idle.set()

    async def __aenter__(self) -> "MemoryScheduler":
        register_scheduler(self)
        try:
            self._docket = await Docket(name=self.name, url=self.docket_url).__aenter__()
            for task in TASKS:
                self._docket.register(task)
            if self.run_worker:
                self._worker = await Worker(
                    self._docket,
                    concurrency=self.context.settings.memory_worker_concurrency,
                    redelivery_timeout=redelivery_timeout(self.context.settings),
                    minimum_check_interval=_POLL_INTERVAL,
                    scheduling_resolution=_POLL_INTERVAL,
                ).__aenter__()
                self._worker_task = asyncio.create_task(
                    self._worker.run_forever(), name=f"{self.name}-worker"
                )
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self._worker is not None:
                await self._worker.__aexit__(None, None, None)
                if self._worker_task is not None:
                    await self._worker_task
            if self._docket is not None:
                await self._docket.__aexit__(None, None, None)
        finally:
            self._worker = self._worker_task = self._docket = None
            unregister_scheduler(self.name)

    def _require_docket(self) -> Docket:
        if self._docket is None:
            raise RuntimeError("MemoryScheduler is not started; use `async with MemoryScheduler(...)`")
        return self._docket

    # -- queueing ---------------------------------------------------------------------
    async def notify(
        self, user_id: str, *, session_ended: bool = False, flush: bool = False, through_seq: int | None = None
    ) -> bool:
        """Apply the policy to the user's buffer; queue a run when due. True when a run is
        queued, or will follow the user's run in progress.

        through_seq: judge and run only the buffer up to this message seq; the messages
        after it stay for the next run (the app's topic check closes the earlier turns).
        """
        self._require_docket()
        messages = await self.context.store.unprocessed_messages(user_id)
        if through_seq is not None:
            messages = [message for message in messages if (message.seq or 0) <= through_seq]
        settings = self.context.settings
        first_run = not await self.context.store.get_cursor(user_id)  # nothing of the user remembered yet
        decision = decide_run(
            messages,
            threshold_tokens=min(settings.memory_first_run_tokens, settings.memory_buffer_tokens)
            if first_run
            else settings.memory_buffer_tokens,
            session_ended=session_ended,
            flush=flush,
            encoding=self.context.settings.token_encoding,
        )
        self._decisions[user_id] = decision
        if messages and not flush:  # a new message: the idle clock starts again
            await self._schedule_idle_flush(user_id)
        if not decision.due:
            return False
        if await self.user_busy(user_id):
            # the run in progress may consume this buffer; whoever ends it looks again
            await self._note_follow_up(user_id, session_ended=session_ended, flush=flush, through_seq=through_seq)
            if await self.user_busy(user_id):
                await self._schedule_follow_up_check(user_id)
                return True
            # it ended while the note was written: take the note back and go on now
            follow_up = await self._take_follow_up(user_id)
            if follow_up is not None:  # (None: the process that ended it took the note and queues)
                return await self.notify(
                    user_id,
                    session_ended=follow_up.session_ended,
                    flush=follow_up.flush,
                    through_seq=None if follow_up.unbounded else follow_up.through_seq,
                )
            return True
        last_seq = max((message.seq or 0) for message in messages)
        key = f"memlane-run:{user_id}:{last_seq}"
        if key in self._parked_keys.get(user_id, ()):
            # this buffer's run was parked: a new run, not the spent one (its end may not be recorded yet)
            key = f"{key}:{uuid.uuid4().hex}"
        queued = await self._queue_run(user_id, key=key, through_seq=through_seq)
        if queued:
            logger.debug(
                "queued memory run for %s (%s, %d tokens)", user_id, decision.reason, decision.buffer_tokens
            )
        return queued

    async def enqueue(self, user_id: str) -> bool:
        """Queue a run now, whatever the policy says (an admin's "process now")."""
        return await self._queue_run(user_id, key=f"memlane-run:{user_id}:{uuid.uuid4().hex}")

    async def retry_parked(self, run_ids: Sequence[str] | None = None) -> list[ParkedRun]:
        """Queue a fresh run for the users of these parked runs (all when None) and drop them
        from the list; returns the runs retried. A run that fails again is parked again."""
        self._require_docket()
        runs = await _parked_to_retry(self.context.store, run_ids)
        for user_id in dict.fromkeys(run.user_id for run in runs):
            await self._queue_run(user_id, key=_retry_key(user_id))
        for run in runs:
            await self.context.store.drop_parked_run(run.id)
        return runs

    async def _schedule_idle_flush(self, user_id: str) -> None:
        seconds = self.context.settings.memory_idle_flush_seconds
        if seconds <= 0:
            return
        when = datetime.now(timezone.utc) + timedelta(seconds=seconds)
        # one pending flush per user: the newest message's replaces the one before
        await self._require_docket().replace(idle_flush_task, when=when, key=f"memlane-idle:{user_id}")(
            user_id=user_id, scheduler_name=self.name
        )

    async def _schedule_follow_up_check(self, user_id: str) -> None:
        """Look at the user's noted follow-up again once the runs now counted as under way would
        be dropped as never added (`_NOTED_GRACE_SECONDS` after they were noted): a run whose
        queue record was lost (Redis killed between the note and the add) ends nowhere, and no
        process would take the follow-up it held back (issue 34, item 13). One check per user."""
        async with self._require_docket().redis() as redis:
            noted = await redis.zrange(self._runs_set(user_id), 0, -1, withscores=True)
        newest = max((noted_at for _, noted_at in noted), default=time.time())
        when = datetime.fromtimestamp(max(newest + _NOTED_GRACE_SECONDS + 1.0, time.time() + 1.0), timezone.utc)
        await self._require_docket().replace(follow_up_check_task, when=when, key=f"memlane-follow-up-check:{user_id}")(
            user_id=user_id, scheduler_name=self.name
        )

    async def _check_follow_up(self, user_id: str) -> None:
        """The follow-up check (`_schedule_follow_up_check`): when no run of the user is under way
        any more and a follow-up is still noted, take it and apply the policy; while one is, look
        again later (its end takes the note itself, unless it too was lost)."""
        if await self.user_busy(user_id):
            async with self._require_docket().redis() as redis:
                noted = await redis.exists(self._follow_up_hash(user_id))
            if noted:
                await self._schedule_follow_up_check(user_id)
            return
        follow_up = await self._take_follow_up(user_id)
        if follow_up is not None:
            logger.info("a follow-up of %s's lost run is taken up", user_id)
            await self.notify(
                user_id,
                session_ended=follow_up.session_ended,
                flush=follow_up.flush,
                through_seq=None if follow_up.unbounded else follow_up.through_seq,
            )

    async def _queue_run(self, user_id: str, *, key: str, through_seq: int | None = None) -> bool:
        docket = self._require_docket()
        # noted before the add: a worker (here or elsewhere) may start the task before add returns
        self._pending_runs[key] = user_id
        self._noted_at[key] = time.time()
        self._idle.clear()
        scheduled = False
        try:
            async with docket.redis() as redis:
                await redis.zadd(self._runs_set(user_id), {key: self._noted_at[key]})
            scheduled = await _queue_memory_run(docket, user_id, self.name, key, through_seq)
        finally:
            if not scheduled:  # the add failed or queued nothing: no task of ours will end this entry
                self._forget_local(key)
                with contextlib.suppress(Exception):  # (Redis away: the entry is dropped when read, later)
                    if (await self._run_states([key]))[0] not in _UNDER_WAY:  # not another's run of that key
                        async with docket.redis() as redis:
                            await redis.zrem(self._runs_set(user_id), key)
        if scheduled and self.on_queued is not None:
            try:
                await self.on_queued(user_id)
            except Exception:
                logger.exception("on_queued callback failed for %s", user_id)
        return scheduled

    # -- run state in Redis ------------------------------------------------------------
    def _runs_set(self, user_id: str) -> str:
        return self._require_docket().key(f"memlane-runs:{user_id}")

    def _follow_up_hash(self, user_id: str) -> str:
        return self._require_docket().key(f"memlane-follow-up:{user_id}")

    async def _run_states(self, keys: Sequence[str]) -> list[bytes | None]:
        """pydocket's state of each task key (None: no record of it)."""
        docket = self._require_docket()
        if not keys:
            return []
        async with docket.redis() as redis:
            async with redis.pipeline() as pipe:  # the in-memory docket's pipeline takes no arguments
                for key in keys:
                    pipe.hget(docket.runs_key(key), "state")
                return list(await pipe.execute())

    def _forget_local(self, key: str) -> None:
        self._pending_runs.pop(key, None)
        self._noted_at.pop(key, None)
        self._settle()

    async def user_busy(self, user_id: str) -> bool:
        """True while a run for the user, queued by any process on this queue, has not ended
        (read from Redis: the same answer in every process). Drops the keys of runs that ended."""
        docket = self._require_docket()
        runs_set = self._runs_set(user_id)
        async with docket.redis() as redis:
            noted = await redis.zrange(runs_set, 0, -1, withscores=True)
        if not noted:
            self._forget_ended_locally(user_id, set())
            return False
        keys = [member.decode() for member, _ in noted]
        states = await self._run_states(keys)
        now = time.time()
        ended = [
            key
            for key, (_, noted_at), state in zip(keys, noted, states)
            if state in _ENDED or (state not in _UNDER_WAY and now - noted_at > _NOTED_GRACE_SECONDS)
        ]
        if ended:
            async with docket.redis() as redis:
                await redis.zrem(runs_set, *ended)
        under_way = set(keys) - set(ended)
        self._forget_ended_locally(user_id, under_way)
        return bool(under_way)

    def _forget_ended_locally(self, user_id: str, under_way: set[str]) -> None:
        """Drop this process's entries of the user's runs that Redis no longer counts (ended elsewhere)."""
        now = time.time()
        for key, owner in list(self._pending_runs.items()):
            if owner == user_id and key not in under_way and now - self._noted_at.get(key, now) > 1.0:
                self._forget_local(key)

    async def _note_follow_up(
        self, user_id: str, *, session_ended: bool, flush: bool, through_seq: int | None
    ) -> None:
        fields = {"asked": "1"}
        if session_ended:
            fields["session_ended"] = "1"
        if flush:
            fields["flush"] = "1"
        fields["unbounded" if through_seq is None else f"through:{through_seq}"] = "1"
        async with self._require_docket().redis() as redis:
            await redis.hset(self._follow_up_hash(user_id), mapping=fields)

    async def _take_follow_up(self, user_id: str) -> _FollowUp | None:
        """The user's noted follow-up, removed (atomically: one process takes it), or None."""
        async with self._require_docket().redis() as redis:
            async with redis.pipeline() as pipe:
                pipe.hgetall(self._follow_up_hash(user_id))
                pipe.delete(self._follow_up_hash(user_id))
                fields, _ = await pipe.execute()
        return _FollowUp.from_redis(fields) if fields else None

    async def _prune_ended(self) -> None:
        """Drop the entries of runs queued here that pydocket says ended (in another process)."""
        keys = list(self._pending_runs)
        states = await self._run_states(keys)
        now = time.time()
        for key, state in zip(keys, states):
            noted_at = self._noted_at.get(key, now)
            if state in _ENDED or (state not in _UNDER_WAY and now - noted_at > _NOTED_GRACE_SECONDS):
                self._forget_local(key)

    async def update_session_summary(self, user_id: str, session_id: str) -> bool:
        """Queue folding the session's new messages into its rolling summary."""
        docket = self._require_docket()
        key = f"memlane-summary:{user_id}:{session_id}:{uuid.uuid4().hex}"
        self._pending_summaries.add(key)
        self._idle.clear()
        scheduled = False
        try:
            execution = await docket.add(session_summary_task, key=key)(
                user_id=user_id, session_id=session_id, scheduler_name=self.name
            )
            scheduled = execution.disposition == Disposition.SCHEDULED
        finally:
            if not scheduled:
                self._pending_summaries.discard(key)
                self._settle()
        return scheduled

    # -- observing --------------------------------------------------------------------
    def last_result(self, user_id: str) -> MemoryRunResult | BaseException | None:
        """The user's last run result, or the error it failed with; None before any run."""
        return self._results.get(user_id)

    def last_decision(self, user_id: str) -> RunDecision | None:
        """The policy's last verdict on the user's buffer (tokens buffered, why or why not)."""
        return self._decisions.get(user_id)

    def is_busy(self, user_id: str) -> bool:
        """True while a run this scheduler queued for the user has not been seen to finish (this
        process's view; `user_busy` asks Redis, for runs queued or finished anywhere)."""
        return user_id in self._pending_runs.values()

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Wait until every run queued here has finished, here or in another process. Raises
        TimeoutError after `timeout`."""

        async def settled() -> None:
            while not self._idle.is_set():
                await self._prune_ended()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), 0.2)

        await asyncio.wait_for(settled(), timeout)

    # -- the worker side --------------------------------------------------------------
    def _settle(self) -> None:
        """Wake `wait_idle` once nothing queued here is left."""
        if not self._pending_runs and not self._pending_summaries:
            self._idle.set()

    async def _run(self, user_id: str, key: str, retry: Retry, through_seq: int | None = None) -> None:
        settings = self.context.settings
        attempts = settings.memory_run_retries + 1
        outcome: MemoryRunResult | BaseException | None = None
        retrying = False
        try:
            try:  # the worker's repair pass: turns stored while the embedder was down get indexed
                await self.context.store.reindex_pending(user_id)
            except Exception:
                logger.exception("indexing the pending messages of %s failed; the next save or run retries", user_id)
            try:
                outcome = await run_memory_graph(user_id, self.context, through_seq=through_seq, on_step=self.on_step)
            except Exception as error:  # the buffer stays: the cursor moves only when a run persists
                outcome = error
                if retry.attempt < attempts:
                    delay = retry_delay(settings, retry.attempt, error)
                    logger.warning(
                        "memory run for %s failed (attempt %d of %d): %s; retrying in %.1fs",
                        user_id, retry.attempt, attempts, describe_error(error, settings), delay,
                    )
                    # pydocket reschedules this task under its key once it raises
                    retry.attempts, retry.delay = retry.attempt + 1, timedelta(seconds=delay)
                    retrying = True
                    raise MemoryRunFailed(describe_error(error, settings)) from None
                await self._park(user_id, key, error, retry.attempt)
            else:
                await self._drop_resolved(user_id)
            self._results[user_id] = outcome
            await self._report(user_id, outcome)
            if isinstance(outcome, BaseException):
                # recorded by the queue as failed (masked: MemoryRunFailed); parked, it is not retried by it
                raise MemoryRunFailed(describe_error(outcome, settings))
        finally:
            if not retrying:  # a run waiting for its retry has not ended
                await self._end_run(user_id, key, outcome)

    async def _end_run(self, user_id: str, key: str, outcome: MemoryRunResult | BaseException | None) -> None:
        # however the run ended (cancelled too), its entries go, here and in Redis (whoever queued it);
        # pydocket records the end only after this returns, so the key must leave the set here
        self._pending_runs.pop(key, None)
        self._noted_at.pop(key, None)
        follow_up = None
        try:
            async with self._require_docket().redis() as redis:
                await redis.zrem(self._runs_set(user_id), key)
            if not await self.user_busy(user_id):  # another run of the user takes the follow-up when it ends
                follow_up = await self._take_follow_up(user_id)
        except Exception:
            logger.exception("ending the run %s of %s in Redis failed; it is dropped when read", key, user_id)
        try:
            # a parked run is not followed up at once: the buffer waits for the next message
            if follow_up is not None and isinstance(outcome, MemoryRunResult):
                await self.notify(
                    user_id,
                    session_ended=follow_up.session_ended,
                    flush=follow_up.flush,
                    through_seq=None if follow_up.unbounded else follow_up.through_seq,
                )
        finally:
            self._settle()

    async def _park(self, user_id: str, key: str, error: BaseException, attempts: int) -> None:
        settings = self.context.settings
        self._parked_keys.setdefault(user_id, set()).add(key)
        try:
            cursor = await self.context.store.get_cursor(user_id)
            run = ParkedRun(
                id=parked_run_id(user_id, cursor), user_id=user_id, error=describe_error(error, settings), attempts=attempts
            )
            run = await self.context.store.park_run(run)
        except Exception:  # the buffer is still there for the next run; only the list missed it
            logger.exception("memory run for %s failed and could not be parked", user_id)
            return
        logger.error(
            "memory run for %s failed %d times; parked as %s (`memlane runs retry %s`): %s",
            user_id, attempts, run.id, run.id, run.error,
        )

    async def _drop_resolved(self, user_id: str) -> None:
        """A run that succeeded has processed what the user's parked runs could not."""
        self._parked_keys.pop(user_id, None)
        try:
            for run in await self.context.store.parked_runs(user_id):
                if await self.context.store.drop_parked_run(run.id) is not None:
                    logger.info("parked run %s of %s is resolved by a run that succeeded", run.id, user_id)
        except Exception:
            logger.exception("dropping the resolved parked runs of %s failed; `memlane runs drop` removes them", user_id)

    async def _idle_flush(self, user_id: str) -> None:
        if await self.notify(user_id, flush=True):
            logger.info(
                "idle flush: %s sent nothing for %gs; their buffered messages are processed",
                user_id, self.context.settings.memory_idle_flush_seconds,
            )

    async def _summarize_session(self, user_id: str, session_id: str, key: str) -> None:
        try:
            caller = ModelCaller(
                self.context.llm, self.context.settings, "session summary", breaker=self.context.model_breaker
            )
            await fold_session_summary(self.context.store, caller, user_id, session_id)
        except Exception:
            logger.exception("session summary of %s/%s failed; the next update retries", user_id, session_id)
        finally:
            self._pending_summaries.discard(key)
            self._settle()

    async def _report(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        if self.on_result is None:
            return
        try:
            await self.on_result(user_id, outcome)
        except Exception:  # a broken callback must not fail the run that already persisted
            logger.exception("on_result callback failed for %s", user_id)
