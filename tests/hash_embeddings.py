"""A cheap deterministic embedder for tests that compare rankings, not meaning."""

from __future__ import annotations

import zlib

import numpy as np
from langchain_core.embeddings import Embeddings


class CharacterHashEmbeddings(Embeddings):
    """Deterministic test vectors: character and bigram counts hashed into 24 dimensions."""

    dims = 24

    def _one(self, text: str) -> list[float]:
        vector = np.zeros(self.dims)
        for gram in [*text, *(text[i : i + 2] for i in range(len(text) - 1))]:
            vector[zlib.crc32(gram.encode()) % self.dims] += 1.0
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)
