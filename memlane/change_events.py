"""The store of `memlane serve` when webhooks are configured: the same store, each memory change it
makes told to `emit` after it is written (memlane/webhooks.py). One place for every door: the
memories API, MCP, the mem0 routes and the memory runs all write through it.

    added      a profile entry or a note (an event card) that was not there, a memory added directly,
               a fact held for review confirmed
    updated    an entry or a card written again, an entry edited
    deleted    an entry, a card, a message or a memory deleted by id, or replaced by a run
    forgotten  each record `forget` deleted or rewrote (the text it keeps, for a rewritten one)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from memlane.store.forget_report import ForgetReport
from memlane.store.ids import event_memory_id, message_memory_id, profile_memory_id
from memlane.store.protocols import ForgetConfirm, MemoryStore
from memlane.store.records import Memory, MemoryUpdate, ProfileEntry

logger = logging.getLogger(__name__)

Emit = Callable[[Any, str, Sequence[Mapping[str, Any]]], Awaitable[None]]  # (type, store user, memories)


def _entry(entry: ProfileEntry) -> dict[str, Any]:
    return {"id": profile_memory_id(entry.id), "kind": "profile", "text": entry.line}


def _gone(memory_id: str, kind: str) -> dict[str, Any]:
    return {"id": memory_id, "kind": kind, "text": None}


class ChangeEventStore:
    """`store`, telling `emit` what each of its writes changed (after the write; `emit` never raises)."""

    def __init__(self, store: MemoryStore, emit: Emit) -> None:
        self._store = store
        self._emit = emit

    def __getattr__(self, name: str) -> Any:  # everything else is the store's own
        return getattr(self._store, name)

    async def _told(self, kind: str, user_id: str, memories: Sequence[Mapping[str, Any]]) -> None:
        if memories:
            try:
                await self._emit(kind, user_id, memories)
            except Exception:  # the write stands whatever the events do
                logger.exception("the %s events of a change could not be queued", kind)

    async def apply_update(self, update: MemoryUpdate) -> None:
        before_entries = (
            {e.id for e in await self._store.get_profile(update.user_id)} if update.upsert_profile else set()
        )
        [before_event] = await self._store.get_events(update.user_id, [update.event.id]) if update.event else [None]
        await self._store.apply_update(update)
        added = [_entry(e) for e in update.upsert_profile if e.id not in before_entries]
        updated = [_entry(e) for e in update.upsert_profile if e.id in before_entries]
        if update.event is not None:
            card = {"id": event_memory_id(update.event.id), "kind": "event", "text": update.event.summary}
            (updated if before_event is not None else added).append(card)
        await self._told("memory.added", update.user_id, added)
        await self._told("memory.updated", update.user_id, updated)
        deleted = [_gone(profile_memory_id(entry_id), "profile") for entry_id in update.delete_profile_ids]
        await self._told("memory.deleted", update.user_id, deleted)

    async def edit_profile_entry(self, user_id: str, entry_id: str, **changes: Any) -> ProfileEntry | None:
        edited = await self._store.edit_profile_entry(user_id, entry_id, **changes)
        if edited is not None:
            await self._told("memory.updated", user_id, [_entry(edited)])
        return edited

    async def confirm_held_fact(self, user_id: str, held_id: str, *, actor: str = "user") -> ProfileEntry | None:
        """A held fact confirmed is a profile entry added (or its slot's entry updated); a held fact is
        no memory until then, so holding or dropping one tells nothing."""
        before = {entry.id for entry in await self._store.get_profile(user_id)}
        entry = await self._store.confirm_held_fact(user_id, held_id, actor=actor)
        if entry is not None:
            await self._told("memory.updated" if entry.id in before else "memory.added", user_id, [_entry(entry)])
        return entry

    async def delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str = "user") -> bool:
        deleted = await self._store.delete_profile_entry(user_id, entry_id, actor=actor)
        if deleted:
            await self._told("memory.deleted", user_id, [_gone(profile_memory_id(entry_id), "profile")])
        return deleted

    async def delete_event(self, user_id: str, event_id: str) -> bool:
        deleted = await self._store.delete_event(user_id, event_id)
        if deleted:
            await self._told("memory.deleted", user_id, [_gone(event_memory_id(event_id), "event")])
        return deleted

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        deleted = await self._store.delete_message(user_id, message_id)
        if deleted:
            await self._told("memory.deleted", user_id, [_gone(message_memory_id(message_id), "message")])
        return deleted

    async def delete_memory(self, user_id: str, memory_id: str) -> bool:
        deleted = await self._store.delete_memory(user_id, memory_id)
        if deleted:
            await self._told("memory.deleted", user_id, [_gone(memory_id, memory_id.partition(":")[0])])
        return deleted

    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        stored = await self._store.add_memories(memories)
        by_id = {memory.id: memory for memory in memories}
        for user_id in dict.fromkeys(memory.user_id for memory in memories):
            added = [
                {"id": m.id, "kind": m.kind, "text": m.text}
                for memory_id in stored
                if (m := by_id.get(memory_id)) is not None and m.user_id == user_id
            ]
            await self._told("memory.added", user_id, added)
        return stored

    async def forget(
        self,
        user_id: str,
        query: str,
        *,
        actor: str = "forget",
        confirm: ForgetConfirm | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        report = await self._store.forget(user_id, query, actor=actor, confirm=confirm, dry_run=dry_run)
        if not dry_run:
            forgotten = [
                {"id": record.id, "kind": record.kind, "action": record.action, "removed": record.removed}
                for record in report.records
            ]
            await self._told("memory.forgotten", user_id, forgotten)
        return report
