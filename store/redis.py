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
from dataclasses import dataclass, replace
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
from redis.exceptions import WatchError
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
    ParkedRun,
    InputTooLarge,
    InvalidInput,
    ForgetReport,
    ProfileEntry,
    ProfileRevision,
    RedisUnavailable,
    SessionSummary,
    SpeakerRole,
    StoreError,
    StoreItem,
    UserExport,
    ITEM_MEMORY_PREFIX,
    clean_text,
    event_memory_id,
    message_memory_id,
    profile_memory_id,
    stable_id,
)
from memlane.store.breaker import BreakerStatus, CircuitBreaker, CircuitOpen
from memlane.store.embeddings import embedding_dims, get_embeddings
from memlane.store.schema import (
    INDEX_LANGUAGE,
    KeyLayout,
    MemoryField,
    MessageField,
    item_key,
    memory_schema,
    speaker_key,
    user_key,
)
from memlane.store.forget import Fact, facts_of, forget_subject, states_any, strip_statements, text_terms
from memlane.store.privacy import redact
from memlane.store.text import detect_language, index_terms, is_short_entity_query, name_candidates, query_terms
from memlane.store.tokens import count_tokens
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
_EDIT_ATTEMPTS = 5  # optimistic transactions of one profile edit before it gives up
_FORGET_SEARCH_LIMIT = 1000  # memories one round of forgetting checks
_ANY_WORD = 1e-9  # a coverage any shared word reaches
_FORGET_QUERY_CHARS = 2000  # of a long fact (an event summary), what its search reads
# embedders read a few thousand characters at most; sending a 1 MB message only costs time
_EMBED_MAX_CHARS = 16_000


