"""Events: the cards the memory graph writes (what one run learned), one hash per user (event
id → `Event` JSON) with a sorted set of their times, each made searchable by a memory.

Deleting a card here only deletes it; forgetting what its summary states elsewhere is
`store/redis/forgetting.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane.store.ids import event_memory_id, expired
from memlane.store.records import Event
from memlane.store.redis.core import StorePart
from memlane.store.redis.memories import Memories
from memlane.store.redis.retention import Retention


@dataclass(eq=False, repr=False)
class Events(StorePart):
    """Event cards and their times."""

    memories: Memories  # where an event's summary is made searchable
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    def redacted(self, event: Event) -> Event:
        """The event with its summary and its profile delta masked (its size checked first)."""
        self.core.check_text_size(event.summary, f"event {event.id!r}")
        delta = [
            change.model_copy(
                update={
                    "content": self.core.redact(change.content),
                    "previous_content": self.core.redact(change.previous_content)
                    if change.previous_content
                    else change.previous_content,
                }
            )
            for change in event.profile_delta
        ]
        return event.model_copy(
            update={
                "summary": self.core.redact(event.summary),
                "profile_delta": delta,
                "metadata": self.core.redact_value(event.metadata),
            }
        )

    async def list_events(
        self, user_id: str, *, limit: int = 50, since: float | None = None, until: float | None = None
    ) -> list[Event]:
        ids = await self._run(
            self.client.zrevrangebyscore(
                self.layout.event_times(user_id),
                "+inf" if until is None else until,
                "-inf" if since is None else since,
                start=0,
                num=min(max(limit, 0), 2**31),  # Redis refuses a count past a 64-bit integer (a 500)
            )
        )
        if not ids:
            return []
        raw = await self._run(self.client.hmget(self.layout.events(user_id), ids))
        events = [Event.model_validate_json(value) for value in raw if value]
        return await self._refreshed(user_id, [event for event in events if not expired(event.expires_at)])

    async def get_events(self, user_id: str, event_ids: Sequence[str]) -> list[Event | None]:
        if not event_ids:
            return []
        raw = await self._run(self.client.hmget(self.layout.events(user_id), list(event_ids)))
        events = [Event.model_validate_json(value) if value else None for value in raw]
        events = [None if event is None or expired(event.expires_at) else event for event in events]
        await self._refreshed(user_id, [event for event in events if event is not None])
        return events

    async def _refreshed(self, user_id: str, events: list[Event]) -> list[Event]:
        """`events`, their time to live started again where `retention_refresh_on_read` says so."""
        await self.retention.refresh(user_id, [event_memory_id(event.id) for event in events], events)
        return events

    async def delete_card(self, user_id: str, event_id: str) -> bool:
        """Delete the card, its time and its search memory; False when there was none."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.layout.events(user_id), event_id)
        pipe.zrem(self.layout.event_times(user_id), event_id)
        pipe.delete(self.layout.memory(user_id, event_memory_id(event_id)))
        removed, _, _ = await self._run(pipe.execute())
        return bool(removed)

    def queue_write(self, pipe: Any, user_id: str, event: Event) -> None:
        """Queue on `pipe` the card and its time (a memory-graph run's event, store/redis/updates.py)."""
        pipe.hset(self.layout.events(user_id), event.id, event.model_dump_json())
        self.retention.queue_event_expiry(pipe, user_id, [event])
        pipe.zadd(self.layout.event_times(user_id), {event.id: event.created_at})

    async def rewrite(self, user_id: str, event: Event) -> None:
        """Store a changed card and its search memory in one transaction (forgetting rewrites them)."""
        rows = await self.memories.memory_rows([event.as_memory()])
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.layout.events(user_id), event.id, event.model_dump_json())
        self.retention.queue_event_expiry(pipe, user_id, [event])  # written: its time starts again
        self.memories.queue_rows(pipe, rows)
        self.retention.queue_follow(pipe, user_id, [event_memory_id(event.id)])
        await self._run(pipe.execute())
