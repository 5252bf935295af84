"""Retention: how long each record is kept (`settings.retention`), as Redis expiry, with each search
entry expiring when its record does.

    record        its expiry                                 its search entries
    message       its hash (PEXPIRE)                         message:<id>
    event, note   its field of the events hash (HPEXPIRE)    event:<id>
    profile entry its field of the profile hash (HPEXPIRE)   profile:<entry>, profile:<entry>:earlier:…

A record's expiry is set when it is written (a rewrite sets it again: Redis clears a hash field's
expiry when the field is written), and again when it is read where `retention_refresh_on_read`
says so. A search entry is written after its record or with it in one transaction, and a script
(`_FOLLOW_LUA`) then gives it the record's expiry time, to the millisecond; RediSearch drops an
entry whose hash expired from the index by itself. What expiry cannot reach (the timeline and
session listings, the event times, a session left without messages) is `memlane gc`'s
(store/redis/gc.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlane.store.ids import message_memory_id
from memlane.store.records import REMEMBERED_TAG, Event, ProfileEntry
from memlane.store.redis.core import StorePart, as_text
from memlane.store.schema import MemoryField

# Gives a search entry its record's expiry time (or none, when the record has none).
# KEYS: the search entry, its record's key; ARGV: the record's field of a hash ('' for a whole key),
# '1' to delete the entry when the record is gone (it was written for a record that expired meanwhile)
# Returns the time set, -1 (no expiry), -2 (no record).
_FOLLOW_LUA = """
local at
if ARGV[1] == '' then
  at = redis.call('PEXPIRETIME', KEYS[2])
else
  at = redis.call('HPEXPIRETIME', KEYS[2], 'FIELDS', 1, ARGV[1])[1]
end
if at == -2 then
  if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end
  return -2
end
if at == -1 then
  redis.call('PERSIST', KEYS[1])
  return -1
end
redis.call('PEXPIREAT', KEYS[1], at)
return at
"""


# Gives an existing search entry its record's `expires_at` in the index (a missing one is not created).
# KEYS: the search entry; ARGV: the field, the time (epoch seconds)
_MARK_EXPIRY_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
"""


def record_kind(memory_id: str) -> str | None:
    """The kind of record a search entry mirrors, from its id ("message", "event", "profile"), or
    None for a memory that is its own record (an item, a memory added directly)."""
    for kind in ("message", "event", "profile"):
        if memory_id.startswith(kind + ":"):
            return kind
    return None


def event_kind(event: Event) -> str:
    """ "note" for a card remembered on request (the tools, the API, MCP), else "event"."""
    return "note" if REMEMBERED_TAG in event.tags else "event"


