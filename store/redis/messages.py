"""History: the user's messages, their per-user order (seq) and the memory graph's cursor
over them, their sessions (rolling summaries, titles), and their search entries.

A message is a hash under the user's prefix, listed in the user's timeline and its session
by seq (both assigned in one Lua script); its search memory (`kind="message"`) carries the
message before it as context where `search_message_context` says so. A forgotten message
stays as a tombstone that keeps its id taken.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.commands.core import AsyncScript

from memlane.store.codecs import MessageField, message_from_hash, message_hash
from memlane.store.errors import EmbeddingsUnavailable, InvalidInput
from memlane.store.ids import check_moment, message_memory_id
from memlane.store.models.background import in_background
from memlane.store.new_messages import ALIGNED_MESSAGES, NewMessages, unstored_messages
from memlane.store.records import Memory, Message, SessionSummary
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.memories import Memories
from memlane.store.redis.metadata import checked_metadata, metadata_row
from memlane.store.redis.quotas import Quotas, text_bytes
from memlane.store.redis.replies import (
    Preceding,
    leaves_unanswered,
    mark_unanswered,
    messages_around,
    preceding_messages,
)
from memlane.store.redis.retention import Retention
from memlane.store.schema import MemoryField, item_key

logger = logging.getLogger(__name__)

# the digest of a search entry written without its vector (the embedder down): never a real one
UNEMBEDDED = "unembedded"

# Stores a message unless its id is already there; assigns the per-user seq atomically; with
# ARGV[4] = '1', records its id as waiting for its search entry in the same step (a message is
# never stored without that record, even when Redis loses its last writes: a kill loses the
# newest writes of its AOF, never one half of a script).
# KEYS: message hash, seq counter, timeline zset, session zset, sessions zset, unindexed set
# ARGV: member (message key suffix), raw session id, created_at, '1' to record it for indexing,
# message id, then field/value pairs
# Returns -1 for an id already stored in the same session (recorded again: its entry may be
# what a crash lost), -2 for one stored in another.
_ADD_MESSAGE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'session') ~= ARGV[2] then return -2 end
  if ARGV[4] == '1' then redis.call('SADD', KEYS[6], ARGV[5]) end
  return -1
end
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'seq', seq, unpack(ARGV, 6))
redis.call('ZADD', KEYS[3], seq, ARGV[1])
redis.call('ZADD', KEYS[4], seq, ARGV[1])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[2])
if ARGV[4] == '1' then redis.call('SADD', KEYS[6], ARGV[5]) end
return seq
"""

