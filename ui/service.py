"""What the chat app does, without Gradio: reply turns, memory status, the memory panel.

Everything async runs on the app server's event loop: the store, the scheduler and its
worker are started lazily by the first request (`ensure_started`), so `build_app` can be
called anywhere and the app can be launched in a thread (as the tests do).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, HumanMessage

from memlane import (
    MemoryRunResult,
    MemoryScheduler,
    MemoryStep,
    MemoryStore,
    Message,
    ProfileEntry,
    Recall,
    Settings,
    StoreError,
    open_store,
)
from memlane.doors import MEMORY_MODEL_TAG, memory_context
from memlane.middleware import MemoryMiddleware
from memlane.models import HOW_TO_CONFIGURE, chat_model_from_settings, describe_model_error, memory_model_from_settings
from memlane.persistence import MemoryAgentContext
from memlane.recall import RecallParts
from memlane.tools import forget_memory
from memlane.turns import TurnService
from memlane.ui import panel_store
from memlane.ui.chat import history_messages
from memlane.ui.sample import SAMPLE_USER, load_sample

logger = logging.getLogger(__name__)

REPLY_NODE = "model"  # the step of a `create_agent` agent that calls the reply model


class ReplyFailed(Exception):
    """The chat model could not answer; the message says what happened and what to do."""


@dataclass
class MemoryStatus:
    """What the app shows under the chat about the user's memory work."""

    text: str = ""
    version: int = 0  # bumped when the memory panel should refresh
    busy: bool = False
    running: tuple[str, ...] = ()  # the memory-graph steps in progress (drawn on the diagram)
    done: tuple[str, ...] = ()  # the steps the current or last run finished
    progress: int = 0  # bumped when `running` / `done` change
    titles: int = 0  # bumped when a session got its title (the session list refreshes)


def describe_result(outcome: MemoryRunResult | BaseException) -> str:
    if isinstance(outcome, BaseException):
        return f"memory run failed: {outcome}"
    if outcome.skipped_reason and not outcome.changed:
        return f"remembered nothing new ({outcome.skipped_reason})"
    parts = [
        f"{len(ids)} {label}"
        for ids, label in ((outcome.updated, "updated"), (outcome.added, "added"), (outcome.deleted, "deleted"))
        if ids
    ]
    if outcome.event_id:
        parts.append("1 event")
    return "remembered: " + (", ".join(parts) if parts else "no profile change")


def is_reply_token(metadata: dict[str, Any]) -> bool:
    """Whether a streamed piece comes from the reply model: the agent's model step, and not a
    memory-model call made inside it (the follow-up rewrite is tagged, and not streamed at all)."""
    return metadata.get("langgraph_node") == REPLY_NODE and MEMORY_MODEL_TAG not in (metadata.get("tags") or ())


