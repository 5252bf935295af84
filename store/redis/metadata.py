"""Metadata of memories: a JSON object of the caller's own on a note, a message or an item, kept
with its search memory, and the filters search narrows by.

Every key is stored (the object as JSON, returned with the memory); the keys the settings declare
(`StoreSettings.metadata_fields`: a name and a type, tag or numeric) are also written to an indexed
field of the memory's hash (`schema.metadata_field`), which is what a filter reads. A filter naming
a key that is not declared is refused, saying which setting declares it.

The filter is a JSON object, the same in Python, over HTTP and over MCP:

    {"project": "apollo"}                       equal (a list: any of them)
    {"project": {"ne": "apollo"}}               not equal (memories without the key too)
    {"project": {"in": ["a", "b"]}}             any of them; "nin": none of them
    {"priority": {"gte": 2, "lt": 5}}           ranges (numeric fields): gt, gte, lt, lte, eq, ne
    {"AND": [{...}, {...}]}, {"OR": [...]}       combined; keys of one object are ANDed

Each clause becomes a RedisVL filter object (`Tag`, `Num`), so a value is escaped by RedisVL and
never spliced into a query string.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from redisvl.query.filter import FilterExpression, Num, Tag

from memlane.store.errors import InputTooLarge, InvalidInput
from memlane.store.schema import METADATA_TAG_SEPARATOR as TAG_SEPARATOR
from memlane.store.schema import metadata_field

MetadataType = Literal["tag", "numeric"]
MetadataFilter = Mapping[str, Any]
"""A filter on metadata: `{"field": value}`, `{"field": {"op": value}}`, `{"AND"/"OR": [filters]}` (see the module)."""

SETTING = "MEMLANE_METADATA_FIELDS (settings.store.metadata_fields)"
_TAG_OPERATORS = ("eq", "ne", "in", "nin")
_NUMERIC_OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte")
_MAX_CLAUSES = 64
_MAX_DEPTH = 4


def checked_metadata(metadata: Mapping[str, Any] | None, max_bytes: int, what: str) -> dict[str, Any]:
    """`metadata` as a plain JSON object, refused (`InvalidInput`) when it is not one, or larger
    than `max_bytes` as JSON (`InputTooLarge`, naming MEMLANE_MAX_METADATA_BYTES)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"the metadata of {what} is {type(metadata).__name__}; give a JSON object")
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInput(
            f"the metadata of {what} is not JSON ({error}); give strings, numbers, booleans, lists and objects"
        ) from None
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise InputTooLarge(
            f"the metadata of {what} is {size:,} bytes as JSON, more than MEMLANE_MAX_METADATA_BYTES ({max_bytes:,}); "
            "keep it to a few fields or raise the setting"
        )
    checked: dict[str, Any] = json.loads(text)  # the JSON of a mapping: an object
    return checked


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # C0 control characters and DEL


