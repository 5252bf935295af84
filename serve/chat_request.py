"""The body of an OpenAI chat completion request as `memlane serve` reads it (serve/chat.py): the
messages, the persona named as `model`, the user, and memlane's `memory_config`; a body holding a
number that is not finite or a lone surrogate is refused (422), in any field."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlane.store.ids import clean_text


def json_problem(value: Any, where: str = "") -> str | None:
    """What makes a parsed JSON body unusable, or None: a number that is not finite (NaN,
    Infinity, 1e400 parse as floats; no upstream or store takes them) or a string holding a lone
    surrogate ("\\ud800" parses, but is no text: it cannot be encoded to be stored or sent on)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where or 'the body'}: {value!r} is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return (
                f"{where or 'the body'}: the text holds a lone surrogate (an unpaired \\ud800-\\udfff escape); "
                "send valid UTF-8"
            )
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = json_problem(key, where or "the body") or json_problem(
                item, f"{where}.{key}" if where else str(key)
            )
            if problem:
                return problem
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{where}.{index}" if where else str(index))
            if problem:
                return problem
    return None


class JsonBody(BaseModel):
    """A request body: refused (422) when it holds a number that is not finite or a lone surrogate,
    in any field, those passed through to the upstream included."""

    @model_validator(mode="before")
    @classmethod
    def _usable_json(cls, data: Any) -> Any:
        problem = json_problem(data)
        if problem:
            raise ValueError(problem)
        return data


class ChatMessage(BaseModel):
    """One message of the conversation, as OpenAI sends it (other fields pass through)."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(min_length=1)
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """The text of the message: the string, or the text parts of a list."""
        if isinstance(self.content, str):
            return clean_text(self.content)
        parts = [part.get("text") for part in self.content or [] if part.get("type") == "text"]
        return clean_text("\n".join(part for part in parts if isinstance(part, str)))


class MemoryToggles(BaseModel):
    """`memory_config` of a request: recall (`enabled`) and saving (`auto_save`); unset: the persona's."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    auto_save: bool | None = None


class ChatCompletionRequest(JsonBody):
    """An OpenAI chat completion request; `model` names a persona, `user` the user."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = None
    memory_config: MemoryToggles | None = None
