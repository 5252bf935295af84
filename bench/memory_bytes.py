"""Where a memory's bytes go in Redis (issue 52, item 2): printed by bench/store.py after its
inserts, for the bench user's memories.

- **the hash**: Redis's own count for a sample of memory keys (`MEMORY USAGE … SAMPLES 0`), and
  inside it each field's value bytes (`HSTRLEN`) and the field names and key name themselves;
- **the index**: RediSearch's own sizes (`FT.INFO`): the vectors (`vector_index_sz_mb`), the
  inverted text index, offsets, the document table, sortable values, tag and numeric indexes,
  each divided by the index's documents.

Nothing is changed: it reads what the store wrote. Two more views, by Redis's own `used_memory`, which
counts what FT.INFO does not (the numeric indexes, HNSW's graph, the allocator's rounding):

- `used_memory_breakdown`: the growth of `used_memory` per memory, split into the memory hashes
  (MEMORY USAGE), each user's other keys the memories need (the per-user `texts` digests), and the
  index (the rest: what dropping it frees), beside FT.INFO's count of it;
- `index_parts` (bench/store.py --index-parts): what each field and option of the index costs, each
  measured as the `used_memory` an index over the same hashes takes with it, made beside the store's
  and dropped (a few seconds each at 10,000 memories; the HNSW ones longest).
"""

from __future__ import annotations

import asyncio
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


async def settled_used_memory(client: Any) -> int:
    """`used_memory` once no index of the Redis is still reading hashes."""
    for _ in range(3000):
        names = await client.execute_command("FT._LIST")
        infos = [await client.ft(_text(name)).info() for name in names]
        if not any(int(info.get("indexing", 0)) for info in infos):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # what a dropped index frees in the background
    return int((await client.info("memory"))["used_memory"])


async def _usage(client: Any, keys: list[Any]) -> int:
    total = 0
    for start in range(0, len(keys), 500):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + 500]:
            pipe.execute_command("MEMORY", "USAGE", key, "SAMPLES", "0")
        total += sum(int(size or 0) for size in await pipe.execute())
    return total


async def used_memory_breakdown(store: Any, count: int, grown: int) -> list[str]:
    """Lines that split `grown` bytes of `used_memory` (what `count` memories added) into the memory hashes, the
    per-user keys that memories need, and the index; the memory index's FT.INFO total beside the last."""
    client, layout = store.client, store.layout
    hashes = [key async for key in client.scan_iter(match=layout.memory_key_prefix + "*", count=1000)]
    digests = [key async for key in client.scan_iter(match=f"{layout.prefix}:u:*:texts", count=1000)]
    hash_bytes, digest_bytes = await _usage(client, hashes), await _usage(client, digests)
    documents = max(1, len(hashes))
    info = await _index_info(client, layout.memory_index_name)
    reported = sum(float(info.get(field, 0)) for _, field in _INDEX_SIZES) * 1024 * 1024
    index = grown - (hash_bytes + digest_bytes) * count / documents
    return [
        f"used_memory per memory ({count:,} memories, {grown / count:,.0f} B each):",
        f"  the memory hashes (MEMORY USAGE of {len(hashes):,})      {hash_bytes / documents:8.0f} B",
        f"  per-user text digests ({len(digests):,} `texts` hashes)    {digest_bytes / documents:8.0f} B",
        f"  the index and the keyspace's tables (the rest)  {index / count:8.0f} B",
        f"    of which FT.INFO counts                      {reported / documents:8.0f} B",
    ]


def _field_arguments(store: Any) -> dict[str, list[Any]]:
    """FT.CREATE's SCHEMA arguments of each field of the store's memory index, by name."""
    return {str(field.name): list(field.redis_args()) for field in store.core.schema.redis_fields}


def _vector(arguments: list[Any], algorithm: str, m: int | None = None) -> list[Any]:
    """A vector field's SCHEMA arguments with another algorithm (its type, dimensions and metric kept)."""
    kept = {
        str(arguments[at]).upper(): arguments[at + 1]
        for at in range(4, len(arguments) - 1, 2)
        if str(arguments[at]).upper() in ("TYPE", "DIM", "DISTANCE_METRIC")
    }
    extra = ["M", m] if m else []
    pairs = [item for pair in kept.items() for item in pair] + extra
    return [arguments[0], "VECTOR", algorithm, len(pairs), *pairs]


async def index_parts(store: Any, count: int) -> list[str]:
    """Lines that say what each part of the memory index costs per memory, by `used_memory`: an index over the
    same hashes made with that part and without, beside the store's, then dropped."""
    client, layout = store.client, store.layout
    name = layout.memory_index_name + "_part"
    fields = _field_arguments(store)
    every = [item for arguments in fields.values() for item in arguments]

    async def cost(schema: list[Any], options: tuple[str, ...] = ("NOOFFSETS",)) -> float:
        before = await settled_used_memory(client)
        await client.execute_command(
            "FT.CREATE", name, "ON", "HASH", "PREFIX", 1, layout.memory_key_prefix, "LANGUAGE", "english",
            *options, "SCHEMA", *schema,
        )  # fmt: skip
        after = await settled_used_memory(client)
        await client.execute_command("FT.DROPINDEX", name)
        return (after - before) / count

    kind = fields["k"]
    whole = await cost(every)
    base = await cost(kind)
    lines = [
        f"the index's parts by used_memory ({count:,} memories; each an index of its own over the same hashes):",
        f"  the index as made (NOOFFSETS)                    {whole:8.0f} B",
        f"  a document's entry (key, table) and one tag      {base:8.0f} B",
    ]
    for field, arguments in fields.items():
        if field != "k":
            kind_of = str(getattr(arguments[1], "value", arguments[1]))
            lines.append(f"  + {field:6} {kind_of:38} {await cost(kind + arguments) - base:8.0f} B")
    sortable = [*every]
    at = sortable.index("at")
    sortable.insert(at + 2, "SORTABLE")
    lines.append(f"  term offsets kept (no NOOFFSETS): +              {await cost(every, ()) - whole:8.0f} B")
    lines.append(f"  created_at SORTABLE: +                           {await cost(sortable) - whole:8.0f} B")
    flat = await cost(kind + _vector(fields["v"], "FLAT"))
    for m in (16, 8, 4):
        graph = await cost(kind + _vector(fields["v"], "HNSW", m)) - flat
        lines.append(f"  HNSW M={m:<2} graph over FLAT: +                   {graph:8.0f} B")
    return lines
