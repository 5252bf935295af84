"""Background memory-graph runs with pydocket.

`MemoryScheduler` applies the policy on `notify` and queues a run when one is due. Runs
carry only the user id; the worker finds the `MemoryContext` by the scheduler's name, so
a `memlane worker` in another process registers its own context under the same name.
`ConcurrencyLimit("user_id", max_concurrent=1)` serializes one user's runs while
different users run in parallel. Task keys carry the last buffered seq, so notifying
twice about the same buffer queues one run.

Bookkeeping (`is_busy`, `wait_idle`, follow-ups) counts the task keys this scheduler
queued and has not seen finish: a key is noted before `docket.add` and dropped when the
call fails or queues nothing, and when its task ends however it ends. A task this
scheduler did not queue (another process's, or a second delivery of one that finished)
leaves the bookkeeping alone.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Awaitable, Callable

from docket import ConcurrencyLimit, Disposition, Docket, TaskKey, Worker

from memlane.config import Settings
from memlane.graph.policy import RunDecision, decide_run
from memlane.graph.run import run_memory_graph
from memlane.nodes.context import MemoryContext
from memlane.nodes.llm import ModelCaller
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.session_summary import update_session_summary as fold_session_summary

logger = logging.getLogger(__name__)

ResultCallback = Callable[[str, "MemoryRunResult | BaseException"], Awaitable[None]]

_SCHEDULERS: dict[str, "MemoryScheduler"] = {}
_POLL_INTERVAL = timedelta(milliseconds=20)


def _scheduler(name: str) -> "MemoryScheduler":
    try:
        return _SCHEDULERS[name]
    except KeyError:
        raise RuntimeError(
            f"no MemoryScheduler named {name!r} runs in this process; start one with "
            f"`async with MemoryScheduler(context, name={name!r})` before its worker takes tasks"
        ) from None


async def memory_run_task(
    user_id: str,
    scheduler_name: str,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    key: str = TaskKey(),
) -> None:
    """One memory-graph run for `user_id` (a pydocket task)."""
    await _scheduler(scheduler_name)._run(user_id, key)


async def session_summary_task(
    user_id: str,
    session_id: str,
    scheduler_name: str,
    concurrency: ConcurrencyLimit = ConcurrencyLimit("user_id", max_concurrent=1),
    key: str = TaskKey(),
) -> None:
    """Fold new messages of a session into its rolling summary (a pydocket task)."""
    await _scheduler(scheduler_name)._summarize_session(user_id, session_id, key)


def redelivery_timeout(settings: Settings) -> timedelta:
    """How long a run taken by a worker that died waits before another worker gets it.

    pydocket's default is 5 minutes. A live worker renews the lease of the runs it holds
    every quarter of this, so a run longer than it is not taken away while its worker lives.
    """
    return timedelta(seconds=settings.memory_run_expected_seconds)


@dataclass
class _FollowUp:
    session_ended: bool = False
    flush: bool = False


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
    ) -> None:
        settings = context.settings
        self.context = context
        # one name per deployment, so `memlane worker` processes on the same Redis share the queue
        self.name = name or f"{settings.key_prefix}-memory-graph"
        self.docket_url = (
            docket_url or settings.memory_docket_url or settings.redis_url or f"memory://{self.name}"
        )
        self.on_result = on_result
        self.run_worker = run_worker
        self._docket: Docket | None = None
        self._worker: Worker | None = None
        self._worker_task: asyncio.Task[None] | None = None
        self._results: dict[str, MemoryRunResult | BaseException] = {}
        self._decisions: dict[str, RunDecision] = {}
        self._pending_runs: dict[str, str] = {}  # task key → user: runs queued here, not finished
        self._pending_summaries: set[str] = set()  # task keys of session summaries queued here
        self._follow_ups: dict[str, _FollowUp] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    async def __aenter__(self) -> "MemoryScheduler":
        if self.name in _SCHEDULERS:
            raise RuntimeError(f"a MemoryScheduler named {self.name!r} already runs in this process")
        _SCHEDULERS[self.name] = self
        try:
            self._docket = await Docket(name=self.name, url=self.docket_url).__aenter__()
            self._docket.register(memory_run_task)
            self._docket.register(session_summary_task)
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
            _SCHEDULERS.pop(self.name, None)

    def _require_docket(self) -> Docket:
        if self._docket is None:
            raise RuntimeError("MemoryScheduler is not started; use `async with MemoryScheduler(...)`")
        return self._docket

    # -- queueing ---------------------------------------------------------------------
    async def notify(self, user_id: str, *, session_ended: bool = False, flush: bool = False) -> bool:
        """Apply the policy to the user's buffer; queue a run when due. True when a run is
        queued, or will follow the user's run in progress."""
        self._require_docket()
        messages = await self.context.store.unprocessed_messages(user_id)
        decision = decide_run(
            messages,
            threshold_tokens=self.context.settings.memory_buffer_tokens,
            session_ended=session_ended,
            flush=flush,
            encoding=self.context.settings.token_encoding,
        )
        self._decisions[user_id] = decision
        if not decision.due:
            return False
        if self.is_busy(user_id):
            # the run in progress may consume this buffer; look again when it ends
            follow_up = self._follow_ups.setdefault(user_id, _FollowUp())
            follow_up.session_ended |= session_ended
            follow_up.flush |= flush
            return True
        last_seq = max((message.seq or 0) for message in messages)
        queued = await self._queue_run(user_id, key=f"memlane-run:{user_id}:{last_seq}")
        if queued:
            logger.debug(
                "queued memory run for %s (%s, %d tokens)", user_id, decision.reason, decision.buffer_tokens
            )
        return queued

    async def enqueue(self, user_id: str) -> bool:
        """Queue a run now, whatever the policy says (an admin's "process now")."""
        return await self._queue_run(user_id, key=f"memlane-run:{user_id}:{uuid.uuid4().hex}")

    async def _queue_run(self, user_id: str, *, key: str) -> bool:
        docket = self._require_docket()
        # noted before the add: the in-process worker may start the task before add returns
        self._pending_runs[key] = user_id
        self._idle.clear()
        scheduled = False
        try:
            execution = await docket.add(memory_run_task, key=key)(user_id=user_id, scheduler_name=self.name)
            scheduled = execution.disposition == Disposition.SCHEDULED
        finally:
            if not scheduled:  # the add failed or queued nothing: no task will end this entry
                self._pending_runs.pop(key, None)
                self._settle()
        return scheduled

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
        """True while a run this scheduler queued for the user has not finished."""
        return user_id in self._pending_runs.values()

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Wait until every run queued here has finished. Raises TimeoutError after `timeout`."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    # -- the worker side --------------------------------------------------------------
    def _settle(self) -> None:
        """Wake `wait_idle` once nothing queued here is left."""
        if not self._pending_runs and not self._pending_summaries:
            self._idle.set()

    async def _run(self, user_id: str, key: str) -> None:
        outcome: MemoryRunResult | BaseException | None = None
        try:
            try:  # the worker's repair pass: turns stored while the embedder was down get indexed
                await self.context.store.reindex_pending(user_id)
            except Exception:
                logger.exception("indexing the pending messages of %s failed; the next save or run retries", user_id)
            try:
                outcome = await run_memory_graph(user_id, self.context)
            except Exception as error:  # reported to the caller through last_result / on_result
                logger.exception("memory run for %s failed; its buffer stays for the next run", user_id)
                outcome = error
            self._results[user_id] = outcome
            await self._report(user_id, outcome)
        finally:
            # however the run ended (cancelled too), its entry goes; a task queued elsewhere had none
            ours = self._pending_runs.pop(key, None) is not None
            follow_up = self._follow_ups.pop(user_id, None) if ours else None
            try:
                # a failed run is not retried at once: the buffer waits for the next notify
                if follow_up is not None and isinstance(outcome, MemoryRunResult):
                    await self.notify(user_id, session_ended=follow_up.session_ended, flush=follow_up.flush)
            finally:
                self._settle()

    async def _summarize_session(self, user_id: str, session_id: str, key: str) -> None:
        try:
            caller = ModelCaller(self.context.llm, self.context.settings, "session summary")
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
