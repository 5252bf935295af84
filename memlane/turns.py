"""The turn service: everything a turn goes through, whichever door it came in by (the agent
middleware, `memlane serve`, the app). Each door is an adapter over it, so the same
conversation leaves the same history, profile, events and session titles through any of them.

For a turn, in order:
1. `recall`: wait for the user's previous turn to be saved (it must be searchable), then recall
   for the last user message; when Redis is away, or frozen past `recall_timeout_seconds`, None
   (answer without memory).
2. the reply, the door's own business (a LangChain model, an upstream server).
3. `save`: hand the conversation to the background saver (`MemoryPersistence`: new messages
   only, idempotent on ids, tried again while Redis is away), which tells the scheduler; then,
   off the reply's path, the after-reply hooks: the topic check (a message that moves on
   remembers the turns before it as their own event) and the session's title.
And on request: `remember_now`, `end_session`.

It takes the settings' parts it reads explicitly (recall's `RecallParts`, the turns' settings):
nothing falls back to the environment. Which messages of a conversation are new, and how their
texts are kept (redacted), is the store's to tell (`HistoryStore.add_new_messages`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import TurnSettings
from memlane.deadlines import RedisSilent, within_budget
from memlane.graph import MemoryContext, MemoryScheduler
from memlane.graph.executor import ResultCallback
from memlane.graph.run import StepCallback
from memlane.nodes.session_title import TITLE_MESSAGES, fallback_title, session_title
from memlane.nodes.topic_shift import is_related
from memlane.persistence import FailureCallback, MemoryAgentContext, MemoryPersistence, SaveCallback, latest_exchange
from memlane.recall import Recall, RecallParts, recall
from memlane.recall_relevance import give_relevance
from memlane.store.errors import StoreError
from memlane.store.protocols import MemoryStore, ServiceStore
from memlane.store.records import Message

logger = logging.getLogger(__name__)
T = TypeVar("T")

TOPIC_CONTEXT_MESSAGES = 6  # the earlier turns the topic check compares a new message with
KEPT_RECALLS = 1000  # `last_recall` keeps the newest users' recalls, for inspection

UserCallback = Callable[[str], Awaitable[None]]
TitleCallback = Callable[[str, str, str], Awaitable[None]]


class RecallTimedOut(RedisSilent):
    """Recall did not finish within `recall_timeout_seconds` and Redis did not answer a probe
    either (frozen, or every connection stuck): the reply goes out without memory."""


async def within_recall_budget(work: Awaitable[T], store: ServiceStore, seconds: float) -> T:
    """`await work`, or `RecallTimedOut` once `seconds` have passed while Redis has said nothing for
    the last half of them (memlane/deadlines.py: a slow recall Redis keeps answering is waited for)."""
    try:
        return await within_budget(work, store, seconds, what="recall")
    except RedisSilent as error:
        raise RecallTimedOut(f"{error} (MEMLANE_RECALL_TIMEOUT_SECONDS)") from None


class TurnService:
    """Recall, saving, the after-reply hooks, remember-now and end-session for every door.

    scheduler: the memory-graph scheduler (None: turns are saved, nothing is remembered).
    memory_model: titles and topic checks (default: the scheduler's model; without one, a
    title from the first words and no topic check). rewrite_model: follow-up rewrites before
    recall (default: the memory model, through the scheduler's breaker).
    on_saved / on_failed: after each save, and when memory is unavailable (the app's status).
    on_topic_shift(user): a topic shift queued a run. on_title(user, session, title): a
    session got its title. recall_parts: what recall reads (`RecallParts.of(settings)`; its
    `models` also times titles and topic checks); turns: saving and the topic check.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        recall_parts: RecallParts,
        turns: TurnSettings,
        scheduler: MemoryScheduler | None = None,
        memory_model: BaseChatModel | None = None,
        rewrite_model: BaseChatModel | None = None,
        on_saved: SaveCallback | None = None,
        on_failed: FailureCallback | None = None,
        on_topic_shift: UserCallback | None = None,
        on_title: TitleCallback | None = None,
    ) -> None:
        self.store = store
        self.recall_parts = recall_parts
        self.turn_settings = turns
        self.scheduler = scheduler
        self.memory_model = memory_model or (scheduler.context.llm if scheduler is not None else None)
        self.rewrite_model = rewrite_model or self.memory_model
        # the scheduler's model is asked through its breaker: while it is open, the cheap rewrite
        self.rewrite_breaker = (
            scheduler.context.model_breaker if rewrite_model is None and scheduler is not None else None
        )
        self.persistence = MemoryPersistence(store, scheduler, turns=turns, on_saved=on_saved, on_failed=on_failed)
        self.on_topic_shift = on_topic_shift
        self.on_title = on_title
        self.last_recall: dict[str, Recall] = {}  # per user: the latest recall, for inspection
        self._background: set[asyncio.Task[None]] = set()  # after-reply hooks, off the reply's path
        self._titling: set[tuple[str, str]] = set()  # (user, session) whose title is being made

    @classmethod
    async def started(
        cls,
        store: MemoryStore,
        *,
        recall_parts: RecallParts,
        turns: TurnSettings,
        context: MemoryContext | None = None,
        on_result: ResultCallback | None = None,
        on_step: StepCallback | None = None,
        on_queued: UserCallback | None = None,
        **hooks: Any,
    ) -> TurnService:
        """What a door runs on: the service with a memory scheduler started on `context` (runs queue
        in the store's Redis, `memory_docket_url` else the store's, so a run cut off by a restart is
        picked up again), or without one when there is no memory model (context None). `aclose()`
        stops it. context: the memory graph's, its model the memory model (a door builds it with
        `memlane.doors.memory_context(settings, store, model)`); on_result / on_step / on_queued: the
        scheduler's; hooks: the service's callbacks."""
        scheduler = None
        if context is not None:
            scheduler = await MemoryScheduler(
                context, on_result=on_result, on_step=on_step, on_queued=on_queued
            ).__aenter__()
        return cls(
            store,
            recall_parts=recall_parts,
            turns=turns,
            scheduler=scheduler,
            memory_model=context.llm if context is not None else None,
            **hooks,
        )

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Wait for the turns handed over (up to `timeout`), then stop the scheduler."""
        await self.wait_idle(timeout)
        if self.scheduler is not None:
            await self.scheduler.__aexit__(None, None, None)

    # 1. recall --------------------------------------------------------------------------------
    async def recall(
        self,
        identity: MemoryAgentContext,
        query: str,
        *,
        exclude_texts: Sequence[str] = (),
        parts: RecallParts | None = None,
        relevance: bool = True,
    ) -> Recall | None:
        """What to put before the model for the turn's last user message, after the user's
        previous turn is saved (the caller checked `identity.recall_enabled`). None when the
        store cannot answer: the reply goes out without memory. parts: this turn's recall parts,
        where a door has its own per persona (`memlane serve`); by default the service's.
        relevance: False leaves each item's relevance to `add_relevance`, which a door calls
        while the model starts its answer (no text the model is given depends on it)."""
        parts = parts or self.recall_parts

        async def wait_then_recall() -> Recall:
            await self.persistence.wait_user(identity.user_id)  # inside the budget: a frozen Redis holds the save too
            recalled = await recall(
                self.store,
                identity.user_id,
                identity.session_id,
                query,
                parts=parts,
                enabled=True,
                exclude_texts=list(exclude_texts),
                rewrite_model=self.rewrite_model,
                rewrite_breaker=self.rewrite_breaker,
                shared_user_id=identity.shared_user_id,
            )
            if relevance:  # what each item shows: its relevance for the message, as every other door shows it
                await give_relevance(self.store, recalled, identity.shared_user_id)
            return recalled

        try:
            recalled = await within_recall_budget(wait_then_recall(), self.store, parts.recall.timeout_seconds)
        except StoreError as error:  # Redis away or frozen: answer without memory rather than not at all
            logger.warning("recall for %s failed, answering without memory: %s", identity.user_id, error)
            await self.persistence.report_failure(identity, error)
            return None
        self.last_recall[identity.user_id] = recalled
        if len(self.last_recall) > KEPT_RECALLS:
            self.last_recall.pop(next(iter(self.last_recall)))
        return recalled

    async def add_relevance(
        self, identity: MemoryAgentContext, recalled: Recall, parts: RecallParts | None = None
    ) -> None:
        """Each item's relevance for a recall made with `relevance=False`, within recall's budget;
        a store that cannot answer leaves it None (the reply is on its way already)."""
        parts = parts or self.recall_parts
        try:
            await within_recall_budget(
                give_relevance(self.store, recalled, identity.shared_user_id), self.store, parts.recall.timeout_seconds
            )
        except StoreError as error:
            logger.warning("the recalled items' relevance for %s was not given: %s", identity.user_id, error)

    # 3. saving and the after-reply hooks ---------------------------------------------------------
    def save(self, identity: MemoryAgentContext, conversation: list[Message]) -> None:
        """Hand the conversation a turn ended with (`turn_messages`) to the background saver,
        which stores what is new; then the after-reply hooks. With saving off (the identity's
        `auto_save_enabled`), note it, so that a later turn carrying it again does not store it.
        Returns at once."""
        if not conversation:
            return
        if not identity.auto_save_enabled:
            self.persistence.skip_turn(identity, conversation)
            return
        self.persistence.save_turn(identity, conversation, only_new=True)
        asked = [message for message in latest_exchange(conversation) if message.role == "user"]
        if asked:
            self.in_background(self.after_reply(identity.user_id, identity.session_id, asked[-1].id))

    async def after_reply(self, user_id: str, session_id: str, message_id: str) -> None:
        """Once the turn is stored: the topic check, then the session's title. A failure of
        either is logged; the reply is long gone."""
        await self.persistence.wait_saved(user_id)  # the turn is stored and the scheduler told
        try:
            await self.check_topic(user_id, message_id)
        except Exception:  # a lost check only merges two topics into one event
            logger.exception("the topic check after a reply of %s failed", user_id)
        try:
            await self.ensure_title(user_id, session_id)
        except Exception:  # the session stays listed by its id; the next reply tries again
            logger.exception("titling session %s of %s failed", session_id, user_id)

    async def ensure_title(self, user_id: str, session_id: str) -> str | None:
        """Give the session a title once, from its first exchange: the memory model's, or the
        first message's words without a model. Returns the title made, None when it had one."""
        key = (user_id, session_id)
        if key in self._titling:
            return None
        self._titling.add(key)
        try:
            if session_id in await self.store.session_titles(user_id):
                return None
            messages = await self.store.recent_messages(user_id, session_id, limit=TITLE_MESSAGES)
            if not messages:
                return None
            if self.memory_model is not None:
                title = await session_title(self.memory_model, messages, self.recall_parts.models)
            else:
                title = fallback_title(messages)
            await self.store.set_session_title(user_id, session_id, title)
            if self.on_title is not None:
                await self.on_title(user_id, session_id, title)
            return title
        finally:
            self._titling.discard(key)

    async def check_topic(self, user_id: str, message_id: str) -> bool:
        """When the buffer holds turns before the message `message_id` and the memory model says
        it moves on from them, remember those turns now as their own event. True when a run was
        queued for them: with `through_seq` = the last earlier message, so the cursor stops
        there and this turn opens the next buffer."""
        if self.scheduler is None or self.memory_model is None or not self.turn_settings.topic_shift_check:
            return False
        buffer = await self.store.unprocessed_messages(user_id)
        position = next((index for index, message in enumerate(buffer) if message.id == message_id), None)
        if not position:  # not stored (save off or failed), already remembered, or nothing before it
            return False
        # the turns still buffered, not the session's rolling summary: it may tell of turns
        # already remembered, and the question is whether this message closes *these*
        earlier = buffer[:position]
        context = " / ".join(f"{message.role}: {message.content}" for message in earlier[-TOPIC_CONTEXT_MESSAGES:])
        if await is_related(self.memory_model, context, buffer[position], self.recall_parts.models):
            return False
        if await self.scheduler.notify(user_id, flush=True, through_seq=earlier[-1].seq):
            if self.on_topic_shift is not None:
                await self.on_topic_shift(user_id)
            return True
        return False

    # on request ---------------------------------------------------------------------------------
    async def remember_now(self, user_id: str) -> bool | None:
        """Queue a memory run over the user's unprocessed messages now, whatever their size, once
        the turns handed over before are stored. False: nothing new; None: no memory model."""
        if self.scheduler is None:
            return None
        await self.persistence.wait_saved(user_id, timeout=10)
        return await self.scheduler.notify(user_id, flush=True)

    async def end_session(self, user_id: str, session_id: str) -> bool | None:
        """The session ended: queue the "session ended" run and fold the session's rolling summary.
        False: nothing new; None: no memory model."""
        if self.scheduler is None:
            return None
        await self.persistence.wait_saved(user_id, timeout=10)
        queued = await self.scheduler.notify(user_id, session_ended=True)
        if queued:
            await self.scheduler.update_session_summary(user_id, session_id)
        return queued

    # waiting --------------------------------------------------------------------------------------
    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` off the caller's path; `wait_idle` and `aclose` wait for it."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Wait until the turns handed over so far are stored, the scheduler told, and their
        after-reply hooks done (tests, forget me, shutdown)."""
        await self.persistence.wait_idle(timeout)
        while self._background:
            done, _ = await asyncio.wait(list(self._background), timeout=timeout)
            if not done:
                return