def _tag_value(value: Any) -> str | None:
    """One tag value as indexed and as filtered: strings as they are, numbers as JSON writes them,
    booleans as true / false; None for a value a tag cannot hold (an object, null, a nested list, a
    string with a control character: RediSearch answers a NUL in a query with a syntax error, and a
    filter on a tag holding any other never finds it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
        return json.dumps(value)
    if isinstance(value, str):
        return None if _CONTROL.search(value) else value
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def metadata_row(
    metadata: Mapping[str, Any], declared: Mapping[str, MetadataType], *, strict: bool = True
) -> dict[str, Any]:
    """The indexed hash fields of the declared keys of `metadata`: field → value, or None for a
    declared field the memory does not hold (the writer deletes it from the hash: a numeric field
    cannot be written empty). `strict`: a value its field's type cannot hold is refused
    (`InvalidInput`); else (re-indexing stored memories) it is left out."""
    row: dict[str, Any] = {}
    for name, kind in declared.items():
        value = metadata.get(name)
        indexed: Any = None
        if value is not None:
            if kind == "numeric":
                indexed = _number(value)
                problem = None if indexed is not None else "a number"
            else:
                values = [_tag_value(item) for item in (value if isinstance(value, list) else [value])]
                usable = [item for item in values if item]
                problem = None
                if any(item is None for item in values) or any(TAG_SEPARATOR in item for item in usable):
                    problem = "a string (no control characters), number or boolean, or a list of them"
                    usable = [item for item in usable if item is not None and TAG_SEPARATOR not in item]
                indexed = TAG_SEPARATOR.join(usable) or None
            if problem and strict:
                raise InvalidInput(
                    f"metadata {name!r} is declared {kind} in {SETTING} but holds "
                    f"{json.dumps(value, ensure_ascii=False)[:80]}; "
                    f"give {problem}"
                )
        row[metadata_field(name)] = indexed
    return row


def metadata_expression(
    metadata_filter: MetadataFilter | FilterExpression | None, declared: Mapping[str, MetadataType]
) -> FilterExpression | None:
    """The RedisVL filter of a metadata filter (None for none or an empty one); `InvalidInput` naming
    the field and what to change for a field not declared, an operator its type has not, or a value
    it cannot compare. A RedisVL filter expression is taken as it is (on `schema.metadata_field` names)."""
    if metadata_filter is None or isinstance(metadata_filter, FilterExpression):
        return metadata_filter
    counter = [0]
    return _expression(metadata_filter, declared, counter, depth=0)


def _expression(
    spec: Any, declared: Mapping[str, MetadataType], counter: list[int], depth: int
) -> FilterExpression | None:
    if not isinstance(spec, Mapping):
        raise InvalidInput(f'a metadata filter is a JSON object ({{"field": value}}), not {type(spec).__name__}')
    if depth > _MAX_DEPTH:
        raise InvalidInput(f"the metadata filter nests AND / OR more than {_MAX_DEPTH} deep; flatten it")
    clauses: list[FilterExpression] = []
    for key, value in spec.items():
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise InvalidInput(f"{key} in a metadata filter takes a non-empty list of filters")
            parts = [
                part for part in (_expression(item, declared, counter, depth + 1) for item in value) if part is not None
            ]
            if parts:
                clauses.append(_joined(parts, "&" if key == "AND" else "|"))
            continue
        clauses.append(_field_expression(str(key), value, declared, counter))
    return _joined(clauses, "&") if clauses else None


def _joined(parts: list[FilterExpression], operator: str) -> FilterExpression:
    joined = parts[0]
    for part in parts[1:]:
        joined = (joined & part) if operator == "&" else (joined | part)
    return joined


def _field_expression(
    name: str, condition: Any, declared: Mapping[str, MetadataType], counter: list[int]
) -> FilterExpression:
    kind = declared.get(name)
    if kind is None:
        known = ", ".join(f"{field} ({declared[field]})" for field in declared) or "none"
        raise InvalidInput(
            f"metadata {name!r} is not a declared field, so it cannot be filtered on; declare it in {SETTING}, "
            f'e.g. {{"{name}": "tag"}} (declared now: {known})'
        )
    operations = (
        condition if isinstance(condition, Mapping) else {"in" if isinstance(condition, list) else "eq": condition}
    )
    if not operations:
        raise InvalidInput(
            f"the filter on metadata {name!r} is an empty object; "
            f"give a value or an operator ({', '.join(_NUMERIC_OPERATORS)})"
        )
    allowed = _NUMERIC_OPERATORS if kind == "numeric" else _TAG_OPERATORS
    clauses = []
    for operator, value in operations.items():
        counter[0] += 1
        if counter[0] > _MAX_CLAUSES:
            raise InvalidInput(f"the metadata filter has more than {_MAX_CLAUSES} conditions; narrow it")
        if operator not in allowed:
            hint = " (ranges need a field declared numeric)" if operator in _NUMERIC_OPERATORS else ""
            raise InvalidInput(f"metadata {name!r} is a {kind} field: use {', '.join(allowed)}, not {operator!r}{hint}")
        clauses.append(_condition(name, kind, str(operator), value))
    return _joined(clauses, "&")


def _condition(name: str, kind: MetadataType, operator: str, value: Any) -> FilterExpression:
    field = metadata_field(name)
    if operator in ("in", "nin"):
        if not isinstance(value, list) or not value:
            raise InvalidInput(f"{operator} on metadata {name!r} takes a non-empty list of values")
        values = value
    else:
        values = [value]
    if kind == "numeric":
        numbers = [_number(item) for item in values]
        if any(number is None for number in numbers):
            raise InvalidInput(
                f"metadata {name!r} is a numeric field: compare it with numbers, "
                f"not {json.dumps(value, ensure_ascii=False)[:80]}"
            )
        field_num = Num(field)
        if operator == "gt":
            return field_num > numbers[0]
        if operator == "gte":
            return field_num >= numbers[0]
        if operator == "lt":
            return field_num < numbers[0]
        if operator == "lte":
            return field_num <= numbers[0]
        if operator == "ne":
            return field_num != numbers[0]
        if operator == "nin":
            return _joined([field_num != number for number in numbers], "&")
        return _joined([field_num == number for number in numbers], "|")
    tags = [_tag_value(item) for item in values]
    if any(not tag or TAG_SEPARATOR in tag for tag in tags):  # RedisVL reads an empty tag as "anything"
        raise InvalidInput(
            f"metadata {name!r} is a tag field: compare it with non-empty strings (no control characters), "
            f"numbers or booleans, not {json.dumps(value, ensure_ascii=False)[:80]}"
        )
    if operator == "ne":
        return Tag(field) != tags[0]
    if operator == "nin":
        return Tag(field) != tags
    return Tag(field) == tags if len(tags) > 1 else Tag(field) == tags[0]