def _vector_bytes(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Ranking:
    """One ranking that votes in the fusion: its signal (vector, text, time, context, speaker),
    its weight, and the documents in rank order."""

    signal: str
    weight: float
    docs: list[dict[str, Any]]


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
        self.layout = KeyLayout(key_prefix or self.settings.key_prefix, max_id_chars=self.settings.max_id_chars)
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

    async def check_ready(self) -> None:
        """Raise StoreError saying what is wrong unless Redis answers and the memory index exists."""
        await self._run(self.client.ping())
        try:
            await self._run(self.client.ft(self.layout.memory_index_name).info())
        except ResponseError as error:
            raise StoreError(
                f"the index {self.layout.memory_index_name} does not exist ({error}); the store creates it on "
                "start (open_store), so restart the service or check MEMLANE_KEY_PREFIX"
            ) from error

    async def _run(self, coro: Any) -> Any:
        try:
            return await coro
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise _unavailable(error) from error
        except RedisSearchError as error:  # RedisVL wraps the connection error
            if isinstance(error.__cause__, (RedisConnectionError, RedisTimeoutError, OSError)):
                raise _unavailable(error.__cause__) from error
            raise

    async def _execute_with_scripts(self, pipe: Any) -> list[Any]:
        """`pipe.execute()` for a pipeline carrying Lua scripts, its connection always given back:
        redis-py (8.1) keeps it when the SCRIPT EXISTS that precedes such a pipeline fails (Redis
        went away), and every connection the pool held at that moment would leak for good."""
        try:
            return await self._run(pipe.execute())
        finally:
            await pipe.reset()

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

    # what enters the store: private data masked, sizes checked -------------------------------
    def _redact(self, text: str) -> str:
        """`text` with private data masked (`privacy_redaction`; see store/privacy.py)."""
        return redact(text, self.settings.privacy_redaction)

    def _check_text_size(self, text: str, what: str) -> None:
        limit = self.settings.max_message_chars
        if len(text) > limit:
            raise InputTooLarge(
                f"{what} has {len(text):,} characters, more than MEMLANE_MAX_MESSAGE_CHARS ({limit:,}); "
                "shorten it or raise the setting"
            )

    def _redacted_message(self, message: Message) -> Message:
        content, name = self._redact(message.content), self._redact(message.name) if message.name else message.name
        if content == message.content and name == message.name:
            return message
        return message.model_copy(update={"content": content, "name": name})

    def _redacted_memory(self, memory: Memory) -> Memory:
        self._check_text_size(memory.text, f"memory {memory.id!r}")
        text = self._redact(memory.text)
        context = self._redact(memory.context) if memory.context else memory.context
        if text == memory.text and context == memory.context:
            return memory
        return memory.model_copy(update={"text": text, "context": context})

    def _redacted_entry(self, entry: ProfileEntry) -> ProfileEntry:
        self._check_text_size(entry.content, f"profile entry {entry.topic} / {entry.subtopic}")
        content = self._redact(entry.content)
        return entry if content == entry.content else entry.model_copy(update={"content": content})

    def _redacted_event(self, event: Event) -> Event:
        self._check_text_size(event.summary, f"event {event.id!r}")
        delta = [
            change.model_copy(
                update={
                    "content": self._redact(change.content),
                    "previous_content": self._redact(change.previous_content) if change.previous_content else change.previous_content,
                }
            )
            for change in event.profile_delta
        ]
        return event.model_copy(update={"summary": self._redact(event.summary), "profile_delta": delta})

    def _redacted_item(self, item: StoreItem) -> StoreItem:
        """The item with its text and every string inside its value masked."""
        if self.settings.privacy_redaction == "off":
            return item

        def masked(value: Any) -> Any:
            if isinstance(value, str):
                return self._redact(value)
            if isinstance(value, dict):
                return {key: masked(inner) for key, inner in value.items()}
            if isinstance(value, list):
                return [masked(inner) for inner in value]
            return value

        return item.model_copy(update={"text": self._redact(item.text), "value": masked(item.value)})

    # history -------------------------------------------------------------------------------
    async def add_messages(
        self, messages: Sequence[Message], *, index_for_search: bool = True, index_later: bool = False
    ) -> list[Message]:
        if not messages:
            return []
        for message in messages:  # refused before anything is written
            self._check_text_size(message.content, f"message {message.id!r}")
        messages = [self._redacted_message(message) for message in messages]
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
        results = [int(seq) for seq in await self._execute_with_scripts(pipe)]
        stored = [message.model_copy(update={"seq": seq}) for message, seq in zip(messages, results) if seq >= 0]
        resent = [message for message, seq in zip(messages, results) if seq == -1]
        elsewhere = [message.id for message, seq in zip(messages, results) if seq == -2]
        if elsewhere:  # ids are unique per user, across sessions: a reused id is not a new message
            logger.warning(
                "skipped %d message(s) of user %r whose ids are already stored in another session "
                "(message ids are unique per user): %s",
                len(elsewhere),
                messages[0].user_id,
                ", ".join(elsewhere[:5]),
            )
        if index_later:  # recorded as waiting: reindex_pending (or the next save) indexes them
            pipe = self.client.pipeline(transaction=False)
            for user_id in dict.fromkeys(message.user_id for message in messages):
                ids = [m.id for m in [*stored, *resent] if m.user_id == user_id and m.content.strip()]
                if ids:
                    pipe.sadd(self.layout.unindexed_messages(user_id), *ids)
            await self._run(pipe.execute())
        elif index_for_search:
            for user_id in dict.fromkeys(message.user_id for message in messages):
                new = [message for message in stored if message.user_id == user_id]
                repaired = await self._pending_messages(user_id)  # a repair pass rides on each save
                # a save tried again because Redis went away during the first try may find its
                # messages stored but not indexed: index them again (unchanged entries cost one read)
                again = await self._load_messages(user_id, [item_key(m.id) for m in resent if m.user_id == user_id])
                await self._index_messages(user_id, [*repaired, *again, *new], clear_pending=bool(repaired))
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
                speaker=message.name,  # the owner's own name too, when given (shown only for others)
                speaker_role=message.speaker_role,
            )
            for message in messages
        ]

    async def _preceding_texts(self, messages: Sequence[Message]) -> dict[str, str]:
        """Per message id: the message before it in its session (its search context), cut to
        `search_message_context_chars`, where `search_message_context` gives it one. By default
        ("dialogue") a message of the owner and the assistant gets the other's message it
        answers: "what did you recommend?" finds the answer naming the films through the
        question, and "Lyon, by the Rhône" is found as the answer to "which city is home?". A
        named speaker's message (a friend, either side of a chat between two people) gets none:
        its vector and words are its own, so a question finds the turn that says it."""
        limit = self.settings.search_message_context_chars
        scope = self.settings.search_message_context
        if scope == "none" or not limit or not messages:
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
            if members:
                pipe.hmget(prefix + _text(members[0]), [MessageField.CONTENT, MessageField.SPEAKER_ROLE])
            else:
                pipe.echo("")
        contexts = {}
        for message, row in zip(messages, await self._run(pipe.execute())):
            if not row or not _text(row[0]).strip():
                continue
            dialogue = {message.speaker_role, _text(row[1])} == {"owner", "assistant"}
            if scope == "all" or dialogue:
                contexts[message.id] = _text(row[0])[:limit]
        return contexts

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
            if data.get(MessageField.FORGOTTEN):  # a tombstone (see `_drop_messages`)
                continue
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
        summary = summary.model_copy(update={"summary": self._redact(summary.summary)})
        await self._run(self.client.set(key, summary.model_dump_json()))

    async def list_sessions(self, user_id: str) -> list[str]:
        members = await self._run(self.client.zrevrange(self.layout.sessions(user_id), 0, -1))
        return [_text(member) for member in members]

    async def set_session_title(self, user_id: str, session_id: str, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise InvalidInput("a session title must not be blank")
        self._check_text_size(title, f"the title of session {session_id!r}")
        await self._run(self.client.hset(self.layout.session_titles(user_id), session_id, self._redact(title)))

    async def session_titles(self, user_id: str) -> dict[str, str]:
        raw = await self._run(self.client.hgetall(self.layout.session_titles(user_id)))
        return {_text(session_id): _text(title) for session_id, title in raw.items()}

    # profile -------------------------------------------------------------------------------
    async def get_profile(self, user_id: str) -> list[ProfileEntry]:
        raw = await self._run(self.client.hvals(self.layout.profile(user_id)))
        entries = [ProfileEntry.model_validate_json(value) for value in raw]
        return sorted(entries, key=lambda entry: (entry.topic.lower(), entry.subtopic.lower()))

    async def delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str = "user") -> bool:
        entry = await self._delete_profile_entry(user_id, entry_id, actor=actor)
        if entry is None:
            return False
        report = await self._forget_entry_fact(entry)
        logger.info("deleted profile entry %s of %r: %s", entry_id, user_id, report.describe())
        return True

    async def _delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str) -> ProfileEntry | None:
        """Delete the entry and its search memory, recording the revision; the entry deleted, or
        None when there was none."""
        raw = await self._run(self.client.hget(self.layout.profile(user_id), entry_id))
        entry = ProfileEntry.model_validate_json(raw) if raw else None
        pipe = self.client.pipeline(transaction=True)
        pipe.hdel(self.layout.profile(user_id), entry_id)
        pipe.delete(self.layout.memory(user_id, profile_memory_id(entry_id)))
        if entry is not None:
            self._record_revisions(pipe, [self._revision(entry_id, "delete", actor, entry, None)])
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
            content = self._redact(content)
            self._check_text_size(content, "a profile entry's content")
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
                    rows = await self._memory_rows([after.as_memory()]) if "content" in changes else []
                    pipe.multi()
                    pipe.hset(profile_key, entry_id, after.model_dump_json())
                    for key, row in rows:
                        pipe.hset(key, mapping=row)
                    self._record_revisions(pipe, [self._revision(entry_id, "update", actor, before, after)])
                    await self._run(pipe.execute())
                    return after
                except WatchError:
                    continue
        raise StoreError(
            f"the profile of {user_id!r} changed {_EDIT_ATTEMPTS} times while entry {entry_id} was being edited; "
            "try the edit again"
        )

    async def profile_history(self, user_id: str, entry_id: str) -> list[ProfileRevision]:
        raw = await self._run(self.client.lrange(self.layout.profile_history(user_id, entry_id), 0, -1))
        return [ProfileRevision.model_validate_json(value) for value in raw]

    async def _all_profile_history(self, user_id: str) -> list[ProfileRevision]:
        entry_ids = sorted(_text(member) for member in await self._run(
            self.client.smembers(self.layout.profile_history_entries(user_id))
        ))
        pipe = self.client.pipeline(transaction=False)
        for entry_id in entry_ids:
            pipe.lrange(self.layout.profile_history(user_id, entry_id), 0, -1)
        lists = await self._run(pipe.execute()) if entry_ids else []
        revisions = [ProfileRevision.model_validate_json(value) for values in lists for value in values]
        return sorted(revisions, key=lambda revision: revision.at)

    @staticmethod
    def _revision(
        entry_id: str, action: str, actor: str, before: ProfileEntry | None, after: ProfileEntry | None
    ) -> ProfileRevision:
        slot = after or before
        assert slot is not None  # a revision has a before, an after, or both
        return ProfileRevision(
            entry_id=entry_id,
            user_id=slot.user_id,
            action=action,  # type: ignore[arg-type]
            actor=actor,
            at=time.time(),
            topic=slot.topic,
            subtopic=slot.subtopic,
            before_content=before.content if before else None,
            after_content=after.content if after else None,
            before_confidence=before.confidence if before else None,
            after_confidence=after.confidence if after else None,
        )

    def _record_revisions(self, pipe: Any, revisions: Sequence[ProfileRevision]) -> None:
        """Queue the revisions on `pipe` (inside the transaction that makes the change)."""
        keep = self.settings.profile_history_max_revisions
        for revision in revisions:
            key = self.layout.profile_history(revision.user_id, revision.entry_id)
            pipe.rpush(key, revision.model_dump_json())
            pipe.ltrim(key, -keep, -1)
            pipe.sadd(self.layout.profile_history_entries(revision.user_id), revision.entry_id)

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
        event = (await self.get_events(user_id, [event_id]))[0]
        removed = await self._delete_event_card(user_id, event_id)
        if removed and event is not None:
            report = ForgetReport(user_id=user_id, query=event.summary)
            facts = facts_of([event.summary], self.settings.forget_min_term_coverage, by_clause=True, min_terms=2)
            await self._forget_statements(
                user_id, facts, report, search_query=event.summary, cited_message_ids=event.source_message_ids
            )
            logger.info("deleted event %s of %r: %s", event_id, user_id, report.describe())
        return removed

    async def _delete_event_card(self, user_id: str, event_id: str) -> bool:
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
        update = update.model_copy(
            update={
                "upsert_profile": [self._redacted_entry(entry) for entry in update.upsert_profile],
                "event": self._redacted_event(update.event) if update.event is not None else None,
            }
        )
        # embed before the transaction: nothing slow may sit inside it
        memory_rows = await self._memory_rows(update.memories)
        profile_key = self.layout.profile(user_id)
        revisions = await self._update_revisions(update)
        pipe = self.client.pipeline(transaction=True)
        for entry in update.upsert_profile:
            pipe.hset(profile_key, entry.id, entry.model_dump_json())
        self._record_revisions(pipe, revisions)
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
        await self._execute_with_scripts(pipe)

    async def _update_revisions(self, update: MemoryUpdate) -> list[ProfileRevision]:
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
            elif (before.content, before.confidence) != (entry.content, entry.confidence):
                revisions.append(self._revision(entry.id, "update", actor, before, entry))
        upserted = {entry.id for entry in update.upsert_profile}
        for entry_id in update.delete_profile_ids:
            if entry_id in stored and entry_id not in upserted:
                revisions.append(self._revision(entry_id, "delete", actor, stored[entry_id], None))
        return revisions

    # vector memories -------------------------------------------------------------------------
    def _memory_row(self, memory: Memory) -> dict[str, Any]:
        """Every field of a memory's hash but the embedding. All fields are always written
        (empty when unset), so an upsert is one HSET: a DEL before it would make RediSearch
        index the document twice and skew its BM25 statistics until garbage collection."""
        speaker = memory.speaker or ""
        row: dict[str, Any] = {
            MemoryField.ID: memory.id,
            MemoryField.USER: self.layout.user_tag(memory.user_id),
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
            MemoryField.SESSION: self.layout.session_tag(memory.session_id) if memory.session_id else "",
            MemoryField.SESSION_ID: memory.session_id or "",
        }
        row[MemoryField.CONTENT_DIGEST] = stable_id(
            *(f"{key}={value}" for key, value in sorted(row.items())), f"embedded={self._embedding_input(memory)}"
        )  # what the embedding read counts too: a change of it re-embeds
        return row

    def _embedding_input(self, memory: Memory) -> str:
        """What is embedded, cut to what embedders read: the text, after its speaker's name when
        one is known and `search_embed_speaker` is on ("Caroline: …", "朋友A：…"), after the
        context when `search_embed_context` is on and the turn is short (its words are indexed
        either way)."""
        text = memory.text
        if memory.speaker and self.settings.search_embed_speaker:
            text = f"{memory.speaker}{'：' if detect_language(memory.text) == 'zh' else ': '}{text}"
        if memory.context and self.settings.search_embed_context and self._is_short_turn(memory.text):
            text = f"{memory.context}\n{text}"
        return text[:_EMBED_MAX_CHARS]

    def _is_short_turn(self, text: str) -> bool:
        """A turn whose meaning sits in the one before ("Yeah, that one!"), so its vector reads both."""
        limit = self.settings.search_embed_context_max_tokens
        return not limit or count_tokens(text) <= limit

    async def _memory_rows(self, memories: Sequence[Memory]) -> list[tuple[str, dict[str, Any]]]:
        """Hash rows of the memories that are new or changed (unchanged ones are skipped), embedded."""
        if not memories:
            return []
        empty = [memory.user_id for memory in memories if not memory.user_id]
        if empty:
            raise StoreError("a memory has an empty user_id: every memory belongs to a user")
        memories = [self._redacted_memory(memory) for memory in memories]
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
        expression = Tag(MemoryField.USER) == self.layout.user_tag(user_id)
        if kinds:
            expression = expression & (Tag(MemoryField.KIND) == list(kinds))
        if session_id:
            expression = expression & (Tag(MemoryField.SESSION) == self.layout.session_tag(session_id))
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
            # spelled out: left to RediSearch, a filter holding a few percent of the index may be
            # answered from the HNSW graph in batches, approximate and different per index build
            hybrid_policy="BATCHES" if approximate else "ADHOC_BF",
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
        settings = self.settings
        expression = self._filter(user_id, kinds, session_id, since, until, speaker, speaker_roles)
        candidates = max(settings.search_candidates, limit)
        scope = (
            parse_time_scope(query, time.time() if reference_time is None else reference_time, self.zone)
            if understand_time
            else TimeScope()
        )
        terms = query_terms(without_time_expressions(query, scope))
        # (signal, weight, query): every ranking that votes in the fusion; the vector ones wait for the query's vector
        text_queries: list[tuple[str, float, TextQuery]] = []
        if terms:
            text_queries.append(("text", settings.search_text_weight, self.text_query(terms, expression, candidates)))
            if scope:
                text_queries.append(
                    ("time", settings.search_time_weight, self.text_query(terms, expression & self._time_filter(scope), candidates))
                )
            if settings.search_context_weight:
                text_queries.append(
                    ("context", settings.search_context_weight,
                     self.text_query(terms, expression, candidates, field=MemoryField.SEARCH_CONTEXT))
                )
        named = name_candidates(query) if settings.search_speaker_weight and not speaker else []

        async def run_text_queries() -> list[list[dict[str, Any]]]:
            return await self._run(self.index.batch_query([text_query for _, _, text_query in text_queries]))

        # the BM25 queries need no vector: Redis answers them while the query is embedded
        # (the coroutine is made inside the task, so a cancelled task leaves none un-awaited)
        text_search = asyncio.ensure_future(run_text_queries()) if text_queries else None
        try:
            approximate = await self.memory_count(user_id) > settings.search_exact_max_memories
            try:
                query_vector: list[float] | None = await self._embed_query(query)
            except EmbeddingsUnavailable as error:  # degrade, never break: the BM25 rankings still answer
                logger.log(
                    logging.DEBUG if isinstance(error.__cause__, CircuitOpen) else logging.WARNING,
                    "searching %r's memories by keyword only: %s", user_id, error,
                )
                query_vector = None
            vector_queries: list[tuple[str, float, VectorQuery]] = []
            if query_vector is not None:
                vector_queries.append(
                    ("vector", settings.search_vector_weight,
                     self.vector_query(query_vector, expression, candidates, approximate=approximate))
                )
                if scope:
                    vector_queries.append(
                        ("time", settings.search_time_weight,
                         self.vector_query(query_vector, expression & self._time_filter(scope), candidates, approximate=approximate))
                    )
                if named:  # a person the query names: what they said, ranked among itself, votes again
                    speakers = Tag(MemoryField.SPEAKER_KEY) == [speaker_key(name) for name in named]
                    vector_queries.append(
                        ("speaker", settings.search_speaker_weight,
                         self.vector_query(query_vector, expression & speakers, candidates, approximate=approximate))
                    )
            vector_lists = (
                await self._run(self.index.batch_query([vector_query for _, _, vector_query in vector_queries]))
                if vector_queries
                else []
            )
            text_lists = await text_search if text_search is not None else []
        finally:
            if text_search is not None:
                if not text_search.done():
                    text_search.cancel()
                elif not text_search.cancelled():
                    text_search.exception()  # retrieved: an error here is already on its way up
        rankings = [
            Ranking(signal, weight, docs)
            for (signal, weight, _), docs in [*zip(vector_queries, vector_lists), *zip(text_queries, text_lists)]
        ]
        if settings.search_speaker_replaces_vector and any(r.signal == "speaker" and r.docs for r in rankings):
            # the query names someone who spoke: the vector votes among what they said, not twice
            rankings = [replace(r, weight=0.0) if r.signal == "vector" else r for r in rankings]
        return await self._fuse(user_id, query_vector, rankings, scope, limit)

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
        rankings: Sequence[Ranking],
        scope: TimeScope,
        limit: int,
    ) -> list[MemoryHit]:
        """Reciprocal-rank fusion: each ranking adds weight / (k + rank) for every memory it holds.

        The rankings (see `search_memories`; each weight a setting): the vector and the BM25
        ranking over the user's memories; both again inside the time the query names, so a
        memory of that time gets more votes without hiding the others; the BM25 ranking of the
        memories' contexts (a message's previous message: the answer to "what did you
        recommend?" is found through the question before it); and the vector ranking of what a
        person the query names said. Without a query vector (the embedder is down) only the BM25
        rankings vote. The shown relevance (`relevance`) is computed apart, from the similarity
        and the BM25 score of the memory's own text.
        """
        k = self.settings.search_rrf_k
        docs: dict[str, dict[str, Any]] = {}
        rank_score: dict[str, float] = {}
        similarity: dict[str, float] = {}
        text_raw: dict[str, float] = {}
        for ranking in rankings:
            for rank, doc in enumerate(ranking.docs, 1):
                if ranking.weight > 0:
                    docs.setdefault(doc["id"], doc)
                    rank_score[doc["id"]] = rank_score.get(doc["id"], 0.0) + ranking.weight / (k + rank)
                if "vector_distance" in doc:
                    similarity.setdefault(doc["id"], max(0.0, 1.0 - float(doc["vector_distance"])))
                elif ranking.signal != "context":
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

    # forgetting ----------------------------------------------------------------------------
    async def forget(self, user_id: str, query: str, *, actor: str = "forget") -> ForgetReport:
        subject = forget_subject(clean_text(query))
        report = ForgetReport(user_id=user_id, query=query, subject=subject)
        self.layout.user_tag(user_id)  # a bad user id is refused before anything else
        fact = Fact.of(subject, self.settings.forget_min_term_coverage)
        if not fact.terms:
            return report
        touched = await self._forget_in_profile(user_id, [fact], report, actor=actor)
        deleted = [r.id for r in report.records if r.kind == "profile" and r.action == "deleted"]
        # a bare name ("Miso", "张伟") is forgotten wherever it is written, as recall finds it
        relevance = 0.0 if is_short_entity_query(subject) else self.settings.forget_min_relevance
        await self._forget_statements(
            user_id, [fact], report, search_query=subject, min_relevance=relevance, removed_entry_ids=deleted
        )
        await self._forget_in_profile_history(user_id, touched, [fact])
        logger.info("forget %r for %r: %s", subject, user_id, report.describe())
        return report

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        messages = await self._load_messages(user_id, [self.layout.message(user_id, message_id).rsplit(":", 1)[1]])
        if not messages:
            return False
        message = messages[0]
        report = ForgetReport(user_id=user_id, query=message.content)
        await self._drop_messages(user_id, [message], [], report)
        facts = facts_of([message.content], self.settings.forget_min_term_coverage, by_clause=True, min_terms=2)
        await self._forget_statements(user_id, facts, report, search_query="", in_messages=False)
        return True

    async def _forget_entry_fact(self, entry: ProfileEntry) -> ForgetReport:
        """After deleting an entry: its fact out of its source turns (dropped whole when no
        sentence of theirs matches: the extractor read the fact there), other turns, event
        summaries and deltas, and session summaries."""
        report = ForgetReport(user_id=entry.user_id, query=entry.content)
        facts = facts_of([entry.content], self.settings.forget_min_term_coverage)
        await self._forget_statements(
            entry.user_id,
            facts,
            report,
            search_query=entry.content,
            cited_message_ids=entry.source_message_ids,
            drop_cited=True,
            removed_entry_ids=[entry.id],
        )
        return report

    async def _forget_statements(
        self,
        user_id: str,
        facts: Sequence[Fact],
        report: ForgetReport,
        *,
        search_query: str,
        min_relevance: float | None = None,
        cited_message_ids: Sequence[str] = (),
        drop_cited: bool = False,
        removed_entry_ids: Sequence[str] = (),
        in_messages: bool = True,
    ) -> None:
        """Remove what states `facts` from messages (those search finds for `search_query` at
        `min_relevance` or more, and the cited ones), items, every event summary and profile
        delta, and every session summary. `drop_cited`: a cited message stating none of the
        facts in words of theirs is dropped whole, and the assistant's reply to it loses every
        clause holding any word of the facts ("Noted, no peanuts for you")."""
        if in_messages and (facts or (drop_cited and cited_message_ids)):
            min_relevance = self.settings.forget_min_relevance if min_relevance is None else min_relevance
            cited = list(cited_message_ids)
            drop_whole = set(cited) if drop_cited else set()
            if drop_cited and cited:
                any_word = [replace(fact, min_coverage=_ANY_WORD) for fact in facts]
                await self._forget_in_messages(user_id, await self._replies_to(user_id, cited), any_word, set(), report)
            # each round changes what states the facts, so that it states them no more; a round
            # that changes nothing, or that saw every candidate, ends it
            while True:
                hits = (
                    await self.search_memories(
                        user_id, search_query[:_FORGET_QUERY_CHARS], kinds=["message", "event"],
                        limit=_FORGET_SEARCH_LIMIT, understand_time=False,
                    )
                    if search_query.strip()
                    else []
                )
                # a hit's text is its message's content: only those stating a fact are loaded
                relevant = [hit.memory for hit in hits if hit.score >= min_relevance and states_any(hit.memory.text, facts)]
                message_ids = [m.source_message_ids[0] for m in relevant if m.kind == "message" and m.source_message_ids]
                item_ids = [m.id for m in relevant if m.id.startswith(ITEM_MEMORY_PREFIX)]
                changed = await self._forget_in_messages(user_id, [*cited, *message_ids], facts, drop_whole, report)
                changed = await self._forget_in_items(user_id, item_ids, facts, report) or changed
                cited = []
                if not changed or len(hits) < _FORGET_SEARCH_LIMIT:  # every candidate was seen
                    break
        if facts or removed_entry_ids:
            await self._forget_in_events(user_id, facts, set(removed_entry_ids), report)
        if facts:
            await self._forget_in_session_summaries(user_id, facts, report)

    async def _replies_to(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        """Ids of the assistant messages right after these messages in their sessions."""
        messages = await self._load_messages(user_id, [item_key(message_id) for message_id in dict.fromkeys(message_ids)])
        if not messages:
            return []
        pipe = self.client.pipeline(transaction=False)
        for message in messages:
            pipe.zrangebyscore(
                self.layout.session_messages(user_id, message.session_id), f"({message.seq}", "+inf", start=0, num=1
            )
        following = [members[0] for members in await self._run(pipe.execute()) if members]
        return [message.id for message in await self._load_messages(user_id, following) if message.role == "assistant"]

    async def _forget_in_messages(
        self, user_id: str, message_ids: Sequence[str], facts: Sequence[Fact], drop_whole: set[str], report: ForgetReport
    ) -> bool:
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return False
        messages = await self._load_messages(user_id, [item_key(message_id) for message_id in ids])
        rewritten, dropped = [], []
        for message in messages:
            content = strip_statements(message.content, facts)
            if content == message.content:
                if message.id in drop_whole:
                    dropped.append(message)
            elif content:
                rewritten.append(message.model_copy(update={"content": content}))
            else:
                dropped.append(message)
        if not rewritten and not dropped:
            return False
        await self._drop_messages(user_id, dropped, rewritten, report)
        return True

    async def _drop_messages(
        self, user_id: str, dropped: Sequence[Message], rewritten: Sequence[Message], report: ForgetReport
    ) -> None:
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
        following = {_text(member) for members in await self._run(pipe.execute()) for member in members}
        pipe = self.client.pipeline(transaction=True)
        for message in dropped:
            key = self.layout.message(user_id, message.id)
            member = key.rsplit(":", 1)[1]
            pipe.hset(key, mapping={MessageField.CONTENT: "", MessageField.NAME: "", MessageField.FORGOTTEN: "1"})
            pipe.zrem(self.layout.timeline(user_id), member)
            pipe.zrem(self.layout.session_messages(user_id, message.session_id), member)
            pipe.srem(self.layout.unindexed_messages(user_id), message.id)
            pipe.delete(self.layout.memory(user_id, message_memory_id(message.id)))
            report.add("message", message.id, "deleted")
        for message in rewritten:
            pipe.hset(self.layout.message(user_id, message.id), MessageField.CONTENT, message.content)
            # the old search entry goes now: nothing stale is searchable while the new one waits
            pipe.delete(self.layout.memory(user_id, message_memory_id(message.id)))
            report.add("message", message.id, "rewritten")
        await self._run(pipe.execute())
        dropped_members = {self.layout.message(user_id, message.id).rsplit(":", 1)[1] for message in dropped}
        reindex = [*rewritten, *await self._load_messages(user_id, sorted(following - dropped_members))]
        await self._index_messages(user_id, list({message.id: message for message in reindex}.values()), clear_pending=False)

    async def _forget_in_items(
        self, user_id: str, memory_ids: Sequence[str], facts: Sequence[Fact], report: ForgetReport
    ) -> bool:
        items = [item for item in await self.get_items(user_id, list(dict.fromkeys(memory_ids))) if item is not None]
        stating = [item.memory_id for item in items if states_any(item.text, facts)]
        if stating:
            await self.delete_items(user_id, stating)
            for memory_id in stating:
                report.add("item", memory_id, "deleted")
        return bool(stating)

    async def _forget_in_events(
        self, user_id: str, facts: Sequence[Fact], removed_entry_ids: set[str], report: ForgetReport
    ) -> None:
        """Every event: summary sentences stating the facts go (an event left with nothing is
        deleted), and so do profile-delta lines stating them or naming a removed entry."""
        for event in await self.list_events(user_id, limit=1_000_000):
            summary = strip_statements(event.summary, facts)
            delta = [
                change
                for change in event.profile_delta
                if change.entry_id not in removed_entry_ids
                and not states_any(change.content, facts)
                and not states_any(change.previous_content or "", facts)
            ]
            if summary == event.summary and delta == event.profile_delta:
                continue
            if not summary:
                await self._delete_event_card(user_id, event.id)
                report.add("event", event.id, "deleted")
                continue
            event = event.model_copy(update={"summary": summary, "profile_delta": delta})
            rows = await self._memory_rows([event.as_memory()])
            pipe = self.client.pipeline(transaction=True)
            pipe.hset(self.layout.events(user_id), event.id, event.model_dump_json())
            for key, row in rows:
                pipe.hset(key, mapping=row)
            await self._run(pipe.execute())
            report.add("event", event.id, "rewritten")

    async def _forget_in_session_summaries(self, user_id: str, facts: Sequence[Fact], report: ForgetReport) -> None:
        sessions = await self.list_sessions(user_id)
        for start in range(0, len(sessions), 500):
            batch = sessions[start : start + 500]
            raw = await self._run(self.client.mget([self.layout.summary(user_id, session) for session in batch]))
            pipe = self.client.pipeline(transaction=False)
            for session_id, value in zip(batch, raw):
                if not value:
                    continue
                summary = SessionSummary.model_validate_json(value)
                text = strip_statements(summary.summary, facts)
                if text != summary.summary:
                    updated = summary.model_copy(update={"summary": text, "updated_at": time.time()})
                    pipe.set(self.layout.summary(user_id, session_id), updated.model_dump_json())
                    report.add("summary", session_id, "rewritten" if text else "deleted")
            await self._run(pipe.execute())

    async def _forget_in_profile(
        self, user_id: str, facts: Sequence[Fact], report: ForgetReport, *, actor: str
    ) -> list[str]:
        """Entries whose slot names the fact, or left with nothing, are deleted; others lose the
        sentences stating it. Returns the ids of the entries changed."""
        touched = []
        for entry in await self.get_profile(user_id):
            slot_terms = text_terms(f"{entry.topic} {entry.subtopic}")
            content = "" if any(fact.stated_by(slot_terms) for fact in facts) else strip_statements(entry.content, facts)
            if content == entry.content:
                continue
            touched.append(entry.id)
            if content:
                await self.edit_profile_entry(user_id, entry.id, content=content, actor=actor)
                report.add("profile", entry.id, "rewritten")
            else:
                await self._delete_profile_entry(user_id, entry.id, actor=actor)
                report.add("profile", entry.id, "deleted")
        return touched

    async def _forget_in_profile_history(self, user_id: str, entry_ids: Sequence[str], facts: Sequence[Fact]) -> None:
        """The revisions of the entries `forget` changed lose the fact too (a content left with
        nothing becomes None); who changed what slot when is kept."""
        for entry_id in entry_ids:
            key = self.layout.profile_history(user_id, entry_id)
            revisions = await self.profile_history(user_id, entry_id)
            cleaned = [
                revision.model_copy(
                    update={
                        "before_content": strip_statements(revision.before_content, facts) or None if revision.before_content else None,
                        "after_content": strip_statements(revision.after_content, facts) or None if revision.after_content else None,
                    }
                )
                for revision in revisions
            ]
            if cleaned != revisions:
                pipe = self.client.pipeline(transaction=True)
                pipe.delete(key)
                pipe.rpush(key, *(revision.model_dump_json() for revision in cleaned))
                await self._run(pipe.execute())

    # LangGraph store items (memlane/langgraph_store.py) --------------------------------------
    async def put_items(self, items: Sequence[StoreItem]) -> list[StoreItem]:
        items = [self._redacted_item(item) for item in items]
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

    # parked runs and health ----------------------------------------------------------------
    async def park_run(self, run: ParkedRun) -> ParkedRun:
        digest = user_key(run.user_id)
        key = self.layout.parked_runs(digest)
        raw = await self._run(self.client.hget(key, run.id))
        if raw:  # parked before: one entry, its attempts added up
            earlier = ParkedRun.model_validate_json(raw)
            run = run.model_copy(
                update={"first_failed_at": earlier.first_failed_at, "attempts": earlier.attempts + run.attempts}
            )
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(key, run.id, run.model_dump_json())
        pipe.sadd(self.layout.parked_users, digest)
        await self._run(pipe.execute())
        return run

    async def parked_runs(self, user_id: str | None = None) -> list[ParkedRun]:
        if user_id is not None:
            digests = [user_key(user_id)]
        else:
            digests = sorted(_text(digest) for digest in await self._run(self.client.smembers(self.layout.parked_users)))
        pipe = self.client.pipeline(transaction=False)
        for digest in digests:
            pipe.hvals(self.layout.parked_runs(digest))
        rows = await self._run(pipe.execute()) if digests else []
        if user_id is None and any(not values for values in rows):  # users deleted since they were parked
            await self._run(self.client.srem(self.layout.parked_users, *[d for d, v in zip(digests, rows) if not v]))
        runs = [ParkedRun.model_validate_json(raw) for values in rows for raw in values]
        return sorted(runs, key=lambda run: (run.first_failed_at, run.id))

    async def drop_parked_run(self, run_id: str) -> ParkedRun | None:
        digests = [_text(digest) for digest in await self._run(self.client.smembers(self.layout.parked_users))]
        pipe = self.client.pipeline(transaction=False)
        for digest in digests:
            pipe.hget(self.layout.parked_runs(digest), run_id)
        found = await self._run(pipe.execute()) if digests else []
        for digest, raw in zip(digests, found):
            if raw and await self._run(self.client.hdel(self.layout.parked_runs(digest), run_id)):
                return ParkedRun.model_validate_json(raw)
        return None

    def health(self) -> list[BreakerStatus]:
        return [self.embedder_breaker.status()]

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
            session_titles=await self.session_titles(user_id),
            profile=await self.get_profile(user_id),
            events=await self.list_events(user_id, limit=1_000_000),
            memories=await self._run(self._user_memories(user_id)),
            cursor=await self.get_cursor(user_id),
            profile_history=await self._all_profile_history(user_id),
            items=await self.list_items(user_id),
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
