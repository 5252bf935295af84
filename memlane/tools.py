"""Memory tools an agent can call: search memories, remember this, forget this.

The user comes from the run, like the middleware's (`MemoryAgentContext` or
`configurable`), so a model can never name another user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, tool

from memlane.config import Settings, get_settings
from memlane.middleware import resolve_identity
from memlane.recall import relevance
from memlane.store.base import (
    Event,
    Memory,
    MemoryStore,
    MemoryUpdate,
    ProfileEntry,
    event_memory_id,
    profile_memory_id,
    stable_id,
)

REMEMBERED_TAG = "remembered"


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d")


def memory_tools(store: MemoryStore, settings: Settings | None = None) -> list[BaseTool]:
    """`[search_memories, remember, forget]` bound to `store`."""
    settings = settings or get_settings()

    @tool
    async def search_memories(query: str, runtime: ToolRuntime[Any], limit: int = 5) -> str:
        """Search what you remember about the user (profile, past events, past messages).

        Time words in the query ("yesterday", "last week", "on April 27th", "上周", "5月2日")
        favour what was said then. Returns one memory per line: its id, kind, date,
        relevance and text, with the speaker when it was not the user ("朋友A: ...").
        """
        identity = resolve_identity(runtime.context, settings)
        hits = await store.search_memories(identity.user_id, query, limit=max(1, min(limit, 20)))
        if not hits:
            return "no memories found"
        return "\n".join(
            f"[{hit.memory.id}] ({hit.memory.kind}, {_day(hit.memory.created_at)}, {relevance(hit):.2f}) "
            f"{hit.memory.attributed_text}"
            for hit in hits
        )

    @tool
    async def remember(text: str, runtime: ToolRuntime[Any], topic: str = "", subtopic: str = "") -> str:
        """Remember something about the user for later conversations.

        With a topic and subtopic (e.g. "diet", "coffee") it becomes a profile fact,
        replacing what that slot held; without them it is kept as a note.
        """
        identity = resolve_identity(runtime.context, settings)
        text = text.strip()
        if not text:
            return "nothing to remember: the text is empty"
        if topic.strip() and subtopic.strip():
            entry = ProfileEntry(user_id=identity.user_id, topic=topic, subtopic=subtopic, content=text, confidence=0.9)
            memory = Memory(
                id=profile_memory_id(entry.id),
                user_id=identity.user_id,
                kind="profile",
                text=f"{entry.topic} / {entry.subtopic}: {entry.content}",
                ref_id=entry.id,
            )
            await store.apply_update(MemoryUpdate(user_id=identity.user_id, upsert_profile=[entry], memories=[memory]))
            return f"remembered as profile {entry.topic} / {entry.subtopic} [{memory.id}]"
        event = Event(
            id=stable_id("remember", identity.user_id, text),
            user_id=identity.user_id,
            summary=text,
            tags=[REMEMBERED_TAG],
            session_ids=[identity.session_id],
        )
        memory = Memory(
            id=event_memory_id(event.id),
            user_id=identity.user_id,
            kind="event",
            text=text,
            session_id=identity.session_id,
            ref_id=event.id,
        )
        await store.apply_update(MemoryUpdate(user_id=identity.user_id, event=event, memories=[memory]))
        return f"remembered [{memory.id}]"

    @tool
    async def forget(memory_id: str, runtime: ToolRuntime[Any]) -> str:
        """Forget one memory by the id `search_memories` showed in brackets."""
        identity = resolve_identity(runtime.context, settings)
        removed = await forget_memory(store, identity.user_id, memory_id.strip().strip("[]"))
        return f"forgot [{memory_id}]" if removed else f"no memory [{memory_id}] to forget"

    return [search_memories, remember, forget]


async def forget_memory(store: MemoryStore, user_id: str, memory_id: str) -> bool:
    """Delete one memory; a profile or event memory takes its entry or event card with it."""
    if memory_id.startswith("profile:"):
        return await store.delete_profile_entry(user_id, memory_id.removeprefix("profile:"))
    if memory_id.startswith("event:"):
        return await store.delete_event(user_id, memory_id.removeprefix("event:"))
    return await store.delete_memory(user_id, memory_id)
