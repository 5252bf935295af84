"""The profile: one hash of entries per user (entry id → `ProfileEntry` JSON), each mirrored
by a search memory, and the history of every entry's revisions (who changed what, when),
kept after the entry is gone.

Deleting an entry here only deletes it; forgetting its fact everywhere else is
`store/redis/forgetting.py`'s.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import WatchError

from memlane.store.errors import InvalidInput, StoreError
from memlane.store.ids import clean_text, expired, past_value_memory_id, profile_memory_id
from memlane.store.records import MemoryUpdate, PastValue, ProfileEntry, ProfileRevision
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.memories import Memories
from memlane.store.redis.retention import Retention

_EDIT_ATTEMPTS = 5  # optimistic transactions of one profile edit before it gives up


@dataclass(eq=False, repr=False)
class Profile(StorePart):
    """Profile entries and their revisions."""

    memories: Memories  # where an entry's mirror memory is written
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    def redacted(self, entry: ProfileEntry) -> ProfileEntry:
        """The entry with its content masked (its size checked first)."""
        self.core.check_text_size(entry.content, f"profile entry {entry.topic} / {entry.subtopic}")
        content, metadata = self.core.redact(entry.content), self.core.redact_value(entry.metadata)
        if content == entry.content and metadata == entry.metadata:
            return entry
        return entry.model_copy(update={"content": content, "metadata": metadata})

    async def get_profile(self, user_id: str) -> list[ProfileEntry]:
        raw = await self._run(self.client.hvals(self.layout.profile(user_id)))
        entries = [entry for value in raw if not expired((entry := ProfileEntry.model_validate_json(value)).expires_at)]
        await self.retention.refresh(user_id, [profile_memory_id(entry.id) for entry in entries])
        return sorted(entries, key=lambda entry: (entry.topic.lower(), entry.subtopic.lower()))

    async def delete_entry(self, user_id: str, entry_id: str, *, actor: str) -> ProfileEntry | None:
        """Delete the entry, its search memory and its past values' search memories, recording the
        revision (the history keeps the audit; `forget` scrubs it); the entry deleted, or None."""
        raw = await self._run(self.client.hget(self.layout.profile(user_id), entry_id))
        entry = ProfileEntry.model_validate_json(raw) if raw else None
        past = await self.past_values(user_id, entry_id) if entry is not None else []
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.layout.profile(user_id), entry_id)
        pipe.delete(self.layout.memory(user_id, profile_memory_id(entry_id)))
        for value in past:  # what the slot held before goes with it: no "earlier: …" is left to find
            pipe.delete(self.layout.memory(user_id, past_value_memory_id(entry_id, value.content)))
        if entry is not None:
            self.record_revisions(pipe, [self._revision(entry_id, "delete", actor, entry, None)])
        removed = (await self._run(pipe.execute()))[0]
        return entry if removed else None

    async def edit_profile_entry(
        self,
        user_id: str,
        entry_id: str,
        *,
        content: str | None = None,
        confidence: float | None = None,
        actor: str = "user",
    ) -> ProfileEntry | None:
        if content is not None:
            content = clean_text(content).strip()
            if not content:
                raise InvalidInput("a profile entry's content must not be blank; delete the entry to remove it")
            content = self.core.redact(content)
            self.core.check_text_size(content, "a profile entry's content")
        if confidence is not None and not 0.0 <= confidence <= 1.0:  # NaN fails this too
            raise InvalidInput(f"a profile entry's confidence must be between 0 and 1, not {confidence}")
        profile_key = self.layout.profile(user_id)
        for _ in range(_EDIT_ATTEMPTS):  # optimistic: retried only when another writer changed the profile
            async with self.client.pipeline(transaction=True) as pipe:
                try:
                    await self._run(pipe.watch(profile_key))
                    raw = await self._run(pipe.hget(profile_key, entry_id))
                    if raw is None:
                        return None
                    before = ProfileEntry.model_validate_json(raw)
                    changes: dict[str, Any] = {}
                    if content is not None and content != before.content:
                        changes["content"] = content
                    if confidence is not None and confidence != before.confidence:
                        changes["confidence"] = float(confidence)
                    if not changes:
                        return before
                    after = before.model_copy(update={**changes, "updated_at": time.time()})
                    rows = await self.memories.memory_rows([after.as_memory()]) if "content" in changes else []
                    pipe.multi()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                    pipe.hset(profile_key, entry_id, after.model_dump_json())
                    self.retention.queue_field_expiry(
                        pipe, profile_key, [entry_id], "profile"
                    )  # written: its time starts again
                    self.retention.queue_deadlines(pipe, profile_key, {entry_id: after.expires_at})
                    self.memories.queue_rows(pipe, rows)
                    self.retention.queue_follow(pipe, user_id, [profile_memory_id(entry_id)])
                    self.record_revisions(pipe, [self._revision(entry_id, "update", actor, before, after)])
                    await self._run(pipe.execute())
                    return after
                except WatchError:
                    continue
        raise StoreError(
            f"the profile of {user_id!r} changed {_EDIT_ATTEMPTS} times while entry {entry_id} was being edited; "
            "try the edit again"
        )

    # revisions -----------------------------------------------------------------------------
    async def profile_history(self, user_id: str, entry_id: str) -> list[ProfileRevision]:
        raw = await self._run(self.client.lrange(self.layout.profile_history(user_id, entry_id), 0, -1))
        return [ProfileRevision.model_validate_json(value) for value in raw]

    async def all_history(self, user_id: str) -> list[ProfileRevision]:
        """Every revision of the user's entries, deleted entries' included, oldest first (for export)."""
        entry_ids = sorted(
            as_text(member)
            for member in await self._run(self.client.smembers(self.layout.profile_history_entries(user_id)))
        )
        pipe = self.client.pipeline(transaction=False)
        for entry_id in entry_ids:
            pipe.lrange(self.layout.profile_history(user_id, entry_id), 0, -1)
        lists = await self._run(pipe.execute()) if entry_ids else []
        revisions = [ProfileRevision.model_validate_json(value) for values in lists for value in values]
        return sorted(revisions, key=lambda revision: revision.at)

    async def past_values(self, user_id: str, entry_id: str | None = None) -> list[PastValue]:
        """What the entry (every entry, without `entry_id`) held before a memory-graph run replaced
        it, oldest first; a value that holds again is not a past value, nor is a deleted entry's."""
        revisions = await (self.profile_history(user_id, entry_id) if entry_id else self.all_history(user_id))
        current = {entry.id: entry.content for entry in await self.get_profile(user_id)}
        values = [value for revision in revisions if (value := revision.past_value()) is not None]
        # a deleted entry has no earlier values (its history keeps the audit)
        return [value for value in values if value.entry_id in current and current[value.entry_id] != value.content]

    @staticmethod
    def _changed(before: ProfileEntry, after: ProfileEntry, *, by_run: bool) -> bool:
        """Whether writing `after` over `before` is a change the history keeps: its content,
        confidence or metadata; for a write that names its source (the API, a tool), its source too.
        A memory-graph run restating what the entry holds is not (a redelivered run, a fact said again)."""
        changed = (before.content, before.confidence, before.metadata) != (
            after.content,
            after.confidence,
            after.metadata,
        )
        return changed or (not by_run and before.source_message_ids != after.source_message_ids)

    @staticmethod
    def _revision(
        entry_id: str, action: str, actor: str, before: ProfileEntry | None, after: ProfileEntry | None
    ) -> ProfileRevision:
        slot = after or before
        assert slot is not None  # a revision has a before, an after, or both
        replaced = (
            action == "update"
            and actor.startswith("run")
            and before is not None
            and after is not None
            and before.content not in after.content  # an APPEND keeps what was there: nothing is past
        )
        return ProfileRevision(
            entry_id=entry_id,
            user_id=slot.user_id,
            action=action,
            actor=actor,
            at=time.time(),
            topic=slot.topic,
            subtopic=slot.subtopic,
            before_content=before.content if before else None,
            after_content=after.content if after else None,
            before_confidence=before.confidence if before else None,
            after_confidence=after.confidence if after else None,
            before_valid_from=before.since if before else None,
            valid_until=(after.valid_from or time.time()) if replaced and after else None,
            before_source_message_ids=before.source_message_ids if replaced and before else [],
            after_source_message_ids=after.source_message_ids if after else [],
            after_metadata=after.metadata if after else {},
        )

    def record_revisions(self, pipe: Any, revisions: Sequence[ProfileRevision]) -> None:
        """Queue the revisions on `pipe` (inside the transaction that makes the change)."""
        keep = self.core.store.profile_history_max_revisions
        for revision in revisions:
            key = self.layout.profile_history(revision.user_id, revision.entry_id)
            pipe.rpush(key, revision.model_dump_json())
            pipe.ltrim(key, -keep, -1)
            pipe.sadd(self.layout.profile_history_entries(revision.user_id), revision.entry_id)

    async def replace_history(self, user_id: str, entry_id: str, revisions: Sequence[ProfileRevision]) -> None:
        """Put `revisions` in place of the entry's history, in one transaction (forgetting rewrites it)."""
        key = self.layout.profile_history(user_id, entry_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(key)
        pipe.rpush(key, *(revision.model_dump_json() for revision in revisions))
        await self._run(pipe.execute())

    # the memory graph's writes (store/redis/updates.py) -----------------------------------------
    async def revisions_of(self, update: MemoryUpdate) -> list[ProfileRevision]:
        """The revisions an update makes, against the entries as stored just before it. An
        upsert changing neither content nor confidence (a redelivered run) makes none."""
        entry_ids = list(dict.fromkeys([*(entry.id for entry in update.upsert_profile), *update.delete_profile_ids]))
        if not entry_ids:
            return []
        raw = await self._run(self.client.hmget(self.layout.profile(update.user_id), entry_ids))
        stored = {entry_id: ProfileEntry.model_validate_json(value) for entry_id, value in zip(entry_ids, raw) if value}
        actor = update.actor or (f"run:{update.event.id}" if update.event is not None else "run")
        revisions = []
        for entry in update.upsert_profile:
            before = stored.get(entry.id)
            if before is None:
                revisions.append(self._revision(entry.id, "add", actor, None, entry))
            elif self._changed(before, entry, by_run=actor.startswith("run")):
                revisions.append(self._revision(entry.id, "update", actor, before, entry))
        upserted = {entry.id for entry in update.upsert_profile}
        for entry_id in update.delete_profile_ids:
            if entry_id in stored and entry_id not in upserted:
                revisions.append(self._revision(entry_id, "delete", actor, stored[entry_id], None))
        return revisions

    def queue_update(self, pipe: Any, update: MemoryUpdate, revisions: Sequence[ProfileRevision]) -> None:
        """Queue on `pipe` the profile writes of a memory-graph run: its upserts with their
        `revisions`, then its deletes (each with its mirror memory)."""
        profile_key = self.layout.profile(update.user_id)
        for entry in update.upsert_profile:
            pipe.hset(profile_key, entry.id, entry.model_dump_json())
        self.retention.queue_field_expiry(pipe, profile_key, [entry.id for entry in update.upsert_profile], "profile")
        self.retention.queue_deadlines(
            pipe, profile_key, {entry.id: entry.expires_at for entry in update.upsert_profile}
        )
        self.record_revisions(pipe, revisions)
        for entry_id in update.delete_profile_ids:
            pipe.hdel(profile_key, entry_id)
            pipe.delete(self.layout.memory(update.user_id, profile_memory_id(entry_id)))
