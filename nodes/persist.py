"""Step 8: write what the run learned in one idempotent `MemoryUpdate`, then the cursor moves.

A changed entry holds from when its fact was said (`valid_from`: its newest source message);
the store keeps the content an UPDATE replaced as a dated past value.

Ids are deterministic: profile entries by (user, topic, subtopic), the event by the
user and its source message ids, vector memories by the record they mirror. A run
delivered twice, or re-run after a crash, overwrites instead of duplicating.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from memlane.nodes.extract import ProfileFact
from memlane.store.ids import stable_id
from memlane.store.protocols import ProfileStore
from memlane.store.records import Event, MemoryUpdate, Message, ProfileChange, ProfileEntry


class MemoryRunResult(BaseModel):
    """What one memory-graph run changed."""

    user_id: str
    added: list[str] = Field(default_factory=list, description="ids of new profile entries")
    updated: list[str] = Field(default_factory=list, description="ids of changed profile entries")
    deleted: list[str] = Field(default_factory=list, description="ids of removed profile entries")
    event_id: str | None = None
    summary: str = ""
    tags: list[str] = Field(default_factory=list)
    profile_delta: list[ProfileChange] = Field(default_factory=list)
    processed_through_seq: int | None = Field(default=None, description="the cursor after the run")
    message_count: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    notes: list[str] = Field(default_factory=list, description="items skipped and why")
    skipped_reason: str | None = Field(default=None, description="why nothing was learned, if so")
    windows: int = Field(default=1, description="graph runs the buffer took, oldest window first (graph/run.py)")
    event_ids: list[str] = Field(default_factory=list, description="the event card of each window that made one")
    model: str | None = Field(default=None, description="the memory model that ran it (of `memory_models`, in order)")
    model_index: int = Field(default=0, description="its place in the fallback chain: 0 the memory model, 1 the next")

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted or self.event_id)


def event_id_for(user_id: str, messages: Sequence[Message]) -> str:
    return stable_id("event", user_id, *[message.id for message in messages])


def profile_delta(before: Sequence[ProfileEntry], after: Sequence[ProfileEntry]) -> list[ProfileChange]:
    """Adds, updates and deletes that turn `before` into `after`."""
    old = {entry.id: entry for entry in before}
    new = {entry.id: entry for entry in after}
    changes: list[ProfileChange] = []
    for entry_id, entry in new.items():
        previous = old.get(entry_id)
        if previous is None:
            changes.append(
                ProfileChange(
                    action="add",
                    entry_id=entry_id,
                    topic=entry.topic,
                    subtopic=entry.subtopic,
                    content=entry.content,
                )
            )
        elif previous.content != entry.content:
            changes.append(
                ProfileChange(
                    action="update",
                    entry_id=entry_id,
                    topic=entry.topic,
                    subtopic=entry.subtopic,
                    content=entry.content,
                    previous_content=previous.content,
                )
            )
    for entry_id, entry in old.items():
        if entry_id not in new:
            changes.append(
                ProfileChange(
                    action="delete",
                    entry_id=entry_id,
                    topic=entry.topic,
                    subtopic=entry.subtopic,
                    previous_content=entry.content,
                )
            )
    return changes


def said_at(entry: ProfileEntry, messages: Sequence[Message], previous: ProfileEntry | None = None) -> ProfileEntry:
    """The entry with `valid_from` set to when its fact was said: the newest of `messages` among
    its sources (the run's wall clock would date a fact by when the graph happened to run). An
    entry that only grew (an APPEND: the previous content still in it) holds since it did."""
    if previous is not None and previous.content in entry.content:
        return entry.model_copy(update={"valid_from": previous.since})
    times = [message.created_at for message in messages if message.id in set(entry.source_message_ids)]
    if not times:
        return entry
    return entry.model_copy(update={"valid_from": max(times)})


def held_entry(user_id: str, fact: ProfileFact, messages: Sequence[Message]) -> ProfileEntry:
    """The profile entry a held fact becomes once the user confirms it, dated when it was said."""
    entry = ProfileEntry(
        user_id=user_id,
        topic=fact.topic,
        subtopic=fact.subtopic,
        content=fact.content,
        confidence=fact.confidence,
        source_message_ids=fact.source_message_ids,
        importance=fact.importance,
    )
    return said_at(entry, messages)


def build_update(
    user_id: str,
    messages: Sequence[Message],
    chat: Sequence[Message],
    summary: str,
    tags: Sequence[str],
    before: Sequence[ProfileEntry],
    after: Sequence[ProfileEntry],
    *,
    held: Sequence[ProfileFact] = (),
) -> tuple[MemoryUpdate, list[ProfileChange]]:
    """The run's one write. `messages` is everything consumed, `chat` what the model read; `held`
    the facts under memory_min_confidence, kept for review."""
    seqs = [message.seq for message in messages if message.seq is not None]
    cursor = max(seqs) if seqs else None
    if not summary:
        return MemoryUpdate(user_id=user_id, advance_cursor_to=cursor), []
    changes = profile_delta(before, after)
    changed_ids = {change.entry_id for change in changes if change.action != "delete"}
    deleted_ids = [change.entry_id for change in changes if change.action == "delete"]
    previous = {entry.id: entry for entry in before}
    upserts = [said_at(entry, messages, previous.get(entry.id)) for entry in after if entry.id in changed_ids]
    said = [message.created_at for message in chat] or [message.created_at for message in messages]
    event = Event(
        id=event_id_for(user_id, messages),
        user_id=user_id,
        # when it happened: the newest turn the model read (a backlog or an import remembered
        # today is dated by its conversation, and is older than what was said after it)
        **({"created_at": max(said)} if said else {}),
        summary=summary,
        tags=list(tags),
        profile_delta=changes,
        session_ids=list(dict.fromkeys(message.session_id for message in chat)),
        # every message the run consumed (the cursor moves past them all), not only those the
        # model read (blank ones are dropped): a turn is accounted for by exactly one card
        source_message_ids=list(dict.fromkeys(message.id for message in messages)),
    )
    memories = [entry.as_memory() for entry in upserts]
    memories.append(event.as_memory())
    update = MemoryUpdate(
        user_id=user_id,
        upsert_profile=upserts,
        delete_profile_ids=deleted_ids,
        event=event,
        memories=memories,
        # the store deletes a deleted entry's `profile_memory_id` memory with it
        advance_cursor_to=cursor,
        held_profile=[held_entry(user_id, fact, messages) for fact in held],
    )
    return update, changes


async def persist_run(store: ProfileStore, update: MemoryUpdate, changes: Sequence[ProfileChange]) -> MemoryRunResult:
    """Apply the update in one store call; returns what changed."""
    await store.apply_update(update)
    return MemoryRunResult(
        user_id=update.user_id,
        added=[change.entry_id for change in changes if change.action == "add"],
        updated=[change.entry_id for change in changes if change.action == "update"],
        deleted=[change.entry_id for change in changes if change.action == "delete"],
        event_id=update.event.id if update.event else None,
        event_ids=[update.event.id] if update.event else [],
        summary=update.event.summary if update.event else "",
        tags=update.event.tags if update.event else [],
        profile_delta=list(changes),
        processed_through_seq=update.advance_cursor_to,
    )
