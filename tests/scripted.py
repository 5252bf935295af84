"""Scripted chat models: LangChain chat models that answer from a script, no network.

`ScriptedChatModel(script=[...])` answers each call with the next script item:
- a `str` — the answer text (streamed in small pieces by `astream`);
- an `Exception` instance — raised by that call;
- a callable `(messages) -> str | Exception` — computed from the prompt;
- `TIMEOUT` — the call sleeps longer than any sane timeout (asyncio.TimeoutError territory).

`ScriptedChatModel(rules=[(substring, answer), ...], default=...)` instead picks the first
rule whose substring occurs in the prompt (system + messages), so one model can serve
every node of the memory graph in any order. `calls` records each prompt.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Iterator, AsyncIterator, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

TIMEOUT = object()

Answer = Any  # str | Exception | Callable[[list[BaseMessage]], str | Exception] | TIMEOUT


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(message.content) for message in messages)


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays back a script (see module docstring)."""

    script: list[Any] = Field(default_factory=list)
    rules: list[tuple[str, Any]] = Field(default_factory=list)
    default: Any = ""
    chunk_size: int = 3
    chunk_delay: float = 0.0
    timeout_sleep: float = 3600.0
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def prompts(self) -> list[str]:
        return [prompt_text(call) for call in self._calls]

    def _next_answer(self, messages: list[BaseMessage]) -> Answer:
        self._calls.append(list(messages))
        if self.rules:
            text = prompt_text(messages)
            for needle, answer in self.rules:
                if needle in text:
                    return answer
            return self.default
        if self._position >= len(self.script):
            return self.default
        answer = self.script[self._position]
        self._position += 1
        return answer

    def _resolve(self, answer: Answer, messages: list[BaseMessage]) -> str:
        if callable(answer) and not isinstance(answer, type):
            answer = answer(messages)
        if isinstance(answer, BaseException):
            raise answer
        return str(answer)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = self._next_answer(messages)
        if answer is TIMEOUT:
            time.sleep(self.timeout_sleep)
        text = self._resolve(answer, messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = self._next_answer(messages)
        if answer is TIMEOUT:
            await asyncio.sleep(self.timeout_sleep)
        text = self._resolve(answer, messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer = self._next_answer(messages)
        if answer is TIMEOUT:
            time.sleep(self.timeout_sleep)
        text = self._resolve(answer, messages)
        for start in range(0, len(text), self.chunk_size):
            if self.chunk_delay:
                time.sleep(self.chunk_delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text[start : start + self.chunk_size]))
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        answer = self._next_answer(messages)
        if answer is TIMEOUT:
            await asyncio.sleep(self.timeout_sleep)
        text = self._resolve(answer, messages)
        for start in range(0, len(text), self.chunk_size):
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text[start : start + self.chunk_size]))
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        # create_agent binds tools; a script answers in text, so binding changes nothing
        return self


def answer_from(fn: Callable[[str], str]) -> Callable[[list[BaseMessage]], str]:
    """Adapt `fn(prompt_text) -> answer` to a script item."""
    return lambda messages: fn(prompt_text(messages))


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
