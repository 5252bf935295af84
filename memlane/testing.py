"""Scripted chat models: try memlane offline, with no model server and no API key.

`ScriptedChatModel` is a LangChain chat model that answers from a script instead of a network
call, so the memory graph, the agent middleware and the examples of the README run anywhere:

    from memlane.testing import ScriptedChatModel, memory_rules

    model = ScriptedChatModel(rules=memory_rules())        # answers every step of the memory graph
    chat = ScriptedChatModel(script=["Hi!", "Noted."])      # answers calls in turn

What it answers:

- `ScriptedChatModel(script=[...])` answers each call with the next item of `script`, then
  with `default` once the script is used up. An item is a `str` (the answer; `astream` gives
  it in pieces of `chunk_size` characters, `chunk_delay` seconds apart), an exception instance
  (raised by that call), a callable `(messages) -> str | Exception` (computed from the prompt;
  `answer_from(fn)` adapts `fn(prompt_text)`), or `TIMEOUT` (the call sleeps `timeout_sleep`
  seconds, as a model that never answers).
- `ScriptedChatModel(rules=[(step, answer), ...], default=...)` answers each call with the
  rule of the step it was made for, and with `default` where no rule names it (an agent's
  reply, which memlane does not tag). memlane tags every memory-model call with its step
  (`memlane:step:summarize`; LangChain hands a call's tags to the model as `run_manager.tags`),
  so one model serves every node of the memory graph, in any order, whatever the prompts say.
  The steps (`STEPS`) are the names of `memlane.nodes.llm.Step`, where each step that asks the
  memory model is declared once.
- `calls` (the messages of each call), `prompts` (their text) and `steps` (the step each was
  made for, None for an untagged call) record what it was asked; `bind_tools` is accepted and
  changes nothing (it never calls tools).
- A subclass that overrides `_agenerate` names its `run_manager` parameter and passes it on:
  LangChain hands the run manager, and with it the step, only to a method that takes it.

`memory_rules()` are rules that answer each step of the memory graph (summarize, extract,
merge, organize, resummarize, tag) with fixed JSON. They do not read the conversation: by
default a run learns three facts of a Chinese chat (sleeps at 2 a.m., two weeks of overtime,
black coffee without sugar) with the tags 作息异常 / 工作压力 / 饮食偏好, whatever was said.
Pass your own `summary`, `facts`, `tags`, ... to learn something else, and an answer for any
other step by its name (`memory_rules(session_title={"title": "Trails"})`); a step with no rule
is answered with the model's `default`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr, field_validator

from memlane.nodes.llm import Step, step_of
from memlane.nodes.merge import MERGE_PROMPT

TIMEOUT = object()

Answer = Any  # str | Exception | Callable[[list[BaseMessage]], str | Exception] | TIMEOUT

# the steps a rule can name: every step that asks the memory model
STEPS: tuple[str, ...] = tuple(step.value for step in Step)


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(message.content) for message in messages)


def call_step(run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None) -> str | None:
    """The step a chat model is called for, from the `run_manager` its `_generate` / `_agenerate` /
    `_stream` receives (memlane's tag `memlane:step:<step>`); None for a call memlane did not tag."""
    return step_of(run_manager.tags if run_manager is not None else None)


# the step of a call LangChain streams: it hands `_astream` / `_stream` no run_manager (a call made
# inside a streaming run, such as an agent's `astream`, is streamed whether asked to or not), so
# the step is noted where it still has one, `_should_stream`, just before
_STREAMED_STEP: ContextVar[str | None] = ContextVar("memlane_streamed_step", default=None)


def _unknown_steps(rules: Sequence[tuple[str, Any]]) -> list[str]:
    return [str(step) for step, _ in rules if step not in STEPS]


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays back a script (see module docstring)."""

    script: list[Any] = Field(default_factory=list)
    rules: list[tuple[str, Any]] = Field(default_factory=list)
    default: Any = ""
    chunk_size: int = 3
    chunk_delay: float = 0.0
    timeout_sleep: float = 3600.0
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _steps: list[str | None] = PrivateAttr(default_factory=list)
    _position: int = PrivateAttr(default=0)

    @field_validator("rules")
    @classmethod
    def _rules_name_steps(cls, rules: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        unknown = _unknown_steps(rules)
        if unknown:  # a prompt's words ("TASK: summarize") as a key would never match
            raise ValueError(f"rules are keyed by step, one of {', '.join(STEPS)}; not {', '.join(map(repr, unknown))}")
        return rules

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def prompts(self) -> list[str]:
        return [prompt_text(call) for call in self._calls]

    @property
    def steps(self) -> list[str | None]:
        """The step each call was made for (None: untagged, such as an agent's reply)."""
        return list(self._steps)

    def _should_stream(self, *, async_api: bool, run_manager: Any = None, **kwargs: Any) -> bool:
        _STREAMED_STEP.set(call_step(run_manager))
        return super()._should_stream(async_api=async_api, run_manager=run_manager, **kwargs)

    def _next_answer(self, messages: list[BaseMessage], run_manager: Any = None, *, streamed: bool = False) -> Answer:
        self._calls.append(list(messages))
        step = _STREAMED_STEP.get() if streamed and run_manager is None else call_step(run_manager)
        self._steps.append(step)
        if self.rules:
            unknown = _unknown_steps(self.rules)  # rules can be edited after the model is made
            if unknown:
                raise ValueError(
                    f"rules are keyed by step, one of {', '.join(STEPS)}; not {', '.join(map(repr, unknown))}"
                )
            return next((answer for rule_step, answer in self.rules if rule_step == step), self.default)
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
        answer = self._next_answer(messages, run_manager)
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
        answer = self._next_answer(messages, run_manager)
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
        answer = self._next_answer(messages, run_manager, streamed=True)
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
        answer = self._next_answer(messages, run_manager, streamed=True)
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

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        # create_agent binds tools; a script answers in text, so binding changes nothing
        return self


def answer_from(fn: Callable[[str], str]) -> Callable[[list[BaseMessage]], str]:
    """Adapt `fn(prompt_text) -> answer` to a script item."""
    return lambda messages: fn(prompt_text(messages))


# --- rules that answer every step of the memory graph --------------------------------------
CHINESE_SUMMARY = "用户最近总是凌晨2点才睡、白天很困；连续两周加班；喜欢不加糖的黑咖啡。"
CHINESE_FACTS = [
    {
        "topic": "lifestyle",
        "subtopic": "sleep_schedule",
        "content": "最近总是凌晨2点才睡，白天困得不行",
        "confidence": 0.9,
        "messages": [1],
    },
    {
        "topic": "work",
        "subtopic": "workload",
        "content": "连续两周都在加班",
        "confidence": 0.9,
        "messages": [3],
    },
    {
        "topic": "lifestyle",
        "subtopic": "diet",
        "content": "喜欢黑咖啡，不加糖",
        "confidence": 0.95,
        "messages": [4],
    },
]
CHINESE_TAGS = ["作息异常", "工作压力", "饮食偏好"]


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_BATCHED_FACT = re.compile(r"Fact \[(\d+)\]\n")


def batched(merge: Any) -> Any:
    """An answer to the batched merge prompt made of `merge`'s answer to each fact on its own,
    so one scripted merge answer serves both prompts. A per-fact answer that is not a JSON
    object leaves its fact out of the batched answer (the node then asks that fact alone)."""
    if merge is TIMEOUT or isinstance(merge, BaseException):
        return merge

    def answer(messages: list[BaseMessage]) -> str:
        parts = _BATCHED_FACT.split(str(messages[-1].content))
        decisions = []
        for number, block in zip(parts[1::2], parts[2::2]):
            fact_block = block.replace("</chat>", "").strip()
            single = [SystemMessage(content=MERGE_PROMPT), HumanMessage(content=f"<chat>\n{fact_block}\n</chat>")]
            try:
                decision = json.loads(merge(single) if callable(merge) else merge)
            except (TypeError, ValueError):
                continue  # an exception or prose: that fact is left out
            if isinstance(decision, dict):
                decisions.append({"fact": int(number), **decision})
        return as_json({"decisions": decisions})

    return answer


def memory_rules(
    *,
    summary: Any = CHINESE_SUMMARY,
    facts: Any = CHINESE_FACTS,
    merge: Any = '{"action": "ADD", "content": ""}',
    merge_batch: Any = None,
    tags: Any = CHINESE_TAGS,
    organize: Any = '{"subtopics": []}',
    resummarize: Any = '{"content": ""}',
    **other_steps: Any,
) -> list[tuple[str, Any]]:
    """Rules answering every step of the memory graph, summarize first; a dict/list value is
    sent as JSON, anything else as is. `merge` answers the one-fact merge step; `merge_batch`
    the batched one (default: `merge` applied to each fact, see `batched`); `resummarize` the
    step that shortens an entry; `other_steps` any other `Step` by its name (a step added to
    the graph is answered so with no change here)."""
    unknown = [name for name in other_steps if name not in STEPS]
    if unknown:
        raise ValueError(f"memory_rules answers steps, one of {', '.join(STEPS)}; not {', '.join(unknown)}")

    def wrap(key: str, value: Any) -> Any:
        if isinstance(value, (dict, list)) and key:
            return as_json({key: value})
        return value

    return [
        (Step.SUMMARIZE, as_json({"summary": summary}) if isinstance(summary, str) else summary),
        (Step.EXTRACT, wrap("facts", facts)),
        (Step.MERGE_BATCH, batched(merge) if merge_batch is None else merge_batch),
        (Step.MERGE, merge),
        (Step.ORGANIZE, organize),
        (Step.RESUMMARIZE, resummarize),
        (Step.TAG, wrap("tags", tags)),
        *(
            (Step(name), as_json(answer) if isinstance(answer, (dict, list)) else answer)
            for name, answer in other_steps.items()
        ),
    ]


__all__ = ["STEPS", "TIMEOUT", "ScriptedChatModel", "answer_from", "call_step", "memory_rules", "prompt_text"]
