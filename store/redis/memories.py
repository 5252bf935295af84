"""The search memories: one hash per memory under the user's memory prefix (its text, its
search fields, its vector), and the RedisVL index over them, created with the store.

Every part that makes something searchable (messages, profile entries, events, LangGraph
items) writes it here as a `Memory`: masked, its row digested so that an unchanged memory
is neither embedded again nor rewritten.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memlane.store.errors import StoreError
from memlane.store.ids import stable_id
from memlane.store.records import Memory
from memlane.store.redis.core import StorePart, as_text, unavailable
from memlane.store.redis.index_shape import INDEX_OPTIONS, reshaped, wait_until_read
from memlane.store.redis.memory_docs import RETURN_FIELDS, memory_from_doc
from memlane.store.redis.memory_migration import (
    PREVIOUS_NAMES,
    has_previous_names,
    indexed_names,
    indexed_vector_type,
    migrate_memories,
)
from memlane.store.redis.metadata import checked_metadata, metadata_row
from memlane.store.redis.retention import Retention
from memlane.store.schema import (
    INDEX_LANGUAGE,
    KEY_LAYOUT_VERSION,
    MemoryField,
    glob_escaped,
    metadata_field,
    speaker_key,
)
from memlane.store.text.terms import detect_language, index_terms
from memlane.store.text.time_words import month_day
from memlane.store.text.tokens import count_tokens
from memlane.store.vectors import vector_bytes

logger = logging.getLogger(__name__)

# embedders read a few thousand characters at most; sending a 1 MB message only costs time
_EMBED_MAX_CHARS = 16_000
WRITE_CHUNK = 500  # memories written per pipeline (`Memories.write_rows`)


@dataclass(eq=False, repr=False)
class Memories(StorePart):
    """Writes, deletes and lists search memories; creates and checks their index."""

    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    # the index -----------------------------------------------------------------------------
    async def ensure_indexes(self) -> None:
        """Create the memory index unless it exists; rebuild one made by an older memlane; rename the
        keys of an older key layout in place (standalone Redis). On a cluster, on every primary."""
        if self.core.shards is not None:  # a cluster has never held the older layout: nothing to rename
            await self._run(self.core.shards.every_index())
            await self._run(self.client.set(self.layout.key_layout_marker, KEY_LAYOUT_VERSION))
            return
        await self._migrate_key_layout()
        await self._ensure_index_on(self.client, self.layout.memory_index_name)

    def __post_init__(self) -> None:
        if self.core.shards is not None:  # a primary the store meets without an index gets one
            self.core.shards.ensure_index = self._ensure_index_on

    async def _ensure_index_on(self, client: Any, name: str, *, skip_initial_scan: bool = False) -> None:
        """The memory index `name` on the Redis `client` talks to (the one Redis, or one primary);
        `skip_initial_scan`: a new one reads no stored memory (store/cluster/paced_rebuild.py does)."""
        try:
            info = await client.ft(name).info()
        except ResponseError:
            info = None
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise unavailable(error) from error
        if info is not None:
            self._check_dims(info)
            datatype = self.core.store.vector_datatype
            rewrite = has_previous_names(info) or indexed_vector_type(info) not in (None, datatype)
            differences = reshaped(info, self.core.store.vector_index)  # store/redis/index_shape.py
            if self._index_is_current(info) and not rewrite and not differences:
                await self._add_missing_fields(client, name, info)
                await self._ensure_metadata_fields(client, name, info)
                return
            why = "field names and vectors" if rewrite else "text" if not self._index_is_current(info) else ""
            logger.warning("rebuilding the index %s (%s)", name, ", ".join(filter(None, [why, *differences])))
            try:
                await self._run(client.ft(name).dropindex(delete_documents=False))
            except ResponseError as error:  # another process dropped it first: make it (or find it made)
                if "unknown index" not in str(error).lower() and "no such index" not in str(error).lower():
                    raise
            if rewrite:  # store/redis/memory_migration.py: the hashes first, then the new index reads them
                await migrate_memories(client, self.layout.memory_key_prefix, self.core.dims, datatype, self._run)
            await self._create_index(client, name)
            if not self._index_is_current(info):
                await self._backfill_search_fields(client)
            await wait_until_read(client, name, self._run)  # index_shape.py
            return
        await self._create_index(client, name, skip_initial_scan=skip_initial_scan)

    async def _migrate_key_layout(self) -> None:
        """Rename every key of an older key layout to its name in this one (`KeyLayout.migrated_key`:
        the user's digest becomes a hash tag), then mark the keyspace as migrated. RENAMENX keeps a
        key of the new layout that exists already; the memory hashes stay under the index's prefix,
        so RediSearch indexes them under their new names as they are renamed. Safe to re-run."""
        marker = as_text(await self._run(self.client.get(self.layout.key_layout_marker)))
        if marker == KEY_LAYOUT_VERSION:
            return
        if not await self._has_index(self.client):  # no older memlane wrote here: nothing to rename
            await self._run(self.client.set(self.layout.key_layout_marker, KEY_LAYOUT_VERSION))
            return
        renamed = kept = 0
        for pattern in self.layout.old_layout_patterns():
            keys = [as_text(key) async for key in self.client.scan_iter(match=pattern, count=1000)]
            for start in range(0, len(keys), 500):
                pipe = self.client.pipeline(transaction=False)
                pairs = [(key, new) for key in keys[start : start + 500] if (new := self.layout.migrated_key(key))]
                for key, new in pairs:
                    pipe.renamenx(key, new)
                for (key, new), done in zip(pairs, await self._run(pipe.execute(raise_on_error=False))):
                    if isinstance(done, ResponseError):  # "no such key": another process renamed it first
                        continue
                    if done:
                        renamed += 1
                    else:
                        kept += 1
                        logger.warning("kept %s: %s exists already in the new key layout", key, new)
        if renamed or kept:
            logger.warning(
                "renamed %d keys under %s: to the cluster-safe key layout %s",
                renamed,
                self.layout.prefix,
                KEY_LAYOUT_VERSION,
            )
        await self._run(self.client.set(self.layout.key_layout_marker, KEY_LAYOUT_VERSION))

    async def _create_index(self, client: Any, name: str, *, skip_initial_scan: bool = False) -> None:
        definition = IndexDefinition(  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
            prefix=[self.layout.memory_key_prefix], index_type=IndexType.HASH, language=INDEX_LANGUAGE
        )
        try:
            await client.ft(name).create_index(
                self.core.schema.redis_fields,
                definition=definition,
                skip_initial_scan=skip_initial_scan,
                **INDEX_OPTIONS,
            )
        except ResponseError as error:
            if "already exists" not in str(error).lower():  # another process won the race
                raise StoreError(f"could not create the index {name}: {error}") from error

    @staticmethod
    def _index_is_current(info: dict[str, Any]) -> bool:
        """Whether the index has the bilingual full-text fields (under this layout's names or the previous)."""
        current = {MemoryField.SEARCH_TEXT, MemoryField.SEARCH_CONTEXT, MemoryField.MONTH_DAY}
        names = indexed_names(info)
        return current <= names or {PREVIOUS_NAMES[field] for field in current} <= names

    @staticmethod
    def _has_field(info: dict[str, Any], field: str) -> bool:
        return field in {as_text(item) for attribute in info.get("attributes", []) for item in attribute}

    async def _add_missing_fields(self, client: Any, name: str, info: dict[str, Any]) -> None:
        """Add the fields an older memlane's index lacks (`valid_until`, the store items' fields) in
        place (FT.ALTER): no memory is rewritten (a fact without `valid_until` holds until marked; the
        items get theirs from `adopt_item_fields`). Declared metadata fields have their own path."""
        metadata = {metadata_field(declared) for declared in self.core.store.metadata_fields}
        for schema_field in self.core.schema.redis_fields:
            if schema_field.name in metadata or self._has_field(info, str(schema_field.name)):
                continue
            logger.warning("adding the field %s to the index %s", schema_field.name, name)
            try:
                await self._run(client.execute_command("FT.ALTER", name, "SCHEMA", "ADD", *schema_field.redis_args()))
            except ResponseError as error:
                if "duplicate" not in str(error).lower():  # another process added it first
                    raise StoreError(f"could not add {schema_field.name} to the index {name}: {error}") from error

    async def _ensure_metadata_fields(self, client: Any, name: str, info: dict[str, Any]) -> None:
        """Index the metadata fields the settings declare that the index lacks: a new one is added in
        place (FT.ALTER), one declared with another type than indexed rebuilds the index; then the
        stored memories' hashes get those fields from their metadata."""
        indexed = self._field_types(info)
        declared = self.core.store.metadata_fields
        changed = {field: kind for field, kind in declared.items() if indexed.get(metadata_field(field)) != kind}
        if not changed:
            return
        retyped = [field for field in changed if metadata_field(field) in indexed]
        logger.warning("indexing the metadata fields %s in the index %s", ", ".join(changed), name)
        if retyped:
            await self._run(client.ft(name).dropindex(delete_documents=False))
            await self._create_index(client, name)
        else:
            for field in self.core.schema.redis_fields:
                if field.name in {metadata_field(declared_name) for declared_name in changed}:
                    try:
                        await self._run(client.execute_command("FT.ALTER", name, "SCHEMA", "ADD", *field.redis_args()))
                    except ResponseError as error:
                        if "duplicate" not in str(error).lower():  # another process added it first
                            raise StoreError(
                                f"could not add the metadata field {field.name} to the index {name}: {error}"
                            ) from error
        await self._backfill_metadata(client, changed)

    @staticmethod
    def _field_types(info: dict[str, Any]) -> dict[str, str]:
        """Indexed field → "tag", "numeric", "text" or "vector", from FT.INFO's attributes."""
        types = {}
        for attribute in info.get("attributes", []):
            flat = [as_text(item) for item in attribute]
            if "attribute" in flat and "type" in flat:
                types[flat[flat.index("attribute") + 1]] = flat[flat.index("type") + 1].lower()
        return types

    async def _backfill_metadata(self, client: Any, fields: dict[str, Any]) -> None:
        """Write the metadata fields `fields` of every stored memory from its metadata (a value the
        field's type cannot hold is left out), 500 keys per round trip; memories without those keys
        are not touched."""
        keys = [
            key async for key in client.scan_iter(match=glob_escaped(self.layout.memory_key_prefix) + "*", count=1000)
        ]
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            pipe = client.pipeline(transaction=False)
            for key in batch:
                pipe.hget(key, MemoryField.METADATA)
            found = await self._run(pipe.execute())
            pipe = client.pipeline(transaction=False)
            for key, raw in zip(batch, found):
                metadata = json.loads(as_text(raw) or "{}")
                if any(field in metadata for field in fields):
                    self.queue_row(pipe, key, metadata_row(metadata, fields, strict=False))
            await self._run(pipe.execute())

    async def _backfill_search_fields(self, client: Any) -> None:
        """Give memories written before the bilingual index their search fields (one HSET each,
        the stored vector kept), 500 keys per round trip."""
        keys = [
            key async for key in client.scan_iter(match=glob_escaped(self.layout.memory_key_prefix) + "*", count=1000)
        ]
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            pipe = client.pipeline(transaction=False)
            for key in batch:
                pipe.hmget(key, RETURN_FIELDS)
            rows = await self._run(pipe.execute())
            pipe = client.pipeline(transaction=False)
            for key, values in zip(batch, rows):
                doc = dict(zip(RETURN_FIELDS, values))
                if doc[MemoryField.ID] is not None and doc[MemoryField.TEXT] is not None:
                    memory = memory_from_doc({field: as_text(value) for field, value in doc.items()})
                    self.queue_row(pipe, key, self.memory_row(memory, strict=False))
            await self._run(pipe.execute())

    def _check_dims(self, info: dict[str, Any]) -> None:
        for attribute in info.get("attributes", []):
            flat = [as_text(item) for item in attribute]
            if {MemoryField.EMBEDDING, PREVIOUS_NAMES[MemoryField.EMBEDDING]} & set(flat) and "dim" in flat:
                dims = int(flat[flat.index("dim") + 1])
                if dims != self.core.dims:
                    raise StoreError(
                        f"the index {self.layout.memory_index_name} holds {dims}-dim vectors but the "
                        f"embeddings give {self.core.dims}; set MEMLANE_KEY_PREFIX to a new prefix for "
                        "this embedding model, or delete the old index"
                    )

    async def check_ready(self) -> None:
        """Raise StoreError saying what is wrong unless Redis answers and the memory index exists."""
        await self._run(self.client.ping())
        try:
            if self.core.shards is not None:  # each primary's index, made where one is missing
                await self._run(self.core.shards.every_index())
            else:
                index = self.client.ft(self.layout.memory_index_name)
                await self._run(index.info())  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        except ResponseError as error:
            raise StoreError(
                f"the index {self.layout.memory_index_name} does not exist ({error}); the store creates it on "
                "start (open_store), so restart the service or check MEMLANE_KEY_PREFIX"
            ) from error

    async def _has_index(self, client: Any) -> bool:
        try:
            await self._run(client.ft(self.layout.memory_index_name).info())
        except ResponseError:
            return False
        return True

    # rows ----------------------------------------------------------------------------------
    def redacted(self, memory: Memory) -> Memory:
        """The memory as it is stored: its size and metadata checked, its text and context masked."""
        self.core.check_text_size(memory.text, f"memory {memory.id!r}")
        checked_metadata(memory.metadata, self.core.limits.max_metadata_bytes, f"memory {memory.id!r}")
        text = self.core.redact(memory.text)
        context = self.core.redact(memory.context) if memory.context else memory.context
        metadata = self.core.redact_value(memory.metadata)
        if text == memory.text and context == memory.context and metadata == memory.metadata:
            return memory
        return memory.model_copy(update={"text": text, "context": context, "metadata": metadata})

    def memory_row(self, memory: Memory, *, strict: bool = True) -> dict[str, Any]:
        """Every field of a memory's hash but the embedding. All fields are always written
        (empty when unset), so an upsert is one HSET: a DEL before it would make RediSearch
        index the document twice and skew its BM25 statistics until garbage collection. A
        declared metadata field the memory does not hold is None: deleted (`queue_row`).
        `strict`: metadata its declared field cannot hold is refused (else left out)."""
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
            MemoryField.MONTH_DAY: month_day(memory.created_at, self.core.zone),
            MemoryField.SOURCES: json.dumps(memory.source_message_ids, ensure_ascii=False),
            MemoryField.REF_ID: memory.ref_id or "",
            MemoryField.SESSION: self.layout.session_tag(memory.session_id) if memory.session_id else "",
            MemoryField.SESSION_ID: memory.session_id or "",
            MemoryField.METADATA: json.dumps(memory.metadata, ensure_ascii=False) if memory.metadata else "",
            **metadata_row(memory.metadata, self.core.store.metadata_fields, strict=strict),
        }
        # what the embedding read counts too: a change of it re-embeds. An unset valid_until does
        # not: a memory marked superseded in place (`queue_valid_until`) stays marked when
        # the same memory is written again unmarked
        digested = [  # over the fields' previous names (memory_migration): unchanged memories keep their digests
            *(f"{key}={value}" for key, value in sorted((PREVIOUS_NAMES.get(k, k), v) for k, v in row.items())),
            f"embedded={self.embedding_input(memory)}",
        ]
        digested += [
            f"{name}={value}"
            for name, value in (("valid_until", memory.valid_until), ("expires_at", memory.expires_at))
            if value is not None
        ]
        digested += [f"importance={memory.importance}"] if memory.importance != 0.5 else []
        row[MemoryField.VALID_UNTIL] = memory.valid_until or 0
        row[MemoryField.EXPIRES_AT] = memory.expires_at or 0
        row[MemoryField.IMPORTANCE] = memory.importance
        row[MemoryField.CONTENT_DIGEST] = stable_id(*digested)
        return row

    def embedding_input(self, memory: Memory) -> str:
        """What is embedded, cut to what embedders read: the text, after its speaker's name when
        one is known and `search_embed_speaker` is on ("Caroline: …", "朋友A：…"), after the
        context when `search_embed_context` is on and the turn is short (its words are indexed
        either way)."""
        text = memory.text
        if memory.speaker and self.core.search.embed_speaker:
            text = f"{memory.speaker}{'：' if detect_language(memory.text) == 'zh' else ': '}{text}"
        if memory.context and self.core.search.embed_context and self._is_short_turn(memory.text):
            text = f"{memory.context}\n{text}"
        return text[:_EMBED_MAX_CHARS]

    def _is_short_turn(self, text: str) -> bool:
        """A turn whose meaning sits in the one before ("Yeah, that one!"), so its vector reads both."""
        limit = self.core.search.embed_context_max_tokens
        return not limit or count_tokens(text) <= limit

    async def memory_rows(self, memories: Sequence[Memory]) -> list[tuple[str, dict[str, Any]]]:
        """Hash rows of the memories that are new or changed (unchanged ones are skipped), embedded."""
        if not memories:
            return []
        empty = [memory.user_id for memory in memories if not memory.user_id]
        if empty:
            raise StoreError("a memory has an empty user_id: every memory belongs to a user")
        await self.core.note_scopes(memory.user_id for memory in memories)
        memories = [self.redacted(memory) for memory in memories]
        latest = {self.layout.memory(memory.user_id, memory.id): memory for memory in memories}  # last one wins
        keys = list(latest)
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, MemoryField.CONTENT_DIGEST)
        stored = await self._run(pipe.execute())
        changed = []
        for key, digest in zip(keys, stored):
            row = self.memory_row(latest[key])
            if as_text(digest) != row[MemoryField.CONTENT_DIGEST]:
                changed.append((key, row))
        if not changed:
            return []
        by_user: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # each user's texts take their own turn
        for key, row in changed:
            by_user.setdefault(latest[key].user_id, []).append((key, row))
        embedded = await asyncio.gather(
            *(
                self.core.embed_documents([self.embedding_input(latest[key]) for key, _ in rows], owner=user_id)
                for user_id, rows in by_user.items()
            )
        )
        for rows, vectors in zip(by_user.values(), embedded):
            for (_, row), vector in zip(rows, vectors):
                row[MemoryField.EMBEDDING] = vector_bytes(vector, self.core.store.vector_datatype)
        return [(key, row) for rows in by_user.values() for key, row in rows]

    async def still_holding(self, user_id: str, memory_ids: Sequence[str]) -> list[str]:
        """Those of `memory_ids` the user has a search memory for that no newer fact replaced yet."""
        if not memory_ids:
            return []
        pipe = self.client.pipeline(transaction=False)
        for memory_id in memory_ids:
            pipe.hmget(self.layout.memory(user_id, memory_id), [MemoryField.ID, MemoryField.VALID_UNTIL])
        found = await self._run(pipe.execute())
        return [
            memory_id
            for memory_id, (present, until) in zip(memory_ids, found)
            if present is not None and not float(as_text(until) or 0)
        ]

    def queue_valid_until(self, pipe: Any, user_id: str, memory_ids: Sequence[str], valid_until: float) -> None:
        """Queue on `pipe` the marking of memories as superseded at `valid_until` (one HSET each,
        the text and vector untouched); only for memories `still_holding` found, so no partial hash
        is made."""
        for memory_id in memory_ids:
            pipe.hset(self.layout.memory(user_id, memory_id), MemoryField.VALID_UNTIL, valid_until)

    @classmethod
    def queue_rows(cls, pipe: Any, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Queue the writes of rows made by `memory_rows` on `pipe`."""
        for key, row in rows:
            cls.queue_row(pipe, key, row)

    @staticmethod
    def queue_row(pipe: Any, key: str, row: dict[str, Any]) -> None:
        """Queue the write of one row (`memory_row`) on `pipe`: its fields set, those that are None
        deleted (a declared metadata field the memory does not hold; an HDEL of an absent field
        changes nothing, and the index sees no change)."""
        values = {field: value for field, value in row.items() if value is not None}
        absent = [field for field, value in row.items() if value is None]
        if values:
            pipe.hset(key, mapping=values)
        if absent:
            pipe.hdel(key, *absent)

    # the protocol's calls ----------------------------------------------------------------------
    async def store_memories(self, memories: Sequence[Memory], *, drop_orphans: bool = False) -> None:
        """Embed and store memories as they are (upsert by id): turns, which are each their own, each
        entry taking its record's expiry (`queue_follow`, with `drop_orphans` for the turns indexed
        late). The protocol's `add_memories`, which counts the quotas and stores a repeat once, is
        store/redis/repeats.py's."""
        rows = await self.memory_rows(memories)
        await self.write_rows(rows, lambda pipe: self.queue_follow(pipe, memories, drop_orphans=drop_orphans))

    async def write_rows(self, rows: Sequence[tuple[str, dict[str, Any]]], then: Callable[[Any], None]) -> None:
        """Write `rows` (`memory_rows`) `WRITE_CHUNK` at a time, a pipeline each; `then` queues the call's other
        writes on the last one. Redis indexes each hash as it is written (HNSW links each vector into its graph,
        ~1 ms): 100,000 memories in one pipeline held Redis, every other caller behind them, until the socket
        write timed out (bench/scale.py, one user's 100,000 memories in one call)."""
        for start in range(0, max(len(rows), 1), WRITE_CHUNK):
            pipe = self.client.pipeline(transaction=False)
            self.queue_rows(pipe, rows[start : start + WRITE_CHUNK])
            if start + WRITE_CHUNK >= len(rows):
                then(pipe)
            await self._run(pipe.execute())

    def queue_follow(self, pipe: Any, memories: Sequence[Memory], *, drop_orphans: bool = False) -> None:
        """Queue on `pipe` each written entry's expiry after its record's (`Retention.queue_follow`):
        unchanged entries too, as their record's time may have started again."""
        for user_id in dict.fromkeys(memory.user_id for memory in memories):
            self.retention.queue_follow(
                pipe, user_id, [m.id for m in memories if m.user_id == user_id], drop_orphans=drop_orphans
            )
            self.retention.queue_owner(pipe, user_id)

    async def delete_memory(self, user_id: str, memory_id: str) -> bool:
        removed = await self._run(self.client.delete(self.layout.memory(user_id, memory_id)))
        return bool(removed)

    async def of_user(self, user_id: str) -> list[Memory]:
        """Every search memory of the user, oldest first (a scan of the user's memory prefix)."""
        keys = [
            key
            async for key in self.client.scan_iter(match=glob_escaped(self.layout.memory_user_prefix(user_id)) + "*")
        ]
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, RETURN_FIELDS)
        rows = await self._run(pipe.execute())
        memories = [
            memory_from_doc({field: as_text(value) for field, value in zip(RETURN_FIELDS, row)})
            for row in rows
            if row and row[0] is not None
        ]
        return sorted(memories, key=lambda memory: memory.created_at)
