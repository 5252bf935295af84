"""Lenient parsing of model answers into pydantic models.

Models wrap JSON in prose or ```json fences, leave trailing commas, answer one object
where a list was asked, or stop mid-answer. We recover what is there; when nothing
is, `ParseFailed` names the step and why, and only that step fails.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"'})
_CLOSERS = {"{": "}", "[": "]"}
_MAX_REPAIR_CUTS = 200


class ParseFailed(ValueError):
    """A model answer that holds nothing usable for `step`."""

    def __init__(self, step: str, reason: str, answer: str = "") -> None:
        excerpt = answer.strip().replace("\n", " ")[:160]
        super().__init__(f"{step}: {reason}" + (f" (answer began: {excerpt!r})" if excerpt else ""))
        self.step = step
        self.reason = reason


def strip_fences(text: str) -> str:
    """The content of the first code fence, or the text itself."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def _balance(fragment: str) -> str | None:
    """Close the open strings and brackets of a JSON prefix; None when it is unbalanced."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for char in fragment:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "}]":
            if not stack or stack.pop() != char:
                return None
    if in_string:
        return None
    return fragment + "".join(reversed(stack))


def _loads(candidate: str) -> Any:
    return json.loads(_TRAILING_COMMA.sub(r"\1", candidate))


def _repair_partial(fragment: str) -> Any:
    """Parse the longest prefix of a cut-off answer that ends after a complete value."""
    cuts = [index + 1 for index, char in enumerate(fragment) if char in '}]"0123456789el']
    for cut in reversed(cuts[-_MAX_REPAIR_CUTS:]):
        prefix = fragment[:cut].rstrip().rstrip(",")
        balanced = _balance(prefix)
        if balanced is None:
            continue
        try:
            return _loads(balanced)
        except json.JSONDecodeError:
            continue
    raise ValueError("no complete JSON value in the answer")


def extract_json(text: str, *, step: str = "parse") -> Any:
    """The JSON value in a model answer: fences, prose, trailing commas and cut-offs allowed."""
    if not text or not text.strip():
        raise ParseFailed(step, "the model gave an empty answer")
    body = strip_fences(text).translate(_SMART_QUOTES)
    starts = [index for index, char in enumerate(body) if char in "{["]
    if not starts:
        raise ParseFailed(step, "no JSON object or list in the answer", text)
    # prose may hold brackets of its own ("message [1] says"): take the longest JSON value
    decoder = json.JSONDecoder()
    cleaned = _TRAILING_COMMA.sub(r"\1", body)
    best: tuple[int, Any] | None = None
    parsed_until = -1
    for start in [index for index, char in enumerate(cleaned) if char in "{["][:_MAX_REPAIR_CUTS]:
        if start < parsed_until:
            continue  # inside a value already parsed: shorter by construction
        try:
            value, end = decoder.raw_decode(cleaned, start)
        except json.JSONDecodeError:
            continue
        parsed_until = end
        if best is None or end - start > best[0]:
            best = (end - start, value)
    if best is not None:
        return best[1]
    fragment = body[starts[0] :]
    end = max(fragment.rfind("}"), fragment.rfind("]"))
    if end >= 0:
        try:
            return _loads(fragment[: end + 1])
        except json.JSONDecodeError:
            pass
    try:
        return _repair_partial(fragment)
    except ValueError:
        raise ParseFailed(step, "the JSON in the answer is broken beyond repair", text) from None


def parse_object(text: str, model: type[ModelT], *, step: str) -> ModelT:
    """One object of `model`; a list holding one object is accepted too."""
    value = extract_json(text, step=step)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        raise ParseFailed(step, f"expected a JSON object, got {type(value).__name__}", text)
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise ParseFailed(
            step, f"the answer does not fit {model.__name__}: {error.errors()[0]['msg']}", text
        ) from None


def parse_items(
    text: str, item_model: type[ModelT], *, key: str, step: str
) -> tuple[list[ModelT], list[str]]:
    """A list of `item_model` under `key`; items that do not validate are skipped.

    Accepts `{key: [...]}`, a bare list, or a single item object. Returns the items and
    one reason per skipped item. Raises `ParseFailed` when no list can be found at all.
    """
    value = extract_json(text, step=step)
    if isinstance(value, dict):
        if key in value:
            value = value[key]
        elif any(field in value for field in item_model.model_fields):
            value = [value]
        else:
            raise ParseFailed(step, f"the answer has no {key!r} list", text)
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ParseFailed(step, f"{key!r} is not a list", text)
    items: list[ModelT] = []
    skipped: list[str] = []
    for position, raw in enumerate(value):
        try:
            items.append(item_model.model_validate(raw))
        except ValidationError as error:
            skipped.append(f"item {position}: {error.errors()[0]['msg']}")
    return items, skipped
