"""What the chat app does, without Gradio: reply turns, memory status, the memory panel.

Everything async runs on the app server's event loop: the store, the scheduler and its
worker are started lazily by the first request (`ensure_started`), so `build_app` can be
called anywhere and the app can be launched in a thread (as the tests do).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, AsyncIterator

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage

from memlane import MemoryStore, Message, Settings, StoreError, open_store
from memlane.graph import MemoryContext, MemoryRunResult, MemoryScheduler
from memlane.middleware import MemoryAgentContext, MemoryMiddleware
from memlane.models import HOW_TO_CONFIGURE, chat_model_from_settings, describe_model_error, memory_model_from_settings
from memlane.recall import relevance
from memlane.store.base import profile_memory_id
from memlane.tools import forget_memory

logger = logging.getLogger(__name__)


class ReplyFailed(Exception):
    """The chat model could not answer; the message says what happened and what to do."""


# the metadata id of a chat message that reports a failed reply: shown, never sent to the model
REPLY_FAILED_ID = "memlane-reply-failed"


@dataclass
class MemoryStatus:
    """What the app shows under the chat about the user's memory work."""

    text: str = ""
    version: int = 0  # bumped when the memory panel should refresh
    busy: bool = False


def describe_result(outcome: MemoryRunResult | BaseException) -> str:
    if isinstance(outcome, BaseException):
        return f"memory run failed: {outcome}"
    if outcome.skipped_reason and not outcome.changed:
        return f"remembered nothing new ({outcome.skipped_reason})"
    parts = [f"{len(ids)} {label}" for ids, label in ((outcome.updated, "updated"), (outcome.added, "added"), (outcome.deleted, "deleted")) if ids]
    if outcome.event_id:
        parts.append("1 event")
    return "remembered: " + (", ".join(parts) if parts else "no profile change")


def content_text(content: Any) -> str:
    """The text of a chat message's content in any shape Gradio gives it.

    Gradio 6 hands content back as a list of blocks (`{"type": "text", "text": ...}`, files,
    components); older shapes are a plain string or one block. A file or component is not sent
    to the model: a note in its place says it was there.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(text for text in (content_text(block) for block in content) if text)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if content.get("type") == "file" or "file" in content or "path" in content:
            file = content.get("file") if isinstance(content.get("file"), dict) else content
            name = file.get("orig_name") or os.path.basename(str(file.get("path") or "")) or "a file"
            return f"[{name} was attached here; its contents are not sent to the model]"
        if content.get("type") == "component":
            return f"[a {content.get('component', 'component')} was shown here; it is not sent to the model]"
        return ""
    return str(content)


def history_messages(history: list[dict[str, Any]]) -> list[BaseMessage]:
    """The chat's earlier turns as LangChain messages, whatever the shape of their content."""
    messages: list[BaseMessage] = []
    for item in history or []:
        role = item.get("role") if isinstance(item, dict) else None
        if role not in ("user", "assistant") or (item.get("metadata") or {}).get("id") == REPLY_FAILED_ID:
            continue
        text = content_text(item.get("content")).strip()
        if text:
            messages.append(HumanMessage(text) if role == "user" else AIMessage(text))
    return messages


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


