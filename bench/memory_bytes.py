"""Where a memory's bytes go in Redis (issue 52, item 2): printed by bench/store.py after its
inserts, for the bench user's memories.

- **the hash**: Redis's own count for a sample of memory keys (`MEMORY USAGE … SAMPLES 0`), and
  inside it each field's value bytes (`HSTRLEN`) and the field names and key name themselves;
- **the index**: RediSearch's own sizes (`FT.INFO`): the vectors (`vector_index_sz_mb`), the
  inverted text index, offsets, the document table, sortable values, tag and numeric indexes,
  each divided by the index's documents.

Nothing is changed: it reads what the store wrote.
"""

from __future__ import annotations

import random
from typing import Any

# FT.INFO's sizes, in the order printed
_INDEX_SIZES = (
    ("vector index", "vector_index_sz_mb"),
    ("inverted text index", "inverted_sz_mb"),
    ("term offsets", "offset_vectors_sz_mb"),
    ("document table", "doc_table_size_mb"),
    ("sortable values", "sortable_values_size_mb"),
    ("key table", "key_table_size_mb"),
    ("tag overhead", "tag_overhead_sz_mb"),
    ("text overhead", "text_overhead_sz_mb"),
    ("geoshapes", "geoshapes_sz_mb"),
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _index_info(client: Any, index_name: str) -> dict[str, str]:
    raw = await client.ft(index_name).info()
    if not isinstance(raw, dict):
        raw = {raw[i]: raw[i + 1] for i in range(0, len(raw) - 1, 2)}
    return {_text(key): _text(value) for key, value in raw.items() if not isinstance(value, list | dict)}


async def byte_breakdown(store: Any, user_id: str, *, sample: int = 200) -> list[str]:
    """Lines that say where the bytes of `user_id`'s memories go: per memory, the hash (each field,
    the names, Redis's overhead) and the index's parts."""
    client = store.client
    keys = [key async for key in client.scan_iter(match=store.layout.memory_user_prefix(user_id) + "*", count=1000)]
    if not keys:
        return ["memory bytes: the user has no memories"]
    chosen = random.Random(5).sample(keys, min(sample, len(keys)))
    usage = fields = names = key_names = 0
    per_field: dict[str, int] = {}
    for key in chosen:
        usage += int(await client.execute_command("MEMORY", "USAGE", key, "SAMPLES", "0") or 0)
        key_names += len(key)
        for field in await client.hkeys(key):
            length = int(await client.hstrlen(key, field))
            name = _text(field)
            per_field[name] = per_field.get(name, 0) + length
            fields += length
            names += len(field)
    count = len(chosen)
    lines = [f"bytes per memory (a sample of {count} of {len(keys)} memory hashes, MEMORY USAGE and HSTRLEN):"]
    lines.append(f"  the hash in all (Redis's count)       {usage / count:8.0f} B")
    for name, size in sorted(per_field.items(), key=lambda item: -item[1]):
        lines.append(f"    field {name:30} {size / count:8.0f} B")
    lines.append(f"    field names                        {names / count:8.0f} B")
    lines.append(f"    the key's name                     {key_names / count:8.0f} B")
    lines.append(f"    Redis's overhead (the rest)        {(usage - fields - names - key_names) / count:8.0f} B")
    info = await _index_info(client, store.layout.memory_index_name)
    documents = max(1, int(float(info.get("num_docs", "1"))))
    lines.append(f"  the index ({documents} documents, FT.INFO, per document):")
    total = 0.0
    for label, field in _INDEX_SIZES:
        if field in info:
            size = float(info[field]) * 1024 * 1024 / documents
            total += size
            lines.append(f"    {label:34} {size:8.0f} B")
    lines.append(f"  index in all                          {total:8.0f} B")
    lines.append(f"  hash + index                          {usage / count + total:8.0f} B")
    return lines
