"""The run executor: one memory-graph run as the queue hands it over, its retries and its parking,
and the session summaries.

A failed run is tried again (`RetryLater`, which the queue turns into pydocket's retry under the
same key) after `memory_run_retry_delay_seconds`, doubling each time; after `memory_run_retries`
retries it is parked in the store's dead-letter list with its error (`memlane runs` lists,
retries and drops parked runs). The buffer is never lost: the cursor moves only when a run
persists, so a retry, the user's next run or an idle flush processes it. A run that succeeds
drops the user's parked runs: their messages are processed now.

What a failed run waits before its retry (`retry_delay`) and what it shows once parked
(`describe_error`, `parked_run_id`) are functions of the settings' parts, so that every process on the
queue agrees on them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from memlane.config import Component, SchedulerSettings
from memlane.graph.queue import RetryLater
from memlane.graph.run import StepCallback, run_memory_graph
from memlane.masking import mask_secrets
from memlane.nodes.context import MemoryContext
from memlane.nodes.llm import ModelChainFailed, ModelPaused
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.session_summary import update_session_summary as fold_session_summary
from memlane.store.ids import stable_id
from memlane.store.models.background import in_background
from memlane.store.records import ParkedRun

logger = logging.getLogger(__name__)

ResultCallback = Callable[[str, "MemoryRunResult | BaseException"], Awaitable[None]]

_MAX_RETRY_DELAY_SECONDS = 600.0
_MAX_ERROR_CHARS = 2000


def retry_delay(attempt: int, error: BaseException, *, scheduler: SchedulerSettings) -> float:
    """Seconds before retrying a run whose attempt number `attempt` failed with `error`.

    `memory_run_retry_delay_seconds`, doubled with each attempt, at most 10 minutes; a run the
    memory model's open breaker refused waits at least until the breaker lets a trial through.
    """
    delay = min(scheduler.run_retry_delay_seconds * 2.0 ** max(attempt - 1, 0), _MAX_RETRY_DELAY_SECONDS)
    if isinstance(error, ModelPaused | ModelChainFailed):  # a chain: when every model was paused
        delay = max(delay, error.retry_in)
    return delay


def describe_error(error: BaseException, parts: Iterable[Component]) -> str:
    """What a parked run shows of its error: type and message, secrets removed (those of the
    settings' `parts` among them), bounded."""
    text = mask_secrets(f"{type(error).__name__}: {error}", parts)
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def parked_run_id(user_id: str, cursor: int) -> str:
    """The id a run is parked under: one per stuck buffer (the user and where their buffer
    starts), so the same buffer failing again is one entry with its attempts added up."""
    return stable_id("parked-run", user_id, str(cursor))[:12]


class RunExecutor:
    """Runs what the queue hands over, in the process that took it: memory-graph runs (retried,
    then parked) and session summaries. Keeps each user's last outcome."""

    def __init__(
        self,
        context: MemoryContext,
        *,
        on_result: ResultCallback | None = None,
        on_step: StepCallback | None = None,
    ) -> None:
        self.context = context
        self.on_result = on_result
        self.on_step = on_step
        self.results: dict[str, MemoryRunResult | BaseException] = {}
        self._parked_keys: dict[str, set[str]] = {}  # user → keys of runs parked here since their last success

    def was_parked(self, user_id: str, key: str) -> bool:
        """Whether the run queued under `key` was parked here since the user's last success (a
        new run of the same buffer needs another key: the spent one's end may not be recorded)."""
        return key in self._parked_keys.get(user_id, ())

    async def run(
        self, user_id: str, key: str, attempt: int, through_seq: int | None = None
    ) -> MemoryRunResult | BaseException:
        """One attempt of the user's run. Returns its result, or the error it failed with for good
        (parked then); raises `RetryLater` while retries are left."""
        with in_background():  # a run's writes queue behind the searches and writes callers wait on
            return await self._run(user_id, key, attempt, through_seq)

    async def _run(
        self, user_id: str, key: str, attempt: int, through_seq: int | None
    ) -> MemoryRunResult | BaseException:
        context = self.context
        secrets = context.secret_parts
        attempts = context.scheduler.run_retries + 1
        try:  # the worker's repair pass: turns stored while the embedder was down get indexed
            await self.context.store.reindex_pending(user_id)
        except Exception:
            logger.exception("indexing the pending messages of %s failed; the next save or run retries", user_id)
        outcome: MemoryRunResult | BaseException
        try:
            outcome = await run_memory_graph(user_id, self.context, through_seq=through_seq, on_step=self.on_step)
        except Exception as error:  # the buffer stays: the cursor moves only when a run persists
            outcome = error
            if attempt < attempts:
                delay = retry_delay(attempt, error, scheduler=context.scheduler)
                logger.warning(
                    "memory run for %s failed (attempt %d of %d): %s; retrying in %.1fs",
                    user_id,
                    attempt,
                    attempts,
                    describe_error(error, secrets),
                    delay,
                )
                raise RetryLater(delay, describe_error(error, secrets)) from None
            await self._park(user_id, key, error, attempt)
        else:
            await self._drop_resolved(user_id)
        self.results[user_id] = outcome
        await self._report(user_id, outcome)
        return outcome

    async def reindex_unindexed(self) -> int:
        """Index the stored messages of every user still waiting for their search entry; returns
        how many were indexed. A user whose indexing fails again is left for the next sweep."""
        indexed = 0
        with in_background():
            for user_id in await self.context.store.users_with_unindexed_messages():
                try:
                    indexed += await self.context.store.reindex_pending(user_id)
                except Exception:
                    logger.exception("indexing the pending messages of %s failed; the next sweep retries", user_id)
        if indexed:
            logger.info("the reindex sweep indexed %d stored messages that were not searchable", indexed)
        return indexed

    async def collect_garbage(self) -> None:
        """One retention sweep over every user (`memlane gc`); what it removed is logged. A failure
        waits for the next sweep."""
        try:
            report = await self.context.store.collect_garbage()
        except Exception:
            logger.exception("the retention sweep failed; the next one tries again")
            return
        logger.info("the retention sweep: %s", "; ".join(report.lines()))

    async def summarize_session(self, user_id: str, session_id: str) -> None:
        """Fold the session's new messages into its rolling summary; a failure waits for the next update."""
        try:
            caller = self.context.caller("session summary")
            await fold_session_summary(self.context.store, caller, user_id, session_id)
        except Exception:
            logger.exception("session summary of %s/%s failed; the next update retries", user_id, session_id)

    async def _park(self, user_id: str, key: str, error: BaseException, attempts: int) -> None:
        self._parked_keys.setdefault(user_id, set()).add(key)
        try:
            cursor = await self.context.store.get_cursor(user_id)
            run = ParkedRun(
                id=parked_run_id(user_id, cursor),
                user_id=user_id,
                error=describe_error(error, self.context.secret_parts),
                attempts=attempts,
            )
            run = await self.context.store.park_run(run)
        except Exception:  # the buffer is still there for the next run; only the list missed it
            logger.exception("memory run for %s failed and could not be parked", user_id)
            return
        logger.error(
            "memory run for %s failed %d times; parked as %s (`memlane runs retry %s`): %s",
            user_id,
            attempts,
            run.id,
            run.id,
            run.error,
        )

    async def _drop_resolved(self, user_id: str) -> None:
        """A run that succeeded has processed what the user's parked runs could not."""
        self._parked_keys.pop(user_id, None)
        try:
            for run in await self.context.store.parked_runs(user_id):
                if await self.context.store.drop_parked_run(run.id) is not None:
                    logger.info("parked run %s of %s is resolved by a run that succeeded", run.id, user_id)
        except Exception:
            logger.exception(
                "dropping the resolved parked runs of %s failed; `memlane runs drop` removes them", user_id
            )

    async def _report(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        if self.on_result is None:
            return
        try:
            await self.on_result(user_id, outcome)
        except Exception:  # a broken callback must not fail the run that already persisted
            logger.exception("on_result callback failed for %s", user_id)
