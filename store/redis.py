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
import re
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
    Event,
    Memory,
    MemoryHit,
    MemoryKind,
    MemoryUpdate,
    Message,
    ProfileEntry,
    RedisUnavailable,
    SessionSummary,
    StoreError,
    UserExport,
    event_memory_id,
    message_memory_id,
    profile_memory_id,
)
from memlane.store.embeddings import embedding_dims, get_embeddings
from memlane.store.schema import (
    INDEX_LANGUAGE,
    KeyLayout,
    MemoryField,
    MessageField,
    memory_schema,
    session_key,
    user_key,
)

logger = logging.getLogger(__name__)

# Stores a message unless its id is already there; assigns the per-user seq atomically.
# KEYS: message hash, seq counter, timeline zset, session zset, sessions zset
# ARGV: member (message key suffix), raw session id, created_at, then field/value pairs
_ADD_MESSAGE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
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

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN_PATTERN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be but by do does for from has have i in is it its me my of on or so "
    "that the this to was were what when where which who why will with you your".split()
)
_MAX_QUERY_TERMS = 48
_COUNT_TTL_SECONDS = 60.0


def search_terms(text: str) -> list[str]:
    """Full-text query terms: words, and bigrams of Chinese/Japanese/Korean runs.

    RediSearch segments the stored Chinese text into words; a whole Chinese sentence as
    one query term matches nothing, but its bigrams hit the words it contains.
    """
    terms: list[str] = []
    for token in _TOKEN_PATTERN.findall(text.lower()):
        if re.match(rf"[{_CJK}]", token):
            terms += [token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)]
        elif token not in _STOPWORDS:
            terms.append(token)
    unique = list(dict.fromkeys(terms))
    return unique[:_MAX_QUERY_TERMS]


