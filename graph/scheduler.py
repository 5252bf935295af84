"""Background memory-graph runs: the scheduler applies the run policy and keeps the run state.

Three pieces, one reason to change each: `graph/queue.py` (`RunQueue`, the only code that knows
pydocket: its tasks, worker and the keys kept beside them), `graph/executor.py` (`RunExecutor`:
one run with its retries and parking, session summaries) and this module (`MemoryScheduler`:
when a run is due, which runs are under way, and follow-ups).

`MemoryScheduler` applies the policy on `notify` and queues a run when one is due. Runs carry
only the user id; the worker finds this scheduler by its name (the queue's handlers), so a
`memlane worker` in another process registers its own under the same name. Task keys carry the
last buffered seq, so notifying twice about the same buffer queues one run.

Idle flush: each notify about a new message (re)schedules one delayed task per user (replaced
by the next message) that flushes the buffer after `memory_idle_flush_seconds` without
messages, so a user who says one fact and leaves is still processed.

Reindex sweep: a worker that starts schedules one task per queue, which indexes every user's
stored messages still waiting for their search entry and schedules the next one
`memory_reindex_sweep_seconds` later, so a message stored while indexing could not be done
(Redis or the embedder away past the save's retries, an entry a crash lost) becomes searchable
even when its user never comes back. The retention sweep is scheduled the same way, every
`retention_gc_sweep_seconds` (`memlane gc`: what Redis expiry cannot remove).

Run state lives in Redis, beside the queue, the same for every process on it (apps,
`memlane serve` instances, `memlane worker`s): each run's key is noted in the user's set of
runs before it is queued, and a run counts as under way while the queue says it is scheduled,
queued or running (a run waiting for its retry is scheduled). A key whose run ended, or that
has no record a minute after it was noted (the add failed, its process died), is dropped when
read. `user_busy` reads that, so a run queued by one process and finished by another leaves no
process thinking the user busy. A notify that comes while the user's run is under way is noted
in Redis too, and whichever process ends the run takes it and queues the follow-up run.

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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memlane.graph.executor import ResultCallback, RunExecutor, describe_error
from memlane.graph.policy import RunDecision, decide_run
from memlane.graph.queue import MemoryRunFailed, RetryLater, RunQueue, RunState, register_handlers, unregister_handlers
from memlane.graph.run import StepCallback
from memlane.graph.tasks import default_docket_url, parked_to_retry, redelivery_timeout, retry_key, scheduler_name
from memlane.masking import register_model_secrets
from memlane.nodes.context import MemoryContext
from memlane.nodes.persist import MemoryRunResult
from memlane.store.records import ParkedRun
from memlane.store.schema import QueueKeys

logger = logging.getLogger(__name__)

QueuedCallback = Callable[[str], Awaitable[None]]

# a run key is noted before it is queued: this long without the queue's record, the add never happened
_NOTED_GRACE_SECONDS = 60.0


@dataclass
class _FollowUp:
    session_ended: bool = False
    flush: bool = False
    through_seq: int | None = None  # the furthest bound asked for, unless `unbounded`
    unbounded: bool = False  # a notify without a bound asked too: the follow-up takes the whole buffer

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> _FollowUp:
        """The follow-up noted in the user's hash: a field per flag, and `through:<seq>` per bound asked for."""
        bounds = [int(name[8:]) for name in fields if name.startswith("through:")]
        return cls(
            session_ended="session_ended" in fields,
            flush="flush" in fields,
            through_seq=max(bounds) if bounds else None,
            unbounded="unbounded" in fields,
        )

    def fields(self) -> dict[str, str]:
        fields = {"asked": "1"}
        if self.session_ended:
            fields["session_ended"] = "1"
        if self.flush:
            fields["flush"] = "1"
        fields["unbounded" if self.unbounded else f"through:{self.through_seq}"] = "1"
        return fields