# Moves the cursor forward only. KEYS: cursor; ARGV: target seq
_ADVANCE_CURSOR_LUA = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local target = tonumber(ARGV[1])
if target > current then redis.call('SET', KEYS[1], target); return target end
return current
"""


@dataclass(eq=False, repr=False)
class Messages(StorePart):
    """Messages, the cursor, sessions; the Lua scripts that store a message and move the cursor."""

    memories: Memories  # where a message's search entry is written
    _add_message: AsyncScript = field(init=False)
    _advance_cursor: AsyncScript = field(init=False)
    quotas: Quotas = field(kw_only=True)  # the user's quotas, checked before a record is added
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    def __post_init__(self) -> None:
        self._add_message = self.client.register_script(_ADD_MESSAGE_LUA)
        self._advance_cursor = self.client.register_script(_ADVANCE_CURSOR_LUA)

    def _check_metadata(self, message: Message) -> None:
        """`InvalidInput` for metadata that is not JSON, is too large, or holds what a declared field cannot."""
        what = f"message {message.id!r}"
        metadata_row(
            checked_metadata(message.metadata, self.core.limits.max_metadata_bytes, what),
            self.core.store.metadata_fields,
        )

    def _redacted(self, message: Message) -> Message:
        content, name, metadata = (
            self.core.redact(message.content),
            self.core.redact(message.name) if message.name else message.name,
            self.core.redact_value(message.metadata),
        )
        if content == message.content and name == message.name and metadata == message.metadata:
            return message
        return message.model_copy(update={"content": content, "name": name, "metadata": metadata})

    # history -------------------------------------------------------------------------------
    async def add_messages(
        self, messages: Sequence[Message], *, index_for_search: bool = True, index_later: bool = False
    ) -> list[Message]:
        if not messages:
            return []
        for message in messages:  # refused before anything is written
            check_moment(message.created_at, f"message {message.id!r}'s created_at")
            self.core.check_text_size(message.content, f"message {message.id!r}")
            self._check_metadata(message)
        messages = [self._redacted(message) for message in messages]
        for user_id in dict.fromkeys(message.user_id for message in messages):  # refused before anything is written
            await self.quotas.reserve(
                user_id,
                {message_memory_id(m.id): text_bytes(m.content) for m in messages if m.user_id == user_id},
                rewrites=False,
            )
        await self.core.note_scopes(message.user_id for message in messages)
        pipe = self.client.pipeline(transaction=False)
        for message in messages:
            key = self.layout.message(message.user_id, message.id)
            fields = message_hash(message)
            searchable = message.content.strip() and message.role in ("user", "assistant")  # as `index_messages` keeps
            record = "1" if (index_later or index_for_search) and searchable else "0"
            args: list[Any] = [key.rsplit(":", 1)[1], message.session_id, repr(message.created_at), record, message.id]
            for name, value in fields.items():
                args += [name, value]
            keys = [
                key,
                self.layout.seq(message.user_id),
                self.layout.timeline(message.user_id),
                self.layout.session_messages(message.user_id, message.session_id),
                self.layout.sessions(message.user_id),
                self.layout.unindexed_messages(message.user_id),
            ]
            await self.core.queue_script(pipe, self._add_message, keys, args)
        for user_id in dict.fromkeys(
            message.user_id for message in messages
        ):  # after the scripts: their answers come first
            self.retention.queue_message_expiry(pipe, user_id, [m.id for m in messages if m.user_id == user_id])
            self.retention.queue_owner(pipe, user_id)
        results = [int(seq) for seq in (await self.core.execute_with_scripts(pipe))[: len(messages)]]
        stored = [message.model_copy(update={"seq": seq}) for message, seq in zip(messages, results) if seq >= 0]
        elsewhere = [message.id for message, seq in zip(messages, results) if seq == -2]
        if elsewhere:  # ids are unique per user, across sessions: a reused id is not a new message
            logger.warning(
                "skipped %d message(s) of user %r whose ids are already stored in another session "
                "(message ids are unique per user): %s",
                len(elsewhere),
                messages[0].user_id,
                ", ".join(elsewhere[:5]),
            )
        if index_for_search and not index_later:
            # what the script recorded: this save's messages (indexed from here), a resent one
            # whose entry a crash may have lost, and what earlier saves left (a repair pass)
            for user_id in dict.fromkeys(message.user_id for message in messages):
                new = [message for message in stored if message.user_id == user_id]
                recorded = await self._pending_messages(user_id, known=new)
                await self.index_messages(
                    user_id, sorted([*recorded, *new], key=lambda m: m.seq or 0), clear_pending=True
                )
        return stored

    async def add_new_messages(
        self,
        messages: Sequence[Message],
        *,
        before: Sequence[Message] = (),
        known: Sequence[Message] = (),
        resent: bool = True,
        index_later: bool = False,
    ) -> NewMessages:
        new = list(messages)
        if resent and messages:
            last = messages[-1]
            tail = await self.recent_messages(
                last.user_id, last.session_id, limit=max(ALIGNED_MESSAGES, min(len(messages), 100))
            )
            held = [m for m in [*before, *known] if (m.user_id, m.session_id) == (last.user_id, last.session_id)]
            new = unstored_messages(messages, [*tail, *held], self.core.redact)
        refused: list[tuple[Message, str]] = []
        await self._add_each([*before, *new], refused, index_later=index_later)  # one at a time past a refusal
        return NewMessages(new=new, refused=refused)

    async def _add_each(
        self, messages: list[Message], refused: list[tuple[Message, str]], *, index_later: bool
    ) -> None:
        """`add_messages`, where a message refused for what it holds (ValueError, TypeError) is put in
        `refused` and the others are stored still."""
        try:
            await self.add_messages(messages, index_later=index_later)
        except (ValueError, TypeError) as error:
            if len(messages) == 1:
                refused.append((messages[0], f"{type(error).__name__}: {error}"))
                return
            for message in messages:  # find the one that cannot be stored; store the others
                await self._add_each([message], refused, index_later=index_later)

    async def _pending_messages(self, user_id: str, known: Sequence[Message] = ()) -> list[Message]:
        """The user's stored messages recorded as waiting for indexing, but those `known` (in
        hand already); ids of messages gone since are dropped from the record."""
        pending = self.layout.unindexed_messages(user_id)
        skip = {message.id for message in known}
        ids = sorted(
            as_text(member) for member in await self._run(self.client.smembers(pending)) if as_text(member) not in skip
        )
        if not ids:
            return []
        messages = await self.load_messages(user_id, [item_key(message_id) for message_id in ids])
        gone = set(ids) - {message.id for message in messages}
        if gone:
            await self._run(self.client.srem(pending, *gone))
        return sorted(messages, key=lambda message: message.seq or 0)

    async def users_with_unindexed_messages(self) -> list[str]:
        """Every user with stored messages waiting for their search entry (a scan of the keys;
        a pending set's first member names a message, whose hash names the user)."""
        users = []
        async for key in self.client.scan_iter(match=self.layout.unindexed_messages_scan, count=1000):
            key = as_text(key)
            member = await self._run(self.client.srandmember(key))
            if member is None:
                continue
            prefix = key.removesuffix("unindexed")
            message_key = self.layout.message_under(prefix, as_text(member))
            user = await self._run(self.client.hget(message_key, MessageField.USER))
            if user is not None:
                users.append(as_text(user))
            else:  # its message is gone (a deleted user's leftovers): nothing to index
                await self._run(self.client.srem(key, member))
        return sorted(set(users))

    async def reindex_pending(self, user_id: str) -> int:
        with in_background():  # a saved turn's indexing, a repair pass: nobody waits on its vectors
            pending = await self._pending_messages(user_id)
            if not pending or not await self.index_messages(user_id, pending, clear_pending=True):
                return 0
            return len(pending)

    async def index_messages(self, user_id: str, messages: Sequence[Message], *, clear_pending: bool) -> bool:
        """Write the search entries of one user's stored messages, each with its search context.

        When the embedder fails, the ids are recorded in `unindexed_messages` (the messages
        stay in history) and False is returned; with `clear_pending`, once indexed they are
        removed from it (new messages were never in it: no round trip for them).
        """
        pending = self.layout.unindexed_messages(user_id)
        unsearchable = [m.id for m in messages if not (m.content.strip() and m.role in ("user", "assistant"))]
        if unsearchable and clear_pending:  # nothing to index: not waiting either
            await self._run(self.client.srem(pending, *unsearchable))
        messages = [m for m in messages if m.content.strip() and m.role in ("user", "assistant")]
        if not messages:
            return True
        wanted = self.core.search.message_context != "none" and self.core.search.message_context_chars
        preceding = await preceding_messages(self, messages) if wanted or any(map(leaves_unanswered, messages)) else {}
        memories = self._message_memories(messages, self._preceding_texts(messages, preceding))
        try:
            # an entry written for a message that expired meanwhile is deleted again (drop_orphans)
            await self.memories.store_memories(memories, drop_orphans=True)
        except EmbeddingsUnavailable as error:
            await self._run(self.client.sadd(pending, *(message.id for message in messages)))
            await self._keyword_entries(memories)
            await mark_unanswered(self, messages, preceding)
            logger.warning(
                "%d message(s) of %r stored, found by their words until embedded: %s", len(messages), user_id, error
            )
            return False
        await mark_unanswered(self, messages, preceding)
        if clear_pending:
            await self._run(self.client.srem(pending, *(message.id for message in messages)))
        return True

    async def _keyword_entries(self, memories: Sequence[Memory]) -> None:
        """Search entries without a vector for messages the embedder could not embed: their words are
        indexed at once (keyword search finds them), and their digest says "unembedded", so the
        next indexing (`reindex_pending`) embeds them. An entry already embedded is left as it is."""
        await self.core.note_scopes(memory.user_id for memory in memories)
        rows = [
            (self.layout.memory(m.user_id, m.id), self.memories.memory_row(self.memories.redacted(m))) for m in memories
        ]
        pipe = self.client.pipeline(transaction=False)
        for key, _ in rows:
            pipe.hget(key, MemoryField.CONTENT_DIGEST)
        stored = await self._run(pipe.execute())
        fresh = [
            (key, row) for (key, row), digest in zip(rows, stored) if as_text(digest) != row[MemoryField.CONTENT_DIGEST]
        ]
        pipe = self.client.pipeline(transaction=False)
        self.memories.queue_rows(pipe, [(key, {**row, MemoryField.CONTENT_DIGEST: UNEMBEDDED}) for key, row in fresh])
        self.memories.queue_follow(pipe, memories, drop_orphans=True)
        await self._run(pipe.execute())

    @staticmethod
    def _message_memories(messages: Sequence[Message], contexts: dict[str, str]) -> list[Memory]:
        """The search memories of stored messages."""
        return [
            Memory(
                id=message_memory_id(message.id),
                user_id=message.user_id,
                kind="message",
                text=message.content,
                context=contexts.get(message.id),
                session_id=message.session_id,
                created_at=message.created_at,
                source_message_ids=[message.id],
                speaker=message.name,  # the owner's own name too, when given (shown only for others)
                speaker_role=message.speaker_role,
                metadata=message.metadata,
            )
            for message in messages
        ]

    def _preceding_texts(self, messages: Sequence[Message], preceding: dict[str, Preceding]) -> dict[str, str]:
        """Per message id: the message before it in its session (its search context), cut to
        `search_message_context_chars`, where `search_message_context` gives it one. By default
        ("dialogue") a message of the owner and the assistant gets the other's message it
        answers: "what did you recommend?" finds the answer naming the films through the
        question, and "Lyon, by the Rhône" is found as the answer to "which city is home?". A
        named speaker's message (a friend, either side of a chat between two people) gets none:
        its vector and words are its own, so a question finds the turn that says it."""
        limit = self.core.search.message_context_chars
        scope = self.core.search.message_context
        if scope == "none" or not limit:
            return {}
        contexts = {}
        for message in messages:
            before = preceding.get(message.id)
            if before is None:
                continue
            if scope == "all" or {message.speaker_role, before.speaker_role} == {"owner", "assistant"}:
                contexts[message.id] = before.content[:limit]
        return contexts

    async def load_messages(self, user_id: str, members: Sequence[bytes | str]) -> list[Message]:
        if not members:
            return []
        prefix = self.layout.message_prefix(user_id)
        pipe = self.client.pipeline(transaction=False)
        for member in members:
            pipe.hgetall(prefix + as_text(member))
        rows = await self._run(pipe.execute())
        messages = []
        for row in rows:
            if not row:
                continue
            message = message_from_hash({as_text(k): as_text(v) for k, v in row.items()})
            if message is not None:
                messages.append(message)
        return messages

    async def recent_messages(self, user_id: str, session_id: str, limit: int = 20) -> list[Message]:
        if limit <= 0:
            return []
        members = await self._run(self.client.zrange(self.layout.session_messages(user_id, session_id), -limit, -1))
        return await self._refreshed(user_id, await self.load_messages(user_id, members))

    async def _refreshed(self, user_id: str, messages: list[Message]) -> list[Message]:
        """`messages`, their time to live started again where `retention_refresh_on_read` says so."""
        await self.retention.refresh(user_id, [message_memory_id(message.id) for message in messages])
        return messages

    async def message_neighbours(
        self, user_id: str, message_id: str, *, before: int = 1, after: int = 1
    ) -> list[Message]:
        key = self.layout.message(user_id, message_id)
        session_id = await self._run(self.client.hget(key, MessageField.SESSION))
        if session_id is None:
            return []
        session_messages = self.layout.session_messages(user_id, as_text(session_id))
        rank = await self._run(self.client.zrank(session_messages, key.rsplit(":", 1)[1]))
        if rank is None:
            return []
        members = await self._run(self.client.zrange(session_messages, max(0, rank - before), rank + after))
        return await self._refreshed(user_id, await self.load_messages(user_id, members))

    async def messages_around(
        self, user_id: str, message_ids: Sequence[str], *, before: int = 1, after: int = 1
    ) -> dict[str, list[Message]]:
        around = await messages_around(self, user_id, message_ids, before=before, after=after)
        await self._refreshed(user_id, list({m.id: m for found in around.values() for m in found}.values()))
        return around

    async def unprocessed_messages(self, user_id: str, limit: int | None = None) -> list[Message]:
        cursor = await self.get_cursor(user_id)
        members = await self._run(
            self.client.zrangebyscore(
                self.layout.timeline(user_id),
                f"({cursor}",
                "+inf",
                start=0 if limit else None,
                num=limit if limit else None,
            )
        )
        return await self.load_messages(user_id, members)

    async def get_cursor(self, user_id: str) -> int:
        value = await self._run(self.client.get(self.layout.cursor(user_id)))
        return int(value or 0)

    async def advance_cursor(self, user_id: str, through_seq: int) -> int:
        value = await self._run(self._advance_cursor(keys=[self.layout.cursor(user_id)], args=[int(through_seq)]))
        return int(value)

    async def queue_cursor_advance(self, pipe: Any, user_id: str, through_seq: int) -> None:
        """Queue `advance_cursor` on `pipe` (inside a transaction that writes what the run consumed)."""
        await self.core.queue_script(pipe, self._advance_cursor, [self.layout.cursor(user_id)], [int(through_seq)])

    # forgetting a message: a tombstone, or its text rewritten ------------------------------
    async def drop_messages(self, user_id: str, dropped: Sequence[Message], rewritten: Sequence[Message]) -> None:
        """Drop messages from history and search (each hash stays as a tombstone holding no text,
        so a redelivered copy of the message is not stored again) and store rewritten ones; then
        reindex the rewritten ones and the message after each changed one (its search context
        is the message before it). With the embedder down they wait in `unindexed_messages`
        for the next repair pass; their old entries are gone already."""
        changed = [*dropped, *rewritten]
        pipe = self.client.pipeline(transaction=False)
        for message in changed:
            pipe.zrangebyscore(
                self.layout.session_messages(user_id, message.session_id), f"({message.seq}", "+inf", start=0, num=1
            )
        following = {as_text(member) for members in await self._run(pipe.execute()) for member in members}
        pipe = self.client.pipeline(transaction=True)
        for message in dropped:
            key = self.layout.message(user_id, message.id)
            member = key.rsplit(":", 1)[1]
            pipe.hset(key, mapping={MessageField.CONTENT: "", MessageField.NAME: "", MessageField.FORGOTTEN: "1"})
            pipe.zrem(self.layout.timeline(user_id), member)
            pipe.zrem(self.layout.session_messages(user_id, message.session_id), member)
            pipe.srem(self.layout.unindexed_messages(user_id), message.id)
            pipe.delete(self.layout.memory(user_id, message_memory_id(message.id)))
        for message in rewritten:
            pipe.hset(self.layout.message(user_id, message.id), MessageField.CONTENT, message.content)
            # the old search entry goes now: nothing stale is searchable while the new one waits
            pipe.delete(self.layout.memory(user_id, message_memory_id(message.id)))
        await self._run(pipe.execute())
        dropped_members = {self.layout.message(user_id, message.id).rsplit(":", 1)[1] for message in dropped}
        reindex = [*rewritten, *await self.load_messages(user_id, sorted(following - dropped_members))]
        await self.index_messages(
            user_id, list({message.id: message for message in reindex}.values()), clear_pending=False
        )

    async def replies_to(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        """Ids of the assistant messages right after these messages in their sessions."""
        messages = await self.load_messages(
            user_id, [item_key(message_id) for message_id in dict.fromkeys(message_ids)]
        )
        if not messages:
            return []
        pipe = self.client.pipeline(transaction=False)
        for message in messages:
            pipe.zrangebyscore(
                self.layout.session_messages(user_id, message.session_id), f"({message.seq}", "+inf", start=0, num=1
            )
        following = [members[0] for members in await self._run(pipe.execute()) if members]
        return [message.id for message in await self.load_messages(user_id, following) if message.role == "assistant"]

    # sessions: rolling summaries and titles ----------------------------------------------
    async def get_session_summary(self, user_id: str, session_id: str) -> SessionSummary | None:
        raw = await self._run(self.client.get(self.layout.summary(user_id, session_id)))
        return SessionSummary.model_validate_json(raw) if raw else None

    async def set_session_summary(self, summary: SessionSummary) -> None:
        key = self.layout.summary(summary.user_id, summary.session_id)
        summary = summary.model_copy(update={"summary": self.core.redact(summary.summary)})
        await self._run(self.client.set(key, summary.model_dump_json()))

    async def list_sessions(self, user_id: str) -> list[str]:
        members = await self._run(self.client.zrevrange(self.layout.sessions(user_id), 0, -1))
        return [as_text(member) for member in members]

    async def set_session_title(self, user_id: str, session_id: str, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise InvalidInput("a session title must not be blank")
        self.core.check_text_size(title, f"the title of session {session_id!r}")
        await self._run(self.client.hset(self.layout.session_titles(user_id), session_id, self.core.redact(title)))

    async def session_titles(self, user_id: str) -> dict[str, str]:
        raw = await self._run(self.client.hgetall(self.layout.session_titles(user_id)))
        return {as_text(session_id): as_text(title) for session_id, title in raw.items()}

    async def session_summaries(self, user_id: str, session_ids: Sequence[str]) -> list[SessionSummary | None]:
        """The summaries of these sessions, in order (None for a session without one), in one round trip."""
        raw = await self._run(self.client.mget([self.layout.summary(user_id, session) for session in session_ids]))
        return [SessionSummary.model_validate_json(value) if value else None for value in raw]

    async def replace_session_summaries(self, user_id: str, summaries: dict[str, SessionSummary]) -> None:
        """Store summaries as they are (session id → summary; their text is masked already)."""
        pipe = self.client.pipeline(transaction=False)
        for session_id, summary in summaries.items():
            pipe.set(self.layout.summary(user_id, session_id), summary.model_dump_json())
        await self._run(pipe.execute())
