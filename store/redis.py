"""`RedisMemoryStore`: the `MemoryStore` protocol on Redis with search, through RedisVL.

History, summaries, profile and events are plain Redis structures under a per-user key
prefix (see `schema.KeyLayout`); vector memories are hashes indexed by one RedisVL index
created with `LANGUAGE chinese`. Hybrid search runs a KNN query and a BM25 query (both
filtered on the user with RedisVL `Tag` filters) and fuses them; it works on Redis
Stack 7.4 and Redis 8 alike.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Sequence

import numpy as np
import redis.asyncio as aioredis
from langchain_core.embeddings import Embeddings
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.query import CountQuery, TextQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Num, Tag

from memlane.config import Settings, get_settings
from memlane.store.base import (
    EmbeddingsUnavailable,
    Event,
    Memory,
    MemoryHit,
    MemoryKind,
    MemoryUpdate,
    Message,
    ProfileEntry,
    RedisUnavailable,
    SessionSummary,
    SpeakerRole,
    StoreError,
    StoreItem,
    UserExport,
    event_memory_id,
    message_memory_id,
    profile_memory_id,
    stable_id,
)
from memlane.store.breaker import CircuitBreaker, CircuitOpen
from memlane.store.embeddings import embedding_dims, get_embeddings
from memlane.store.schema import (
    INDEX_LANGUAGE,
    KeyLayout,
    MemoryField,
    MessageField,
    item_key,
    memory_schema,
    session_key,
    speaker_key,
    user_key,
)
from memlane.store.text import detect_language, index_terms, query_terms
from memlane.store.timeexpr import TimeScope, month_day, parse_time_scope, resolve_timezone, without_time_expressions

logger = logging.getLogger(__name__)

# Stores a message unless its id is already there; assigns the per-user seq atomically.
# KEYS: message hash, seq counter, timeline zset, session zset, sessions zset
# ARGV: member (message key suffix), raw session id, created_at, then field/value pairs
# Returns -1 for an id already stored in the same session, -2 for one stored in another.
_ADD_MESSAGE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'session') == ARGV[2] then return -1 end
  return -2
end
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'seq', seq, unpack(ARGV, 4))
redis.call('ZADD', KEYS[3], seq, ARGV[1])
redis.call('ZADD', KEYS[4], seq, ARGV[1])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[2])
return seq
"""

