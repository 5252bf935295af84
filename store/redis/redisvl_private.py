"""Every use memlane makes of RedisVL's private query parts (and of redis-py's, whose `Query`
RedisVL's queries extend), in one place.

Why private parts at all: three paths go around RedisVL's public `query` / `batch_query`, and
RedisVL has no public hook for what they need.

- `store/redis/search_replies.py` sends a user's FT.SEARCH queries in one pipeline and reads the
  RESP3 replies itself (issue 34, item 15: redis-py's generic reader was the largest share of
  `memlane serve`'s CPU per search). It must know which fields a query returns and whether
  RedisVL rescales its distances.
- `store/cluster/search.py` runs FT.SEARCH inside a Lua script, so that a cluster's search and the
  read of the hits' hashes are one round trip (issue 32), and parses the script's RESP2 replies.
  It must know a reply's layout (scores, payloads, fields per hit), which a `Query` keeps in
  private attributes with no getters.
- `TermwiseTextQuery` asks BM25 as one intersection with the filter per term, because RediSearch
  2.10 scores a union under an intersection wrongly; RedisVL's `TextQuery` builds its query
  string in the private `_build_query_string`, the only place to say it differently.

The FT.SEARCH arguments themselves are built with public calls (`Query.get_args`,
`get_params_args`), as RedisVL's `batch_search` builds them through redis-py's private
`_mk_query_args`. pyproject.toml bounds redisvl below its next minor version, and
tests/store/test_redisvl_private.py checks each part here on small inputs, so an upgrade that
changes one fails there, by name, instead of as a search that quietly finds less.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.commands.search.result import Result
from redisvl.query import BaseQuery, BaseVectorQuery, TextQuery


def search_arguments(search: Any, query: BaseQuery) -> list[Any]:
    """The arguments of FT.SEARCH for `query` on `search` (a client's `ft(index_name)`), as RedisVL's
    `batch_search` sends them: the index, the query's own arguments, then its parameters."""
    return [search.index_name, *query.query.get_args(), *search.get_params_args(query.params)]


@dataclass(frozen=True)
class ReplyShape:
    """What each hit of a RESP2 FT.SEARCH reply holds after its key: a score, a payload, its fields."""

    with_scores: bool
    with_payloads: bool
    with_content: bool
    field_encodings: dict[str, str | None]

    @property
    def stride(self) -> int:
        """How many reply items one hit takes."""
        return 1 + self.with_scores + self.with_payloads + self.with_content


def reply_shape(query: BaseQuery) -> ReplyShape:
    """The layout of `query`'s RESP2 replies (redis-py keeps it in `Query`'s private flags)."""
    return ReplyShape(
        with_scores=bool(query._with_scores),
        with_payloads=bool(query._with_payloads),
        with_content=not query._no_content,
        field_encodings=dict(query._return_fields_decode_as),
    )


def parse_resp2_reply(reply: list[Any], query: BaseQuery) -> Result:
    """A RESP2 FT.SEARCH reply to `query` as redis-py's `Result`, as `FT.SEARCH` through redis-py
    parses it (its private `_parse_search`); RedisVL's `process_results` makes documents of it."""
    shape = reply_shape(query)
    return Result(
        reply,
        shape.with_content,
        duration=0.0,
        has_payload=shape.with_payloads,
        with_scores=shape.with_scores,
        field_encodings=shape.field_encodings,
    )


def returned_fields(query: BaseQuery) -> tuple[str, ...]:
    """The fields `query` asks FT.SEARCH to return (`RETURN`), in its order."""
    return tuple(query._return_fields)


def rescales_distances(query: BaseQuery) -> bool:
    """Whether RedisVL turns `query`'s vector distances into 0..1 similarities when it reads a reply
    (a reply read by hand would not)."""
    return isinstance(query, BaseVectorQuery) and bool(query._normalize_vector_distance)


class TermwiseTextQuery(TextQuery):  # type: ignore[misc]  # redisvl ships no type information
    """BM25 over any of the terms, asked as one intersection with the filter per term, OR-ed:
    `(filter @f:a) | (filter @f:b)`, not RedisVL's `@f:(a | b) filter`.

    RediSearch 2.10 scores a union under an intersection wrongly for some documents: driven by
    the filter's (smaller) tag iterator, the union skips to each document, and now and then
    only one of its children counts the document. On a primary that has just taken slots, a
    freshly written memory holding every query term scored 2.2 (one term counted) where it
    scores 11.3 alone, and fell below the 40 candidates of a search for its own text (one
    search in about 4,000 during a rebalance, bench/cluster_rebalance_misses.py). Each
    per-term intersection reads its term and the filter side by side and counts the term for
    every document that holds it. Every matched term also adds the filter's own score, so a
    memory that holds more of the terms ranks higher (a coordination factor); recall quality
    with it is in docs/benchmarks.md."""

    def _build_query_string(self) -> str:
        terms = [term.strip() for term in self._tokenize_and_escape_query(self._text).split(" | ") if term.strip()]
        [field] = self.field_weights
        narrowing = str(self.filter) if self.filter is not None else ""
        if narrowing in ("", "*"):
            return "(" + " | ".join(f"@{field}:{term}" for term in terms) + ")"
        return " | ".join(f"({narrowing} @{field}:{term})" for term in terms)
