"""A user's FT.SEARCH queries on a standalone Redis, in one pipeline, their replies read by hand.

RedisVL's `batch_query` hands each reply to redis-py's generic reader, which makes a `Result` of
`Document`s and decodes every key and value of every hit through a few Python calls each, then
RedisVL turns the documents back into dicts. For a search's 40 candidates per ranking that was the
largest share of `memlane serve`'s own CPU per search (issue 34, item 15: profiled at 10 clients,
more than the fusion, the HTTP stack and the query's parse together). A RESP3 reply is already a
map per hit (`id`, `score`, `extra_attributes`), so its dicts are made in one pass here: the same
dicts `batch_query` returns (`id`, the score where asked, each returned field as text). A reply in
RESP2 (a client made with `protocol=2`) goes through RedisVL's own reading, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redisvl.index import AsyncSearchIndex
from redisvl.query import TextQuery, VectorQuery
from redisvl.utils.redis_protocol import get_protocol_version

from memlane.store.redis.redisvl_private import rescales_distances, returned_fields, search_arguments

try:
    from redis.utils import DEFAULT_RESP_VERSION  # what a client given no protocol speaks (3 in redis-py 8)
except ImportError:  # an older redis-py: RESP2 unless asked
    DEFAULT_RESP_VERSION = 2

_RESULTS, _ID, _SCORE, _FIELDS = b"results", b"id", b"score", b"extra_attributes"


def _text(value: Any) -> Any:
    """A reply's bytes as text as redis-py decodes a field: kept as bytes when not UTF-8, a
    score left a number (`store.core.as_text` would replace bad bytes and make every value a
    string, and the documents would no longer be RedisVL's own)."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    return value


def docs_of(reply: dict[Any, Any], query: TextQuery | VectorQuery) -> list[dict[str, Any]]:
    """RedisVL's documents of one RESP3 FT.SEARCH reply: for each hit its key as `id`, its score
    when the query asked for one, and the fields it returned, as text. A vector query's hit that
    came back without its distance (a memory expired while the search ran) is left out, as
    RedisVL leaves it out."""
    docs = []
    wants_distance = isinstance(query, VectorQuery) and VectorQuery.DISTANCE_ID in returned_fields(query)
    decoded = "results" in reply  # a client that decodes its replies (decode_responses=True)
    results, key, score, attributes = (
        ("results", "id", "score", "extra_attributes") if decoded else (_RESULTS, _ID, _SCORE, _FIELDS)
    )
    for row in reply.get(results, ()):
        doc: dict[str, Any] = {"id": _text(row[key])}
        if score in row:
            doc["score"] = row[score]
        fields = row.get(attributes)
        if fields:
            for name, value in fields.items():
                doc[_text(name)] = _text(value)
        if wants_distance and VectorQuery.DISTANCE_ID not in doc:
            continue
        docs.append(doc)
    return docs


def speaks_resp3(client: Any) -> bool:
    """Whether `client`'s connections speak RESP3: the protocol it was given, or, given none (the
    store's pool names none), redis-py's default. Only a protocol given shows in the client's
    settings, so reading those alone took every default client for RESP2."""
    version = get_protocol_version(client)
    return str(DEFAULT_RESP_VERSION if version is None else version) == "3"


async def search_in_one_trip(
    index: AsyncSearchIndex, queries: Sequence[TextQuery | VectorQuery]
) -> list[list[dict[str, Any]]]:
    """The documents of `queries` on `index`, sent in one pipeline (as `batch_query` sends them)."""
    client = index.client
    if not speaks_resp3(client) or any(rescales_distances(query) for query in queries):
        # RESP2 replies, or distances RedisVL rescales: its own reading
        documents: list[list[dict[str, Any]]] = await index.batch_query(list(queries))
        return documents
    search = client.ft(index.name)
    pipe = client.pipeline(transaction=False)
    for query in queries:
        pipe.execute_command("FT.SEARCH", *search_arguments(search, query))
    replies = await pipe.execute()
    return [docs_of(reply, query) for reply, query in zip(replies, queries)]
