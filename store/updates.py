"""The memory graph's one write: a run's `MemoryUpdate` applied in one transaction across the
profile (with its revisions), the search memories, the event and the cursor.

Each part queues its own keys on the transaction; everything slow (embedding, reading the
entries the revisions compare with) happens before it opens.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlane.store.base import MemoryUpdate, StoreError
from memlane.store.core import StorePart
from memlane.store.events import Events
from memlane.store.memories import Memories
from memlane.store.messages import Messages
from memlane.store.profile import Profile


@dataclass(eq=False, repr=False)
class Updates(StorePart):
    """`apply_update`: each part it writes to queues its own keys."""

    memories: Memories
    messages: Messages  # the cursor
    profile: Profile
    events: Events

    async def apply_update(self, update: MemoryUpdate) -> None:
        user_id = update.user_id
        if not user_id:
            raise StoreError("a MemoryUpdate has an empty user_id: every update belongs to a user")
        foreign = [item for item in [*update.upsert_profile, *update.memories] if item.user_id != user_id]
        if update.event is not None and update.event.user_id != user_id:
            foreign.append(update.event)  # type: ignore[arg-type]
        if foreign:
            raise StoreError(f"a MemoryUpdate for user {user_id!r} holds records of another user")
        update = update.model_copy(
            update={
                "upsert_profile": [self.profile.redacted(entry) for entry in update.upsert_profile],
                "event": self.events.redacted(update.event) if update.event is not None else None,
            }
        )
        # embed before the transaction: nothing slow may sit inside it
        memory_rows = await self.memories.memory_rows(update.memories)
        revisions = await self.profile.revisions_of(update)
        pipe = self.client.pipeline(transaction=True)
        self.profile.queue_update(pipe, update, revisions)
        for memory_id in update.delete_memory_ids:
            pipe.delete(self.layout.memory(user_id, memory_id))
        if update.event is not None:
            self.events.queue_write(pipe, user_id, update.event)
        self.memories.queue_rows(pipe, memory_rows)
        if update.advance_cursor_to is not None:
            await self.messages.queue_cursor_advance(pipe, user_id, update.advance_cursor_to)
        await self.core.execute_with_scripts(pipe)
