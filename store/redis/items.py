"""LangGraph store items (memlane/langgraph_store.py): each is a search memory of kind "event"
whose hash also keeps the item's JSON (and its own vectors, when a LangGraph index config embeds
it) and its index fields (store/item_fields.py: searches and listings are index queries,
store/redis/item_search.py), listed in its owner's registry (memory id → namespace, what an export
and the app's panel read), expiring with its ttl. The owners are listed in one set.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane.store.item_fields import item_index_row
from memlane.store.records import StoreItem
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.memories import Memories
from memlane.store.redis.metadata import checked_metadata, metadata_row
from memlane.store.redis.quotas import Quotas, text_bytes
from memlane.store.redis.retention import Retention
from memlane.store.schema import MemoryField
from memlane.store.vectors import converted


def item_value_bytes(item: StoreItem) -> int:
    """The bytes an item counts for in the user's quota: its value as JSON."""
    return text_bytes(json.dumps(item.value, ensure_ascii=False))


@dataclass(eq=False, repr=False)
class Items(StorePart):
    """Items: their memories, their registry, their expiry."""

    memories: Memories  # an item is kept in its search memory's hash
    quotas: Quotas = field(kw_only=True)  # the user's quotas, checked before a record is added
    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'

    def _redacted(self, item: StoreItem) -> StoreItem:
        """The item with its text and every string inside its value masked."""
        if self.core.privacy.redaction == "off":
            return item
        return item.model_copy(
            update={"text": self.core.redact(item.text), "value": self.core.redact_value(item.value)}
        )

    async def put_items(
        self, items: Sequence[StoreItem], *, vectors: Sequence[bytes | None] | None = None
    ) -> list[StoreItem]:
        own_vectors = list(vectors) if vectors is not None else [None] * len(items)
        if len(own_vectors) != len(items):
            raise ValueError(f"put_items got {len(own_vectors)} vectors for {len(items)} items")
        latest = {  # last one wins
            (item.user_id, item.memory_id): (self._redacted(item), vector) for item, vector in zip(items, own_vectors)
        }
        if not latest:
            return []
        items = [item for item, _ in latest.values()]
        own_vectors = [vector for _, vector in latest.values()]
        for item in items:  # refused before anything is written
            metadata_row(
                checked_metadata(item.metadata, self.core.limits.max_metadata_bytes, f"item {item.key!r}"),
                self.core.store.metadata_fields,
            )
        for user_id in dict.fromkeys(
            item.user_id for item in items
        ):  # past a quota: refused before anything is written
            await self.quotas.reserve(
                user_id, {i.memory_id: item_value_bytes(i) for i in items if i.user_id == user_id}
            )
        # the owner is listed before its items exist: a search over every owner never misses one
        await self._run(self.client.sadd(self.layout.item_owners, *{item.user_id for item in items}))
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
        changed = dict(await self.memories.memory_rows([item.as_memory() for item in items if item.text]))
        # one transaction per user: a transaction stays within one user's hash slot (a cluster refuses more)
        pipes: dict[str, Any] = {}
        for key, item, own in zip(keys, items, own_vectors):
            if item.user_id not in pipes:
                pipes[item.user_id] = self.client.pipeline(transaction=True)
            pipe = pipes[item.user_id]
            # one HSET per item: each write to an indexed hash makes RediSearch index the whole document again
            row: dict[str, Any] = {}
            if not item.text:  # index=False: kept and listed, but no vector and no search terms
                row = self.memories.memory_row(item.as_memory())
                row.update({MemoryField.SEARCH_TEXT: "", MemoryField.CONTENT_DIGEST: ""})
                pipe.hdel(key, MemoryField.EMBEDDING)
            elif key in changed:
                row = dict(changed[key])
            row[MemoryField.ITEM] = item.model_dump_json()
            row.update(item_index_row(item.namespace, item.value, item.updated_at))
            if own is None:
                pipe.hdel(key, MemoryField.ITEM_VECTORS)
            else:
                row[MemoryField.ITEM_VECTORS] = own
            self.memories.queue_row(pipe, key, row)
            pipe.hset(self.layout.items(item.user_id), item.memory_id, json.dumps(item.namespace, ensure_ascii=False))
            self.retention.queue_owner(pipe, item.user_id)
            if item.ttl_minutes is not None:
                pipe.pexpire(key, max(1, int(item.ttl_minutes * 60_000)))
            else:
                pipe.persist(key)
        for pipe in pipes.values():
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

    async def adopt_item_owners(self) -> None:
        """List the owners of items put by a memlane older than `item_owners` (once per keyspace:
        a marker says it is done). Each owner's registry is found by SCAN; its first item names it."""
        if await self._run(self.client.exists(self.layout.item_owners_adopted)):
            return
        registries = [key async for key in self.client.scan_iter(match=self.layout.item_registry_pattern, count=1000)]
        owners = set()
        for registry in registries:
            memory_ids = await self._run(self.client.hkeys(registry))
            (item,) = await self.get_items_at(registry, memory_ids[:1]) if memory_ids else (None,)
            if item is not None:
                owners.add(item.user_id)
        if owners:
            await self._run(self.client.sadd(self.layout.item_owners, *owners))
        await self._run(self.client.set(self.layout.item_owners_adopted, "1"))

    async def get_items_at(self, registry: Any, memory_ids: Sequence[Any]) -> list[StoreItem | None]:
        """Items by memory id under the user of a registry key (`layout.items`), its user unknown."""
        digest = self.layout.digest_of_user_key(as_text(registry))
        pipe = self.client.pipeline(transaction=False)
        for memory_id in memory_ids:
            pipe.hget(self.layout.memory_of_digest(digest, as_text(memory_id)), MemoryField.ITEM)
        return [StoreItem.model_validate_json(raw) if raw else None for raw in await self._run(pipe.execute())]

    async def item_owners(self) -> list[str]:
        return sorted(as_text(member) for member in await self._run(self.client.smembers(self.layout.item_owners)))

    async def list_items(self, user_id: str) -> list[StoreItem]:
        return [item for item, _ in await self._listed(user_id, None)]

    async def list_items_with_vectors(self, user_id: str, *, own: bool) -> list[tuple[StoreItem, bytes | None]]:
        return await self._listed(user_id, MemoryField.ITEM_VECTORS if own else MemoryField.EMBEDDING)

    async def _listed(self, user_id: str, vector_field: str | None) -> list[tuple[StoreItem, bytes | None]]:
        """Every item of the user, with the vector field asked for, in one round trip after the registry's."""
        registry = self.layout.items(user_id)
        memory_ids = [as_text(field) for field in await self._run(self.client.hkeys(registry))]
        if not memory_ids:
            return []
        fields = [MemoryField.ITEM] if vector_field is None else [MemoryField.ITEM, vector_field]
        pipe = self.client.pipeline(transaction=False)
        for memory_id in memory_ids:
            pipe.hmget(self.layout.memory(user_id, memory_id), fields)
        rows = await self._run(pipe.execute())
        gone = [memory_id for memory_id, row in zip(memory_ids, rows) if not row[0]]
        if gone:  # expired, or deleted as a memory (the app's panel, the forget tool)
            await self._run(self.client.hdel(registry, *gone))
        return [
            (StoreItem.model_validate_json(row[0]), self.as_float32(row[1], vector_field) if vector_field else None)
            for row in rows
            if row[0]
        ]

    def as_float32(self, raw: bytes | None, vector_field: str) -> bytes | None:
        """A vector field's bytes as the LangGraph rules read them: float32 rows (memlane's embedding may be
        kept as float16, store/vectors.py; an item's own vectors are float32 already)."""
        if not raw:
            return None
        return converted(raw, self.core.dims, "float32") if vector_field == MemoryField.EMBEDDING else raw

    async def refresh_items(self, items: Sequence[StoreItem]) -> None:
        expiring = [(item, item.ttl_minutes) for item in items if item.ttl_minutes is not None]
        if not expiring:
            return
        pipe = self.client.pipeline(transaction=False)
        for item, minutes in expiring:
            pipe.pexpire(self.layout.memory(item.user_id, item.memory_id), max(1, int(minutes * 60_000)))
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
