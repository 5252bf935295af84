"""The queries search sends, on one user's memories: the filter (kind, session, time, speaker, not
expired), the vector (KNN) query and the BM25 one, and the memory count that picks between an
exact vector search and a walk of the HNSW graph (only where the index has one: `vector_index`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from redisvl.query import CountQuery, TextQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Num, Tag

from memlane.store.cluster.indexes import SearchNotes
from memlane.store.records import MemoryKind, SpeakerRole
from memlane.store.redis.core import StorePart
from memlane.store.redis.memory_docs import RETURN_FIELDS
from memlane.store.redis.redisvl_private import TermwiseTextQuery
from memlane.store.schema import MemoryField, speaker_key
from memlane.store.text.time_words import TimeScope

_COUNT_TTL_SECONDS = 60.0


@dataclass(eq=False, repr=False)
class SearchQueries(StorePart):
    """The queries of `Search` (store/redis/search.py), and the users' cached memory counts."""

    _counts: dict[str, tuple[int, float]] = field(
        default_factory=dict, init=False
    )  # user → (memory count, when counted)

    def user_filter(
        self,
        user_id: str,
        kinds: Sequence[MemoryKind] | None,
        session_id: str | None,
        since: float | None,
        until: float | None,
        speaker: str | None = None,
        speaker_roles: Sequence[SpeakerRole] | None = None,
    ) -> FilterExpression:
        """The filter on one user's memories, narrowed by kind, session, time and speaker."""
        # not the expired (1 <= expires_at <= now), even before Redis drops them; 0 or absent: never. Not "(0 …": its
        # tree leaf of every 0 was read through, record by record, by every search (docs/operations/redis.md)
        expired = FilterExpression(f"-@{MemoryField.EXPIRES_AT}:[1 {time.time():.3f}]")  # a time, no user text
        expression = (Tag(MemoryField.USER) == self.layout.user_tag(user_id)) & expired
        if kinds:
            expression = expression & (Tag(MemoryField.KIND) == list(kinds))
        if session_id:
            expression = expression & (Tag(MemoryField.SESSION) == self.layout.session_tag(session_id))
        if since is not None:
            expression = expression & (Num(MemoryField.CREATED_AT) >= since)
        if until is not None:
            expression = expression & (Num(MemoryField.CREATED_AT) <= until)
        if speaker:
            expression = expression & (Tag(MemoryField.SPEAKER_KEY) == speaker_key(speaker))
        if speaker_roles:
            expression = expression & (Tag(MemoryField.SPEAKER_ROLE) == list(speaker_roles))
        return expression

    @staticmethod
    def _time_filter(scope: TimeScope) -> FilterExpression:
        """Memories inside any of the scope's spans or on any of its month-days."""
        clauses: list[FilterExpression] = [
            Num(MemoryField.CREATED_AT).between(start, end) for start, end in scope.ranges
        ] + [Num(MemoryField.MONTH_DAY) == value for value in scope.month_days]
        expression = clauses[0]
        for clause in clauses[1:]:
            expression = expression | clause
        return expression

    def vector_query(
        self,
        vector: Sequence[float],
        expression: FilterExpression,
        limit: int,
        *,
        approximate: bool = False,
        fields: Sequence[str] = RETURN_FIELDS,
    ) -> VectorQuery:
        """KNN under the filter. Exact by default: RediSearch compares the query with each of
        the user's memories (ADHOC_BF), which costs ~0.2 ms per thousand. `approximate` walks
        the HNSW graph instead (BATCHES, `search_ef_runtime`), for users with many memories, where the index has one
        (`vector_index` hnsw; the default FLAT has none: every search is exact)."""
        approximate = approximate and self.core.store.vector_index == "hnsw"
        return VectorQuery(
            vector=list(vector),
            vector_field_name=MemoryField.EMBEDDING,
            dtype=self.core.store.vector_datatype,
            filter_expression=expression,
            return_fields=list(fields),
            num_results=limit,
            # on a cluster the distance is computed from the stored vectors (`_read_found`)
            return_score=self.core.shards is None,
            # spelled out: left to RediSearch, a filter holding a few percent of the index may be
            # answered from the HNSW graph in batches, approximate and different per index build
            hybrid_policy="BATCHES" if approximate else "ADHOC_BF",
            ef_runtime=self.core.search.ef_runtime if approximate else None,
        )

    def text_query(
        self,
        terms: Sequence[str],
        expression: FilterExpression,
        limit: int,
        *,
        field: str = MemoryField.SEARCH_TEXT,
        fields: Sequence[str] = RETURN_FIELDS,
    ) -> TextQuery:
        """BM25 over the analyzed terms (`store.text.query_terms`), any of them matching, in the
        memories' own text (or, with `field`, their context)."""
        return TermwiseTextQuery(
            text=" ".join(terms),
            text_field_name=field,
            filter_expression=expression,
            return_fields=list(fields),
            num_results=limit,
            stopwords=None,
        )

    async def memory_count(self, user_id: str, notes: SearchNotes | None = None) -> int:
        """How many search memories the user has (cached for a minute: it picks the search mode);
        `notes`: the search's, whose trips share one wait on a cluster."""
        now = time.monotonic()
        cached = self._counts.get(user_id)
        if cached is not None and now - cached[1] < _COUNT_TTL_SECONDS:
            return cached[0]
        count_query = CountQuery(self.user_filter(user_id, None, None, None, None))
        count = int(await self.core.on_user_index(user_id, lambda index: index.query(count_query), notes))
        if len(self._counts) > 10_000:
            self._counts.clear()
        self._counts[user_id] = (count, now)
        return count

    async def walks_graph(self, user_id: str, notes: SearchNotes | None = None) -> bool:
        """Whether the user's vector search walks the HNSW graph: only with `vector_index` hnsw, for a
        user over `search_exact_max_memories`. A FLAT index (the default) has no graph: no count asked."""
        if self.core.store.vector_index != "hnsw":
            return False
        return await self.memory_count(user_id, notes) > self.core.search.exact_max_memories

    def counts_changed(self, user_ids: Iterable[str]) -> None:
        """Forget the cached memory counts of users just written to (the next search counts again)."""
        for user_id in user_ids:
            self._counts.pop(user_id, None)
