"""Searching LangGraph store items through the memory index (store/item_fields.py): the items under a
namespace prefix, newest first or nearest a vector, and the namespaces under one, each an index
query whose cost follows the items under the prefix, not the store's size.

With an owner the query goes to the index holding the owner's memories (on a cluster, the primary
of the owner's slot); without one, to every primary's index. The hits' items and vectors are read
from their hashes in one round trip (a cluster's search returns nothing of a hash outside the slot
of the index's name, store/cluster/search.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from redisvl.index import AsyncSearchIndex
from redisvl.query import FilterQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Tag

from memlane.store.cluster.every_primary import on_every_primary
from memlane.store.item_fields import ANY_VALUE, VectorKind, item_index_row, namespace_of_hex, prefix_tag
from memlane.store.records import StoreItem
from memlane.store.redis.core import StorePart, as_text
from memlane.store.schema import MemoryField
from memlane.store.vectors import converted

T = TypeVar("T")
# namespaces read per FT.AGGREGATE page
_NAMESPACES_PER_PAGE = 10_000
# item hashes read (or backfilled) per round trip
_PER_TRIP = 500


def _aggregate_rows(reply: Any) -> list[dict[str, str]]:
    """The rows of an FT.AGGREGATE reply, in RESP2 (`[count, [name, value, ...], ...]`) or RESP3."""
    if isinstance(reply, dict):
        results: list[Any] = reply.get("results") or reply.get(b"results") or []
        rows = [row.get("extra_attributes") or row.get(b"extra_attributes") or {} for row in results]
        return [{as_text(name): as_text(value) for name, value in row.items()} for row in rows]
    return [
        {as_text(row[i]): as_text(row[i + 1]) for i in range(0, len(row) - 1, 2)}
        for row in reply[1:]
        if isinstance(row, list)
    ]


@dataclass(eq=False, repr=False)
class ItemSearch(StorePart):
    """Index queries over LangGraph store items."""

    def items_filter(self, owner: str | None, prefix: Sequence[str], match: Sequence[str]) -> FilterExpression:
        """The items under `prefix` (of `owner`, when given) holding every value tag of `match`."""
        expression = Tag(MemoryField.ITEM_PREFIXES) == prefix_tag(prefix)
        if owner is not None:
            expression = expression & (Tag(MemoryField.USER) == self.layout.user_tag(owner))
        for tag in match:
            expression = expression & (Tag(MemoryField.ITEM_MATCH) == [tag, ANY_VALUE])
        return expression

    async def _on_indexes(self, owner: str | None, call: Callable[[AsyncSearchIndex], Awaitable[T]]) -> list[T]:
        """`call` on the index holding `owner`'s items, or on every index when no owner is named."""
        if owner is not None:
            return [await self.core.on_user_index(owner, call)]
        shards = self.core.shards
        if shards is None:
            return [await self._run(call(self.core.index))]
        answers: list[T] = await self._run(on_every_primary(shards, call))  # each whole (every_primary.py)
        return answers

    async def _read(self, keys: Sequence[str], vectors: VectorKind | None) -> list[tuple[StoreItem, bytes | None]]:
        """The items at `keys`, each with the vector field asked for; those gone since are left out."""
        fields = [MemoryField.ITEM]
        if vectors is not None:
            fields.append(MemoryField.ITEM_VECTORS if vectors == "own" else MemoryField.EMBEDDING)
        embedding = vectors is not None and vectors != "own"
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hmget(key, fields)
        rows = await self._run(pipe.execute()) if keys else []
        return [
            (StoreItem.model_validate_json(row[0]), self._float32(row[1], embedding) if vectors is not None else None)
            for row in rows
            if row[0]
        ]

    def _float32(self, raw: bytes | None, embedding: bool) -> bytes | None:
        """A vector field's bytes as float32 rows, what the LangGraph rules read (memlane's embedding may be
        kept as float16: store/vectors.py; an item's own vectors are float32 already)."""
        if not raw:
            return None
        return converted(raw, self.core.dims, "float32") if embedding else raw

    async def newest_items(
        self,
        owner: str | None,
        prefix: Sequence[str],
        *,
        match: Sequence[str] = (),
        limit: int,
        vectors: VectorKind | None = None,
    ) -> list[tuple[StoreItem, bytes | None]]:
        """At most `limit` items under `prefix` holding the value tags `match`, most recently written
        first (on a cluster without an owner: at most `limit` of each primary's)."""
        query = FilterQuery(
            filter_expression=self.items_filter(owner, prefix, match),
            return_fields=[MemoryField.ID],
            num_results=max(1, limit),
            sort_by=(MemoryField.ITEM_UPDATED, "DESC"),
        )
        found = await self._on_indexes(owner, lambda index: index.query(query))
        return await self._read([doc["id"] for docs in found for doc in docs], vectors)

    async def nearest_items(
        self,
        owner: str | None,
        prefix: Sequence[str],
        vector: Sequence[float],
        *,
        match: Sequence[str] = (),
        limit: int,
    ) -> list[tuple[StoreItem, bytes | None]]:
        """The `limit` items under `prefix` with memlane's embedding nearest `vector` (cosine), each with
        that embedding, in no promised order. Exact: RediSearch compares the vector with each item the
        filter selects (ADHOC_BF), so the cost follows the items under the prefix."""
        query = VectorQuery(
            vector=list(vector),
            vector_field_name=MemoryField.EMBEDDING,
            dtype=self.core.store.vector_datatype,
            filter_expression=self.items_filter(owner, prefix, match),
            return_fields=[MemoryField.ID],
            num_results=max(1, limit),
            return_score=False,
            hybrid_policy="ADHOC_BF",
        )
        found = await self._on_indexes(owner, lambda index: index.query(query))
        return await self._read([doc["id"] for docs in found for doc in docs], "memlane")

    async def item_namespaces(self, owner: str | None, prefix: Sequence[str]) -> set[tuple[str, ...]]:
        """Every namespace holding an item under `prefix` (grouped by the index: no item is read)."""
        query = str(self.items_filter(owner, prefix, ()))
        group = "@" + MemoryField.ITEM_NAMESPACE

        async def grouped(index: AsyncSearchIndex) -> set[tuple[str, ...]]:
            found: set[tuple[str, ...]] = set()
            offset = 0
            while True:
                reply = await index.client.execute_command(
                    "FT.AGGREGATE", index.name, query, "GROUPBY", 1, group, "SORTBY", 2, group, "ASC",
                    "LIMIT", offset, _NAMESPACES_PER_PAGE, "DIALECT", 2,
                )  # fmt: skip
                rows = _aggregate_rows(reply)
                found.update(namespace_of_hex(row[MemoryField.ITEM_NAMESPACE]) for row in rows if row)
                if len(rows) < _NAMESPACES_PER_PAGE:
                    return found
                offset += _NAMESPACES_PER_PAGE

        return set().union(*await self._on_indexes(owner, grouped))

    async def adopt_item_fields(self) -> None:
        """Give items put by a memlane older than their index fields those fields (once per keyspace:
        a marker says it is done). Each owner's items are found by their registry (`layout.items`)."""
        if await self._run(self.client.exists(self.layout.item_fields_adopted)):
            return
        pattern = self.layout.item_registry_pattern
        async for registry in self.client.scan_iter(match=pattern, count=1000):
            digest = self.layout.digest_of_user_key(as_text(registry))
            memory_ids = [as_text(field) for field in await self._run(self.client.hkeys(registry))]
            for start in range(0, len(memory_ids), _PER_TRIP):
                keys = [self.layout.memory_of_digest(digest, mid) for mid in memory_ids[start : start + _PER_TRIP]]
                pipe = self.client.pipeline(transaction=False)
                for key, (item, _) in zip(keys, await self._read_keyed(keys)):
                    if item is not None:
                        row: dict[Any, Any] = item_index_row(item.namespace, item.value, item.updated_at)
                        pipe.hset(key, mapping=row)
                await self._run(pipe.execute())
        await self._run(self.client.set(self.layout.item_fields_adopted, "1"))

    async def _read_keyed(self, keys: Sequence[str]) -> list[tuple[StoreItem | None, None]]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, MemoryField.ITEM)
        return [(StoreItem.model_validate_json(raw) if raw else None, None) for raw in await self._run(pipe.execute())]
