"""What a turn is and how it is saved, for every door (the agent middleware, `memlane serve`,
the app) through the turn service (memlane/turns.py): who the turn is for
(`MemoryAgentContext`, `resolve_identity`), its messages as memlane stores them
(`turn_messages`), and `MemoryPersistence`, which stores each turn in the background, one user
at a time, trying again while Redis is away.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.config import get_config

from memlane.config import RecallSettings, TurnSettings
from memlane.graph import MemoryScheduler
from memlane.store.errors import QuotaExceeded
from memlane.store.ids import clean_text, stable_id
from memlane.store.models.workers import EmbeddingBacklog
from memlane.store.new_messages import ALIGNED_MESSAGES
from memlane.store.protocols import MemoryStore
from memlane.store.records import Message  # one cleaning rule, the store's
from memlane.store.redis.connections import redis_is_away
from memlane.store.scopes import scoped_user_id

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_SESSION = "default"


@dataclass
class MemoryAgentContext:
    """Per-run context naming the user and session; toggles left None use the settings.

    agent_id: the agent whose own memory of the user the run reads and writes (`scoped_user_id`;
    None: the user's memory, which every agent without an id shares). shared_user_id: a shared
    scope (`SHARED_USER_ID`, or a tenant's) whose memories recall reads beside the user's."""

    user_id: str
    session_id: str = DEFAULT_SESSION
    recall_enabled: bool | None = None
    auto_save_enabled: bool | None = None
    agent_id: str | None = None
    shared_user_id: str | None = None

    @property
    def store_user(self) -> str:
        """The store user the run's turns are saved under and recalled from."""
        return scoped_user_id(self.user_id, self.agent_id)


class MissingUser(ValueError):
    """The run does not say which user it is for."""


def _field(source: Any, name: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def resolve_identity(context: Any, *, recall: RecallSettings, turns: TurnSettings) -> MemoryAgentContext:
    """The user, session and toggles of this run, from the runtime context or `configurable`; a
    toggle neither gives is `recall.enabled` / `turns.auto_save_enabled`."""
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # called outside a runnable
        configurable = {}
    values = {}
    for name in ("user_id", "session_id", "recall_enabled", "auto_save_enabled", "agent_id", "shared_user_id"):
        value = _field(context, name)
        values[name] = value if value is not None else configurable.get(name)
    if not values["user_id"]:
        raise MissingUser(
            "memlane needs to know the user: pass context=MemoryAgentContext(user_id=...) "
            "(create_agent(..., context_schema=MemoryAgentContext)) or "
            "config={'configurable': {'user_id': ...}}"
        )
    return MemoryAgentContext(  # resolved: `user_id` is the store user, the agent's scope already in it
        user_id=scoped_user_id(str(values["user_id"]), str(values["agent_id"]) if values["agent_id"] else None),
        session_id=str(values["session_id"] or DEFAULT_SESSION),
        shared_user_id=str(values["shared_user_id"]) if values["shared_user_id"] else None,
        recall_enabled=recall.enabled if values["recall_enabled"] is None else bool(values["recall_enabled"]),
        auto_save_enabled=turns.auto_save_enabled
        if values["auto_save_enabled"] is None
        else bool(values["auto_save_enabled"]),
    )


def message_text(message: BaseMessage) -> str:
    """The message's text, safe to encode (see `clean_text`)."""
    return clean_text(str(message.text))


def turn_messages(messages: Sequence[BaseMessage], identity: MemoryAgentContext) -> list[Message]:
    """The conversation's user and assistant messages as store messages, oldest first.

    Tool calls and tool results are left out; a message without an id gets one from its
    content and position, so saving the same turn twice stores it once. What of these is
    new is for the store to tell (`HistoryStore.add_new_messages`): every message after the last one
    already stored, so several user lines sent in one request are all kept.
    """
    turn: list[Message] = []
    for position, message in enumerate(messages):
        text = message_text(message).strip()
        if not text or not isinstance(message, (HumanMessage, AIMessage)):
            continue
        role = "user" if isinstance(message, HumanMessage) else "assistant"
        message_id = message.id or stable_id("turn", identity.session_id, str(position), role, text)
        turn.append(
            Message(
                id=message_id,
                user_id=identity.user_id,
                session_id=identity.session_id,
                role=role,
                content=text,
                name=message.name if role == "user" else None,
            )
        )
    return turn


def latest_exchange(conversation: list[Message]) -> list[Message]:
    """The conversation's last answers and the user lines right before them."""
    start = len(conversation)
    while start > 0 and conversation[start - 1].role == "assistant":
        start -= 1
    while start > 0 and conversation[start - 1].role == "user":
        start -= 1
    return conversation[start:]


SaveCallback = Callable[[MemoryAgentContext, list[Message], bool], Awaitable[None]]
FailureCallback = Callable[[MemoryAgentContext, BaseException], Awaitable[None]]

# Waits between tries of a save while Redis is away: from the first, doubling up to the most.
SAVE_RETRY_FIRST_DELAY = 0.1
SAVE_RETRY_MAX_DELAY = 2.0


@dataclass(frozen=True)
class IndexBacklog:
    """Saved turns not searchable yet: handed to a save of this process and not indexed (a save
    that gives up keeps its messages in `MemoryPersistence.unsaved` instead; one whose indexing
    fails leaves them to the next save's repair pass)."""

    turns: int
    messages: int  # counted once stored; before, the turn's last exchange
    oldest_seconds: float  # since the oldest of them was handed over; 0.0 when none
    embedding: EmbeddingBacklog | None  # the embedder's queue of stored texts (every caller's); None: it keeps none


@dataclass(eq=False)
class _Unindexed:
    """One save's turn between being handed over and indexed."""

    messages: int
    since: float = field(default_factory=time.monotonic)


class MemoryPersistence:
    """Stores turns and notifies the scheduler in background tasks, one user at a time.

    A save that fails because Redis is away (crashed and restarting, loading its data) is
    tried again with backoff for up to `save_retry_seconds`; message ids make a repeated
    save store each message once. Past that the messages wait in `unsaved` for the user's
    next turn, and a log line counts them.
    """

    def __init__(
        self,
        store: MemoryStore,
        scheduler: MemoryScheduler | None = None,
        *,
        turns: TurnSettings,
        on_saved: SaveCallback | None = None,
        on_failed: FailureCallback | None = None,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.on_saved = on_saved
        self.on_failed = on_failed
        self.retry_seconds = turns.save_retry_seconds  # the settings given, never the environment's
        self.max_unsaved = turns.max_unsaved_messages
        # per (user, session): the last messages of a turn not saved on purpose (saving off)
        self.skipped: dict[tuple[str, str], list[Message]] = {}
        self._tails: dict[str, asyncio.Task[None]] = {}  # per user: the newest save task
        self._tasks: set[asyncio.Task[None]] = set()
        # per user: turns whose save failed (Redis away); the next save stores them first
        self.unsaved: dict[str, list[Message]] = {}
        self.refused_turns = 0  # turns the store refused for good (over a quota): not kept, not retried
        # per user: messages of a save being tried again while Redis is away
        self.retrying: dict[str, int] = {}
        self._away: dict[str, asyncio.Event] = {}  # per user: set when a save starts trying again
        # per user: set once the newest save has written the turn to history (indexing follows)
        self._stored: dict[str, asyncio.Event] = {}
        self._unindexed: set[_Unindexed] = set()  # saves whose turn is not indexed yet

    def save_turn(
        self, identity: MemoryAgentContext, turn: list[Message], *, only_new: bool = False
    ) -> asyncio.Task[None]:
        """Start storing `turn` in the background; returns at once.

        only_new: `turn` is the whole conversation a request carried (`turn_messages`); only
        the messages after the last one already stored (or left unsaved on purpose, see
        `skip_turn`) are stored."""
        previous = self._tails.get(identity.user_id)
        previous_stored = self._stored.get(identity.user_id)
        stored = self._stored[identity.user_id] = asyncio.Event()
        unindexed = _Unindexed(len(latest_exchange(turn)) if only_new else len(turn))
        self._unindexed.add(unindexed)
        task = asyncio.create_task(
            self._save(identity, turn, previous, previous_stored, stored, unindexed, only_new=only_new),
            name=f"memlane-save-{identity.user_id}",
        )
        self._tails[identity.user_id] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._forget(identity.user_id, done))
        return task

    def skip_turn(self, identity: MemoryAgentContext, turn: list[Message]) -> None:
        """Note a conversation whose turn is not saved (saving off): a later save with
        `only_new` does not store these messages when the request carries them again."""
        self.skipped[(identity.user_id, identity.session_id)] = turn[-ALIGNED_MESSAGES:]
        if len(self.skipped) > 1000:  # a note per live session, not a store of every one
            self.skipped.pop(next(iter(self.skipped)))

    def index_backlog(self) -> IndexBacklog:
        """The turns handed over and not searchable yet, and the embedder's queue behind them."""
        waiting = list(self._unindexed)
        oldest = min((save.since for save in waiting), default=None)
        return IndexBacklog(
            turns=len(waiting),
            messages=sum(save.messages for save in waiting),
            oldest_seconds=0.0 if oldest is None else time.monotonic() - oldest,
            embedding=self.store.embedding_backlog(),
        )

    def _forget(self, user_id: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._tails.get(user_id) is task:  # the user's last pending save
            del self._tails[user_id]
            self._away.pop(user_id, None)
            self._stored.pop(user_id, None)

    async def _save(
        self,
        identity: MemoryAgentContext,
        turn: list[Message],
        previous: asyncio.Task[None] | None,
        previous_stored: asyncio.Event | None,
        stored: asyncio.Event,
        unindexed: _Unindexed,
        *,
        only_new: bool = False,
    ) -> None:
        """Store the turn, index it for search, tell the scheduler. `stored` is set once the turn
        is in history: the user's next recall waits for that, not for the embedding; `unindexed`
        (the turn in `index_backlog`) is let go once it is indexed.

        Two stages, each in the user's order: a turn is stored once the previous one is stored,
        and indexed (and the scheduler told) once the previous save has finished."""
        if previous is not None and previous_stored is not None:  # or its task ended without storing
            stored_wait = asyncio.ensure_future(previous_stored.wait())
            await asyncio.wait([previous, stored_wait], return_when=asyncio.FIRST_COMPLETED)
            stored_wait.cancel()
        pending = self.unsaved.pop(identity.user_id, [])
        messages = [*pending, *turn]
        if only_new:  # until the store says what is new: the last exchange (the user lines and the reply)
            messages = [*pending, *latest_exchange(turn)]

        async def store_messages() -> None:
            nonlocal messages
            saved = await self.store.add_new_messages(  # one call: the store tells what is new, and keeps it
                turn,
                before=pending,
                known=self.skipped.get((identity.user_id, identity.session_id), []),
                resent=only_new,
                index_later=True,  # indexed by _save right after
            )
            messages = [*pending, *saved.new]
            for message, why in saved.refused:  # never held back the messages after it
                logger.error("dropping message %s of %s: it cannot be stored (%s)", message.id, identity.user_id, why)

        started = time.monotonic()
        try:
            try:
                await self._while_redis_is_away(identity, "storing the turn", store_messages, started, len(messages))
            except QuotaExceeded as error:  # refused for good: trying again would be refused again
                self._refused(identity, messages, error)
                return
            except Exception as error:  # past the retries, or not Redis: keep the turn for the next save
                self._give_up(identity, messages, error, time.monotonic() - started)
                return
            if only_new:
                self.skipped.pop((identity.user_id, identity.session_id), None)
                turn = messages[len(pending) :]
            unindexed.messages = len(messages)
            stored.set()
            if previous is not None:
                await asyncio.wait([previous])
            try:  # recorded as waiting for indexing: if this fails, the next save or the worker indexes it
                await self._while_redis_is_away(
                    identity,
                    "indexing the turn",
                    lambda: self.store.reindex_pending(identity.user_id),
                    started,
                    len(messages),
                )
            except Exception as error:
                logger.warning("indexing the turn of %s failed; the next save tries again: %s", identity.user_id, error)
            self._unindexed.discard(unindexed)
            queued = False
            scheduler = self.scheduler
            if scheduler is not None:
                try:
                    queued = await self._while_redis_is_away(
                        identity,
                        "telling the scheduler",
                        lambda: scheduler.notify(identity.user_id),
                        started,
                        len(messages),
                    )
                except Exception as error:  # stored: the next turn's notice covers this one
                    logger.warning(
                        "the memory scheduler could not be told about %s's new turn: %s", identity.user_id, error
                    )
            if self.on_saved is not None:
                try:
                    await self.on_saved(identity, turn, queued)
                except Exception:  # a broken callback must not lose the session summary below
                    logger.exception("on_saved callback failed for %s", identity.user_id)
            if queued and scheduler is not None:  # queued: the scheduler was told
                # the rolling summary is folded when the memory graph runs, not on every turn
                try:
                    await self._while_redis_is_away(
                        identity,
                        "queueing the session summary",
                        lambda: scheduler.update_session_summary(identity.user_id, identity.session_id),
                        started,
                        len(messages),
                    )
                except Exception:
                    logger.exception("queueing the session summary of %s failed", identity.user_id)
        finally:
            stored.set()
            self._unindexed.discard(unindexed)
            if self.retrying.pop(identity.user_id, None) is not None:
                self._away.pop(identity.user_id, None)

    async def _while_redis_is_away(
        self, identity: MemoryAgentContext, what: str, attempt: Callable[[], Awaitable[T]], started: float, held: int
    ) -> T:
        """`attempt()`, tried again with backoff while Redis is away, until `save_retry_seconds`
        after `started`; then, or at once for any other error, the error is raised.

        held: the messages of the save, shown in `retrying` meanwhile."""
        delay = SAVE_RETRY_FIRST_DELAY
        failures = 0
        while True:
            try:
                result = await attempt()
            except Exception as error:  # the reply is already delivered: try again, or let the caller keep the turn
                failures += 1
                if identity.user_id not in self.retrying:  # the save's first failure: say so once
                    await self.report_failure(identity, error)
                remaining = started + self.retry_seconds - time.monotonic()
                if not redis_is_away(error) or remaining <= 0:
                    raise
                if identity.user_id not in self.retrying:
                    logger.warning(
                        "%s of %s failed (%s); trying again for up to %.0f s",
                        what,
                        identity.user_id,
                        error,
                        self.retry_seconds,
                    )
                self.retrying[identity.user_id] = held
                self._away.setdefault(identity.user_id, asyncio.Event()).set()  # wait_user stops waiting
                # jittered, so the turns of many users do not all try again at the same moment
                await asyncio.sleep(min(delay * random.uniform(0.5, 1.0), remaining))
                delay = min(delay * 2, SAVE_RETRY_MAX_DELAY)
                continue
            if failures:
                logger.info(
                    "%s of %s done after %d failed tries (%.1f s)",
                    what,
                    identity.user_id,
                    failures,
                    time.monotonic() - started,
                )
            return result

    def _refused(self, identity: MemoryAgentContext, messages: list[Message], error: QuotaExceeded) -> None:
        """A turn the store refuses for good (over a quota): said in one line, kept nowhere, never
        tried again (it was kept for the next turn and retried forever, the buffer growing); the
        caller was told before the reply where it could be (serve's X-Memlane-Turn-Not-Saved)."""
        self.refused_turns += 1
        logger.warning("the turn of %s was not stored (%d messages): %s", identity.user_id, len(messages), error)

    def _give_up(
        self, identity: MemoryAgentContext, messages: list[Message], error: BaseException, waited: float
    ) -> None:
        """Keep `messages` for the user's next save and say how many are unsaved in all."""
        kept = messages[-self.max_unsaved :] if self.max_unsaved else []
        self.unsaved[identity.user_id] = kept
        if len(kept) < len(messages):
            logger.error("dropped the %d oldest unsaved messages of %s", len(messages) - len(kept), identity.user_id)
        logger.error(
            "saving %d messages of %s failed after %.0f s (%s: %s); kept in memory for the user's next turn. "
            "Unsaved now: %d messages of %d users",
            len(kept),
            identity.user_id,
            waited,
            type(error).__name__,
            error,
            sum(len(unsaved) for unsaved in self.unsaved.values()),
            len(self.unsaved),
            exc_info=not redis_is_away(error),
        )

    async def report_failure(self, identity: MemoryAgentContext, error: BaseException) -> None:
        if self.on_failed is not None:
            try:
                await self.on_failed(identity, error)
            except Exception:
                logger.exception("on_failed callback failed for %s", identity.user_id)

    async def wait_user(self, user_id: str, timeout: float | None = 5.0) -> None:
        """Wait until the user's newest turn is in history, so recall sees the previous turn (not
        for its indexing, and not while Redis is away: recall could not read it either, and the
        reply must not wait for Redis)."""
        stored = self._stored.get(user_id)
        if stored is None or stored.is_set() or user_id in self.retrying:
            return
        tail = asyncio.ensure_future(stored.wait())
        away = self._away.setdefault(user_id, asyncio.Event())
        noticed = asyncio.ensure_future(away.wait())
        try:
            await asyncio.wait([tail, noticed], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            noticed.cancel()
            tail.cancel()

    async def wait_saved(self, user_id: str, timeout: float | None = 30.0) -> None:
        """Wait for the user's pending saves to finish: stored, indexed, the scheduler told
        (before deleting the user, or anything that reads their buffer)."""
        tail = self._tails.get(user_id)
        if tail is not None:
            await asyncio.wait([tail], timeout=timeout)

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Wait for every pending save (not for the memory-graph runs they queued)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
