"""The fusion, pure (store/redis/search.py `fuse`, `SIGNALS`, `calibrated_relevance`): no Redis."""

from __future__ import annotations

import pytest

from memlane.config import SearchSettings
from memlane.store.redis.search import QUERIES, SIGNALS, Ranking, calibrated_relevance, fuse


def doc(memory_id: str, **fields: object) -> dict:
    return {"id": memory_id, **fields}


def test_each_ranking_votes_its_weight_over_k_plus_rank_and_ties_keep_their_order():
    vector = Ranking("vector", 1.0, [doc("a", vector_distance="0.2"), doc("b", vector_distance="0.3")])
    text = Ranking("text", 1.0, [doc("b", score="4.0"), doc("c", score="2.0")])
    fused = fuse([vector, text], k=20)
    assert fused.ranked == ["b", "a", "c"]
    assert fused.rank_score["b"] == pytest.approx(1 / 22 + 1 / 21)
    assert fused.similarity == {"a": pytest.approx(0.8), "b": pytest.approx(0.7)}
    assert fused.text_raw == {"b": 4.0, "c": 2.0}
    assert fused.most == pytest.approx(2 / 21)  # first in both rankings
    found_nothing = fuse([vector, Ranking("text", 1.0, [])], k=20)
    assert found_nothing.most == pytest.approx(2 / 21)  # a ranking that found nothing still counts
    tied = fuse([Ranking("vector", 1.0, [doc("x")]), Ranking("text", 1.0, [doc("y")])], k=20)
    assert tied.ranked == ["x", "y"]


def test_a_ranking_without_weight_votes_for_nothing_but_tells_its_scores():
    fused = fuse(
        [Ranking("text", 1.0, [doc("a", score="1.0")]), Ranking("vector", 0.0, [doc("b", vector_distance="0.1")])], k=20
    )
    assert (
        fused.ranked == ["a"] and fused.similarity == {"b": pytest.approx(0.9)} and fused.most == pytest.approx(1 / 21)
    )  # weight 0: not counted


def test_recency_factors_scale_each_vote():
    fused = fuse([Ranking("recency", 2.0, [doc("new"), doc("old")], factors=[1.0, 0.25])], k=20)
    assert fused.rank_score["old"] == pytest.approx(2.0 * 0.25 / 22) and "old" not in fused.text_raw


def test_every_signal_names_a_weight_setting_and_every_query_a_signal():
    for name, (setting, what) in SIGNALS.items():
        assert setting in SearchSettings.model_fields and what, name
    made_from_the_others = {"recency", "importance", "relations"}  # relations: recall's walk
    assert {query.signal for query in QUERIES} | made_from_the_others == set(SIGNALS)
    kinds = [query.ranks for query in QUERIES]
    assert kinds == sorted(kinds, key=lambda ranks: ranks != "vector")  # the vector rankings meet first in the fusion


def test_the_shown_relevance_is_absolute_and_grows_with_each_feature():
    # far, no words in common, first of the vector ranking but nothing found by words: a new
    # user's one memory for an everyday request stays under recall's floor (0.02)
    assert calibrated_relevance(0.0, 0.0, 0.5, False) < 0.02
    weak = calibrated_relevance(0.05, 0.0, 1.0, False)  # first everywhere, but far and no words in common
    assert weak < 0.1
    assert calibrated_relevance(0.8, 1.0, 1.0, False) > 0.5
    for better in ((0.6, 0.0, 1.0, False), (0.2, 1.0, 1.0, False), (0.2, 0.0, 1.0, True)):
        assert calibrated_relevance(*better) > weak
    assert 0.0 < calibrated_relevance(None, 1.0, 1.0, False) < 1.0  # keyword only: its own model


def test_the_distance_field_is_redisvls():
    from redisvl.query import VectorQuery

    from memlane.store.fusion import VECTOR_DISTANCE

    assert VECTOR_DISTANCE == VectorQuery.DISTANCE_ID