@dataclass
class ChatService:
    """The app's back end: one store, one scheduler, one agent per persona."""

    settings: Settings
    chat_model: BaseChatModel | None = None
    memory_model: BaseChatModel | None = None
    store: MemoryStore | None = None
    statuses: dict[str, MemoryStatus] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.chat_model = self.chat_model or chat_model_from_settings(self.settings)
        self.memory_model = self.memory_model or memory_model_from_settings(self.settings) or self.chat_model
        self.scheduler: MemoryScheduler | None = None
        self.middleware: MemoryMiddleware | None = None
        self._agents: dict[str, Any] = {}
        self._started: asyncio.Lock | None = None
        self._ready = False
        self._owns_store = self.store is None
        self.start_error: StoreError | None = None  # why warm_up could not start the store

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
            if self.memory_model is not None:
                context = MemoryContext(store=self.store, llm=self.memory_model, settings=self.settings)
                # runs queue in the store's Redis: a run cut off by a restart is picked up again
                docket_url = self.settings.memory_docket_url or getattr(self.store, "url", None)
                self.scheduler = await MemoryScheduler(
                    context, docket_url=docket_url, on_result=self._on_result
                ).__aenter__()
            self.middleware = MemoryMiddleware(
                self.store,
                scheduler=self.scheduler,
                settings=self.settings,
                on_saved=self._on_saved,
                on_failed=self._on_failed,
            )
            self._ready = True

    async def warm_up(self) -> None:
        """Start the store (and the embedded Redis), the scheduler and the embeddings now, so
        the first message does not wait for them."""
        try:
            await self.ensure_started()
            await self.store.search_memories("memlane-warm-up", "warm up", limit=1)  # loads the embedding model
        except StoreError as error:  # kept for the caller: raised here, Gradio would only say "startup failed"
            self.start_error = error

    async def aclose(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.__aexit__(None, None, None)
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
            text = f"saved · {decision.buffer_tokens}/{self.settings.memory_buffer_tokens} tokens until the next memory run"
        else:
            text = "saved (no memory model: the profile is not updated)"
        self._bump(identity.user_id, text, busy=False)

    async def _on_failed(self, identity: MemoryAgentContext, error: BaseException) -> None:
        kept = len(self.middleware.persistence.unsaved.get(identity.user_id, [])) if self.middleware else 0
        text = f"memory unavailable: {error}"
        if kept:
            text += f" ({kept} messages kept; they are saved with the next turn)"
        self._bump(identity.user_id, text, busy=False)

    async def _on_result(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        self._bump(user_id, describe_result(outcome), busy=False)

    # -- chat -------------------------------------------------------------------------------
    def _agent(self, persona: str) -> Any:
        if persona not in self._agents:
            if len(self._agents) >= 16:  # personas edited over and over: keep the newest few
                self._agents.clear()
            self._agents[persona] = create_agent(
                self.chat_model, middleware=[self.middleware], context_schema=MemoryAgentContext, system_prompt=persona or None
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
    ) -> AsyncIterator[str]:
        """The reply to `text`, as the growing answer after each streamed piece.

        `history` is the chat so far in any shape Gradio gives it (see `history_messages`).
        Raises `ReplyFailed` with a sentence for the user when the model call fails.
        """
        await self.ensure_started()
        if self.chat_model is None:
            yield HOW_TO_CONFIGURE
            return
        messages = [*history_messages(history), HumanMessage(text)]
        context = MemoryAgentContext(
            user_id=user_id, session_id=session_id, recall_enabled=recall_enabled, auto_save_enabled=auto_save_enabled
        )
        answer = ""
        version_before = self.status(user_id).version
        try:
            async for chunk, _meta in self._agent(persona).astream(
                {"messages": messages}, context=context, stream_mode="messages"
            ):
                if isinstance(chunk, AIMessageChunk) and chunk.content:
                    answer += str(chunk.text)
                    yield answer
        except Exception as error:  # shown in the chat; one log line, not a traceback per layer
            reason = describe_model_error(error, self.chat_model, self.settings)
            logger.warning("the reply to %s failed: %s", user_id, reason)
            raise ReplyFailed(reason) from error
        if auto_save_enabled and self.status(user_id).version == version_before:
            self._bump(user_id, "saving…", busy=True)  # unless the save already reported

    async def remember_now(self, user_id: str) -> str:
        await self.ensure_started()
        if self.scheduler is None:
            return "no memory model configured"
        await self.middleware.wait_idle()
        if await self.scheduler.notify(user_id, flush=True):
            self._bump(user_id, "remembering…", busy=True)
            return "remembering…"
        return "nothing new to remember"

    async def end_session(self, user_id: str, session_id: str) -> None:
        await self.ensure_started()
        if self.scheduler is not None and await self.scheduler.notify(user_id, session_ended=True):
            await self.scheduler.update_session_summary(user_id, session_id)
            self._bump(user_id, "remembering…", busy=True)

    # -- memory panel -------------------------------------------------------------------------
    async def sessions(self, user_id: str) -> list[str]:
        await self.ensure_started()
        return await self.store.list_sessions(user_id)

    async def history(self, user_id: str, session_id: str) -> list[dict[str, str]]:
        await self.ensure_started()
        messages = await self.store.recent_messages(user_id, session_id, limit=100)
        return [{"role": m.role, "content": m.content} for m in messages if m.role in ("user", "assistant")]

    async def profile_rows(self, user_id: str) -> list[list[Any]]:
        await self.ensure_started()
        return [
            [e.topic, e.subtopic, e.content, round(e.confidence, 2), _when(e.updated_at), profile_memory_id(e.id)]
            for e in await self.store.get_profile(user_id)
        ]

    async def timeline_markdown(self, user_id: str) -> str:
        await self.ensure_started()
        events = await self.store.list_events(user_id, limit=30)
        if not events:
            return "_No events yet: they appear after the first memory run._"
        lines = []
        for event in events:
            tags = " ".join(f"`{tag}`" for tag in event.tags)
            lines.append(f"**{_when(event.created_at)}** {tags}  \n{event.summary}  \n<sub>event:{event.id}</sub>")
        return "\n\n".join(lines)

    async def search_rows(self, user_id: str, query: str) -> list[list[Any]]:
        await self.ensure_started()
        hits = await self.store.search_memories(user_id, query, limit=10) if query.strip() else []
        return [
            [round(relevance(h), 3), h.memory.kind, h.memory.attributed_text, ", ".join(h.memory.source_message_ids), h.memory.id]
            for h in hits
        ]

    async def delete_entry(self, user_id: str, memory_id: str) -> str:
        await self.ensure_started()
        memory_id = memory_id.strip()
        if not memory_id:
            return "type the id of an entry (last column of the tables)"
        removed = await forget_memory(self.store, user_id, memory_id)
        self._bump(user_id, f"deleted {memory_id}" if removed else f"no entry {memory_id}", busy=False)
        return self.status(user_id).text

    async def forget_user(self, user_id: str) -> str:
        await self.ensure_started()
        if self.middleware is not None:
            await self.middleware.wait_idle()
        if self.scheduler is not None:
            try:
                await self.scheduler.wait_idle(30)
            except TimeoutError:
                return "a memory run is still working; try again in a moment"
        removed = await self.store.delete_user(user_id)
        self._bump(user_id, f"forgot everything of {user_id} ({removed} keys)", busy=False)
        return self.status(user_id).text


def new_session_id() -> str:
    return time.strftime("session-%Y%m%d-%H%M%S")
