"""The index fields of a LangGraph store item (memlane/langgraph_store.py), as pure functions.

A search or a namespace listing of `MemlaneStore` is an index query over these, whatever owns the
items: its cost follows the items under the namespace asked for, not the store's size.

- `MemoryField.ITEM_PREFIXES`: a tag of every prefix of the item's namespace, the empty one too
  (which every item has: it says "a store item"), so `("a", "b")` selects what is under it;
- `MemoryField.ITEM_MATCH`: a tag of every string in the value at its dotted path, so that an
  equality filter (`{"tag": "red"}`, `{"nested": {"note": "x"}}`, `{"k": {"$eq": "v"}}`) is an
  index filter. Tags only narrow: the caller still checks LangGraph's own filter semantics on what
  comes back (and every filter that does not map is checked only there);
- `MemoryField.ITEM_NAMESPACE`: the namespace itself (hex of its JSON: tags sort lowercased),
  grouped by the listing of namespaces;
- `MemoryField.ITEM_UPDATED`: when the item was last written, the order of a search without query.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from memlane.store.schema import MemoryField

# which stored vectors come with the items a search finds: an index config's own rows ("own"), or the
# embedding of the item's search memory ("memlane"); the store protocol and its Redis part share this alias
VectorKind = Literal["own", "memlane"]
# an item with more strings than this is tagged `ANY_VALUE` instead: every equality filter selects it
MAX_VALUE_TAGS = 256
ANY_VALUE = "any"
_DIGEST_CHARS = 20


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:_DIGEST_CHARS]


def prefix_tag(prefix: Sequence[str]) -> str:
    """The tag of a namespace prefix (of the empty one: every item)."""
    return _digest("ns", json.dumps(list(prefix), ensure_ascii=False))


def namespace_tags(namespace: Sequence[str]) -> list[str]:
    return [prefix_tag(namespace[:depth]) for depth in range(len(namespace) + 1)]


def value_tag(path: str, text: str) -> str:
    """The tag of the string `text` at the dotted `path` of a value."""
    return _digest("eq", path, text)


def _strings(value: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    for name, inner in value.items():
        at = f"{path}.{name}" if path else str(name)
        if isinstance(inner, str):
            yield at, inner
        elif isinstance(inner, Mapping):
            yield from _strings(inner, at)


def value_tags(value: Mapping[str, Any]) -> list[str]:
    tags = sorted({value_tag(path, text) for path, text in _strings(value)})
    return tags if len(tags) <= MAX_VALUE_TAGS else [ANY_VALUE]


def filter_tags(filter: Mapping[str, Any] | None, path: str = "") -> list[str]:
    """The value tags an item must hold to pass `filter` (LangGraph's): one per equality with a string
    (plain, `$eq`, or inside a nested condition). Other conditions add none (checked by the caller)."""
    tags: list[str] = []
    for name, condition in (filter or {}).items():
        at = f"{path}.{name}" if path else str(name)
        if isinstance(condition, str):
            tags.append(value_tag(at, condition))
        elif isinstance(condition, Mapping):
            if any(str(key).startswith("$") for key in condition):
                operand = condition.get("$eq")
                if isinstance(operand, str):
                    tags.append(value_tag(at, operand))
            else:
                tags.extend(filter_tags(condition, at))
    return tags


def item_index_row(namespace: Sequence[str], value: Mapping[str, Any], updated_at: float) -> dict[str, str]:
    """The index fields of an item, as written to its hash."""
    return {
        MemoryField.ITEM_PREFIXES: ",".join(namespace_tags(namespace)),
        MemoryField.ITEM_MATCH: ",".join(value_tags(value)),
        MemoryField.ITEM_NAMESPACE: namespace_hex(namespace),
        MemoryField.ITEM_UPDATED: repr(float(updated_at)),
    }


def namespace_hex(namespace: Sequence[str]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False).encode("utf-8").hex()


def namespace_of_hex(text: str) -> tuple[str, ...]:
    return tuple(json.loads(bytes.fromhex(text).decode("utf-8")))
