"""A search's candidates: found with few fields, the returned ones filled in from their hashes.

Each ranking of a search (store/redis/search.py) finds its candidates with `CANDIDATE_FIELDS`
only, what the fusion reads; once the fusion has picked the hits to return, `fill_in_returned`
reads the rest of their fields, and a text-only hit's vector, from their hashes in one round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memlane.store.models.embeddings import cosine_similarities
from memlane.store.redis.core import StoreCore, as_text
from memlane.store.redis.memory_docs import RETURN_FIELDS
from memlane.store.schema import MemoryField
from memlane.store.vectors import stored_vector

# what a ranking's candidate is found with (Redis' own key, "id", and the vector ranking's distance
# come with each): what the fusion reads (the recency ranking's kind and time, the importance
# ranking's importance). A hundred candidates' every field cost more to parse than reading the few
# that are returned from their hashes (`fill_in_returned`, one round trip, which also reads a
# text-only hit's vector): in `memlane serve` at 10 clients, parsing every field of the vector
# candidates too was the largest share of its own CPU per search (issue 34, item 15). On a cluster
# the script reads each candidate's fields from its hash anyway (store/cluster/search.py).
CANDIDATE_FIELDS = [MemoryField.KIND, MemoryField.CREATED_AT, MemoryField.IMPORTANCE]


async def fill_in_returned(
    core: StoreCore,
    user_id: str,
    docs: list[dict[str, Any]],
    similarity: dict[str, float],
    query_vector: Sequence[float] | None,
    vectors: dict[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """Fill the returned memories in from their hashes: the fields the candidates were found
    without (`CANDIDATE_FIELDS`: the fusion needs none of the rest, and parsing every field of a
    hundred candidates cost more than reading ten hashes), and, for a text-only hit, its stored
    vector. One round trip (on a cluster, to the primary that holds the user, through its plain
    client); nothing at all when nothing is missing. Returns the similarities read. vectors: filled
    with every returned memory's stored vector (read for all of them), what the relevance every
    door shows is computed from (store/relevance.py)."""
    vectors_wanted = query_vector is not None
    reads = []  # (doc, fields to read)
    for doc in docs:
        wanted = [] if MemoryField.ID in doc else list(RETURN_FIELDS)
        if vectors_wanted and (vectors is not None or doc["id"] not in similarity):
            wanted.append(MemoryField.EMBEDDING)
        if wanted:
            reads.append((doc, wanted))
    if not reads:
        return {}

    async def read(client: Any) -> list[Any]:
        pipe = client.pipeline(transaction=False)
        for doc, wanted in reads:
            pipe.hmget(doc["id"], wanted)
        replies: list[Any] = await pipe.execute()
        return replies

    if core.shards is None:
        rows = await core.run(read(core.client))
    else:
        rows = await core.on_user_index(user_id, lambda index: read(index.client), reads_index=False)
    found: list[tuple[str, Any]] = []
    for (doc, wanted), row in zip(reads, rows):
        values = dict(zip(wanted, row))
        blob = values.pop(MemoryField.EMBEDDING, None)
        if MemoryField.ID in values and values[MemoryField.ID] is None:
            continue  # the memory was deleted since it was found: left out (no MemoryField.ID)
        doc.update({name: as_text(value) for name, value in values.items() if value is not None})
        if blob:
            vector = stored_vector(blob, core.dims)
            if vectors is not None:
                vectors[doc["id"]] = vector
            if doc["id"] not in similarity:
                found.append((doc["id"], vector))
    if not found:
        return {}
    similarities = cosine_similarities(
        np.asarray(query_vector, dtype=np.float32), np.stack([vector for _, vector in found])
    )
    return {doc_id: max(0.0, float(similarity)) for (doc_id, _), similarity in zip(found, similarities)}
