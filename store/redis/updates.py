"""The memory graph's one write: a run's `MemoryUpdate` applied in one transaction across the
profile (with its revisions), the search memories, the event and the cursor.

Each part queues its own keys on the transaction; everything slow (embedding, reading the
entries the revisions compare with) happens before it opens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlane.store.errors import StoreError
from memlane.store.ids import event_memory_id, message_memory_id, past_value_memory_id, profile_memory_id
from memlane.store.records import Event, Memory, MemoryUpdate, ProfileEntry, ProfileRevision
from memlane.store.redis.core import StorePart
from memlane.store.redis.events import Events
from memlane.store.redis.memories import Memories
from memlane.store.redis.messages import Messages
from memlane.store.redis.profile import Profile
from memlane.store.redis.quotas import Quotas, event_sizes, profile_sizes
from memlane.store.redis.retention import Retention
from memlane.store.redis.review import queue_held
from memlane.store.text.sameness import text_digest


@dataclass(eq=False, repr=False)
class Updates(StorePart):
    """`apply_update`: each part it writes to queues its own keys."""

    memories: Memories
    messages: Messages  # the cursor
    profile: Profile
    events: Events
    quotas: Quotas = field(kw_only=True)  # the user's quotas, checked before a record is added
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    async def apply_update(self, update: MemoryUpdate) -> None:
        user_id = update.user_id
        if not user_id:
            raise StoreError("a MemoryUpdate has an empty user_id: every update belongs to a user")
        foreign: list[ProfileEntry | Memory | Event] = [
            entry for entry in [*update.upsert_profile, *update.held_profile] if entry.user_id != user_id
        ]
        foreign += [memory for memory in update.memories if memory.user_id != user_id]
        if update.event is not None and update.event.user_id != user_id:
            foreign.append(update.event)
        if foreign:
            raise StoreError(f"a MemoryUpdate for user {user_id!r} holds records of another user")
        update = update.model_copy(
            update={
                "upsert_profile": [self.profile.redacted(entry) for entry in update.upsert_profile],
                "held_profile": [self.profile.redacted(entry) for entry in update.held_profile],
                "event": self.events.redacted(update.event) if update.event is not None else None,
            }
        )
        records = {**profile_sizes(update.upsert_profile), **event_sizes([update.event] if update.event else [])}
        await self.quotas.reserve(user_id, records)  # refused before anything is embedded or written
        revisions = await self.profile.revisions_of(update)
        past_values = [value for revision in revisions if (value := revision.past_value()) is not None]
        # embed before the transaction: nothing slow may sit inside it
        memory_rows = await self.memories.memory_rows([*update.memories, *(value.as_memory() for value in past_values)])
        superseded = await self._superseded_turns(update, revisions)
        pipe = self.client.pipeline(transaction=True)
        self.profile.queue_update(pipe, update, revisions)
        for entry in update.upsert_profile:  # a value that holds again is no longer a past one
            pipe.delete(self.layout.memory(user_id, past_value_memory_id(entry.id, entry.content)))
        for valid_until, memory_ids in superseded:
            self.memories.queue_valid_until(pipe, user_id, memory_ids, valid_until)
        for memory_id in update.delete_memory_ids:
            pipe.delete(self.layout.memory(user_id, memory_id))
        if update.event is not None:
            self.events.queue_write(pipe, user_id, update.event)
        queue_held(pipe, self.layout.review(user_id), update.held_profile)
        self.memories.queue_rows(pipe, memory_rows)
        for memory in update.memories:  # so that add_memories finds the same text (store/redis/repeats.py)
            if memory.kind != "message":
                pipe.hset(
                    self.layout.memory_texts(user_id), text_digest(memory.kind, memory.text, memory.metadata), memory.id
                )
        # every search entry whose record was written: an unchanged entry is not rewritten, but its
        # record's time started again (the entries' and the card's own are the records' ids)
        written = [
            *(memory.id for memory in update.memories),
            *(value.as_memory().id for value in past_values),
            *records,
        ]
        self.retention.queue_follow(pipe, user_id, list(dict.fromkeys(written)))
        self.retention.queue_owner(pipe, user_id)
        if update.delete_profile_ids and self.core.retention.has_quota:
            pipe.hdel(
                self.layout.usage(user_id),
                *(
                    self.layout.usage_field(user_id, profile_memory_id(entry_id))
                    for entry_id in update.delete_profile_ids
                ),
            )
        if update.advance_cursor_to is not None:
            await self.messages.queue_cursor_advance(pipe, user_id, update.advance_cursor_to)
        await self.core.execute_with_scripts(pipe)

    async def _superseded_turns(
        self, update: MemoryUpdate, revisions: list[ProfileRevision]
    ) -> list[tuple[float, list[str]]]:
        """Per replaced profile content: when it stopped holding, and the search memories to mark:
        the turns it came from (the new content's own turns are not among them: an UPDATE keeps
        the old sources and adds the new), and the event cards made of those turns alone (a card
        of a run that read more holds more than the replaced fact, and stays)."""
        marks = []
        for revision in revisions:
            if revision.valid_until is None:
                continue
            sources = set(revision.before_source_message_ids)
            cards = (
                [
                    event_memory_id(event.id)
                    for event in await self.events.list_events(
                        update.user_id, limit=200, since=revision.before_valid_from, until=revision.valid_until
                    )
                    if event.source_message_ids and set(event.source_message_ids) <= sources
                ]
                if sources and revision.before_valid_from is not None
                else []
            )
            memory_ids = await self.memories.still_holding(
                update.user_id, [*(message_memory_id(m) for m in revision.before_source_message_ids), *cards]
            )
            if memory_ids:
                marks.append((revision.valid_until, memory_ids))
        return marks