@dataclass
class ChatService:
    """The app's back end: one store, one scheduler, one agent per persona."""

    settings: Settings
    chat_model: BaseChatModel | None = None
    memory_model: BaseChatModel | None = None
    store: MemoryStore | None = None
    statuses: dict[str, MemoryStatus] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.chat_model = self.chat_model or chat_model_from_settings(self.settings.models)
        self.memory_model = self.memory_model or memory_model_from_settings(self.settings.models) or self.chat_model
        self.scheduler: MemoryScheduler | None = None
        self.turns: TurnService | None = None  # recall, saving, titles, topic checks: the same as every door's
        self.middleware: MemoryMiddleware | None = None
        self._agents: dict[str, Any] = {}
        self._started: asyncio.Lock | None = None
        self._ready = False
        self._owns_store = self.store is None
        self.start_error: StoreError | None = None  # why warm_up could not start the store
        self._parked_notes: dict[str, str] = {}  # user → the parked-runs note, read with the panel
        self.sample_delay = 0.15  # seconds per scripted answer of the sample's memory runs: the steps show

    @property
    def started_store(self) -> MemoryStore:
        """The store, once `ensure_started` has opened it."""
        if self.store is None:
            raise RuntimeError("the chat service is not started: await ensure_started() first")
        return self.store

    @property
    def started_turns(self) -> TurnService:
        """The turn service, once `ensure_started` has built it."""
        if self.turns is None:
            raise RuntimeError("the chat service is not started: await ensure_started() first")
        return self.turns

    @property
    def started_middleware(self) -> MemoryMiddleware:
        """The agent middleware, once `ensure_started` has built it."""
        if self.middleware is None:
            raise RuntimeError("the chat service is not started: await ensure_started() first")
        return self.middleware

    @property
    def has_chat_model(self) -> bool:
        return self.chat_model is not None

    # -- life cycle -----------------------------------------------------------------------
    async def ensure_started(self) -> None:
        if self._ready:
            return
        self._started = self._started or asyncio.Lock()
        async with self._started:
            if self._ready:
                return
            if self.store is None:
                self.store = await open_store(self.settings)
            self.turns = await TurnService.started(
                self.store,
                recall_parts=RecallParts.of(self.settings),
                turns=self.settings.turns,
                context=memory_context(self.settings, self.store, self.memory_model)
                if self.memory_model is not None
                else None,
                on_result=self._on_result,
                on_step=self._on_step,
                on_saved=self._on_saved,
                on_failed=self._on_failed,
                on_topic_shift=self._on_topic_shift,
                on_title=self._on_title,
            )
            self.scheduler = self.started_turns.scheduler
            self.middleware = MemoryMiddleware(self.started_store, turns=self.turns)
            self._ready = True

    async def warm_up(self) -> None:
        """Start the store (and the embedded Redis), the scheduler and the embeddings now, so
        the first message does not wait for them."""
        try:
            await self.ensure_started()
            await self.started_store.search_memories("memlane-warm-up", "warm up", limit=1)  # loads the embedding model
        except StoreError as error:  # kept for the caller: raised here, Gradio would only say "startup failed"
            self.start_error = error

    async def aclose(self) -> None:
        if self.turns is not None:
            await self.turns.aclose(30)
        if self.store is not None and self._owns_store:
            await self.store.aclose()
        self._ready = False

    def status(self, user_id: str) -> MemoryStatus:
        return self.statuses.setdefault(user_id, MemoryStatus())

    def _bump(self, user_id: str, text: str, *, busy: bool) -> None:
        status = self.status(user_id)
        status.text, status.busy, status.version = text, busy, status.version + 1

    async def _on_saved(self, identity: MemoryAgentContext, turn: list[Message], queued: bool) -> None:
        if self.scheduler is not None and self.scheduler.is_busy(identity.user_id):
            self._bump(identity.user_id, "remembering…", busy=True)  # its result replaces this
            return
        if queued:
            return  # the run already finished and reported
        decision = self.scheduler.last_decision(identity.user_id) if self.scheduler else None
        if decision is not None:
            text = f"saved · {decision.buffer_tokens}/{decision.threshold_tokens} tokens until the next memory run"
        else:
            text = "saved (no memory model: the profile is not updated)"
        self._bump(identity.user_id, text, busy=False)

    async def _on_failed(self, identity: MemoryAgentContext, error: BaseException) -> None:
        kept = len(self.started_middleware.persistence.unsaved.get(identity.user_id, [])) if self.middleware else 0
        text = f"memory unavailable: {error}"
        if kept:
            text += f" ({kept} messages kept; they are saved with the next turn)"
        self._bump(identity.user_id, text, busy=False)

    async def _on_result(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        await self.refresh_parked(user_id)  # a failure was just parked, or a success resolved parked runs
        self._bump(user_id, describe_result(outcome), busy=False)
        status = self.status(user_id)
        if status.running:  # a failed run may end without its other branch reporting
            status.running, status.progress = (), status.progress + 1

    # -- health: paused dependencies and parked runs, after the status text ----------------------
    def health_line(self) -> str:
        """The dependencies a circuit breaker pauses now ("the memory model paused after 5
        failures, retry in 42s"), or "" when every one answers."""
        breaker = self.scheduler.context.model_breaker if self.scheduler is not None else None
        statuses = [breaker.status()] if breaker is not None else []
        statuses += self.store.health() if self.store is not None else []
        return " · ".join(text for text in (status.describe() for status in statuses) if text)

    async def refresh_parked(self, user_id: str) -> str:
        """Read the user's parked runs into the line `status_line` shows."""
        runs = await self.store.parked_runs(user_id) if self.store is not None else []
        note = ""
        if runs:
            count = f"{len(runs)} memory run{'s' if len(runs) > 1 else ''}"
            note = f"{count} parked after failing (last: {runs[-1].error[:120]}); Remember now tries again"
        self._parked_notes[user_id] = note
        return note

    def status_line(self, user_id: str) -> str:
        """What the status bar shows: the status text, paused dependencies, parked runs."""
        parts = [self.status(user_id).text, self.health_line(), self._parked_notes.get(user_id, "")]
        return " · ".join(part for part in parts if part)

    # -- chat -------------------------------------------------------------------------------
    def _agent(self, persona: str) -> Any:
        if persona not in self._agents:
            if len(self._agents) >= 16:  # personas edited over and over: keep the newest few
                self._agents.clear()
            if self.chat_model is None:
                raise RuntimeError("no chat model is configured: the app answers how to configure one instead")
            self._agents[persona] = create_agent(
                self.chat_model,
                middleware=[self.started_middleware],
                context_schema=MemoryAgentContext,
                system_prompt=persona or None,
            )
        return self._agents[persona]

    async def stream_reply(
        self,
        user_id: str,
        session_id: str,
        text: str,
        history: list[dict[str, Any]],
        *,
        persona: str = "",
        recall_enabled: bool = True,
        auto_save_enabled: bool = True,
        speaker: str | None = None,
        earlier_lines: Sequence[tuple[str, str]] = (),
    ) -> AsyncIterator[str]:
        """The reply to `text`, as the growing answer after each streamed piece.

        `history` is the chat so far in any shape Gradio gives it (see `history_messages`).
        `speaker`: who says `text` when it is not the user (朋友A in a group chat): the line is
        stored under that name, and its facts are that person's, not the user's.
        `earlier_lines`: (speaker, text) of the lines said before `text` in the same message (a group
        chat pasted whole; "" the user), each stored as its own line, before `text`.
        Raises `ReplyFailed` with a sentence for the user when the model call fails.
        """
        await self.ensure_started()
        if self.chat_model is None:
            yield HOW_TO_CONFIGURE
            return
        message_id = f"msg-{uuid.uuid4().hex}"  # the id it is stored under (the topic check finds it by it)
        messages = [
            *history_messages(history),
            *(HumanMessage(line, name=who or None) for who, line in earlier_lines),
            HumanMessage(text, id=message_id, name=speaker or None),
        ]
        context = MemoryAgentContext(
            user_id=user_id, session_id=session_id, recall_enabled=recall_enabled, auto_save_enabled=auto_save_enabled
        )
        answer = ""
        version_before = self.status(user_id).version
        self.started_middleware.last_recall.pop(user_id, None)  # `used_memories` reads this turn's, not an older one
        try:
            async for chunk, metadata in self._agent(persona).astream(
                {"messages": messages}, context=context, stream_mode="messages"
            ):
                if isinstance(chunk, AIMessageChunk) and chunk.content and is_reply_token(metadata):
                    answer += str(chunk.text)
                    yield answer
        except Exception as error:  # shown in the chat; one log line, not a traceback per layer
            reason = describe_model_error(error, self.chat_model, self.settings.models)
            logger.warning("the reply to %s failed: %s", user_id, reason)
            raise ReplyFailed(reason) from error
        if auto_save_enabled and self.status(user_id).version == version_before:
            self._bump(user_id, "saving…", busy=True)  # unless the save already reported

    async def remember_now(self, user_id: str) -> str:
        await self.ensure_started()
        queued = await self.started_turns.remember_now(user_id)
        if queued is None:
            return "no memory model configured"
        if queued:
            self._bump(user_id, "remembering…", busy=True)
            return "remembering…"
        return "nothing new to remember"

    async def end_session(self, user_id: str, session_id: str) -> None:
        """The session ended ("New session"): its run and its summary are asked for in the
        background, once its turns are saved, so the new session opens at once."""
        await self.ensure_started()
        self.started_turns.in_background(self._end_session(user_id, session_id))

    async def _end_session(self, user_id: str, session_id: str) -> None:
        try:
            if await self.started_turns.end_session(user_id, session_id):
                self._bump(user_id, "remembering…", busy=True)
        except Exception:  # the session's turns stay in the buffer: the next run takes them
            logger.exception("ending session %s of %s failed", session_id, user_id)

    # -- memory panel -------------------------------------------------------------------------
    async def sessions(self, user_id: str) -> list[str]:
        await self.ensure_started()
        return await self.started_store.list_sessions(user_id)

    async def history(self, user_id: str, session_id: str) -> list[dict[str, str]]:
        await self.ensure_started()
        return await panel_store.history_lines(self.started_store, user_id, session_id)

    async def profile_rows(self, user_id: str) -> list[list[Any]]:
        await self.ensure_started()
        return await panel_store.profile_rows(self.started_store, user_id)

    async def timeline_markdown(self, user_id: str) -> str:
        await self.ensure_started()
        return await panel_store.timeline_markdown(self.started_store, user_id)

    async def search_rows(self, user_id: str, query: str) -> list[list[Any]]:
        await self.ensure_started()
        return await panel_store.search_rows(self.started_store, user_id, query)

    async def delete_entry(self, user_id: str, memory_id: str) -> str:
        await self.ensure_started()
        memory_id = memory_id.strip()
        if not memory_id:
            return "type the id of an entry (last column of the tables)"
        removed = await forget_memory(self.started_store, user_id, memory_id)
        self._bump(user_id, f"deleted {memory_id}" if removed else f"no entry {memory_id}", busy=False)
        return self.status(user_id).text

    async def forget_user(self, user_id: str) -> str:
        await self.ensure_started()
        if self.middleware is not None:
            await self.started_middleware.wait_idle()
        await self.wait_background()  # a title written after the delete would bring the user back
        if self.scheduler is not None:
            try:
                await self.scheduler.wait_idle(30)
            except TimeoutError:
                return "a memory run is still working; try again in a moment"
        removed = await self.started_store.delete_user(user_id)
        self._bump(user_id, f"forgot everything of {user_id} ({removed} keys)", busy=False)
        return self.status(user_id).text

    # -- the memories a reply used -------------------------------------------------------------
    def used_memories(self, user_id: str, session_id: str, text: str) -> Recall | None:
        """What recall put before the model for the reply to `text` just streamed; None when
        recall was off, failed, or found nothing."""
        recalled = self.middleware.last_recall.get(user_id) if self.middleware is not None else None
        if recalled is None or recalled.session_id != session_id or recalled.query.strip() != text.strip():
            return None
        return recalled if recalled.items else None

    # -- profile edits and history ---------------------------------------------------------------
    async def profile_entry(self, user_id: str, entry_id: str) -> ProfileEntry | None:
        """The entry with this id (or the id of its search memory, `profile:<id>`)."""
        await self.ensure_started()
        return await panel_store.profile_entry(self.started_store, user_id, entry_id)

    async def edit_entry(self, user_id: str, entry_id: str, content: str, confidence: float | None) -> str:
        """Change an entry's content and confidence as the user ("user" in its history).
        Returns what the status line shows: what was edited, or why nothing was."""
        await self.ensure_started()
        text = await panel_store.edit_profile_entry(self.started_store, user_id, entry_id, content, confidence)
        self._bump(user_id, text, busy=False)
        return text

    async def entry_history(self, user_id: str, entry_id: str) -> str:
        """The entry's revisions as a Markdown table (when, by whom, before and after)."""
        await self.ensure_started()
        return await panel_store.entry_history(self.started_store, user_id, entry_id)

    # -- sessions with titles ----------------------------------------------------------------------
    async def session_choices(self, user_id: str) -> list[tuple[str, str]]:
        """(title, session id) of the user's sessions, most recently active first; a session
        without a title yet is listed by its id."""
        await self.ensure_started()
        return await panel_store.session_choices(self.started_store, user_id)

    # -- after a reply (the turn service's hooks): the session's title, the topic check -----------
    async def wait_background(self, timeout: float | None = 30.0) -> None:
        """Wait for the saves, titles and topic checks started so far (tests, forget me, shutdown)."""
        if self.turns is not None:
            await self.started_turns.wait_idle(timeout)

    async def ensure_title(self, user_id: str, session_id: str) -> str | None:
        """`TurnService.ensure_title`: the session's title, once."""
        await self.ensure_started()
        return await self.started_turns.ensure_title(user_id, session_id)

    async def check_topic(self, user_id: str, message_id: str) -> bool:
        """`TurnService.check_topic`: a message that moves on remembers the turns before it."""
        await self.ensure_started()
        return await self.started_turns.check_topic(user_id, message_id)

    async def _on_topic_shift(self, user_id: str) -> None:
        self._bump(user_id, "new topic: remembering the conversation before it…", busy=True)

    async def _on_title(self, user_id: str, session_id: str, title: str) -> None:
        self.status(user_id).titles += 1

    # -- a memory run's steps -------------------------------------------------------------------
    async def _on_step(self, step: MemoryStep) -> None:
        status = self.status(step.user_id)
        status.running, status.done, status.progress = step.running, step.done, status.progress + 1
        if step.running:  # the status line shows it at the next poll; the panel waits for the result
            status.text, status.busy = f"remembering… step: {', '.join(step.running)}", True

    # -- the sample conversation -------------------------------------------------------------------
    async def load_sample(self) -> str:
        """Store the bundled sample chats for `SAMPLE_USER` and remember them with the
        scripted memory model (no model needed). Returns the status text."""
        await self.ensure_started()
        self._bump(SAMPLE_USER, "loading the sample conversation…", busy=True)
        try:
            loaded = await load_sample(
                self.started_store, self.settings, SAMPLE_USER, on_step=self._on_step, delay=self.sample_delay
            )
        except Exception as error:  # shown in the status line, like a failed memory run
            logger.exception("loading the sample conversation failed")
            self._bump(SAMPLE_USER, f"the sample could not be loaded: {error}", busy=False)
            return self.status(SAMPLE_USER).text
        if loaded.results:
            text = "sample loaded: " + "; ".join(describe_result(result) for result in loaded.results)
        else:
            text = "the sample is already loaded"
        self.status(SAMPLE_USER).titles += 1
        self._bump(SAMPLE_USER, text, busy=False)
        return text


def new_session_id() -> str:
    """A session id that reads when it began, unique: two "New session" clicks in one second
    had been given the same id, and the second one showed the first session again."""
    return time.strftime("session-%Y%m%d-%H%M%S-") + secrets.token_hex(3)
