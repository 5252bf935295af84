"""Imports too large to answer within a request: a job that stores and embeds the messages in
bounded batches while the request is answered at once (`memlane serve`'s messages route).

Every message is stored first, in batches (history holds the 20,000 messages of an import
within seconds); then each batch is recorded for indexing and embedded inside `in_background()`:
its texts wait behind the searches and writes callers wait on, and take their turn among tenants
and users in the embedder's fair queue (store/models/workers.py), so one tenant's import of
20,000 messages does not hold another tenant's queries behind it.

A job lives in the process that took it (the last `KEPT_JOBS` are kept); it counts what it
stored, what it made searchable and what it could not store, each refusal with its reason.
If the process stops during a job, sending the import again finishes it: each message's id
comes from what it is (memlane/importing.py), so what is stored already is not stored twice,
and what was not embedded yet is embedded then.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memlane.store.errors import StoreError
from memlane.store.models.background import in_background
from memlane.store.protocols import HistoryStore
from memlane.store.records import Message

logger = logging.getLogger(__name__)

KEPT_JOBS = 1000  # finished jobs kept for their GET, per process
SHOWN_FAILURES = 20  # refusals a job lists with their reasons (all are counted)


@dataclass
class ImportJob:
    """One import in the background: how far it got."""

    id: str
    store_user: str
    received: int
    stored: int = 0  # stored, or held already (the same message imported before)
    embedded: int = 0  # made searchable (system and tool lines are stored, never searched)
    failed: int = 0  # not stored: each with its reason in `failures` (the first `SHOWN_FAILURES`)
    failures: list[dict[str, str]] = field(default_factory=list)
    state: Literal["running", "done", "failed"] = "running"
    error: str | None = None  # why a failed job stopped; the messages it did not reach are counted failed
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def refuse(self, messages: Sequence[Message], reason: str) -> None:
        self.failed += len(messages)
        room = SHOWN_FAILURES - len(self.failures)
        self.failures += [{"id": message.id, "reason": reason} for message in messages[: max(room, 0)]]

    def view(self) -> dict[str, Any]:
        """What the job route answers."""
        return {
            "id": self.id,
            "state": self.state,
            "received": self.received,
            "stored": self.stored,
            "embedded": self.embedded,
            "failed": self.failed,
            "failures": self.failures,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


async def run_import(store: HistoryStore, job: ImportJob, messages: Sequence[Message], *, batch_messages: int) -> None:
    """Store every one of `messages` for `job`, then embed them, `batch_messages` at a time,
    oldest first. Storing comes first (20,000 messages in about 5 s on 2 cores) so that history
    holds what was acknowledged long before its minutes of embedding end. A message refused for
    what it holds is counted and named, the others go on; a store error (Redis away, the quota
    full) stops the job, the messages it did not store counted as failed with it."""
    kept: list[Message] = []
    try:
        for start in range(0, len(messages), batch_messages):
            batch = messages[start : start + batch_messages]
            refused: list[tuple[Message, str]] = []
            began = time.monotonic()
            await _store_each(store, batch, refused)  # history only: no vectors yet
            # as long again for everyone else: a batch's writes are prepared on the event loop that
            # serves the other tenants' requests, which would otherwise queue behind 20,000 of them
            await asyncio.sleep(time.monotonic() - began)
            for message, reason in refused:
                job.refuse([message], reason)
            held = {message.id for message, _ in refused}
            kept += [message for message in batch if message.id not in held]
            job.stored = len(kept)
        for start in range(0, len(kept), batch_messages):
            with in_background():  # its vectors wait behind what callers wait on, in their tenant's turn
                # recorded for indexing (kept there if the process stops), then indexed with what else waits
                await store.add_messages(kept[start : start + batch_messages], index_later=True)
                job.embedded = min(job.stored, job.embedded + await store.reindex_pending(job.store_user))
    except StoreError as error:
        job.refuse(messages[job.stored + job.failed :], f"{type(error).__name__}: {error}")
        job.state, job.error = "failed", str(error)
        logger.warning("import %s of %s stopped: %s", job.id, job.store_user, error)
    else:
        job.state = "done"
    job.finished_at = time.time()


async def _store_each(store: HistoryStore, messages: Sequence[Message], refused: list[tuple[Message, str]]) -> None:
    """`add_messages` without indexing, where a message refused for what it holds (ValueError,
    TypeError: too long, its metadata) is put in `refused` and the others are stored still."""
    try:
        await store.add_messages(messages, index_for_search=False)
    except (ValueError, TypeError) as error:
        if len(messages) == 1:
            refused.append((messages[0], f"{type(error).__name__}: {error}"))
            return
        for message in messages:
            await _store_each(store, [message], refused)


class ImportJobs:
    """The import jobs of this process: started, run one at a time per user (so each user's
    messages are stored in the order of the file), and kept for their GET."""

    def __init__(self, store: Callable[[], HistoryStore], *, batch_messages: int) -> None:
        self._store = store
        self.batch_messages = batch_messages
        self._jobs: dict[str, ImportJob] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._user_locks: dict[str, asyncio.Lock] = {}

    def start(
        self,
        store_user: str,
        messages: Sequence[Message],
        *,
        then: Callable[[], Awaitable[Any]] | None = None,
    ) -> ImportJob:
        """A job for `messages` of `store_user`, started; `then` is awaited once it is done."""
        job = ImportJob(id=uuid.uuid4().hex, store_user=store_user, received=len(messages))
        self._jobs[job.id] = job
        self._tasks[job.id] = asyncio.create_task(self._run(job, messages, then), name=f"memlane-import-{job.id}")
        for old in list(self._jobs)[:-KEPT_JOBS]:
            if self._jobs[old].state != "running":
                del self._jobs[old]
        return job

    async def _run(
        self, job: ImportJob, messages: Sequence[Message], then: Callable[[], Awaitable[Any]] | None
    ) -> None:
        try:
            async with self._user_locks.setdefault(job.store_user, asyncio.Lock()):
                await run_import(self._store(), job, messages, batch_messages=self.batch_messages)
            if then is not None and job.state == "done":
                await then()
        except Exception as error:  # a bug: said on the job, never lost in a task nobody awaits
            logger.exception("import %s of %s failed", job.id, job.store_user)
            if job.state == "running":
                job.refuse(messages[job.stored + job.failed :], f"{type(error).__name__}: {error}")
                job.state, job.error, job.finished_at = "failed", str(error), time.time()
        finally:
            self._tasks.pop(job.id, None)

    def get(self, store_user: str, job_id: str) -> ImportJob | None:
        """The job, when it is this user's (another user's job id finds nothing)."""
        job = self._jobs.get(job_id)
        return job if job is not None and job.store_user == store_user else None

    async def wait(self, timeout: float | None = None) -> None:
        """Wait for the jobs under way (tests, a graceful stop)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks.values()), timeout=timeout)

    async def close(self) -> None:
        """Stop the jobs under way: what they stored stays, and is made searchable by the reindex sweep."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:  # bounded: a stop is not held up by a call that does not take its cancellation
            await asyncio.wait(tasks, timeout=5)
