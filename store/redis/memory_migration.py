"""A keyspace's memory hashes brought to this memlane's layout when a store opens on an index of another one:
vectors of another type (`StoreSettings.vector_datatype`, store/vectors.py) and the longer field names memory
hashes had before (`PREVIOUS_NAMES`: "embedding", "search_text"…, each in every hash). The index is dropped (the
hashes kept), every memory hash rewritten in place, and the index made again, which reads every hash anew. A hash
deleted meanwhile is not made again (the write is a script that touches only a hash that exists, keeping its
expiry), and one rewritten already is left as it is, so a second process, or a second run after a crash, does no
harm."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from memlane.store.redis.core import as_text
from memlane.store.schema import MemoryField, glob_escaped
from memlane.store.vectors import VectorDatatype, converted

logger = logging.getLogger(__name__)

# this layout's name of each field → the name memory hashes had before it (the content digest is still computed
# over these, so a memory rewritten unchanged after the migration is still found unchanged)
PREVIOUS_NAMES = {
    MemoryField.ID: "memory_id",
    MemoryField.USER: "user",
    MemoryField.KIND: "kind",
    MemoryField.SESSION: "session",
    MemoryField.USER_ID: "user_id",
    MemoryField.SESSION_ID: "session_id",
    MemoryField.TEXT: "text",
    MemoryField.SEARCH_TEXT: "search_text",
    MemoryField.SEARCH_CONTEXT: "search_context",
    MemoryField.LANGUAGE: "language",
    MemoryField.SPEAKER: "speaker",
    MemoryField.SPEAKER_KEY: "speaker_key",
    MemoryField.SPEAKER_ROLE: "speaker_role",
    MemoryField.CREATED_AT: "created_at",
    MemoryField.MONTH_DAY: "month_day",
    MemoryField.VALID_UNTIL: "valid_until",
    MemoryField.EXPIRES_AT: "expires_at",
    MemoryField.IMPORTANCE: "importance",
    MemoryField.CONTENT_DIGEST: "content_digest",
    MemoryField.SOURCES: "source_message_ids",
    MemoryField.REF_ID: "ref_id",
    MemoryField.EMBEDDING: "embedding",
    MemoryField.ITEM: "item",
    MemoryField.ITEM_VECTORS: "item_vectors",
    MemoryField.ITEM_PREFIXES: "item_prefixes",
    MemoryField.ITEM_MATCH: "item_match",
    MemoryField.ITEM_NAMESPACE: "item_namespace",
    MemoryField.ITEM_UPDATED: "item_updated",
    MemoryField.METADATA: "metadata",
    MemoryField.UNANSWERED: "unanswered",
}
_CURRENT_NAMES = {previous: current for current, previous in PREVIOUS_NAMES.items()}

# sets fields and removes others of a hash only while the hash exists (a memory deleted during the migration stays
# deleted); ARGV: how many fields to set, then name, value pairs, then the names to remove
_REWRITE_IF_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local count = tonumber(ARGV[1])
if count > 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 2, 1 + 2 * count))
end
if #ARGV > 1 + 2 * count then
  redis.call('HDEL', KEYS[1], unpack(ARGV, 2 + 2 * count))
end
return 1
"""

_BATCH = 500


def indexed_names(info: dict[str, Any]) -> set[str]:
    """The attribute names of an index, from FT.INFO."""
    return {as_text(item) for attribute in info.get("attributes", []) for item in attribute}


def has_previous_names(info: dict[str, Any]) -> bool:
    """Whether the index was made over the field names memory hashes had before this layout."""
    return PREVIOUS_NAMES[MemoryField.EMBEDDING] in indexed_names(info)


def indexed_vector_type(info: dict[str, Any]) -> str | None:
    """The type of the index's vector field ("float16", "float32"…) from FT.INFO's attributes, or None."""
    for attribute in info.get("attributes", []):
        flat = [as_text(item) for item in attribute]
        if {MemoryField.EMBEDDING, PREVIOUS_NAMES[MemoryField.EMBEDDING]} & set(flat) and "data_type" in flat:
            return flat[flat.index("data_type") + 1].lower()
    return None


def _rewrite(row: dict[Any, Any], dims: int, datatype: VectorDatatype) -> tuple[dict[str, Any], list[str]]:
    """The fields to set and the names to remove that bring one hash to this layout (both empty: it is)."""
    values = {as_text(name): value for name, value in row.items()}
    setting: dict[str, Any] = {}
    removing = []
    for name, value in values.items():
        current = _CURRENT_NAMES.get(name)
        if current is not None:
            removing.append(name)
            if current not in values:  # a field written in both layouts keeps the newer one
                setting[current] = value
    vector_name = MemoryField.EMBEDDING
    vector = setting.get(vector_name, values.get(vector_name))
    if vector:
        new = converted(vector, dims, datatype)
        if new != vector:
            setting[vector_name] = new
    return setting, removing


async def migrate_memories(
    client: Any,
    key_prefix: str,
    dims: int,
    datatype: VectorDatatype,
    run: Callable[[Awaitable[Any]], Awaitable[Any]],
) -> int:
    """Bring every memory hash under `key_prefix` on the Redis `client` talks to (the one Redis, or one primary of
    a cluster) to this layout: its fields' names, its vector in `datatype`. Returns how many were rewritten."""
    script = client.register_script(_REWRITE_IF_PRESENT)
    rewritten = 0
    keys = [key async for key in client.scan_iter(match=glob_escaped(key_prefix) + "*", count=1000)]
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.hgetall(key)
        rows = await run(pipe.execute())
        pipe = client.pipeline(transaction=False)
        queued = 0
        for key, row in zip(batch, rows):
            setting, removing = _rewrite(row or {}, dims, datatype)
            if setting or removing:
                pairs = [item for name, value in setting.items() for item in (name, value)]
                await script(keys=[key], args=[len(setting), *pairs, *removing], client=pipe)
                queued += 1
        if queued:
            await run(pipe.execute())
            rewritten += queued
    logger.warning("rewrote %d memory hashes under %s (field names, %s vectors)", rewritten, key_prefix, datatype)
    return rewritten
