"""Per-user quotas (`retention_max_memories_per_user`, `retention_max_bytes_per_user`): what a user
keeps, counted as it is written, and a write that would pass a quota refused before anything of it
is written.

What counts is each record the user keeps, once, by the id of its search entry: a stored message
(`message:<id>`, any role), an event card or note (`event:<id>`), a profile entry
(`profile:<entry>`; its past values are history, not counted), a memory added directly and a
LangGraph item (their own ids); and the UTF-8 bytes of its text. Vectors, indexes and history are
not counted. Usage is kept while a quota is set (`KeyLayout.usage`); the first write under a quota
counts what the user has, and a record deleted or expired leaves the count at the next recount:
before a write is refused (so a refusal is never from a stale count) and at each `memlane gc`.
The quotas are the user's: the user's own memory and every agent's memory of the user
(store/scopes.py) count together, so no agent id a caller makes up adds room; the shared scope
is a user of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.typing import EncodableT

from memlane.store.codecs import MessageField
from memlane.store.errors import QuotaExceeded
from memlane.store.ids import event_memory_id, message_memory_id, profile_memory_id
from memlane.store.records import Event, ProfileEntry
from memlane.store.redis.core import StorePart, as_text
from memlane.store.schema import MemoryField
from memlane.store.scopes import scoped_user_id, split_user_id

# Adds the records of one write to the user's usage, unless that takes the user past a quota.
# KEYS: usage hash, usage bytes; ARGV: max records (0: none), max bytes (0: none), '1' when a record
# already counted is not rewritten by this write (a message sent again), then memory id, bytes pairs
# (each id once). A write that adds no record, or no bytes, passes even over a quota.
# Returns {0 | 1 (records) | 2 (bytes), records after, bytes after, records before, bytes before}.
_RESERVE_LUA = """
local count = redis.call('HLEN', KEYS[1])
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
local count_before, total_before = count, total
local changed = {}
for i = 4, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  local size = tonumber(ARGV[i + 1])
  if not old then
    count = count + 1; total = total + size; table.insert(changed, ARGV[i]); table.insert(changed, size)
  elseif ARGV[3] ~= '1' then
    total = total - tonumber(old) + size; table.insert(changed, ARGV[i]); table.insert(changed, size)
  end
end
local max_count, max_bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
if max_count > 0 and count > max_count and count > count_before then
  return {1, count, total, count_before, total_before}
end
if max_bytes > 0 and total > max_bytes and total > total_before then
  return {2, count, total, count_before, total_before}
