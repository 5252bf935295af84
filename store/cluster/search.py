"""A user's search on a Redis Cluster in one round trip.

Redis Stack 7.4's search module returns nothing of a hash outside the slot of the index's name
(every user's but one slot's), not even a vector distance, so each found memory's fields, and
its vector where a distance is wanted, are read from its hash. Sent as a second pipeline, that
read cost a round trip a standalone Redis does not pay (issue 32: a shard's search p95 1.35x a
standalone node's). Here one script does both on the primary that holds the user: its one key is
a key of the user's slot (`owner_probe`), so the node answers MOVED or ASK for it as it would for
the search's `EXISTS` probe (`shard_indexes`), and `allow-cross-slot-keys` lets it name the index (another slot
of the same node) and the user's hashes. An index whose name's slot left the node fails with
"non local key", which `shard_indexes` treats as a moved index name.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from redis.commands.core import AsyncScript
from redisvl.index import AsyncSearchIndex
from redisvl.index.index import process_results
from redisvl.query import TextQuery, VectorQuery

from memlane.store.cluster.owner_probe import owner_probe
from memlane.store.models.embeddings import cosine_similarities
from memlane.store.redis.core import as_text
from memlane.store.redis.redisvl_private import parse_resp2_reply, reply_shape, search_arguments
from memlane.store.schema import MemoryField
from memlane.store.vectors import stored_vector

VECTOR_DISTANCE = VectorQuery.DISTANCE_ID

# ARGV: the number of queries; the fields read (n, then names); then per query: the reply's stride
# (id, score?, payload?, fields?), 1 when its hits' vectors are read too, its arguments (n, then them)
_SEARCH_THEN_READ = """#!lua flags=allow-cross-slot-keys
local at = 1
local function take()
  local value = ARGV[at]
  at = at + 1
  return value
end
local queries = tonumber(take())
local fields = {}
for i = 1, tonumber(take()) do fields[i] = take() end
local with_vector = {unpack(fields)}
with_vector[#with_vector + 1] = take()
local out = {}
for _ = 1, queries do
  local stride = tonumber(take())
  local read = (take() == '1') and with_vector or fields
  local args = {}
  for i = 1, tonumber(take()) do args[i] = take() end
  local reply = redis.call('FT.SEARCH', unpack(args))
  local rows = {}
  for i = 2, #reply, stride do rows[#rows + 1] = redis.call('HMGET', reply[i], unpack(read)) end
  out[#out + 1] = reply
  out[#out + 1] = rows
end
return out
"""

# each client's registered scripts, by their source (registered once per client, gone with it)
_scripts: weakref.WeakKeyDictionary[Any, dict[str, AsyncScript]] = weakref.WeakKeyDictionary()


def client_script(client: Any, source: str) -> AsyncScript:
    """The Lua `source` registered on `client` (once: its SHA is then sent, the source only after NOSCRIPT)."""
    registered = _scripts.setdefault(client, {})
    script = registered.get(source)
    if script is None:
        script = registered[source] = client.register_script(source)
    return script


async def search_then_read(
    index: AsyncSearchIndex,
    queries: Sequence[TextQuery | VectorQuery],
    fields: Sequence[str],
    vector: Sequence[float] | None,
) -> list[list[dict[str, Any]]]:
    """The answers of `queries` on `index` (a cluster primary's), each hit with `fields` read from its
    hash and, for a vector query, its distance to `vector` computed from the stored one; a memory
    deleted between the search and the read is left out. The script's key is the search's probe (a
    key of the user's slot, `owner_probe`); none when the search answers from a migrating slot's node."""
    client = index.client
    search = client.ft(index.name)
    argv: list[Any] = [len(queries), len(fields), *fields, MemoryField.EMBEDDING]
    for query in queries:
        arguments = search_arguments(search, query)
        argv += [reply_shape(query).stride, int(isinstance(query, VectorQuery) and vector is not None)]
        argv += [len(arguments), *arguments]
    probe = owner_probe()
    reply = await client_script(client, _SEARCH_THEN_READ)(
        keys=[probe] if probe is not None else [], args=argv, client=client
    )
    answers = []
    for query, raw, rows in zip(queries, reply[0::2], reply[1::2]):
        # a script's FT.SEARCH answers in RESP2 whatever the connection speaks: redis-py's RESP2 parser
        docs = process_results(parse_resp2_reply(raw, query), query=query, schema=index.schema)
        answers.append(_filled(docs, rows, fields, vector if isinstance(query, VectorQuery) else None))
    return answers


def _filled(
    docs: list[dict[str, Any]], rows: Sequence[Sequence[Any]], fields: Sequence[str], vector: Sequence[float] | None
) -> list[dict[str, Any]]:
    """`docs` with their hashes' `fields` (and, with `vector`, the distance to it), those gone left out."""
    measured = [vector is not None and len(row) > len(fields) and bool(row[-1]) for row in rows]
    dims = len(vector) if vector is not None else 0
    stored = [stored_vector(row[-1], dims) for row, wanted in zip(rows, measured) if wanted]
    similarities = iter(cosine_similarities(np.asarray(vector, dtype=np.float32), np.stack(stored)) if stored else [])
    for doc, row, wanted in zip(docs, rows, measured):
        doc.update({name: as_text(value) for name, value in zip(fields, row) if value is not None})
        if wanted:
            doc[VECTOR_DISTANCE] = str(1.0 - float(next(similarities)))
    return [doc for doc in docs if MemoryField.ID in doc]
