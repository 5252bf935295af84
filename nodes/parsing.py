"""Lenient parsing of model answers into pydantic models.

Models wrap JSON in prose or ```json fences, leave trailing commas, answer one object
where a list was asked, or stop mid-answer. We recover what is there; when nothing
is, `ParseFailed` names the step and why, and only that step fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_FENCE_MARKER = re.compile(r"```[ \t]*(?:json|JSON)?")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"'})
_CLOSERS = {"{": "}", "[": "]"}
_MAX_REPAIR_CUTS = 200
_MAX_FAILED_STARTS = 1000


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


def _brackets(text: str) -> tuple[list[str], bool]:
    """The brackets of `text` outside JSON strings, and whether it ends inside a string."""
    brackets: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS or char in "}]":
            brackets.append(char)
    return brackets, in_string


def _balance(fragment: str) -> str | None:
    """Close the open strings and brackets of a JSON prefix; None when it is unbalanced."""
    brackets, in_string = _brackets(fragment)
    if in_string:
        return None
    stack: list[str] = []
    for char in brackets:
        if char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif not stack or stack.pop() != char:
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


def _closes(text: str, start: int) -> bool:
    """Whether the bracket at `start` is closed before the text ends (a cut-off value is not)."""
    stack: list[str] = []
    for char in _brackets(text[start:])[0]:
        if char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif not stack or stack.pop() != char:
            return True  # mismatched: prose brackets, closed as far as JSON goes
        elif not stack:
            return True
    return False


def _is_citation(value: Any) -> bool:
    """Bracketed numbers in prose ("message [1] says") are references, not answers."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, (int, float)) for item in value)


def _any_answer(value: Any) -> bool:
    """Without an expected shape: an object, or a list that is not a citation."""
    return isinstance(value, dict) or (isinstance(value, list) and not _is_citation(value))


def _accepted(value: Any, accept: Callable[[Any], bool], depth: int = 2) -> Any:
    """`value` when it has the expected shape, else the first value inside it that has (an object's
    values, `depth` levels down): models wrap their answer in one of their own ({"result": {...}},
    {"结果": {...}}). None when neither has."""
    if accept(value):
        return value
    if depth and isinstance(value, dict):
        for inner in value.values():
            if isinstance(inner, (dict, list)) and (found := _accepted(inner, accept, depth - 1)) is not None:
                return found
    return None


def extract_json(text: str, *, step: str = "parse", accept: Callable[[Any], bool] | None = None) -> Any:
    """The answer's own JSON value: fences, prose, trailing commas and cut-offs allowed.

    Models quote JSON the user typed before giving their answer, so the answer is the
    *last* complete value that has the expected shape (`accept`), never the longest: a
    value quoted earlier cannot win. A value cut off at the end of the answer is the
    answer too; it is repaired when it can be.
    """
    if not text or not text.strip():
        raise ParseFailed(step, "the model gave an empty answer")
    accept = accept or _any_answer
    body = _FENCE_MARKER.sub(" ", text).translate(_SMART_QUOTES)
    cleaned = _TRAILING_COMMA.sub(r"\1", body)
    starts = [index for index, char in enumerate(cleaned) if char in "{["]
    if not starts:
        raise ParseFailed(step, "no JSON object or list in the answer", text)
    decoder = json.JSONDecoder()
    values: list[Any] = []  # complete top-level values, in order
    cut_off_start: int | None = None  # the first value still open when the answer ends
    parsed_until = -1
    failed_starts = 0
    for start in starts:
        if start < parsed_until:
            continue  # inside a value already parsed
        try:
            value, end = decoder.raw_decode(cleaned, start)
        except json.JSONDecodeError:
            if cut_off_start is None and not _closes(cleaned, start):
                cut_off_start = start
            failed_starts += 1
            if failed_starts > _MAX_FAILED_STARTS:
                break  # a wall of brackets is not an answer
            continue
        values.append(value)
        parsed_until = end
    if cut_off_start is not None:
        # the answer ends inside this value: it comes after every complete one
        try:
            repaired = _repair_partial(cleaned[cut_off_start:])
        except ValueError:
            repaired = None
        found = _accepted(repaired, accept) if repaired is not None else None
        if found is not None:
            return found
    for value in reversed(values):
        found = _accepted(value, accept)
        if found is not None:
            return found
    if values:
        return values[-1]  # of the wrong shape: the caller says what was expected
    raise ParseFailed(step, "the JSON in the answer is broken beyond repair", text)


def sole_object(value: Any, key: str) -> Any:
    """`value`, or the object a one-item list holds when that object has `key`: models wrap the one
    object they were asked for in a list (`[{"tags": [...]}]`)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) and key in value[0]:
        return value[0]
    return value


def parse_object(text: str, model: type[ModelT], *, step: str) -> ModelT:
    """One object of `model`; a list holding one object is accepted too."""
    fields = set(model.model_fields)

    def has_fields(value: Any) -> bool:
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        return isinstance(value, dict) and not fields.isdisjoint(value)

    value = extract_json(text, step=step, accept=has_fields)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        raise ParseFailed(step, f"expected a JSON object, got {type(value).__name__}", text)
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise ParseFailed(step, f"the answer does not fit {model.__name__}: {error.errors()[0]['msg']}", text) from None


def parse_items(text: str, item_model: type[ModelT], *, key: str, step: str) -> tuple[list[ModelT], list[str]]:
    """A list of `item_model` under `key`; items that do not validate are skipped.

    Accepts `{key: [...]}`, a bare list, or a single item object. Returns the items and
    one reason per skipped item. Raises `ParseFailed` when no list can be found at all.
    """
    item_fields = set(item_model.model_fields)

    def is_list_or_item(value: Any) -> bool:
        value = sole_object(value, key)
        if isinstance(value, dict):
            return key in value or not item_fields.isdisjoint(value)
        return isinstance(value, list) and not _is_citation(value)

    value = sole_object(extract_json(text, step=step, accept=is_list_or_item), key)
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
