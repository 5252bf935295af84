"""The retention sweep (`memlane gc`, and a worker every `retention_gc_sweep_seconds`): what Redis
expiry cannot remove by itself, removed, and said.

Expiry takes a message's hash, a card's or an entry's field, and their search entries
(store/redis/retention.py). Left behind are the listings that name them: a message in the timeline and
its session (a sorted set each), a card in the event times, a session none of whose messages is
left (its listing, rolling summary and title), a stored text's note (`KeyLayout.memory_texts`) and
a LangGraph item's listing whose memory is gone, and the quota usage of what was deleted or
expired. The sweep also checks every search entry of a kind that expires against its record: one
whose record is gone is deleted, one whose expiry differs (a past value after its entry was read)
is given the record's.

Each removal re-checks in one script that its record is still gone, so a record stored again
meanwhile keeps its listing. Users are found by their `owner` key, written with every record
while retention or a quota is set.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane.store.codecs import MessageField
from memlane.store.gc_report import GcReport
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.quotas import Quotas
from memlane.store.redis.retention import _FOLLOW_LUA, Retention, record_kind
from memlane.store.schema import MemoryField, glob_escaped

logger = logging.getLogger(__name__)

_BATCH = 500

# Removes each member of a sorted set or field of a hash whose record is gone.
# KEYS[1]: the sorted set or hash; KEYS[i > 1]: the record of member ARGV[i]; ARGV[1]: 'zset' or 'hash'.
_PRUNE_LUA = """
local removed = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    if ARGV[1] == 'zset' then
      removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
    else
      removed = removed + redis.call('HDEL', KEYS[1], ARGV[i])
    end
  end
end
return removed
"""

# Removes the event times whose card is gone. KEYS: event times, events hash; ARGV: event ids.
_PRUNE_EVENT_TIMES_LUA = """
local removed = 0
for i = 1, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then removed = removed + redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return removed
"""

# Removes a session none of whose messages is left: its listing, rolling summary and title.
# KEYS: the session's messages, the user's sessions, the summary, the titles; ARGV: the session id.
_DROP_SESSION_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('HDEL', KEYS[4], ARGV[1])
return 1
"""


