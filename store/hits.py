"""What a search returns: each hit with how it scored (`MemoryHit`), and the hits together with
what the search could not read (`MemoryHits`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from memlane.store.records import Memory

WEAK_RELEVANCE = 0.1  # below it, fewer than one hit in ten holds what was asked (bench/relevance_calibration.py)


class MemoryHit(BaseModel):
    """A search result: the memory and how it scored.

    The fusion (`rank_score`: reciprocal-rank fusion of the vector and the text ranking, plus
    the time-scoped and speaker rankings) picks the candidates; hits come sorted by `score`
    (store/fusion.py `calibrated_relevance`, which weighs those votes too). Every door shows
    `relevance`: the measured chance that the hit holds what the query asks, of the query and the
    memory alone (store/relevance.py), the same whatever else was found or which kinds were asked for.
    """

    memory: Memory
    score: float = Field(
        description="the order's value 0..1 (`calibrated_relevance`): it also weighs the votes the rankings "
        "gave, which depend on what else was found, so it is not shown; recall orders and cuts by it"
    )
    relevance: float = Field(
        default=-1.0,
        description="the relevance every door shows, 0..1: the chance, as measured, that it holds what was "
        "asked, of the query and the memory alone (store/relevance.py); a hit made by hand without one gets `score`",
    )
    match: float = Field(
        default=0.0,
        description="rescaled similarity fused with the BM25 score normalized to the best text hit (forget's gate)",
    )
    rank_score: float = Field(default=0.0, description="reciprocal-rank fusion score: the order of the hits")
    vector_similarity: float = Field(description="cosine similarity, 0..1")
    text_score: float = Field(description="BM25 score normalized to the best text hit, 0..1")
    time_match: bool = Field(default=False, description='inside a time the query names ("yesterday", "5月2日")')
    coverage: float = Field(default=0.0, description="share of the query's terms the memory's text holds, 0..1")
    rank_share: float = Field(
        default=0.0,
        description="rank_score over the most the voting rankings could give one memory (first in each), 0..1",
    )

    def model_post_init(self, context: object) -> None:
        if self.relevance < 0:  # a hit made by hand (a test, a stand-in store): its score is all it has
            self.relevance = self.score

    @property
    def weak(self) -> bool:
        """Shown as weak: fewer than one hit in ten at this relevance holds what was asked."""
        return self.relevance < WEAK_RELEVANCE


class MemoryHits(list[MemoryHit]):
    """A search's hits, best first, as a list; `incomplete` says what part of the user's memories
    the search could not read (empty: none). On a cluster a search waits for a primary's new index
    and for the user's slot to finish moving; when the wait ends first, the answer is partial and
    says so here (recall shows it as a degraded search)."""

    def __init__(self, hits: Iterable[MemoryHit] = (), incomplete: Sequence[str] = ()) -> None:
        super().__init__(hits)
        self.incomplete: list[str] = list(incomplete)