# Moves the cursor forward only. KEYS: cursor; ARGV: target seq
_ADVANCE_CURSOR_LUA = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local target = tonumber(ARGV[1])
if target > current then redis.call('SET', KEYS[1], target); return target end
return current
"""

_COUNT_TTL_SECONDS = 60.0


def _vector_bytes(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _unavailable(error: Exception) -> StoreError:
    """The store error for a failed Redis call: a busy connection pool is not a Redis that went away."""
    from redis.exceptions import MaxConnectionsError

    from memlane.store.connections import pool_exhausted

    if isinstance(error, MaxConnectionsError):
        return pool_exhausted(error)
    return RedisUnavailable(
        f"Redis stopped answering ({error}); check that it runs and REDIS_URL points at it, "
        "or unset REDIS_URL to use the embedded Redis Stack"
    )


class RedisMemoryStore:
    """The RedisVL implementation of `MemoryStore`. Create it with `open_store()`."""

    def __init__(
        self,
        client: aioredis.Redis,
        embeddings: Embeddings,
        *,
        settings: Settings | None = None,
        key_prefix: str | None = None,
    ) -> None:
        self.settings = settings or get_settings()
        self.client = client
        self._counts: dict[str, tuple[int, float]] = {}  # user → (memory count, when counted)
        self.url: str | None = None  # set by open_store: where background tasks can share this Redis
        self.embeddings = embeddings
        # shared by every embedding call of this store: a down embedder is not waited on each time
        self.embedder_breaker = CircuitBreaker.from_settings("the embedder", self.settings)
        self.layout = KeyLayout(key_prefix or self.settings.key_prefix)
        self.dims = embedding_dims(embeddings)
        self.schema = memory_schema(self.layout, self.dims)
        self.index = AsyncSearchIndex(self.schema, redis_client=client)
        self.zone = resolve_timezone(self.settings.timezone)  # what "April 27th" and "昨天" are read in
        self._add_message = client.register_script(_ADD_MESSAGE_LUA)
        self._advance_cursor = client.register_script(_ADVANCE_CURSOR_LUA)

    # set-up ------------------------------------------------------------------------------
    async def ensure_indexes(self) -> None:
        """Create the memory index unless it exists; rebuild one made by an older memlane."""
        name = self.layout.memory_index_name
        try:
            info = await self.client.ft(name).info()
        except ResponseError:
            info = None
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise _unavailable(error) from error
        if info is not None:
            self._check_dims(info)
            if self._index_is_current(info):
                return
            logger.warning("rebuilding the index %s for the bilingual full-text fields", name)
            await self._run(self.client.ft(name).dropindex(delete_documents=False))
            await self._create_index()
            await self._backfill_search_fields()
            return
        await self._create_index()

    async def _create_index(self) -> None:
        name = self.layout.memory_index_name
        definition = IndexDefinition(
            prefix=[self.layout.memory_key_prefix], index_type=IndexType.HASH, language=INDEX_LANGUAGE
        )
        try:
            await self.client.ft(name).create_index(self.schema.redis_fields, definition=definition)
        except ResponseError as error:
            if "already exists" not in str(error).lower():  # another process won the race
                raise StoreError(f"could not create the index {name}: {error}") from error

    @staticmethod
    def _index_is_current(info: dict[str, Any]) -> bool:
        names = {_text(item) for attribute in info.get("attributes", []) for item in attribute}
        return {MemoryField.SEARCH_TEXT, MemoryField.SEARCH_CONTEXT, MemoryField.MONTH_DAY} <= names

    async def _backfill_search_fields(self) -> None:
        """Give memories written before the bilingual index their search fields (one HSET each,
        the stored vector kept), 500 keys per round trip."""
        keys = [key async for key in self.client.scan_iter(match=self.layout.memory_key_prefix + "*", count=1000)]
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            pipe = self.client.pipeline(transaction=False)
            for key in batch:
                pipe.hmget(key, self._RETURN_FIELDS)
            rows = await self._run(pipe.execute())
            pipe = self.client.pipeline(transaction=False)
            for key, values in zip(batch, rows):
                doc = dict(zip(self._RETURN_FIELDS, values))
                if doc[MemoryField.ID] is not None and doc[MemoryField.TEXT] is not None:
                    memory = self._memory_from_doc({field: _text(value) for field, value in doc.items()})
                    pipe.hset(key, mapping=self._memory_row(memory))
            await self._run(pipe.execute())

    def _check_dims(self, info: dict[str, Any]) -> None:
        for attribute in info.get("attributes", []):
            flat = [_text(item) for item in attribute]
            if MemoryField.EMBEDDING in flat and "dim" in flat:
                dims = int(flat[flat.index("dim") + 1])
                if dims != self.dims:
                    raise StoreError(
                        f"the index {self.layout.memory_index_name} holds {dims}-dim vectors but the "
                        f"embeddings give {self.dims}; set MEMLANE_KEY_PREFIX to a new prefix for "
                        "this embedding model, or delete the old index"
                    )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _run(self, coro: Any) -> Any:
        try:
            return await coro
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise _unavailable(error) from error
        except RedisSearchError as error:  # RedisVL wraps the connection error
            if isinstance(error.__cause__, (RedisConnectionError, RedisTimeoutError, OSError)):
                raise _unavailable(error.__cause__) from error
            raise

    async def _embed(self, make_call: Any) -> Any:
        """An embedding call through the embedder's circuit breaker; any failure of it becomes
        `EmbeddingsUnavailable` (a store error the callers degrade on)."""
        try:
            return await self.embedder_breaker.call(make_call)
        except CircuitOpen as error:
            raise EmbeddingsUnavailable(str(error)) from error
        except Exception as error:
            raise EmbeddingsUnavailable(
                f"the embedder failed ({type(error).__name__}: {error}); search uses keywords only "
                "and new messages are indexed once it answers again"
            ) from error

    async def _embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._embed(lambda: self.embeddings.aembed_documents(texts))

    async def _embed_query(self, text: str) -> list[float]:
        return await self._embed(lambda: self.embeddings.aembed_query(text))

    # history -------------------------------------------------------------------------------
    async def add_messages(self, messages: Sequence[Message], *, index_for_search: bool = True) -> list[Message]:
        if not messages:
            return []
        pipe = self.client.pipeline(transaction=False)
        for message in messages:
            key = self.layout.message(message.user_id, message.id)
            fields = {
                MessageField.ID: message.id,
                MessageField.USER: message.user_id,
                MessageField.SESSION: message.session_id,
                MessageField.ROLE: message.role,
                MessageField.NAME: message.name or "",
                MessageField.SPEAKER_ROLE: message.speaker_role,
                MessageField.CONTENT: message.content,
                MessageField.CREATED_AT: repr(message.created_at),
            }
            args: list[Any] = [key.rsplit(":", 1)[1], message.session_id, repr(message.created_at)]
            for field, value in fields.items():
                args += [field, value]
            keys = [
                key,
                self.layout.seq(message.user_id),
                self.layout.timeline(message.user_id),
                self.layout.session_messages(message.user_id, message.session_id),
                self.layout.sessions(message.user_id),
            ]
            await self._add_message(keys=keys, args=args, client=pipe)
        results = [int(seq) for seq in await self._run(pipe.execute())]
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
        if index_for_search:
            for user_id in dict.fromkeys(message.user_id for message in messages):
                new = [message for message in stored if message.user_id == user_id]
                repaired = await self._pending_messages(user_id)  # a repair pass rides on each save
                await self._index_messages(user_id, [*repaired, *new], clear_pending=bool(repaired))
        return stored

    async def _pending_messages(self, user_id: str) -> list[Message]:
        """The user's stored messages whose indexing failed (ids of messages gone since are dropped)."""
        pending = self.layout.unindexed_messages(user_id)
        ids = sorted(_text(member) for member in await self._run(self.client.smembers(pending)))
        if not ids:
            return []
        messages = await self._load_messages(user_id, [item_key(message_id) for message_id in ids])
        gone = set(ids) - {message.id for message in messages}
        if gone:
            await self._run(self.client.srem(pending, *gone))
        return sorted(messages, key=lambda message: message.seq or 0)

    async def reindex_pending(self, user_id: str) -> int:
        pending = await self._pending_messages(user_id)
        if not pending or not await self._index_messages(user_id, pending, clear_pending=True):
            return 0
        return len(pending)

    async def _index_messages(self, user_id: str, messages: Sequence[Message], *, clear_pending: bool) -> bool:
        """Write the search entries of one user's stored messages, each with its search context.

        When the embedder fails, the ids are recorded in `unindexed_messages` (the messages
        stay in history) and False is returned; with `clear_pending`, once indexed they are
        removed from it (new messages were never in it: no round trip for them).
        """
        messages = [m for m in messages if m.content.strip() and m.role in ("user", "assistant")]
        if not messages:
            return True
        pending = self.layout.unindexed_messages(user_id)
        try:
            await self.add_memories(self._message_memories(messages, await self._preceding_texts(messages)))
        except EmbeddingsUnavailable as error:
            await self._run(self.client.sadd(pending, *(message.id for message in messages)))
            logger.warning("%d message(s) of %r stored but not indexed yet: %s", len(messages), user_id, error)
            return False
        if clear_pending:
            await self._run(self.client.srem(pending, *(message.id for message in messages)))
        return True

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
                speaker=message.name if message.speaker_role != "owner" else None,
                speaker_role=message.speaker_role,
            )
            for message in messages
        ]

    async def _preceding_texts(self, messages: Sequence[Message]) -> dict[str, str]:
        """Per message id: the message before it in its session (its search context), cut to
        `search_message_context_chars`. A question and its answer find each other this way:
        "what did you recommend?" matches the answer that names the films, and the reverse."""
        limit = self.settings.search_message_context_chars
        if not limit or not messages:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for message in messages:
            # the member ranked just below this message's seq in its session
            pipe.zrevrangebyscore(
                self.layout.session_messages(message.user_id, message.session_id), f"({message.seq}", "-inf", start=0, num=1
            )
        previous = await self._run(pipe.execute())
        pipe = self.client.pipeline(transaction=False)
        for message, members in zip(messages, previous):
            prefix = self.layout.user_prefix(message.user_id) + "msg:"
            pipe.hget(prefix + _text(members[0]), MessageField.CONTENT) if members else pipe.echo("")
        texts = await self._run(pipe.execute())
        return {message.id: _text(text)[:limit] for message, text in zip(messages, texts) if _text(text).strip()}

    async def _load_messages(self, user_id: str, members: Sequence[bytes | str]) -> list[Message]:
        if not members:
            return []
        prefix = self.layout.user_prefix(user_id) + "msg:"
        pipe = self.client.pipeline(transaction=False)
        for member in members:
            pipe.hgetall(prefix + _text(member))
        rows = await self._run(pipe.execute())
        messages = []
        for row in rows:
            if not row:
                continue
            data = {_text(k): _text(v) for k, v in row.items()}
            messages.append(
                Message(
                    id=data[MessageField.ID],
                    user_id=data[MessageField.USER],
                    session_id=data[MessageField.SESSION],
                    role=data[MessageField.ROLE],  # type: ignore[arg-type]
                    name=data.get(MessageField.NAME) or None,
                    speaker_is_owner=data[MessageField.SPEAKER_ROLE] == "owner" if data.get(MessageField.SPEAKER_ROLE) else None,
                    content=data[MessageField.CONTENT],
                    created_at=float(data[MessageField.CREATED_AT]),
                    seq=int(data[MessageField.SEQ]),
                )
            )
        return messages

    async def recent_messages(self, user_id: str, session_id: str, limit: int = 20) -> list[Message]:
        if limit <= 0:
            return []
        members = await self._run(
            self.client.zrange(self.layout.session_messages(user_id, session_id), -limit, -1)
        )
        return await self._load_messages(user_id, members)

    async def message_neighbours(
        self, user_id: str, message_id: str, *, before: int = 1, after: int = 1
    ) -> list[Message]:
        key = self.layout.message(user_id, message_id)
        session_id = await self._run(self.client.hget(key, MessageField.SESSION))
        if session_id is None:
            return []
        session_messages = self.layout.session_messages(user_id, _text(session_id))
        rank = await self._run(self.client.zrank(session_messages, key.rsplit(":", 1)[1]))
        if rank is None:
            return []
        members = await self._run(self.client.zrange(session_messages, max(0, rank - before), rank + after))
        return await self._load_messages(user_id, members)

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
        return await self._load_messages(user_id, members)

    async def get_cursor(self, user_id: str) -> int:
        value = await self._run(self.client.get(self.layout.cursor(user_id)))
        return int(value or 0)

    async def advance_cursor(self, user_id: str, through_seq: int) -> int:
        value = await self._run(self._advance_cursor(keys=[self.layout.cursor(user_id)], args=[int(through_seq)]))
        return int(value)

    # rolling summaries ----------------------------------------------------------------------
    async def get_session_summary(self, user_id: str, session_id: str) -> SessionSummary | None:
        raw = await self._run(self.client.get(self.layout.summary(user_id, session_id)))
        return SessionSummary.model_validate_json(raw) if raw else None

    async def set_session_summary(self, summary: SessionSummary) -> None:
        key = self.layout.summary(summary.user_id, summary.session_id)
        await self._run(self.client.set(key, summary.model_dump_json()))

    async def list_sessions(self, user_id: str) -> list[str]:
        members = await self._run(self.client.zrevrange(self.layout.sessions(user_id), 0, -1))
        return [_text(member) for member in members]

    # profile -------------------------------------------------------------------------------
    async def get_profile(self, user_id: str) -> list[ProfileEntry]:
        raw = await self._run(self.client.hvals(self.layout.profile(user_id)))
        entries = [ProfileEntry.model_validate_json(value) for value in raw]
        return sorted(entries, key=lambda entry: (entry.topic.lower(), entry.subtopic.lower()))

    async def delete_profile_entry(self, user_id: str, entry_id: str) -> bool:
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.layout.profile(user_id), entry_id)
        pipe.delete(self.layout.memory(user_id, profile_memory_id(entry_id)))
        removed, _ = await self._run(pipe.execute())
        return bool(removed)

    # events ----------------------------------------------------------------------------------
    async def list_events(
        self, user_id: str, *, limit: int = 50, since: float | None = None, until: float | None = None
    ) -> list[Event]:
        ids = await self._run(
            self.client.zrevrangebyscore(
                self.layout.event_times(user_id),
                "+inf" if until is None else until,
                "-inf" if since is None else since,
                start=0,
                num=max(limit, 0),
            )
        )
        if not ids:
            return []
        raw = await self._run(self.client.hmget(self.layout.events(user_id), ids))
        return [Event.model_validate_json(value) for value in raw if value]

    async def delete_event(self, user_id: str, event_id: str) -> bool:
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.layout.events(user_id), event_id)
        pipe.zrem(self.layout.event_times(user_id), event_id)
        pipe.delete(self.layout.memory(user_id, event_memory_id(event_id)))
        removed, _, _ = await self._run(pipe.execute())
        return bool(removed)

    async def get_events(self, user_id: str, event_ids: Sequence[str]) -> list[Event | None]:
        if not event_ids:
            return []
        raw = await self._run(self.client.hmget(self.layout.events(user_id), list(event_ids)))
        return [Event.model_validate_json(value) if value else None for value in raw]

    # the memory graph's one write ----------------------------------------------------------
    async def apply_update(self, update: MemoryUpdate) -> None:
        user_id = update.user_id
        if not user_id:
            raise StoreError("a MemoryUpdate has an empty user_id: every update belongs to a user")
        foreign = [item for item in [*update.upsert_profile, *update.memories] if item.user_id != user_id]
        if update.event is not None and update.event.user_id != user_id:
            foreign.append(update.event)  # type: ignore[arg-type]
        if foreign:
            raise StoreError(f"a MemoryUpdate for user {user_id!r} holds records of another user")
        # embed before the transaction: nothing slow may sit inside it
        memory_rows = await self._memory_rows(update.memories)
        pipe = self.client.pipeline(transaction=True)
        profile_key = self.layout.profile(user_id)
        for entry in update.upsert_profile:
            pipe.hset(profile_key, entry.id, entry.model_dump_json())
        for entry_id in update.delete_profile_ids:
            pipe.hdel(profile_key, entry_id)
            pipe.delete(self.layout.memory(user_id, profile_memory_id(entry_id)))
        for memory_id in update.delete_memory_ids:
            pipe.delete(self.layout.memory(user_id, memory_id))
        if update.event is not None:
            pipe.hset(self.layout.events(user_id), update.event.id, update.event.model_dump_json())
            pipe.zadd(self.layout.event_times(user_id), {update.event.id: update.event.created_at})
        for key, row in memory_rows:
            pipe.hset(key, mapping=row)
        if update.advance_cursor_to is not None:
            await self._advance_cursor(
                keys=[self.layout.cursor(user_id)], args=[int(update.advance_cursor_to)], client=pipe
            )
        await self._run(pipe.execute())

    # vector memories -------------------------------------------------------------------------
    def _memory_row(self, memory: Memory) -> dict[str, Any]:
        """Every field of a memory's hash but the embedding. All fields are always written
        (empty when unset), so an upsert is one HSET: a DEL before it would make RediSearch
        index the document twice and skew its BM25 statistics until garbage collection."""
        speaker = memory.speaker or ""
        row: dict[str, Any] = {
            MemoryField.ID: memory.id,
            MemoryField.USER: user_key(memory.user_id),
            MemoryField.USER_ID: memory.user_id,
            MemoryField.KIND: memory.kind,
            MemoryField.TEXT: memory.text,
            MemoryField.SEARCH_TEXT: index_terms(f"{speaker} {memory.text}" if speaker else memory.text),
            MemoryField.SEARCH_CONTEXT: index_terms(memory.context or ""),
            MemoryField.LANGUAGE: detect_language(memory.text),
            MemoryField.SPEAKER: speaker,
            MemoryField.SPEAKER_KEY: speaker_key(speaker) if speaker else "",
            MemoryField.SPEAKER_ROLE: memory.speaker_role,
            MemoryField.CREATED_AT: memory.created_at,
            MemoryField.MONTH_DAY: month_day(memory.created_at, self.zone),
            MemoryField.SOURCES: json.dumps(memory.source_message_ids, ensure_ascii=False),
            MemoryField.REF_ID: memory.ref_id or "",
            MemoryField.SESSION: session_key(memory.session_id) if memory.session_id else "",
            MemoryField.SESSION_ID: memory.session_id or "",
        }
        row[MemoryField.CONTENT_DIGEST] = stable_id(
            *(f"{key}={value}" for key, value in sorted(row.items())), f"context={memory.context or ''}"
        )  # the context's own words count too: the embedding reads them
        return row

    @staticmethod
    def _embedding_input(memory: Memory) -> str:
        return f"{memory.context}\n{memory.text}" if memory.context else memory.text

    async def _memory_rows(self, memories: Sequence[Memory]) -> list[tuple[str, dict[str, Any]]]:
        """Hash rows of the memories that are new or changed (unchanged ones are skipped), embedded."""
        if not memories:
            return []
        empty = [memory.user_id for memory in memories if not memory.user_id]
        if empty:
            raise StoreError("a memory has an empty user_id: every memory belongs to a user")
        latest = {self.layout.memory(memory.user_id, memory.id): memory for memory in memories}  # last one wins
        keys = list(latest)
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, MemoryField.CONTENT_DIGEST)
        stored = await self._run(pipe.execute())
        changed = []
        for key, digest in zip(keys, stored):
            row = self._memory_row(latest[key])
            if _text(digest) != row[MemoryField.CONTENT_DIGEST]:
                changed.append((key, row))
        if not changed:
            return []
        vectors = await self._embed_documents([self._embedding_input(latest[key]) for key, _ in changed])
        for (_, row), vector in zip(changed, vectors):
            row[MemoryField.EMBEDDING] = _vector_bytes(vector)
        return changed

    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        rows = await self._memory_rows(memories)
        if rows:
            pipe = self.client.pipeline(transaction=False)
            for key, row in rows:
                pipe.hset(key, mapping=row)
            await self._run(pipe.execute())
        return [memory.id for memory in memories]

    async def delete_memory(self, user_id: str, memory_id: str) -> bool:
        removed = await self._run(self.client.delete(self.layout.memory(user_id, memory_id)))
        return bool(removed)

    def _filter(
        self,
        user_id: str,
        kinds: Sequence[MemoryKind] | None,
        session_id: str | None,
        since: float | None,
        until: float | None,
        speaker: str | None = None,
        speaker_roles: Sequence[SpeakerRole] | None = None,
    ) -> FilterExpression:
        expression = Tag(MemoryField.USER) == user_key(user_id)
        if kinds:
            expression = expression & (Tag(MemoryField.KIND) == list(kinds))
        if session_id:
            expression = expression & (Tag(MemoryField.SESSION) == session_key(session_id))
        if since is not None:
            expression = expression & (Num(MemoryField.CREATED_AT) >= since)
        if until is not None:
            expression = expression & (Num(MemoryField.CREATED_AT) <= until)
        if speaker:
            expression = expression & (Tag(MemoryField.SPEAKER_KEY) == speaker_key(speaker))
        if speaker_roles:
            expression = expression & (Tag(MemoryField.SPEAKER_ROLE) == list(speaker_roles))
        return expression

    @staticmethod
    def _time_filter(scope: TimeScope) -> FilterExpression:
        """Memories inside any of the scope's spans or on any of its month-days."""
        clauses: list[FilterExpression] = [
            Num(MemoryField.CREATED_AT).between(start, end) for start, end in scope.ranges
        ] + [Num(MemoryField.MONTH_DAY) == value for value in scope.month_days]
        expression = clauses[0]
        for clause in clauses[1:]:
            expression = expression | clause
        return expression

    _RETURN_FIELDS = [
        MemoryField.ID,
        MemoryField.USER_ID,
        MemoryField.KIND,
        MemoryField.SESSION_ID,
        MemoryField.TEXT,
        MemoryField.CREATED_AT,
        MemoryField.SOURCES,
        MemoryField.REF_ID,
        MemoryField.SPEAKER,
        MemoryField.SPEAKER_ROLE,
    ]

    def vector_query(
        self, vector: Sequence[float], expression: FilterExpression, limit: int, *, approximate: bool = False
    ) -> VectorQuery:
        """KNN under the filter. Exact by default: RediSearch compares the query with each of
        the user's memories (ADHOC_BF), which costs ~0.2 ms per thousand. `approximate` walks
        the HNSW graph instead (BATCHES, `search_ef_runtime`), for users with many memories."""
        return VectorQuery(
            vector=list(vector),
            vector_field_name=MemoryField.EMBEDDING,
            filter_expression=expression,
            return_fields=self._RETURN_FIELDS,
            num_results=limit,
            return_score=True,
            hybrid_policy="BATCHES" if approximate else None,
            ef_runtime=self.settings.search_ef_runtime if approximate else None,
        )

    async def memory_count(self, user_id: str) -> int:
        """How many search memories the user has (cached for a minute: it picks the search mode)."""
        now = time.monotonic()
        cached = self._counts.get(user_id)
        if cached is not None and now - cached[1] < _COUNT_TTL_SECONDS:
            return cached[0]
        count = int(await self._run(self.index.query(CountQuery(self._filter(user_id, None, None, None, None)))))
        if len(self._counts) > 10_000:
            self._counts.clear()
        self._counts[user_id] = (count, now)
        return count

    def text_query(
        self, terms: Sequence[str], expression: FilterExpression, limit: int, *, field: str = MemoryField.SEARCH_TEXT
    ) -> TextQuery:
        """BM25 over the analyzed terms (`store.text.query_terms`), any of them matching, in the
        memories' own text (or, with `field`, their context)."""
        return TextQuery(
            text=" ".join(terms),
            text_field_name=field,
            filter_expression=expression,
            return_fields=self._RETURN_FIELDS,
            num_results=limit,
            stopwords=None,
        )

    async def search_memories(
        self,
        user_id: str,
        query: str,
        *,
        kinds: Sequence[MemoryKind] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 10,
        speaker: str | None = None,
        speaker_roles: Sequence[SpeakerRole] | None = None,
        reference_time: float | None = None,
        understand_time: bool = True,
    ) -> list[MemoryHit]:
        if limit <= 0 or not query.strip():
            return []
        expression = self._filter(user_id, kinds, session_id, since, until, speaker, speaker_roles)
        candidates = max(self.settings.search_candidates, limit)
        scope = (
            parse_time_scope(query, time.time() if reference_time is None else reference_time, self.zone)
            if understand_time
            else TimeScope()
        )
        terms = query_terms(without_time_expressions(query, scope))
        text_queries = []
        if terms:
            text_queries.append(self.text_query(terms, expression, candidates))
            if scope:
                text_queries.append(self.text_query(terms, expression & self._time_filter(scope), candidates))
            text_queries.append(self.text_query(terms, expression, candidates, field=MemoryField.SEARCH_CONTEXT))

        async def run_text_queries() -> list[list[dict[str, Any]]]:
            return await self._run(self.index.batch_query(text_queries))

        # the BM25 queries need no vector: Redis answers them while the query is embedded
        # (the coroutine is made inside the task, so a cancelled task leaves none un-awaited)
        text_search = asyncio.ensure_future(run_text_queries()) if text_queries else None
        try:
            approximate = await self.memory_count(user_id) > self.settings.search_exact_max_memories
            try:
                query_vector: list[float] | None = await self._embed_query(query)
            except EmbeddingsUnavailable as error:  # degrade, never break: the BM25 rankings still answer
                logger.log(
                    logging.DEBUG if isinstance(error.__cause__, CircuitOpen) else logging.WARNING,
                    "searching %r's memories by keyword only: %s", user_id, error,
                )
                query_vector = None
            vector_lists = []
            if query_vector is not None:
                vector_queries = [self.vector_query(query_vector, expression, candidates, approximate=approximate)]
                if scope:
                    vector_queries.append(self.vector_query(query_vector, expression & self._time_filter(scope), candidates))
                vector_lists = await self._run(self.index.batch_query(vector_queries))
            text_lists = await text_search if text_search is not None else []
            context_list = text_lists.pop() if text_lists else []
        finally:
            if text_search is not None:
                if not text_search.done():
                    text_search.cancel()
                elif not text_search.cancelled():
                    text_search.exception()  # retrieved: an error here is already on its way up
        return await self._fuse(user_id, query_vector, vector_lists, text_lists, context_list, scope, limit)

    def relevance(
        self, vector_similarity: float | None, text_score: float, time_match: bool = False
    ) -> float:
        """The documented 0..1 relevance recall thresholds apply to: cosine similarity rescaled
        from the provider's floor of unrelated texts (`Settings.similarity_floor`) to 1,
        weighted `hybrid_alpha`, plus the BM25 score normalized to the best text hit, plus
        `search_time_match_bonus` for a memory of the time the query names (capped at 1).
        Without a similarity (the embedder is down: keyword-only search) it is the text score."""
        if vector_similarity is None:
            fused = text_score
        else:
            floor = self.settings.similarity_floor
            similarity = min(1.0, max(0.0, (vector_similarity - floor) / (1.0 - floor)))
            alpha = self.settings.hybrid_alpha
            fused = alpha * similarity + (1 - alpha) * text_score
        return min(1.0, fused + (self.settings.search_time_match_bonus if time_match else 0.0))

    async def _fuse(
        self,
        user_id: str,
        query_vector: Sequence[float] | None,
        vector_lists: list[list[dict[str, Any]]],
        text_lists: list[list[dict[str, Any]]],
        context_list: list[dict[str, Any]],
        scope: TimeScope,
        limit: int,
    ) -> list[MemoryHit]:
        """Reciprocal-rank fusion: each ranking adds weight / (k + rank) for every memory it holds.

        The rankings (weight 1) are the vector and the BM25 ranking over the user's memories
        and, when the query names a time, both again inside that time: a memory of that time
        gets up to twice the votes, without hiding the others. The BM25 ranking of the
        memories' contexts (a message's previous message) votes with `search_context_weight`:
        the answer to "what did you recommend?" is found through the question before it.
        Without a query vector (the embedder is down) only the BM25 rankings vote.
        """
        k = self.settings.search_rrf_k
        docs: dict[str, dict[str, Any]] = {}
        rank_score: dict[str, float] = {}
        weighted = [(ranking, 1.0) for ranking in [*vector_lists, *text_lists]]
        weighted.append((context_list, self.settings.search_context_weight))
        for ranking, weight in weighted:
            for rank, doc in enumerate(ranking, 1):
                docs.setdefault(doc["id"], doc)
                rank_score[doc["id"]] = rank_score.get(doc["id"], 0.0) + weight / (k + rank)
        similarity: dict[str, float] = {}
        for ranking in vector_lists:
            for doc in ranking:
                similarity.setdefault(doc["id"], max(0.0, 1.0 - float(doc["vector_distance"])))
        text_raw: dict[str, float] = {}
        for ranking in text_lists:
            for doc in ranking:
                text_raw.setdefault(doc["id"], float(doc.get("score") or 0.0))
        best_text = max(text_raw.values(), default=0.0)
        ranked = sorted(rank_score, key=lambda doc_id: rank_score[doc_id], reverse=True)[:limit]
        missing = [docs[doc_id] for doc_id in ranked if doc_id not in similarity]
        if missing and query_vector is not None:
            similarity.update(await self._similarities(user_id, query_vector, missing))
        hits = []
        for doc_id in ranked:  # records only for what is returned
            memory = self._memory_from_doc(docs[doc_id])
            text_score = text_raw.get(doc_id, 0.0) / best_text if best_text > 0 else 0.0
            vector_similarity = similarity.get(doc_id, 0.0)
            time_match = bool(scope) and self._in_scope(memory.created_at, scope)
            hits.append(
                MemoryHit(
                    memory=memory,
                    score=self.relevance(vector_similarity if query_vector is not None else None, text_score, time_match),
                    rank_score=rank_score[doc_id],
                    vector_similarity=vector_similarity,
                    text_score=text_score,
                    time_match=time_match,
                )
            )
        return hits

    def _in_scope(self, created_at: float, scope: TimeScope) -> bool:
        return any(start <= created_at <= end for start, end in scope.ranges) or (
            month_day(created_at, self.zone) in scope.month_days
        )

    async def _similarities(
        self, user_id: str, query_vector: Sequence[float], docs: list[dict[str, Any]]
    ) -> dict[str, float]:
        """Cosine similarity of text-only hits, from their stored vectors."""
        pipe = self.client.pipeline(transaction=False)
        for doc in docs:
            pipe.hget(self.layout.memory(user_id, _text(doc[MemoryField.ID])), MemoryField.EMBEDDING)
        blobs = await self._run(pipe.execute())
        query = np.asarray(query_vector, dtype=np.float32)
        query_norm = float(np.linalg.norm(query)) or 1.0
        similarities = {}
        for doc, blob in zip(docs, blobs):
            if not blob:
                continue
            vector = np.frombuffer(blob, dtype=np.float32)
            norm = float(np.linalg.norm(vector)) or 1.0
            similarities[doc["id"]] = max(0.0, float(vector @ query) / (norm * query_norm))
        return similarities

    @staticmethod
    def _memory_from_doc(doc: dict[str, Any]) -> Memory:
        return Memory(
            id=_text(doc[MemoryField.ID]),
            user_id=_text(doc[MemoryField.USER_ID]),
            kind=_text(doc[MemoryField.KIND]),  # type: ignore[arg-type]
            text=_text(doc[MemoryField.TEXT]),
            session_id=_text(doc.get(MemoryField.SESSION_ID)) or None,
            created_at=float(doc[MemoryField.CREATED_AT]),
            source_message_ids=json.loads(_text(doc.get(MemoryField.SOURCES)) or "[]"),
            ref_id=_text(doc.get(MemoryField.REF_ID)) or None,
            speaker=_text(doc.get(MemoryField.SPEAKER)) or None,
            speaker_role=_text(doc.get(MemoryField.SPEAKER_ROLE)) or "owner",  # type: ignore[arg-type]
        )

    # LangGraph store items (memlane/langgraph_store.py) --------------------------------------
    async def put_items(self, items: Sequence[StoreItem]) -> list[StoreItem]:
        latest = {(item.user_id, item.memory_id): item for item in items}  # last one wins
        items = list(latest.values())
        if not items:
            return []
        keys = [self.layout.memory(item.user_id, item.memory_id) for item in items]
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, MemoryField.ITEM)
        stored = await self._run(pipe.execute())
        items = [
            item.model_copy(update={"created_at": StoreItem.model_validate_json(raw).created_at}) if raw else item
            for item, raw in zip(items, stored)
        ]
        # embed before the transaction; unchanged searchable memories are not rewritten
        changed = dict(await self._memory_rows([item.as_memory() for item in items if item.text]))
        pipe = self.client.pipeline(transaction=True)
        for key, item in zip(keys, items):
            if not item.text:  # index=False: kept and listed, but no vector and no search terms
                row = self._memory_row(item.as_memory())
                row.update({MemoryField.SEARCH_TEXT: "", MemoryField.CONTENT_DIGEST: ""})
                pipe.hdel(key, MemoryField.EMBEDDING)
                pipe.hset(key, mapping=row)
            elif key in changed:
                pipe.hset(key, mapping=changed[key])
            pipe.hset(key, MemoryField.ITEM, item.model_dump_json())
            pipe.hset(self.layout.items(item.user_id), item.memory_id, json.dumps(item.namespace, ensure_ascii=False))
            if item.ttl_minutes is not None:
                pipe.pexpire(key, max(1, int(item.ttl_minutes * 60_000)))
            else:
                pipe.persist(key)
        await self._run(pipe.execute())
        return items

    async def get_items(self, user_id: str, memory_ids: Sequence[str]) -> list[StoreItem | None]:
        if not memory_ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for memory_id in memory_ids:
            pipe.hget(self.layout.memory(user_id, memory_id), MemoryField.ITEM)
        raw = await self._run(pipe.execute())
        return [StoreItem.model_validate_json(value) if value else None for value in raw]

    async def list_items(self, user_id: str) -> list[StoreItem]:
        registry = self.layout.items(user_id)
        memory_ids = [_text(field) for field in await self._run(self.client.hkeys(registry))]
        items = await self.get_items(user_id, memory_ids)
        gone = [memory_id for memory_id, item in zip(memory_ids, items) if item is None]
        if gone:  # expired, or deleted as a memory (the app's panel, the forget tool)
            await self._run(self.client.hdel(registry, *gone))
        return [item for item in items if item is not None]

    async def refresh_items(self, items: Sequence[StoreItem]) -> None:
        expiring = [item for item in items if item.ttl_minutes is not None]
        if not expiring:
            return
        pipe = self.client.pipeline(transaction=False)
        for item in expiring:
            pipe.pexpire(self.layout.memory(item.user_id, item.memory_id), max(1, int(item.ttl_minutes * 60_000)))
        await self._run(pipe.execute())

    async def delete_items(self, user_id: str, memory_ids: Sequence[str]) -> int:
        if not memory_ids:
            return 0
        pipe = self.client.pipeline(transaction=True)
        for memory_id in memory_ids:
            pipe.delete(self.layout.memory(user_id, memory_id))
        pipe.hdel(self.layout.items(user_id), *memory_ids)
        removed = await self._run(pipe.execute())
        return sum(removed[:-1])

    # whole user ----------------------------------------------------------------------------
    async def _user_keys(self, user_id: str) -> list[bytes]:
        keys: list[bytes] = []
        for prefix in (self.layout.user_prefix(user_id), self.layout.memory_user_prefix(user_id)):
            # the prefixes are hex digests: nothing in them is a glob character
            async for key in self.client.scan_iter(match=prefix + "*", count=1000):
                keys.append(key)
        return keys

    async def delete_user(self, user_id: str) -> int:
        keys = await self._run(self._user_keys(user_id))
        removed = 0
        for start in range(0, len(keys), 500):
            removed += await self._run(self.client.unlink(*keys[start : start + 500]))
        return removed

    async def _user_memories(self, user_id: str) -> list[Memory]:
        keys = [key async for key in self.client.scan_iter(match=self.layout.memory_user_prefix(user_id) + "*")]
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, self._RETURN_FIELDS)
        rows = await self._run(pipe.execute())
        memories = [
            self._memory_from_doc({field: _text(value) for field, value in zip(self._RETURN_FIELDS, row)})
            for row in rows
            if row and row[0] is not None
        ]
        return sorted(memories, key=lambda memory: memory.created_at)

    async def export_user(self, user_id: str) -> UserExport:
        members = await self._run(self.client.zrange(self.layout.timeline(user_id), 0, -1))
        sessions = await self.list_sessions(user_id)
        summaries = [await self.get_session_summary(user_id, session) for session in sessions]
        return UserExport(
            user_id=user_id,
            messages=await self._load_messages(user_id, members),
            session_summaries=[summary for summary in summaries if summary is not None],
            profile=await self.get_profile(user_id),
            events=await self.list_events(user_id, limit=1_000_000),
            memories=await self._run(self._user_memories(user_id)),
            cursor=await self.get_cursor(user_id),
        )


async def open_store(
    settings: Settings | None = None,
    *,
    embeddings: Embeddings | None = None,
    key_prefix: str | None = None,
) -> RedisMemoryStore:
    """Connect to REDIS_URL (or start the embedded Redis Stack) and return a ready store."""
    from memlane.store.connections import connection_pool
    from memlane.store.embedded import resolve_redis_url

    settings = settings or get_settings()
    url = await asyncio.to_thread(resolve_redis_url, settings)
    # a blocking pool: a burst of chats waits for a free connection instead of failing at once
    client = aioredis.Redis.from_pool(connection_pool(url, settings))
    try:
        await client.ping()
    except (RedisError, OSError) as error:
        await client.aclose()
        raise RedisUnavailable(
            f"Redis at {url.split('@')[-1]} did not answer ({error}); set REDIS_URL to a running Redis 8 "
            "or Redis Stack, or unset it to use the embedded Redis Stack (`memlane redis start`)"
        ) from error
    store = RedisMemoryStore(
        client, embeddings or get_embeddings(settings), settings=settings, key_prefix=key_prefix
    )
    store.url = url
    await store.ensure_indexes()
    return store