@dataclass(eq=False, repr=False)
class GarbageCollector(StorePart):
    """`collect_garbage`: one sweep over one user or every user."""

    quotas: Quotas = field(kw_only=True)  # the user's quotas, checked before a record is added
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    async def collect_garbage(self, user_id: str | None = None, *, recount: bool = False) -> GcReport:
        report = GcReport()
        # the search entries first: a stored text's note (`KeyLayout.memory_texts`) of an entry
        # deleted here is then dropped by its user's sweep, in the same pass
        await self._sweep_search_entries(report, user_id)
        users = [user_id] if user_id is not None else await self._owners()
        for user in users:
            try:
                report.add(await self._sweep_user(user, recount=recount))
            except Exception:  # one user's failure must not stop the others' sweep
                logger.exception("the retention sweep of %s failed; the next sweep tries again", user)
        return report

    async def _owners(self) -> list[str]:
        keys = [key async for key in self.client.scan_iter(match=self.layout.owner_scan, count=1000)]
        users = []
        for start in range(0, len(keys), _BATCH):
            pipe = self.client.pipeline(transaction=False)
            for key in keys[start : start + _BATCH]:
                pipe.get(key)
            users += [as_text(user) for user in await self._run(pipe.execute()) if user is not None]
        return sorted(set(users))

    async def _sweep_user(self, user_id: str, *, recount: bool) -> GcReport:
        retention = self.core.retention
        report = GcReport(users=1)
        if retention.message_ttl_days is not None:
            await self._sweep_history(user_id, report)
        if retention.event_ttl_days is not None or retention.note_ttl_days is not None:
            times = self.layout.event_times(user_id)
            ids = [as_text(member) for member in await self._run(self.client.zrange(times, 0, -1))]
            for start in range(0, len(ids), _BATCH):
                report.event_entries += int(
                    await self._run(
                        self.client.eval(
                            _PRUNE_EVENT_TIMES_LUA, 2, times, self.layout.events(user_id), *ids[start : start + _BATCH]
                        )
                    )
                )
        texts = self.layout.memory_texts(user_id)
        noted = {
            as_text(field): as_text(memory_id)
            for field, memory_id in (await self._run(self.client.hgetall(texts))).items()
        }
        report.dedupe_entries += await self._prune(
            texts, "hash", list(noted), [self.layout.memory(user_id, memory_id) for memory_id in noted.values()]
        )
        registry = self.layout.items(user_id)
        items = [as_text(field) for field in await self._run(self.client.hkeys(registry))]
        report.item_entries += await self._prune(
            registry, "hash", items, [self.layout.memory(user_id, item) for item in items]
        )
        if retention.has_quota:
            report.quota_entries += await self.quotas.recount(user_id, full=recount)
        return report

    async def _sweep_history(self, user_id: str, report: GcReport) -> None:
        """The timeline's and each session's entries of expired messages; the sessions left empty."""
        prefix = self.layout.message_prefix(user_id)  # a listing's member is its message key's last part

        async def prune(listing: str) -> int:
            members = [as_text(member) for member in await self._run(self.client.zrange(listing, 0, -1))]
            return await self._prune(listing, "zset", members, [prefix + member for member in members])

        report.history_entries += await prune(self.layout.timeline(user_id))
        sessions = self.layout.sessions(user_id)
        for session_id in [as_text(member) for member in await self._run(self.client.zrange(sessions, 0, -1))]:
            listing = self.layout.session_messages(user_id, session_id)
            await prune(listing)
            keys = [listing, sessions, self.layout.summary(user_id, session_id), self.layout.session_titles(user_id)]
            report.sessions += int(await self._run(self.client.eval(_DROP_SESSION_LUA, 4, *keys, session_id)))

    async def _prune(self, container: str, kind: str, members: Sequence[str], records: Sequence[str]) -> int:
        removed = 0
        for start in range(0, len(members), _BATCH):
            keys = [container, *records[start : start + _BATCH]]
            removed += int(
                await self._run(self.client.eval(_PRUNE_LUA, len(keys), *keys, kind, *members[start : start + _BATCH]))
            )
        return removed

    # search entries against their records -------------------------------------------------
    def _expiring_kinds(self) -> set[str]:
        retention = self.core.retention
        kinds = {kind for kind in ("message", "profile") if retention.ttl_seconds(kind) is not None}
        if retention.event_ttl_days is not None or retention.note_ttl_days is not None:
            kinds.add("event")
        return kinds

    async def _sweep_search_entries(self, report: GcReport, user_id: str | None) -> None:
        """Every search entry of a kind that expires: deleted when its record is gone (or forgotten),
        given its record's expiry when it differs."""
        kinds = self._expiring_kinds()
        if not kinds:
            return
        prefix = self.layout.memory_user_prefix(user_id) if user_id is not None else self.layout.memory_key_prefix
        batch: list[Any] = []
        async for key in self.client.scan_iter(match=glob_escaped(prefix) + "*", count=1000):
            batch.append(key)
            if len(batch) >= _BATCH:
                await self._check_entries(batch, kinds, report)
                batch = []
        if batch:
            await self._check_entries(batch, kinds, report)

    async def _check_entries(self, keys: Sequence[Any], kinds: set[str], report: GcReport) -> None:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, [MemoryField.ID, MemoryField.USER_ID])
            pipe.pexpiretime(key)
        answers = await self._run(pipe.execute())
        checked: list[
            tuple[Any, str, str, int, str, str]
        ] = []  # entry key, user, memory id, its expiry, record key, field
        for key, (memory_id, user), entry_at in zip(keys, answers[::2], answers[1::2]):
            if memory_id is None or user is None or record_kind(as_text(memory_id)) not in kinds:
                continue
            try:
                record = self.retention.record_of(as_text(user), as_text(memory_id))
            except ValueError:  # an id refused under today's limits: left as it is
                continue
            if record is not None:
                checked.append((key, as_text(user), as_text(memory_id), int(entry_at), *record))
        if not checked:
            return
        pipe = self.client.pipeline(transaction=False)
        for _, _, _, _, record_key, hash_field in checked:
            if hash_field:
                pipe.hpexpiretime(record_key, hash_field)
            else:
                pipe.pexpiretime(record_key)
                pipe.hget(record_key, MessageField.FORGOTTEN)
        answers = list(await self._run(pipe.execute()))
        pipe = self.client.pipeline(transaction=False)
        actions = []
        for key, _, _, entry_at, record_key, hash_field in checked:
            if hash_field:
                record_at, forgotten = int(answers.pop(0)[0]), None
            else:
                record_at, forgotten = int(answers.pop(0)), answers.pop(0)
            if forgotten:  # a forgotten message keeps a tombstone, never a search entry
                pipe.delete(key)
                actions.append("deleted")
            elif record_at != entry_at:  # gone (-2), or another expiry: the script checks again and acts
                pipe.eval(_FOLLOW_LUA, 2, key, record_key, hash_field, "1")
                actions.append("followed")
        results = await self._run(pipe.execute()) if actions else []
        for action, result in zip(actions, results):
            if action == "deleted":
                report.search_entries += int(result)
            elif int(result) == -2:
                report.search_entries += 1
            else:
                report.search_entries_retimed += 1
