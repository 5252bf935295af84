"""What the memory panel reads from the store and the profile edits it makes, without Gradio and
without the chat service's life cycle: each function takes the started store and a user.

The panel's tables (profile with past values, search hits best first, the session's lines), the
timeline's cards, the session list with titles, and an entry's edits and history. `ChatService`
(ui/service.py) starts the store and hands it here; ui/panel.py writes the Markdown.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memlane import MemoryHit, MemoryStore, ProfileEntry
from memlane.store.errors import InvalidInput
from memlane.store.ids import profile_memory_id
from memlane.ui.chat import shown_line
from memlane.ui.panel import event_markdown, history_markdown, item_markdown, when


def ranked_scores(hits: list[MemoryHit]) -> list[tuple[MemoryHit, float]]:
    """The hits in search's order, as search gave them (a statement before the question that asks
    for it: store/text/questions.py), each with the relevance every door shows (the measured
    chance it holds what was asked, of the query and that memory alone: never relative to the
    best hit or to the rest of the list; store/relevance.py)."""
    return [(hit, hit.relevance) for hit in hits]


def entry_id_of(entry_or_memory_id: str) -> str:
    """A profile entry's id from itself or from its search memory's id (`profile:<id>`)."""
    entry_or_memory_id = (entry_or_memory_id or "").strip()
    prefix = profile_memory_id("")
    return entry_or_memory_id[len(prefix) :] if entry_or_memory_id.startswith(prefix) else entry_or_memory_id


async def history_lines(store: MemoryStore, user_id: str, session_id: str) -> list[dict[str, str]]:
    """The session's last 100 user and assistant lines, as the chat shows them."""
    messages = await store.recent_messages(user_id, session_id, limit=100)
    return [
        {"role": m.role, "content": shown_line(m.content, m.name if m.role == "user" else None)}
        for m in messages
        if m.role in ("user", "assistant")
    ]


async def profile_rows(store: MemoryStore, user_id: str) -> list[list[Any]]:
    """The profile table: topic, subtopic, content with its past values, confidence, since, id."""
    entries, past_values = await asyncio.gather(store.get_profile(user_id), store.past_values(user_id))
    earlier: dict[str, list[str]] = {}
    for value in reversed(past_values):  # newest first
        earlier.setdefault(value.entry_id, []).append(f"earlier: {value.content}, until {when(value.valid_until)}")
    return [
        [
            e.topic,
            e.subtopic,
            "; ".join([e.content, *earlier.get(e.id, [])]),
            round(e.confidence, 2),
            when(e.since),
            profile_memory_id(e.id),
        ]
        for e in entries
    ]


async def timeline_markdown(store: MemoryStore, user_id: str) -> str:
    """The timeline: the newest event cards, then what the user's own agents saved."""
    events = await store.list_events(user_id, limit=30)
    items = sorted(await store.list_items(user_id), key=lambda item: item.updated_at, reverse=True)
    cards = [event_markdown(event) for event in events] or ["_No events yet: they appear after the first memory run._"]
    if items:  # what the user's own agents saved through MemlaneStore
        cards.append(
            "**Saved by your agent** (LangGraph store)\n\n" + "\n".join(item_markdown(item) for item in items[:30])
        )
    return "\n\n".join(cards)


async def search_rows(store: MemoryStore, user_id: str, query: str) -> list[list[Any]]:
    """The search table: the query's ten best hits with their relevance, kind, text, time, sources and id."""
    hits = await store.search_memories(user_id, query, limit=10) if query.strip() else []
    return [
        [
            round(score, 3),
            h.memory.kind
            + (f" · earlier, until {when(h.memory.valid_until)}" if h.memory.valid_until is not None else ""),
            h.memory.attributed_text,
            when(h.memory.created_at),
            ", ".join(h.memory.source_message_ids),
            h.memory.id,
        ]
        for h, score in ranked_scores(hits)
    ]


async def session_choices(store: MemoryStore, user_id: str) -> list[tuple[str, str]]:
    """(title, session id) of the user's sessions, most recently active first; a session
    without a title yet is listed by its id."""
    sessions = await store.list_sessions(user_id)
    titles = await store.session_titles(user_id) if sessions else {}
    return [(titles.get(session_id, session_id), session_id) for session_id in sessions]


async def profile_entry(store: MemoryStore, user_id: str, entry_id: str) -> ProfileEntry | None:
    """The entry with this id (or the id of its search memory, `profile:<id>`)."""
    wanted = entry_id_of(entry_id)
    return next((entry for entry in await store.get_profile(user_id) if entry.id == wanted), None)


async def edit_profile_entry(
    store: MemoryStore, user_id: str, entry_id: str, content: str, confidence: float | None
) -> str:
    """Change an entry's content and confidence as the user ("user" in its history).
    Returns what the status line shows: what was edited, or why nothing was."""
    entry = await profile_entry(store, user_id, entry_id)
    if entry is None:
        return "click a profile row to choose the entry to edit"
    content = " ".join((content or "").split())
    if not content:
        return "an entry needs some content; to remove it, use Delete entry"
    if confidence is not None and not 0.0 <= float(confidence) <= 1.0:
        return "confidence is a number between 0 and 1"
    try:
        edited = await store.edit_profile_entry(
            user_id,
            entry.id,
            content=content if content != entry.content else None,
            confidence=float(confidence) if confidence is not None and float(confidence) != entry.confidence else None,
            actor="user",
        )
    except InvalidInput as refused:  # too long, say: the store says what to change
        return str(refused)
    return f"edited {entry.topic} / {entry.subtopic}" if edited is not None else f"no entry {entry_id}"


async def entry_history(store: MemoryStore, user_id: str, entry_id: str) -> str:
    """The entry's revisions as a Markdown table (when, by whom, before and after); "" without an id."""
    if not entry_id_of(entry_id):
        return ""
    return history_markdown(await store.profile_history(user_id, entry_id_of(entry_id)))