class MemoryScheduler:
    """Queues memory-graph runs by policy and runs them in an in-process worker."""

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
        self.context = context
        register_model_secrets(context.llm)  # its key is masked in what a failed run leaves, whatever its shape
        # one name per deployment, so `memlane worker` processes on the same Redis share the queue
        self.name = name or scheduler_name(store=context.store_part)
        self.docket_url = docket_url or default_docket_url(
            context.store, self.name, store=context.store_part, scheduler=context.scheduler
        )
        self.on_queued = on_queued
        self.run_worker = run_worker
        self.queue = RunQueue(self.name, self.docket_url)
        self.executor = RunExecutor(context, on_result=on_result, on_step=on_step)
        self._decisions: dict[str, RunDecision] = {}
        self._pending_runs: dict[str, str] = {}  # task key → user: runs queued here, not seen to end
        self._noted_at: dict[str, float] = {}  # task key → when it was noted (time.time())
        self._pending_summaries: set[str] = set()  # task keys of session summaries queued here
        self._idle = asyncio.Event()
        self._idle.set()

    async def __aenter__(self) -> MemoryScheduler:
        register_handlers(self.name, self)
        try:
            await self.queue.__aenter__()
            if self.run_worker:
                await self.queue.start_worker(
                    concurrency=self.context.scheduler.worker_concurrency,
                    redelivery_timeout=redelivery_timeout(scheduler=self.context.scheduler),
                )
                await self._schedule_reindex_sweep()
                await self._schedule_gc_sweep()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.queue.__aexit__(None, None, None)
        finally:
            unregister_handlers(self.name)

    def _require_started(self) -> RunQueue:
        if not self.queue.started:
            raise RuntimeError("MemoryScheduler is not started; use `async with MemoryScheduler(...)`")
        return self.queue

    # -- queueing ---------------------------------------------------------------------
    async def notify(
        self, user_id: str, *, session_ended: bool = False, flush: bool = False, through_seq: int | None = None
    ) -> bool:
        """Apply the policy to the user's buffer; queue a run when due. True when a run is
        queued, or will follow the user's run in progress.

        through_seq: judge and run only the buffer up to this message seq; the messages
        after it stay for the next run (the app's topic check closes the earlier turns).
        """
        self._require_started()
        messages = await self.context.store.unprocessed_messages(user_id)
        if through_seq is not None:
            messages = [message for message in messages if (message.seq or 0) <= through_seq]
        graph = self.context.graph
        first_run = not await self.context.store.get_cursor(user_id)  # nothing of the user remembered yet
        decision = decide_run(
            messages,
            threshold_tokens=min(graph.first_run_tokens, graph.buffer_tokens) if first_run else graph.buffer_tokens,
            session_ended=session_ended,
            flush=flush,
            encoding=self.context.store_part.token_encoding,
        )
        self._decisions[user_id] = decision
        if messages and not flush:  # a new message: the idle clock starts again
            await self._schedule_idle_flush(user_id)
        if not decision.due:
            return False
        if await self.user_busy(user_id):
            # the run in progress may consume this buffer; whoever ends it looks again
            asked = _FollowUp(
                session_ended=session_ended, flush=flush, through_seq=through_seq, unbounded=through_seq is None
            )
            await self.queue.note_follow_up(user_id, asked.fields())
            if await self.user_busy(user_id):
                await self._schedule_follow_up_check(user_id)
                return True
            # it ended while the note was written: take the note back and go on now
            follow_up = await self._take_follow_up(user_id)
            if follow_up is not None:  # (None: the process that ended it took the note and queues)
                return await self._notify_follow_up(user_id, follow_up)
            return True
        last_seq = max((message.seq or 0) for message in messages)
        key = QueueKeys.run_task(user_id, str(last_seq))
        if self.executor.was_parked(user_id, key):
            # this buffer's run was parked: a new run, not the spent one (its end may not be recorded yet)
            key = f"{key}:{uuid.uuid4().hex}"
        queued = await self._queue_run(user_id, key=key, through_seq=through_seq)
        if queued:
            logger.debug("queued memory run for %s (%s, %d tokens)", user_id, decision.reason, decision.buffer_tokens)
        return queued

    async def _notify_follow_up(self, user_id: str, follow_up: _FollowUp) -> bool:
        return await self.notify(
            user_id,
            session_ended=follow_up.session_ended,
            flush=follow_up.flush,
            through_seq=None if follow_up.unbounded else follow_up.through_seq,
        )

    async def enqueue(self, user_id: str) -> bool:
        """Queue a run now, whatever the policy says (an admin's "process now")."""
        return await self._queue_run(user_id, key=QueueKeys.run_task(user_id, uuid.uuid4().hex))

    async def retry_parked(self, run_ids: Sequence[str] | None = None) -> list[ParkedRun]:
        """Queue a fresh run for the users of these parked runs (all when None) and drop them
        from the list; returns the runs retried. A run that fails again is parked again."""
        self._require_started()
        runs = await parked_to_retry(self.context.store, run_ids)
        for user_id in dict.fromkeys(run.user_id for run in runs):
            await self._queue_run(user_id, key=retry_key(user_id))
        for run in runs:
            await self.context.store.drop_parked_run(run.id)
        return runs

    async def _schedule_idle_flush(self, user_id: str) -> None:
        seconds = self.context.scheduler.idle_flush_seconds
        if seconds <= 0:
            return
        # one pending flush per user: the newest message's replaces the one before
        await self.queue.replace_idle_flush(user_id, datetime.now(UTC) + timedelta(seconds=seconds))

    async def _schedule_reindex_sweep(self) -> None:
        seconds = self.context.scheduler.reindex_sweep_seconds
        if seconds > 0:  # one sweep per queue, whichever worker takes it; the next one schedules the one after
            await self.queue.replace_reindex_sweep(datetime.now(UTC) + timedelta(seconds=seconds))

    async def _schedule_gc_sweep(self) -> None:
        seconds = self.context.retention.gc_sweep_seconds
        if seconds > 0:  # one sweep per queue, whichever worker takes it; the next one schedules the one after
            await self.queue.replace_gc_sweep(datetime.now(UTC) + timedelta(seconds=seconds))

    async def _schedule_follow_up_check(self, user_id: str) -> None:
        """Look at the user's noted follow-up again once the runs now counted as under way would
        be dropped as never added (`_NOTED_GRACE_SECONDS` after they were noted): a run whose
        queue record was lost (Redis killed between the note and the add) ends nowhere, and no
        process would take the follow-up it held back (issue 34, item 13). One check per user."""
        noted = await self.queue.noted_runs(user_id)
        newest = max((noted_at for _, noted_at in noted), default=time.time())
        when = datetime.fromtimestamp(max(newest + _NOTED_GRACE_SECONDS + 1.0, time.time() + 1.0), UTC)
        await self.queue.replace_follow_up_check(user_id, when)

    async def _queue_run(self, user_id: str, *, key: str, through_seq: int | None = None) -> bool:
        queue = self._require_started()
        # noted before the add: a worker (here or elsewhere) may start the task before add returns
        self._pending_runs[key] = user_id
        self._noted_at[key] = time.time()
        self._idle.clear()
        scheduled = False
        try:
            await queue.note_run(user_id, key, self._noted_at[key])
            scheduled = await queue.add_run(user_id, key, through_seq)
        finally:
            if not scheduled:  # the add failed or queued nothing: no task of ours will end this entry
                self._forget_local(key)
                with contextlib.suppress(Exception):  # (Redis away: the entry is dropped when read, later)
                    if (await queue.states([key]))[0] is not RunState.UNDER_WAY:  # not another's run of that key
                        await queue.drop_runs(user_id, key)
        if scheduled and self.on_queued is not None:
            try:
                await self.on_queued(user_id)
            except Exception:
                logger.exception("on_queued callback failed for %s", user_id)
        return scheduled

    async def update_session_summary(self, user_id: str, session_id: str) -> bool:
        """Queue folding the session's new messages into its rolling summary."""
        queue = self._require_started()
        key = QueueKeys.summary_task(user_id, session_id, uuid.uuid4().hex)
        self._pending_summaries.add(key)
        self._idle.clear()
        scheduled = False
        try:
            scheduled = await queue.add_session_summary(user_id, session_id, key)
        finally:
            if not scheduled:
                self._pending_summaries.discard(key)
                self._settle()
        return scheduled

    # -- run state in Redis ------------------------------------------------------------
    def _forget_local(self, key: str) -> None:
        self._pending_runs.pop(key, None)
        self._noted_at.pop(key, None)
        self._settle()

    @staticmethod
    def _has_ended(state: RunState | None, noted_at: float, now: float) -> bool:
        return state is RunState.ENDED or (state is None and now - noted_at > _NOTED_GRACE_SECONDS)

    async def user_busy(self, user_id: str) -> bool:
        """True while a run for the user, queued by any process on this queue, has not ended
        (read from Redis: the same answer in every process). Drops the keys of runs that ended."""
        queue = self._require_started()
        noted = await queue.noted_runs(user_id)
        if not noted:
            self._forget_ended_locally(user_id, set())
            return False
        keys = [key for key, _ in noted]
        states = await queue.states(keys)
        now = time.time()
        ended = [key for (key, noted_at), state in zip(noted, states) if self._has_ended(state, noted_at, now)]
        await queue.drop_runs(user_id, *ended)
        under_way = set(keys) - set(ended)
        self._forget_ended_locally(user_id, under_way)
        return bool(under_way)

    def _forget_ended_locally(self, user_id: str, under_way: set[str]) -> None:
        """Drop this process's entries of the user's runs that Redis no longer counts (ended elsewhere)."""
        now = time.time()
        for key, owner in list(self._pending_runs.items()):
            if owner == user_id and key not in under_way and now - self._noted_at.get(key, now) > 1.0:
                self._forget_local(key)

    async def _take_follow_up(self, user_id: str) -> _FollowUp | None:
        """The user's noted follow-up, removed (atomically: one process takes it), or None."""
        fields = await self.queue.take_follow_up(user_id)
        return _FollowUp.from_fields(fields) if fields else None

    async def _prune_ended(self) -> None:
        """Drop the entries of runs queued here that the queue says ended (in another process)."""
        keys = list(self._pending_runs)
        states = await self.queue.states(keys)
        now = time.time()
        for key, state in zip(keys, states):
            if self._has_ended(state, self._noted_at.get(key, now), now):
                self._forget_local(key)

    # -- observing --------------------------------------------------------------------
    def last_result(self, user_id: str) -> MemoryRunResult | BaseException | None:
        """The user's last run result, or the error it failed with; None before any run."""
        return self.executor.results.get(user_id)

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

    def _settle(self) -> None:
        """Wake `wait_idle` once nothing queued here is left."""
        if not self._pending_runs and not self._pending_summaries:
            self._idle.set()

    # -- what the queue's tasks call here (graph/queue.py `RunHandlers`) ------------------
    async def take_run(self, user_id: str, key: str, attempt: int, through_seq: int | None) -> None:
        """Run the user's memory graph (the executor retries or parks it), then end the run here
        and in Redis, and queue the follow-up noted meanwhile."""
        outcome: MemoryRunResult | BaseException | None = None
        retrying = False
        try:
            outcome = await self.executor.run(user_id, key, attempt, through_seq)
            if isinstance(outcome, BaseException):
                # recorded by the queue as failed (masked); parked, it is not retried by it
                raise MemoryRunFailed(describe_error(outcome, self.context.secret_parts))
        except RetryLater:
            retrying = True  # a run waiting for its retry has not ended
            raise
        finally:
            if not retrying:
                await self._end_run(user_id, key, outcome)

    async def idle_flush(self, user_id: str) -> None:
        """The user sent nothing for `memory_idle_flush_seconds`: process their buffer."""
        if await self.notify(user_id, flush=True):
            logger.info(
                "idle flush: %s sent nothing for %gs; their buffered messages are processed",
                user_id,
                self.context.scheduler.idle_flush_seconds,
            )

    async def summarize_session(self, user_id: str, session_id: str, key: str) -> None:
        try:
            await self.executor.summarize_session(user_id, session_id)
        finally:
            self._pending_summaries.discard(key)
            self._settle()

    async def sweep_unindexed(self) -> None:
        """Every `memory_reindex_sweep_seconds`: index the stored messages of every user that are
        still waiting for their search entry (a save whose indexing gave up, an entry a Redis
        crash lost), so that what is stored always becomes searchable."""
        try:
            await self.executor.reindex_unindexed()
        finally:
            await self._schedule_reindex_sweep()

    async def sweep_garbage(self) -> None:
        """Every `retention_gc_sweep_seconds`: remove what expiry cannot (`memlane gc`) for every user."""
        try:
            await self.executor.collect_garbage()
        finally:
            await self._schedule_gc_sweep()

    async def check_follow_up(self, user_id: str) -> None:
        """The follow-up check (`_schedule_follow_up_check`): when no run of the user is under way
        any more and a follow-up is still noted, take it and apply the policy; while one is, look
        again later (its end takes the note itself, unless it too was lost)."""
        if await self.user_busy(user_id):
            if await self.queue.follow_up_noted(user_id):
                await self._schedule_follow_up_check(user_id)
            return
        follow_up = await self._take_follow_up(user_id)
        if follow_up is not None:
            logger.info("a follow-up of %s's lost run is taken up", user_id)
            await self._notify_follow_up(user_id, follow_up)

    async def _end_run(self, user_id: str, key: str, outcome: MemoryRunResult | BaseException | None) -> None:
        # however the run ended (cancelled too), its entries go, here and in Redis (whoever queued it);
        # the queue records the end only after this returns, so the key must leave the set here
        self._pending_runs.pop(key, None)
        self._noted_at.pop(key, None)
        follow_up = None
        try:
            await self.queue.drop_runs(user_id, key)
            if not await self.user_busy(user_id):  # another run of the user takes the follow-up when it ends
                follow_up = await self._take_follow_up(user_id)
        except Exception:
            logger.exception("ending the run %s of %s in Redis failed; it is dropped when read", key, user_id)
        try:
            # a parked run is not followed up at once: the buffer waits for the next message
            if follow_up is not None and isinstance(outcome, MemoryRunResult):
                await self._notify_follow_up(user_id, follow_up)
        finally:
            self._settle()
