"""A user's search while the user's hash slot migrates: both halves searched, the answers merged.

The source primary's index holds the user's memories not moved yet, the importing primary's those
moved already (moving_slot.py). They are read in the order that can miss nothing: the source
first (search, then read the found hashes), then the importing node. A memory MIGRATE takes
between the two reads is on the importing node by then and found there; one found on both is
kept once. A hash read on the source that moved meanwhile answers ASK and is left to the other.

The one-trip script (search.py) cannot serve here: Redis refuses a script's access to a key of a
migrating or importing slot once the script touched another slot (the index name's): "Script
attempted to access a non local key" (Redis Stack 7.4, tried on the test cluster). So each node
answers in two round trips: a script of the FT.SEARCH calls only (their replies in RESP2, as
search.py parses them), then a pipeline of HMGET (after ASKING each, on the importing node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redisvl.index import AsyncSearchIndex
from redisvl.index.index import process_results
from redisvl.query import TextQuery, VectorQuery

from memlane.store.cluster.moving_slot import AskingClient
from memlane.store.cluster.search import VECTOR_DISTANCE, _filled, client_script
from memlane.store.redis.redisvl_private import parse_resp2_reply, search_arguments
from memlane.store.schema import MemoryField

# ARGV: the number of queries, then per query its FT.SEARCH arguments (n, then them)
_SEARCH_ONLY = """#!lua flags=allow-cross-slot-keys
local at = 1
local out = {}
for _ = 1, tonumber(ARGV[1]) do
  local count = tonumber(ARGV[at + 1])
  out[#out + 1] = redis.call('FT.SEARCH', unpack(ARGV, at + 2, at + 1 + count))
  at = at + 1 + count
end
return out
"""


async def _search_one_node(
    index: AsyncSearchIndex,
    client: aioredis.Redis,
    queries: Sequence[TextQuery | VectorQuery],
    fields: Sequence[str],
    vector: Sequence[float] | None,
) -> list[list[dict[str, Any]]]:
    """`queries` on the node's `index`, their hits' `fields` read through `client` (the source's own
    client, or an `AskingClient` of the importing node); hits whose hash answered nothing left out."""
    search = index.client.ft(index.name)
    argv: list[Any] = [len(queries)]
    for query in queries:
        arguments = search_arguments(search, query)
        argv += [len(arguments), *arguments]
    replies = await client_script(index.client, _SEARCH_ONLY)(keys=[], args=argv, client=index.client)
    answers = []
    for query, raw in zip(queries, replies):
        docs = process_results(parse_resp2_reply(raw, query), query=query, schema=index.schema)
        wanted = isinstance(query, VectorQuery) and vector is not None
        read = [*fields, MemoryField.EMBEDDING] if wanted else list(fields)
        pipe = client.pipeline(transaction=False)
        for doc in docs:
            pipe.hmget(doc["id"], read)
        rows = await pipe.execute(raise_on_error=False) if docs else []
        kept = [(doc, row) for doc, row in zip(docs, rows) if isinstance(row, list)]  # ASK: moved, read there
        answers.append(_filled([doc for doc, _ in kept], [row for _, row in kept], fields, vector if wanted else None))
    return answers


async def search_both_halves(
    source: AsyncSearchIndex,
    importing: AsyncSearchIndex | None,
    queries: Sequence[TextQuery | VectorQuery],
    fields: Sequence[str],
    vector: Sequence[float] | None,
) -> list[list[dict[str, Any]]]:
    """The answers of `queries` over a user whose slot moves from `source`'s node to `importing`'s,
    as `search_then_read` gives them for a user on one node: the source read first, then the
    importing node, each query's hits merged (`merged_hits`). Without `importing`, the source's
    half alone (what a search that waited out its deadline answers, noted as incomplete)."""
    first = await _search_one_node(source, source.client, queries, fields, vector)
    if importing is None:
        return first
    second = await _search_one_node(importing, AskingClient(importing.client), queries, fields, vector)
    return [merged_hits(query, one, other) for query, one, other in zip(queries, first, second)]


def merged_hits(
    query: TextQuery | VectorQuery, first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One query's hits from two nodes as one answer: each memory once (the first node's copy), the
    nearest first for a vector query, the highest score first for a text one, as many as it asked."""
    seen: set[str] = set()
    hits = []
    for doc in [*first, *second]:
        if doc["id"] not in seen:
            seen.add(doc["id"])
            hits.append(doc)
    if isinstance(query, VectorQuery):
        hits.sort(key=lambda doc: float(doc.get(VECTOR_DISTANCE, "inf")))
    else:
        hits.sort(key=lambda doc: -float(doc.get("score", 0.0) or 0.0))
    limit: int = query._num_results
    return hits[:limit]
