"""A keyspace's memory vectors moved to another type (`StoreSettings.vector_datatype`, store/vectors.py): run
when a store opens on an index whose vector field has another type than the settings ask. The index is dropped
(the hashes kept), every memory hash's vector converted in place, and the index made again, which reads every
hash anew. A hash deleted meanwhile is not made again (the write is a script that sets the field of a hash that
exists), and one converted already is left as it is, so a second process, or a second run after a crash, does
no harm."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from memlane.store.redis.core import as_text
from memlane.store.schema import MemoryField, glob_escaped
from memlane.store.vectors import VectorDatatype, converted

logger = logging.getLogger(__name__)

# sets a field of a hash only while the hash exists: a memory deleted during the migration stays deleted
_SET_IF_PRESENT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return -1
"""

_BATCH = 500


def indexed_vector_type(info: dict[str, Any]) -> str | None:
    """The type of the index's vector field ("float16", "float32"…) from FT.INFO's attributes, or None."""
    for attribute in info.get("attributes", []):
        flat = [as_text(item) for item in attribute]
        if MemoryField.EMBEDDING in flat and "data_type" in flat:
            return flat[flat.index("data_type") + 1].lower()
    return None


async def convert_vectors(
    client: Any,
    key_prefix: str,
    dims: int,
    datatype: VectorDatatype,
    run: Callable[[Awaitable[Any]], Awaitable[Any]],
) -> int:
    """Convert the vector of every memory hash under `key_prefix` on the Redis `client` talks to (the one Redis,
    or one primary of a cluster) to `datatype`; returns how many were rewritten."""
    script = client.register_script(_SET_IF_PRESENT)
    rewritten = 0
    keys = [key async for key in client.scan_iter(match=glob_escaped(key_prefix) + "*", count=1000)]
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.hget(key, MemoryField.EMBEDDING)
        blobs = await run(pipe.execute())
        pipe = client.pipeline(transaction=False)
        queued = 0
        for key, blob in zip(batch, blobs):
            if not blob:
                continue
            new = converted(blob, dims, datatype)
            if new != blob:
                await script(keys=[key], args=[MemoryField.EMBEDDING, new], client=pipe)
                queued += 1
        if queued:
            await run(pipe.execute())
            rewritten += queued
    logger.warning("converted %d memory vectors under %s to %s", rewritten, key_prefix, datatype)
    return rewritten