@dataclass(eq=False, repr=False)
class Retention(StorePart):
    """Queues records' expiry and their search entries' on the writers' pipelines; refreshes on read."""

    def ttl_ms(self, kind: str) -> int | None:
        """The time to live of a kind of record ("message", "event", "note", "profile"), in ms."""
        seconds = self.core.retention.ttl_seconds(kind)
        return None if seconds is None else max(1, int(seconds * 1000))

    def record_of(self, user_id: str, memory_id: str) -> tuple[str, str] | None:
        """(key, field) of the record a search entry mirrors (field "" for a record that is a whole key)."""
        kind = record_kind(memory_id)
        if kind == "message":
            return self.layout.message(user_id, memory_id.removeprefix("message:")), ""
        if kind == "event":
            return self.layout.events(user_id), memory_id.removeprefix("event:")
        if kind == "profile":  # the entry's own entry and its past values (profile:<entry>:earlier:<digest>)
            return self.layout.profile(user_id), memory_id.removeprefix("profile:").split(":", 1)[0]
        return None

    # on the writers' pipelines ---------------------------------------------------------------
    def queue_owner(self, pipe: Any, user_id: str) -> None:
        """Note whose keys these are, for `memlane gc` (only while retention or a quota is set)."""
        retention = self.core.retention
        if retention.expires or retention.has_quota:
            pipe.set(self.layout.owner(user_id), user_id)

    def queue_message_expiry(self, pipe: Any, user_id: str, message_ids: Sequence[str]) -> None:
        ttl = self.ttl_ms("message")
        if ttl is not None:
            for message_id in message_ids:
                pipe.pexpire(self.layout.message(user_id, message_id), ttl)

    def queue_field_expiry(self, pipe: Any, key: str, fields: Sequence[str], kind: str) -> None:
        """The expiry of records kept as fields of a hash (profile entries, event cards), written just before."""
        ttl = self.ttl_ms(kind)
        if ttl is not None and fields:
            pipe.hpexpire(key, ttl, *fields)

    def queue_deadlines(self, pipe: Any, key: str, deadlines: Mapping[str, float | None]) -> None:
        """The records' own `expires_at` (fields of a hash), after their kind's time to live: the earlier
        of the two holds (LT: a field without expiry counts as never expiring)."""
        for field_name, expires_at in deadlines.items():
            if expires_at is not None:
                pipe.hpexpireat(key, max(1, int(expires_at * 1000)), field_name, lt=True)

    def queue_event_expiry(self, pipe: Any, user_id: str, events: Sequence[Event]) -> None:
        for kind in ("event", "note"):
            self.queue_field_expiry(
                pipe, self.layout.events(user_id), [e.id for e in events if event_kind(e) == kind], kind
            )
        self.queue_deadlines(pipe, self.layout.events(user_id), {event.id: event.expires_at for event in events})

    def queue_follow(self, pipe: Any, user_id: str, memory_ids: Sequence[str], *, drop_orphans: bool = False) -> None:
        """Queue on `pipe`, after the writes of these search entries, their records' expiry onto them;
        with `drop_orphans`, an entry whose record is gone is deleted (it was indexed after its record
        expired). Always queued, expiry or not: an entry never outlives its record, nor goes before it."""
        for memory_id in memory_ids:
            record = self.record_of(user_id, memory_id)
            if record is not None:
                key, field = record
                pipe.eval(
                    _FOLLOW_LUA, 2, self.layout.memory(user_id, memory_id), key, field, "1" if drop_orphans else "0"
                )

    async def expire_messages(self, user_id: str, message_ids: Sequence[str], expires_at: float) -> None:
        """Messages (and their search entries) expire at `expires_at` or sooner, as they would already."""
        pipe = self.client.pipeline(transaction=False)
        for message_id in message_ids:
            pipe.pexpireat(self.layout.message(user_id, message_id), max(1, int(expires_at * 1000)), lt=True)
            entry = self.layout.memory(user_id, message_memory_id(message_id))
            pipe.eval(_MARK_EXPIRY_LUA, 1, entry, MemoryField.EXPIRES_AT, repr(expires_at))
        self.queue_follow(pipe, user_id, [message_memory_id(message_id) for message_id in message_ids])
        await self._run(pipe.execute())

    # refreshed on read -----------------------------------------------------------------------
    async def refresh(self, user_id: str, memory_ids: Sequence[str], events: Sequence[Event] = ()) -> None:
        """Start the time to live of these records again (`retention_refresh_on_read`), each search
        entry with its record. `events`: the cards among them already read (a note's time differs
        from a card's); the others are read here."""
        if not self.core.retention.refresh_on_read or not memory_ids:
            return
        by_kind: dict[str, list[str]] = {}
        for memory_id in dict.fromkeys(memory_ids):
            kind = record_kind(memory_id)
            if kind is not None and not (kind == "profile" and ":earlier:" in memory_id):  # a past value: not its entry
                by_kind.setdefault(kind, []).append(memory_id)
        kinds: dict[str, str] = {event.id: event_kind(event) for event in events}
        # a record's own expires_at is never pushed back by a refresh: it is set again after (the earlier holds)
        deadlines: dict[str, float | None] = {event.id: event.expires_at for event in events}
        unread = [m.removeprefix("event:") for m in by_kind.get("event", []) if m.removeprefix("event:") not in kinds]
        if unread and (self.ttl_ms("event") or self.ttl_ms("note")):
            raw = await self._run(self.client.hmget(self.layout.events(user_id), unread))
            for event_id, value in zip(unread, raw):
                if value is not None:
                    event = Event.model_validate_json(as_text(value))
                    kinds[event_id], deadlines[event_id] = event_kind(event), event.expires_at
        pipe = self.client.pipeline(transaction=False)
        refreshed: list[str] = []
        messages = by_kind.get("message", []) if self.ttl_ms("message") else []
        self.queue_message_expiry(pipe, user_id, [m.removeprefix("message:") for m in messages])
        refreshed += messages
        for kind in ("event", "note"):
            ids = (
                [m for m in by_kind.get("event", []) if kinds.get(m.removeprefix("event:")) == kind]
                if self.ttl_ms(kind)
                else []
            )
            event_ids = [m.removeprefix("event:") for m in ids]
            self.queue_field_expiry(pipe, self.layout.events(user_id), event_ids, kind)
            self.queue_deadlines(pipe, self.layout.events(user_id), {e: deadlines.get(e) for e in event_ids})
            refreshed += ids
        profile = by_kind.get("profile", []) if self.ttl_ms("profile") else []
        entry_ids = [m.removeprefix("profile:") for m in profile]
        self.queue_field_expiry(pipe, self.layout.profile(user_id), entry_ids, "profile")
        if entry_ids:
            raw = await self._run(self.client.hmget(self.layout.profile(user_id), entry_ids))
            entries = [ProfileEntry.model_validate_json(as_text(value)) for value in raw if value is not None]
            self.queue_deadlines(pipe, self.layout.profile(user_id), {e.id: e.expires_at for e in entries})
        refreshed += profile
        if not refreshed:
            return
        self.queue_follow(pipe, user_id, refreshed)
        await self._run(pipe.execute())