def _vector_bytes(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _unavailable(error: Exception) -> RedisUnavailable:
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
        self.layout = KeyLayout(key_prefix or self.settings.key_prefix)
        self.dims = embedding_dims(embeddings)
        self.schema = memory_schema(self.layout, self.dims)
        self.index = AsyncSearchIndex(self.schema, redis_client=client)
        self._add_message = client.register_script(_ADD_MESSAGE_LUA)
        self._advance_cursor = client.register_script(_ADVANCE_CURSOR_LUA)

    # set-up ------------------------------------------------------------------------------
    async def ensure_indexes(self) -> None:
        """Create the memory index (with LANGUAGE chinese) unless it exists."""
        name = self.layout.memory_index_name
        try:
            info = await self.client.ft(name).info()
        except ResponseError:
            info = None
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise _unavailable(error) from error
        if info is not None:
            self._check_dims(info)
            return
        definition = IndexDefinition(
            prefix=[self.layout.memory_key_prefix], index_type=IndexType.HASH, language=INDEX_LANGUAGE
        )
        try:
            await self.client.ft(name).create_index(self.schema.redis_fields, definition=definition)
        except ResponseError as error:
            if "already exists" not in str(error).lower():  # another process won the race
                raise StoreError(f"could not create the index {name}: {error}") from error

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
        results = await self._run(pipe.execute())
        stored = [
            message.model_copy(update={"seq": int(seq)})
            for message, seq in zip(messages, results)
            if int(seq) >= 0
        ]
        if index_for_search:
            memories = [
                Memory(
                    id=message_memory_id(message.id),
                    user_id=message.user_id,
                    kind="message",
                    text=message.content,
                    session_id=message.session_id,
                    created_at=message.created_at,
                    source_message_ids=[message.id],
                )
                for message in stored
                if message.content.strip() and message.role in ("user", "assistant")
            ]
            await self.add_memories(memories)
        return stored

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

    # the memory graph's one write ----------------------------------------------------------
    async def apply_update(self, update: MemoryUpdate) -> None:
        user_id = update.user_id
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
            pipe.delete(key)
            pipe.hset(key, mapping=row)
        if update.advance_cursor_to is not None:
            await self._advance_cursor(
                keys=[self.layout.cursor(user_id)], args=[int(update.advance_cursor_to)], client=pipe
            )
        await self._run(pipe.execute())

    # vector memories -------------------------------------------------------------------------
    async def _memory_rows(self, memories: Sequence[Memory]) -> list[tuple[str, dict[str, Any]]]:
        if not memories:
            return []
        vectors = await self.embeddings.aembed_documents([memory.text for memory in memories])
        rows = []
        for memory, vector in zip(memories, vectors):
            row: dict[str, Any] = {
                MemoryField.ID: memory.id,
                MemoryField.USER: user_key(memory.user_id),
                MemoryField.USER_ID: memory.user_id,
                MemoryField.KIND: memory.kind,
                MemoryField.TEXT: memory.text,
                MemoryField.CREATED_AT: memory.created_at,
                MemoryField.SOURCES: json.dumps(memory.source_message_ids, ensure_ascii=False),
                MemoryField.REF_ID: memory.ref_id or "",
                MemoryField.EMBEDDING: _vector_bytes(vector),
            }
            if memory.session_id:
                row[MemoryField.SESSION] = session_key(memory.session_id)
                row[MemoryField.SESSION_ID] = memory.session_id
            rows.append((self.layout.memory(memory.user_id, memory.id), row))
        return rows

    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        rows = await self._memory_rows(memories)
        if not rows:
            return []
        pipe = self.client.pipeline(transaction=False)
        for key, row in rows:
            pipe.delete(key)  # an upsert must not keep fields of the old version (e.g. session)
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

    def text_query(self, terms: Sequence[str], expression: FilterExpression, limit: int) -> TextQuery:
        return TextQuery(
            text=" ".join(terms),
            text_field_name=MemoryField.TEXT,
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
    ) -> list[MemoryHit]:
        if limit <= 0 or not query.strip():
            return []
        expression = self._filter(user_id, kinds, session_id, since, until)
        candidates = max(self.settings.search_candidates, limit)
        terms = search_terms(query)
        # the BM25 query needs no vector: Redis answers it while the query is embedded
        text_search = (
            asyncio.ensure_future(self._run(self.index.query(self.text_query(terms, expression, candidates))))
            if terms
            else None
        )
        try:
            approximate = await self.memory_count(user_id) > self.settings.search_exact_max_memories
            query_vector = await self.embeddings.aembed_query(query)
            vector_docs = await self._run(
                self.index.query(self.vector_query(query_vector, expression, candidates, approximate=approximate))
            )
            text_docs = await text_search if text_search is not None else []
        finally:
            if text_search is not None:
                if not text_search.done():
                    text_search.cancel()
                elif not text_search.cancelled():
                    text_search.exception()  # retrieved: an error here is already on its way up
        return await self._fuse(user_id, query_vector, vector_docs, text_docs, limit)

    async def _fuse(
        self,
        user_id: str,
        query_vector: Sequence[float],
        vector_docs: list[dict[str, Any]],
        text_docs: list[dict[str, Any]],
        limit: int,
    ) -> list[MemoryHit]:
        """Weighted fusion: alpha · cosine similarity + (1 − alpha) · BM25 / best BM25."""
        docs: dict[str, dict[str, Any]] = {}
        similarity: dict[str, float] = {}
        for doc in vector_docs:
            docs[doc["id"]] = doc
            similarity[doc["id"]] = max(0.0, 1.0 - float(doc["vector_distance"]))
        text_raw = {doc["id"]: float(doc.get("score") or 0.0) for doc in text_docs}
        best_text = max(text_raw.values(), default=0.0)
        for doc in text_docs:
            docs.setdefault(doc["id"], doc)
        missing = [doc_id for doc_id in docs if doc_id not in similarity]
        if missing:
            similarity.update(await self._similarities(user_id, query_vector, [docs[i] for i in missing]))
        alpha = self.settings.hybrid_alpha
        scored = []
        for doc_id in docs:
            text_score = text_raw.get(doc_id, 0.0) / best_text if best_text > 0 else 0.0
            vector_similarity = similarity.get(doc_id, 0.0)
            scored.append((alpha * vector_similarity + (1 - alpha) * text_score, vector_similarity, text_score, doc_id))
        scored.sort(key=lambda row: row[0], reverse=True)
        return [  # records only for what is returned
            MemoryHit(memory=self._memory_from_doc(docs[doc_id]), score=score, vector_similarity=similarity_, text_score=text_score)
            for score, similarity_, text_score, doc_id in scored[:limit]
        ]

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
        )

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
    from memlane.store.embedded import resolve_redis_url

    settings = settings or get_settings()
    url = await asyncio.to_thread(resolve_redis_url, settings)
    client = aioredis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5, health_check_interval=30)
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
