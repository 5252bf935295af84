"""`MemlaneStore`'s search and namespace listing as index queries (store/item_fields.py): the items
under the namespace prefix, the filter's string equalities as index filters, a query as an exact KNN
under that filter. What comes back is checked against LangGraph's own rules (`matches`, `under`), so
a filter the index cannot express (`$ne`, `$gt`, numbers, lists) still holds exactly: the index only
narrows, and a page asks for more while too few pass. The cost of a search follows the items under
its prefix; other namespaces' items are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langgraph.store.base import MatchCondition

from memlane.langgraph_rules import Distance, Namespace, matches, rank_page, under, vector_rows
from memlane.store.item_fields import VectorKind, filter_tags
from memlane.store.protocols import ItemStore
from memlane.store.records import StoreItem

# the first page asks the index for at least this many items, and four times more each time too few pass
_FIRST_ASK = 16
_GROWTH = 4
# a search that ranks every item under its prefix (an index config's own vectors) reads this many at first
_FIRST_WHOLE_ASK = 1000

Found = list[tuple[StoreItem, bytes | None]]


def _newest_first(found: Found) -> Found:
    """Newest first, as the SQL stores list them (ties by namespace and key)."""
    return sorted(found, key=lambda hit: (-hit[0].updated_at, hit[0].namespace, hit[0].key))


class ItemQuery:
    """One search of items under `prefix` passing `filter` (LangGraph's), of `owner` (None: any)."""

    def __init__(self, index: ItemStore, owner: str | None, prefix: Namespace, filter: dict[str, Any] | None) -> None:
        self.index, self.owner, self.prefix, self.filter = index, owner, prefix, filter
        self.match = filter_tags(filter)

    def passes(self, item: StoreItem) -> bool:
        return under(tuple(item.namespace), self.prefix) and matches(item.value, self.filter)

    async def newest(
        self, want: int, *, vectors: VectorKind | None = None, keep: Callable[[bytes | None], bool] | None = None
    ) -> Found:
        """The `want` newest passing items (every one when fewer pass), newest first. Each ask takes the
        newest `ask` of the merged answers (on a cluster, `ask` from each primary): exactly the newest
        `ask` of all, so what passes among them is the start of the answer."""
        ask = max(want, _FIRST_ASK)
        while True:
            found = await self.index.newest_items(self.owner, self.prefix, match=self.match, limit=ask, vectors=vectors)
            top = _newest_first(found)[:ask]
            kept = [(item, raw) for item, raw in top if self.passes(item) and (keep is None or keep(raw))]
            if len(kept) >= want or len(found) < ask:
                return kept[:want]
            ask *= _GROWTH

    async def every(self, *, vectors: VectorKind) -> Found:
        """Every passing item, newest first (a ranking of its own reads them all)."""
        ask = _FIRST_WHOLE_ASK
        while True:
            found = await self.index.newest_items(self.owner, self.prefix, match=self.match, limit=ask, vectors=vectors)
            if len(found) < ask:
                return [(item, raw) for item, raw in _newest_first(found) if self.passes(item)]
            ask *= _GROWTH

    async def nearest(self, query: np.ndarray, want: int) -> list[tuple[StoreItem, float | None]]:
        """The `want` passing items nearest `query` by memlane's embedding (cosine), then, when fewer
        have one, those without, newest first: LangGraph's order (`rank_page`)."""
        ask = max(want, _FIRST_ASK)
        while True:
            found = await self.index.nearest_items(self.owner, self.prefix, query.tolist(), match=self.match, limit=ask)
            ranked = rank_page(
                [(item, vector_rows(raw, 0)) for item, raw in _newest_first(found)], query, "cosine", 0, ask
            )
            kept = [(item, score) for item, score in ranked if self.passes(item)]
            if len(kept) >= want:
                return kept[:want]
            if len(found) < ask:  # every passing item with an embedding is in `kept`
                break
            ask *= _GROWTH
        unscored = await self.newest(want - len(kept), vectors="memlane", keep=lambda raw: raw is None)
        return kept + [(item, None) for item, _ in unscored]


async def search_page(
    index: ItemStore,
    owner: str | None,
    prefix: Namespace,
    filter: dict[str, Any] | None,
    *,
    query: np.ndarray | None,
    own: bool,
    distance: Distance,
    dims: int,
    offset: int,
    limit: int,
) -> list[tuple[StoreItem, float | None]]:
    """A page of `MemlaneStore.search`: newest first without a query; with one, by similarity (own:
    the index config's vectors, ranked here over the items under the prefix; else memlane's
    embedding, an exact KNN in Redis)."""
    search = ItemQuery(index, owner, prefix, filter)
    if query is None:
        return [(item, None) for item, _ in (await search.newest(offset + limit))[offset:]]
    if not own:
        return (await search.nearest(query, offset + limit))[offset:]
    candidates = [(item, vector_rows(raw, dims)) for item, raw in await search.every(vectors="own")]
    return rank_page(candidates, query, distance, offset, limit)


def listing_prefix(conditions: Sequence[MatchCondition]) -> Namespace:
    """The longest namespace prefix without a wildcard that every listed namespace starts with."""
    best: Namespace = ()
    for condition in conditions:
        if condition.match_type != "prefix":
            continue
        labels = tuple(condition.path)
        literal = labels[: labels.index("*")] if "*" in labels else labels
        if len(literal) > len(best):
            best = literal
    return best