end
if #changed > 0 then redis.call('HSET', KEYS[1], unpack(changed)) end
redis.call('SET', KEYS[2], total)
return {0, count, total, count_before, total_before}
"""

# Drops records that are gone from the usage and sums what is left again.
# KEYS: usage hash, usage bytes; ARGV: the ids of the records found gone. Returns {records, bytes}.
_RECOUNT_LUA = """
if #ARGV > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV)) end
local total = 0
for _, size in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(size) end
redis.call('SET', KEYS[2], total)
return {redis.call('HLEN', KEYS[1]), total}
"""


def text_bytes(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))


def event_sizes(events: Sequence[Event]) -> dict[str, int]:
    return {event_memory_id(event.id): text_bytes(event.summary) for event in events}


def profile_sizes(entries: Sequence[ProfileEntry]) -> dict[str, int]:
    return {profile_memory_id(entry.id): text_bytes(entry.content) for entry in entries}


@dataclass(eq=False, repr=False)
class Quotas(StorePart):
    """Reserves a write's records against the user's quotas; counts them again."""

    async def reserve(self, user_id: str, sizes: dict[str, int], *, rewrites: bool = True) -> None:
        """Count these records (memory id → bytes of text) as the user's, or raise `QuotaExceeded`
        saying which quota, and change nothing, when that takes the user past one. `rewrites`: a
        record already counted is written again with this size (False for messages: a message sent
        again is not rewritten). A reservation whose write then fails is dropped at the next recount."""
        retention = self.core.retention
        if not retention.has_quota or not sizes:
            return
        if not await self._run(self.client.exists(self.layout.usage_bytes(user_id))):
            await self.recount(user_id, full=True)
        answer = await self._reserve(user_id, sizes, rewrites)
        if answer[0] != 0:  # a stale count (deleted or expired records) must not refuse: count again
            await self.recount(user_id)
            answer = await self._reserve(user_id, sizes, rewrites)
        if answer[0] == 0:
            return
        over, count, total, count_before, total_before = answer
        if over == 1:
            limit = retention.max_memories_per_user or 0
            raise QuotaExceeded(
                f"this user keeps {count_before:,} records and this write adds {count - count_before:,}, past "
                f"MEMLANE_RETENTION_MAX_MEMORIES_PER_USER ({limit:,}); nothing was stored. Delete or forget some "
                "memories (or let them expire: MEMLANE_RETENTION_*_TTL_DAYS), or raise the setting",
                quota="memories",
                setting="MEMLANE_RETENTION_MAX_MEMORIES_PER_USER",
                limit=limit,
                used=count_before,
            )
        limit = retention.max_bytes_per_user or 0
        raise QuotaExceeded(
            f"this user keeps {total_before:,} bytes of text and this write would make it {total:,}, past "
            f"MEMLANE_RETENTION_MAX_BYTES_PER_USER ({limit:,}); nothing was stored. Delete or forget some "
            "memories (or let them expire: MEMLANE_RETENTION_*_TTL_DAYS), or raise the setting",
            quota="bytes",
            setting="MEMLANE_RETENTION_MAX_BYTES_PER_USER",
            limit=limit,
            used=total_before,
        )

    async def _reserve(self, user_id: str, sizes: dict[str, int], rewrites: bool) -> list[int]:
        retention = self.core.retention
        args: list[Any] = [
            retention.max_memories_per_user or 0,
            retention.max_bytes_per_user or 0,
            "0" if rewrites else "1",
        ]
        for memory_id, size in sizes.items():
            args += [self.layout.usage_field(user_id, memory_id), size]
        keys = [self.layout.usage(user_id), self.layout.usage_bytes(user_id)]
        return [int(value) for value in await self._run(self.client.eval(_RESERVE_LUA, 2, *keys, *args))]

    async def refusal(self, user_id: str, records: int, text_bytes: int) -> QuotaExceeded | None:
        """The refusal a write of `records` new records holding `text_bytes` bytes of text would
        meet now (None: it fits, or no quota is set), without reserving anything: what a door
        tells its caller before it answers (a chat turn saved after the reply)."""
        retention = self.core.retention
        if not retention.has_quota:
            return None
        if not await self._run(self.client.exists(self.layout.usage_bytes(user_id))):
            await self.recount(user_id, full=True)
        count, total = await self.usage(user_id)
        if retention.max_memories_per_user is not None and count + records > retention.max_memories_per_user:
            limit = retention.max_memories_per_user
            return QuotaExceeded(
                f"this user keeps {count:,} records, and a turn adds {records:,}: past "
                f"MEMLANE_RETENTION_MAX_MEMORIES_PER_USER ({limit:,}); the turn is not stored",
                quota="memories",
                setting="MEMLANE_RETENTION_MAX_MEMORIES_PER_USER",
                limit=limit,
                used=count,
            )
        if retention.max_bytes_per_user is not None and total + text_bytes > retention.max_bytes_per_user:
            limit = retention.max_bytes_per_user
            return QuotaExceeded(
                f"this user keeps {total:,} bytes of text, and the turn's {text_bytes:,} more pass "
                f"MEMLANE_RETENTION_MAX_BYTES_PER_USER ({limit:,}); the turn is not stored",
                quota="bytes",
                setting="MEMLANE_RETENTION_MAX_BYTES_PER_USER",
                limit=limit,
                used=total,
            )
        return None

    async def usage(self, user_id: str) -> tuple[int, int]:
        """(records, bytes) the user keeps, as last counted (0, 0 while no quota is set)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hlen(self.layout.usage(user_id))
        pipe.get(self.layout.usage_bytes(user_id))
        count, total = await self._run(pipe.execute())
        return int(count), int(as_text(total) or 0)

    async def recount(self, user_id: str, *, full: bool = False) -> int:
        """Drop the records that are gone (deleted, expired, a write that failed) from the user's
        usage; with `full`, count every record the user has, in the user's own memory and in each
        agent's (store/scopes.py), from scratch instead (a user's first write under a quota,
        `memlane gc --recount`). Returns how many entries left the count."""
        usage = self.layout.usage(user_id)
        if full:
            user = split_user_id(user_id)[0]
            agents = sorted(as_text(agent) for agent in await self._run(self.client.smembers(self.layout.scopes(user))))
            sizes: dict[str, int] = {}
            for owner in [user, *(scoped_user_id(user, agent) for agent in agents)]:
                sizes.update(
                    {
                        self.layout.usage_field(owner, memory_id): size
                        for memory_id, size in (await self._count_records(owner)).items()
                    }
                )
            before = await self._run(self.client.hlen(usage))
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(usage)
            if sizes:
                mapping: dict[EncodableT, EncodableT] = {key: size for key, size in sizes.items()}  # noqa: C416
                pipe.hset(usage, mapping=mapping)
            pipe.set(self.layout.usage_bytes(user_id), sum(sizes.values()))
            await self._run(pipe.execute())
            return max(0, int(before) - len(sizes))
        fields = [as_text(member) for member in await self._run(self.client.hkeys(usage))]
        records = [self.layout.usage_record(user_id, field) for field in fields]
        gone = [field for field, there in zip(fields, await self._present(records)) if not there]
        keys = [usage, self.layout.usage_bytes(user_id)]
        await self._run(self.client.eval(_RECOUNT_LUA, 2, *keys, *gone))
        return len(gone)

    async def _present(self, records: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each record ((store user, memory id)) is still there: a message not forgotten, a
        card, an entry, a memory's own hash."""
        pipe = self.client.pipeline(transaction=False)
        for user_id, memory_id in records:
            if memory_id.startswith("message:"):
                key = self.layout.message(user_id, memory_id.removeprefix("message:"))
                pipe.hmget(key, [MessageField.ID, MessageField.FORGOTTEN])
            elif memory_id.startswith("event:"):
                pipe.hexists(self.layout.events(user_id), memory_id.removeprefix("event:"))
            elif memory_id.startswith("profile:"):
                pipe.hexists(self.layout.profile(user_id), memory_id.removeprefix("profile:"))
            else:
                pipe.exists(self.layout.memory(user_id, memory_id))
        answers = await self._run(pipe.execute()) if records else []
        return [(row[0] is not None and not row[1]) if isinstance(row, list) else bool(row) for row in answers]

    async def _count_records(self, user_id: str) -> dict[str, int]:
        """Memory id → bytes of every record the user has: messages (by the timeline), profile
        entries, event cards and LangGraph items. Memories added directly before a quota was set
        are not found here (they are counted from their next write)."""
        sizes: dict[str, int] = {}
        members = await self._run(self.client.zrange(self.layout.timeline(user_id), 0, -1))
        prefix = self.layout.message_prefix(user_id)
        pipe = self.client.pipeline(transaction=False)
        for member in members:
            pipe.hget(prefix + as_text(member), MessageField.ID)
            pipe.hstrlen(prefix + as_text(member), MessageField.CONTENT)
        answers = await self._run(pipe.execute()) if members else []
        for message_id, size in zip(answers[::2], answers[1::2]):
            if message_id is not None:
                sizes[message_memory_id(as_text(message_id))] = int(size)
        profile = await self._run(self.client.hvals(self.layout.profile(user_id)))
        sizes.update(profile_sizes([ProfileEntry.model_validate_json(raw) for raw in profile]))
        events = await self._run(self.client.hvals(self.layout.events(user_id)))
        sizes.update(event_sizes([Event.model_validate_json(raw) for raw in events]))
        item_ids = [as_text(field) for field in await self._run(self.client.hkeys(self.layout.items(user_id)))]
        pipe = self.client.pipeline(transaction=False)
        for memory_id in item_ids:
            pipe.hget(self.layout.memory(user_id, memory_id), MemoryField.ITEM)
        for memory_id, raw in zip(item_ids, await self._run(pipe.execute()) if item_ids else []):
            if raw is not None:
                sizes[memory_id] = text_bytes(json.dumps(json.loads(raw).get("value"), ensure_ascii=False))
        return sizes
