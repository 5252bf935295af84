"""What the memory index is made with beside its fields, and how an index made otherwise is told from FT.INFO.

- **No term offsets** (`NOOFFSETS`, which RediSearch 2.10 takes as `NOHL` too): a term's positions in each
  document, and each document's byte offsets, serve phrase and proximity queries (`"…"`, `SLOP`, `INORDER`) and
  highlighting. memlane asks none: its text queries are single terms, each intersected with the user's filter
  (store/redis/redisvl_private.py `TermwiseTextQuery`), scored by BM25, which reads term frequencies, not
  positions. 92 B a memory (bench/store.py --index-parts).
- **created_at not sortable**: a sortable field keeps a copy of each document's value beside the document
  (49 B a memory); no query sorts by created_at (the recency ranking sorts its candidates in Python,
  store/fusion.py), and a returned value is read from the hash either way.
- **The vector index's algorithm** (`StoreSettings.vector_index`, FLAT by default): every search filters on one
  user and compares the query with that user's memories (exact), so FLAT's vectors alone serve it; HNSW's graph
  costs about 330 B a memory and makes each insert about 5 times as slow, and is walked only for a user with
  more than `search_exact_max_memories` memories.

An index made by an older memlane (offsets kept, created_at sortable) or with the other algorithm is made again
when a store opens (store/redis/memories.py `_ensure_index_on`): the hashes are kept, the new index reads them,
and the store opens once it has read them all (`wait_until_read`): until then a search would miss the memories
not read yet without saying so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from memlane.store.redis.core import as_text
from memlane.store.schema import MemoryField

logger = logging.getLogger(__name__)

# FT.CREATE's options of the memory index (redis-py's `create_index` keyword arguments)
INDEX_OPTIONS = {"no_term_offsets": True}


def _attributes(info: dict[str, Any]) -> dict[str, list[str]]:
    """Each indexed attribute's FT.INFO description, flattened to text, by attribute name."""
    described = {}
    for attribute in info.get("attributes", []):
        flat = [as_text(item) for item in attribute]
        if "attribute" in flat:
            described[flat[flat.index("attribute") + 1]] = flat
    return described


def reshaped(info: dict[str, Any], algorithm: str) -> list[str]:
    """What differs between the index FT.INFO describes and the one this memlane makes with the vector index
    `algorithm` ("hnsw" or "flat"); empty when nothing does."""
    differences = []
    options = {as_text(option).upper() for option in info.get("index_options", ["NOOFFSETS"])}  # unsaid: as made
    if "NOOFFSETS" not in options:
        differences.append("term offsets kept")
    attributes = _attributes(info)
    if "SORTABLE" in attributes.get(MemoryField.CREATED_AT, []):
        differences.append("created_at sortable")
    vector = attributes.get(MemoryField.EMBEDDING, [])
    if "algorithm" in vector and vector[vector.index("algorithm") + 1].lower() != algorithm:
        differences.append(f"a {vector[vector.index('algorithm') + 1]} vector index, not {algorithm}")
    return differences


REBUILD_WAIT_SECONDS = 600.0  # a rebuilt index's scan of the stored memories, waited for at most this long


async def wait_until_read(client: Any, name: str, run: Callable[[Awaitable[Any]], Awaitable[Any]]) -> None:
    """After a rebuild, until the index `name` has read every stored memory (RediSearch's scan of
    the hashes): a search meanwhile would miss the memories not read yet and say nothing, so the
    store opens once it has (at most `REBUILD_WAIT_SECONDS`, then with a warning). `run`: the
    store's call wrapper (Redis errors become store errors)."""
    loop = asyncio.get_running_loop()
    started = said = loop.time()
    while True:
        info = await run(client.ft(name).info())
        read = float(as_text(info.get("percent_indexed", "1")) or 1)
        now = loop.time()
        if read >= 1:
            if now - started >= 1:
                logger.warning("the index %s has read every memory again (%.0f s)", name, now - started)
            return
        if now - started >= REBUILD_WAIT_SECONDS:
            logger.warning("the index %s has read %.0f%% of the memories; opening anyway", name, 100 * read)
            return
        if now - said >= 5:
            said = now
            logger.warning("the index %s is reading the memories again: %.0f%%", name, 100 * read)
        await asyncio.sleep(0.1)
