"""JSON by schema where the memory model offers it (`Settings.memory_model_structured_output`).

OpenAI's chat models, and vLLM's and Ollama's OpenAI-compatible servers, can be asked for an
answer that matches a JSON schema (`response_format` of type `json_schema`). This module is
the one place that decides whether a step's call sends its schema, builds that schema from
the step's output model, and remembers a model whose server refused one:

- `auto`: a model that can take a schema (LangChain's `BaseChatOpenAI`: ChatOpenAI,
  AzureChatOpenAI, ...) is sent one; the first answer saying the schema is not supported
  (an HTTP 400 naming response_format / json_schema, or "not supported") is logged, the same
  question is asked again without it, and that model object is never sent one again;
- `json_schema`: every model is sent the schema; a refusal is a model error like any other;
- `off`: no schema (the prompt alone says what JSON to write).

The schema only describes the answer's shape: every answer, with a schema or without, is read
by the lenient parser of its step (`nodes/parsing.py`) and validated by its output model.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import weakref
from collections.abc import Sequence
from functools import cache
from typing import Any

from langchain_core.exceptions import ModelInvalidRequestError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from memlane.config import StructuredOutputMode

logger = logging.getLogger(__name__)

# the keywords of a schema's shape; constraints (minLength, default, ...) are left to our
# validation, since OpenAI's strict mode refuses some of them and other servers others
_SHAPE_KEYWORDS = ("type", "enum", "const")
# what a server says when it refuses the schema, after a 400 (422 from some servers)
_REFUSAL_STATUSES = (400, 422)
_REFUSAL_WORDS = re.compile(
    r"response_format|json_schema|json schema|structured output|not supported|unsupported", re.IGNORECASE
)


def _shape(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """`node` of a pydantic JSON schema in OpenAI's strict form: references inlined, every
    property required, no property beyond those listed, no constraints."""
    if "$ref" in node:
        return _shape(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
    shaped = {keyword: node[keyword] for keyword in _SHAPE_KEYWORDS if keyword in node}
    if "anyOf" in node:
        shaped["anyOf"] = [_shape(variant, definitions) for variant in node["anyOf"]]
    if "items" in node:
        shaped["items"] = _shape(node["items"], definitions)
    if "properties" in node:
        shaped["properties"] = {name: _shape(field, definitions) for name, field in node["properties"].items()}
        shaped["required"] = list(shaped["properties"])
        shaped["additionalProperties"] = False
    return shaped


@cache
def _strict_schema(output_model: type[BaseModel]) -> dict[str, Any]:
    schema = output_model.model_json_schema()
    return _shape(schema, schema.get("$defs", {}))


def response_format(output_model: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` asking for JSON shaped like `output_model` (OpenAI's strict mode)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output_model.__name__,
            "schema": copy.deepcopy(_strict_schema(output_model)),
            "strict": True,
        },
    }


def takes_json_schema(llm: BaseChatModel) -> bool:
    """Whether `llm` can be sent a `json_schema` response format: an OpenAI-style chat model."""
    from langchain_openai.chat_models.base import BaseChatOpenAI  # here: importing openai is slow

    return isinstance(llm, BaseChatOpenAI)


def refuses_schema(error: BaseException) -> bool:
    """Whether `error` is a server saying it does not support the schema it was sent."""
    status = getattr(error, "status_code", None)
    if status not in _REFUSAL_STATUSES and not isinstance(error, ModelInvalidRequestError):
        return False
    body = getattr(error, "body", None)
    return bool(_REFUSAL_WORDS.search(f"{error} {body if body is not None else ''}"))


def _cut_off_text(error: BaseException) -> str | None:
    """The text of an answer that stopped at the token limit.

    With a schema, OpenAI's client raises `LengthFinishReasonError` for such an answer instead
    of returning it; without one the text comes back and the lenient parser repairs the value
    it cuts off. It is an answer either way.
    """
    from openai import LengthFinishReasonError

    if not isinstance(error, LengthFinishReasonError):
        return None
    choices = getattr(error.completion, "choices", None) or []
    content = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
    return content if isinstance(content, str) else None


def _text(answer: BaseMessage) -> str:
    return answer.text if hasattr(answer, "text") else str(answer.content)


class StructuredOutput:
    """Decides which calls send a schema; remembers the model objects whose server refused one."""

    def __init__(self) -> None:
        # id -> model, dropped with the model: an id reused by a later object is not mistaken for it
        self._refused: weakref.WeakValueDictionary[int, BaseChatModel] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def sends_schema(self, llm: BaseChatModel, mode: StructuredOutputMode) -> bool:
        """Whether a call to `llm` in `mode` sends its step's schema."""
        if mode == "off":
            return False
        if mode == "json_schema":
            return True
        return takes_json_schema(llm) and self._refused.get(id(llm)) is not llm

    def falls_back(self, llm: BaseChatModel, mode: StructuredOutputMode, error: BaseException, step: str) -> bool:
        """Whether `error` is `llm` refusing the schema in `auto`; then `llm` is sent none again
        (said once in the log)."""
        if mode != "auto" or not refuses_schema(error):
            return False
        with self._lock:
            first = self._refused.get(id(llm)) is not llm
            self._refused[id(llm)] = llm
        if first:
            name = getattr(llm, "model_name", None) or type(llm).__name__
            logger.warning(
                "%s: the memory model %s refused a JSON schema (%s: %s); it is asked with the prompt alone "
                "from now on (memory_model_structured_output=auto; set it to off to skip the attempt)",
                step,
                name,
                type(error).__name__,
                str(error)[:300],
            )
        return True

    async def answer(
        self,
        llm: BaseChatModel,
        messages: Sequence[BaseMessage],
        *,
        schema: type[BaseModel] | None,
        mode: StructuredOutputMode,
        step: str,
        config: RunnableConfig | None = None,
    ) -> str:
        """The text of `llm`'s answer to `messages`, asked with `schema` when this call sends one."""
        if schema is not None and self.sends_schema(llm, mode):
            try:
                return _text(
                    await llm.bind(response_format=response_format(schema)).ainvoke(list(messages), config=config)
                )
            except Exception as error:
                cut_off = _cut_off_text(error)
                if cut_off is not None:
                    return cut_off
                if not self.falls_back(llm, mode, error, step):
                    raise
            # the server refused the schema: the same question, with the prompt alone
        return _text(await llm.ainvoke(list(messages), config=config))


# process-wide: a refusal holds for the model object wherever it is called from
STRUCTURED_OUTPUT = StructuredOutput()
