"""The stored vectors of memories named by id (recall compares statements by them), and the
relevance every door shows (store/relevance.py) of memories named by id, as search gives it to its
hits, whether or not a search would find them: recall's items, `MemlaneStore(relevance=True)` and
the memories API ask it of what they show (`Search.relevances`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memlane.store.errors import EmbeddingsUnavailable
from memlane.store.redis.memory_docs import memory_from_doc
from memlane.store.redis.search_candidates import fill_in_returned
from memlane.store.relevance import pair_similarities, read_query, relevance_of
from memlane.store.schema import MemoryField
from memlane.store.text.terms import MAX_QUERY_CHARS
from memlane.store.vectors import stored_vector

if TYPE_CHECKING:
    from memlane.store.records import Memory
    from memlane.store.redis.core import StoreCore
    from memlane.store.redis.search import Search


async def stored_vectors(core: StoreCore, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
    """The stored vectors of `memories` (each under its own user), by memory id; a memory with
    none stored (gone, or not embedded yet) is left out. Recall compares the user's statements
    with each other by them (memlane/recall_changes.py)."""
    if not memories:
        return {}
    pipe = core.client.pipeline(transaction=False)
    for memory in memories:
        pipe.hget(core.layout.memory(memory.user_id, memory.id), MemoryField.EMBEDDING)
    found = await core.run(pipe.execute())
    return {
        memory.id: stored_vector(vector, core.dims)
        for memory, vector in zip(memories, found)
        if isinstance(vector, bytes) and vector
    }


async def relevances_of(
    search: Search,
    user_id: str,
    query: str,
    memory_ids: Sequence[str],
    *,
    reference_time: float | None = None,
    texts: Mapping[str, tuple[str, float]] | None = None,
) -> dict[str, float]:
    """`Search.relevances`: each memory's relevance for `query`, and each of `texts`'."""

    wanted = list(dict.fromkeys(memory_ids))
    texts = dict(texts or {})
    if not (wanted or texts) or not query.strip():
        return {}
    query = query[:MAX_QUERY_CHARS]
    reading = read_query(query, reference_time=reference_time, zone=search.core.zone)
    try:
        query_vector: list[float] | None = await search.embedded("query", query)
        text_vectors = [await search.embedded("passage", text, user_id) for text, _ in texts.values()]
    except EmbeddingsUnavailable:  # as search does: the keyword-only relevance
        query_vector, text_vectors = None, []
    docs = [{"id": search.layout.memory(user_id, memory_id)} for memory_id in wanted]
    vectors: dict[str, np.ndarray] = {}
    if docs:
        await fill_in_returned(search.core, user_id, docs, {}, query_vector, vectors)
    # (name, text, created_at, stored vector) of each memory found and each text
    pairs: list[tuple[str, str, float, np.ndarray | None]] = []
    for doc in docs:
        if MemoryField.ID in doc:
            memory = memory_from_doc(doc)
            pairs.append((memory.id, memory.text, memory.created_at, vectors.get(doc["id"])))
    embedded: list[list[float] | None] = [*text_vectors] if text_vectors else [None] * len(texts)
    for (name, (text, created_at)), vector in zip(texts.items(), embedded):
        stored = np.asarray(vector, dtype=np.float32) if vector is not None else None
        pairs.append((name, text, created_at, stored))
    similarities = (
        pair_similarities(query_vector, [vector for *_, vector in pairs])
        if query_vector is not None
        else [None] * len(pairs)
    )
    return {
        name: relevance_of(reading, text, created_at, search.rescaled(similarity) if similarity is not None else None)
        for (name, text, created_at, _), similarity in zip(pairs, similarities)
    }
