"""Scripted chat models for the tests: `memlane.testing`'s (public, so users can try memlane
offline; its docstring says what they answer), and embeddings that can be switched off."""

from __future__ import annotations

from typing import Any

from memlane.testing import TIMEOUT, Answer, ScriptedChatModel, answer_from, prompt_text

__all__ = ["TIMEOUT", "Answer", "FlakyEmbeddings", "ScriptedChatModel", "answer_from", "prompt_text"]


class FlakyEmbeddings:
    """Wraps real embeddings; while `down` is true every call raises (an embedder that is away).
    `calls` counts the calls that reached it, failed or not."""

    def __init__(self, inner: Any, *, down: bool = False) -> None:
        self.inner = inner
        self.dims = inner.dims
        self.down = down
        self.calls = 0

    def _reach(self) -> None:
        self.calls += 1
        if self.down:
            raise ConnectionError("embedding endpoint refused the connection")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._reach()
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._reach()
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self._reach()
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self._reach()
        return await self.inner.aembed_query(text)
