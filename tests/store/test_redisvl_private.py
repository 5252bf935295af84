"""store/redis/redisvl_private.py leans on RedisVL's (and redis-py's) private query parts: each is
checked here on small inputs, so the RedisVL or redis-py upgrade that changes one fails here, by
name, rather than as a search that quietly finds less. When one fails, read what the upgrade did
to that part, fix redisvl_private.py, and raise the bound on redisvl in pyproject.toml."""

from __future__ import annotations

import redis.asyncio as redis
from redisvl.query import TextQuery, VectorQuery
from redisvl.query.filter import Tag

from memlane.store.redis.redisvl_private import (
    TermwiseTextQuery,
    parse_resp2_reply,
    reply_shape,
    rescales_distances,
    returned_fields,
    search_arguments,
)

SEARCH = redis.Redis().ft("idx")  # never connects: only its argument builders are used


def text_query(**options) -> TextQuery:
    return TextQuery(
        text="coffee tea",
        text_field_name="search_text",
        filter_expression=Tag("user") == "u1",
        return_fields=["kind", "created_at"],
        num_results=5,
        stopwords=None,
        **options,
    )


def vector_query(**options) -> VectorQuery:
    return VectorQuery(
        vector=[0.1, 0.2], vector_field_name="embedding", return_fields=["kind"], num_results=3, **options
    )


def test_the_search_arguments_are_the_ones_redisvls_batch_search_sends():
    text, vector = text_query(), vector_query()
    assert search_arguments(SEARCH, text) == [
        "idx",
        "@search_text:(coffee | tea) (@user:{u1})",
        "SCORER",
        "BM25STD",
        "WITHSCORES",
        "RETURN",
        2,
        "kind",
        "created_at",
        "DIALECT",
        2,
        "LIMIT",
        0,
        5,
    ]
    arguments = search_arguments(SEARCH, vector)
    assert arguments[:2] == ["idx", "*=>[KNN 3 @embedding $vector AS vector_distance]"]
    assert arguments[-4:-1] == ["PARAMS", 2, "vector"] and isinstance(arguments[-1], bytes)
    for query in (text, vector):  # RedisVL's batch_search builds them with redis-py's _mk_query_args
        built, _ = SEARCH._mk_query_args(query.query, query_params=query.params)
        assert search_arguments(SEARCH, query) == built


def test_the_reply_shape_matches_the_arguments_sent():
    for query in (text_query(), text_query(return_score=False), vector_query()):
        shape, arguments = reply_shape(query), search_arguments(SEARCH, query)[2:]
        assert shape.with_scores == ("WITHSCORES" in arguments)
        assert shape.with_payloads == ("WITHPAYLOADS" in arguments)
        assert shape.with_content == ("NOCONTENT" not in arguments)
        assert shape.stride == 1 + shape.with_scores + shape.with_payloads + shape.with_content
    assert reply_shape(text_query()).stride == 3 and reply_shape(vector_query()).stride == 2
    assert reply_shape(text_query()).field_encodings == {"kind": "utf8", "created_at": "utf8"}


def test_a_resp2_reply_is_parsed_as_redis_py_parses_it():
    query = text_query()
    reply = [2, b"memory:1", b"1.5", [b"kind", b"event", b"created_at", b"10"], b"memory:2", b"0.5", [b"kind", b"fact"]]
    result = parse_resp2_reply(reply, query)
    assert result.total == 2
    assert [(doc.id, doc.score, doc.kind) for doc in result.docs] == [
        ("memory:1", 1.5, "event"),
        ("memory:2", 0.5, "fact"),
    ]
    assert result.docs[0].created_at == "10"
    reference = SEARCH._parse_search(reply, query=query, duration=0.0)  # what FT.SEARCH through redis-py gives
    assert [vars(doc) for doc in result.docs] == [vars(doc) for doc in reference.docs]


def test_the_returned_fields_and_the_distance_rescaling_are_read():
    assert returned_fields(text_query()) == ("kind", "created_at")
    assert returned_fields(vector_query()) == ("kind", VectorQuery.DISTANCE_ID)
    assert rescales_distances(vector_query(normalize_vector_distance=True))
    assert not rescales_distances(vector_query()) and not rescales_distances(text_query())


def test_the_termwise_query_string_replaces_redisvls():
    query = TermwiseTextQuery(
        text="coffee tea", text_field_name="search_text", filter_expression=Tag("user") == "u1", stopwords=None
    )
    assert search_arguments(SEARCH, query)[1] == "(@user:{u1} @search_text:coffee) | (@user:{u1} @search_text:tea)"
    unfiltered = TermwiseTextQuery(text="coffee tea", text_field_name="search_text", stopwords=None)
    assert search_arguments(SEARCH, unfiltered)[1] == "(@search_text:coffee | @search_text:tea)"
    escaped = TermwiseTextQuery(text="3-15 o'clock", text_field_name="search_text", stopwords=None)
    assert search_arguments(SEARCH, escaped)[1] == r"(@search_text:3\-15 | @search_text:o\'clock)"
