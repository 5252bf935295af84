"""The rules of LangGraph's `BaseStore` contract that `MemlaneStore` keeps, as pure functions over
plain data (no Redis): which user a namespace belongs to, filters, namespace matching and listing,
what an item is embedded by, and how query hits are scored, ranked and paged.

The reference is LangGraph's `InMemoryStore`; tests/test_langgraph_differential.py runs the same
random operations on both and compares the answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np
from langgraph.store.base import InvalidNamespaceError, MatchCondition, get_text_at_path, tokenize_path

Namespace = tuple[str, ...]
Distance = Literal["cosine", "inner_product", "l2"]
T = TypeVar("T")

# the owner of every item whose namespace maps to no user: stored and found like any other item,
# in no user's export, panel or recall. Not a user id a caller can name (`UserMapping` refuses it)
NO_USER = "langgraph-store:no-user"
logger = logging.getLogger(__name__)
# distinct labels before the user's position under one user that say the position is likely wrong:
# ("alice", "memories"), ("bob", "memories"), ("carol", "memories") with user_of=1 make one user "memories"
_MIXED_PREFIXES = 3

# fields whose text stands for the whole value in memlane's own item text: LangMem stores {"content": ...}
_PLAIN_FIELDS = ("content", "text", "memory")


# which user a namespace belongs to ------------------------------------------------------------
@dataclass(frozen=True)
class FromConfig:
    """The user is the calling run's `config["configurable"][key]` (LangGraph's `get_config()`),
    whatever the namespace: every namespace is then the caller's own. Outside a run: no user."""

    key: str = "user_id"

    def current_user(self) -> str | None:
        from langgraph.config import get_config

        try:
            user = get_config().get("configurable", {}).get(self.key)
        except RuntimeError:  # not inside a runnable
            return None
        return str(user) if user not in (None, "") else None


UserOf = int | Callable[[Namespace], "str | None"] | FromConfig | Literal["config"] | None


@dataclass(frozen=True)
class UserMapping:
    """Which memlane user owns an item, from `MemlaneStore(user_of=...)`:

    - None (the default): no namespace belongs to a user; items behave as in InMemoryStore and
      belong to no user's export, panel or recall;
    - an int: the label at that position is the user (`1` for `("memories", user_id)`, `0` for
      LangGraph's docs' `(user_id, "memories")`); a shorter namespace belongs to no user;
    - a callable `namespace -> user_id | None`;
    - `"config"` or `FromConfig(key)`: the calling run's `configurable` user id.
    """

    user_of: UserOf = None
    # per user (an int user_of): the distinct label tuples seen before its position, until it warns
    _prefixes_seen: dict[str, set[Namespace]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        user_of = self.user_of
        if user_of == "config":
            object.__setattr__(self, "user_of", FromConfig())
        elif isinstance(user_of, bool) or not (
            user_of is None or isinstance(user_of, (int, FromConfig)) or callable(user_of)
        ):
            raise TypeError(
                f"user_of={user_of!r}: give a label position (1 for ('memories', user_id)), a callable "
                "namespace -> user id, 'config' (config['configurable']['user_id']) or None"
            )
        elif isinstance(user_of, int) and user_of < 0:
            raise ValueError(f"user_of={user_of}: a label position counts from 0")

    def context_user(self) -> str | None:
        """The caller's user when users come from the run's config (read in the caller's thread)."""
        return self.user_of.current_user() if isinstance(self.user_of, FromConfig) else None

    def owner(self, namespace: Namespace, context_user: str | None = None) -> str:
        """The owner of an item in `namespace`: a user id, or `NO_USER`."""
        user_of = self.user_of
        if user_of is None:
            user = None
        elif isinstance(user_of, FromConfig):
            user = context_user
        elif isinstance(user_of, int):
            user = namespace[user_of] if len(namespace) > user_of else None
            if user and user_of > 0:
                self._watch_mixing(namespace, user_of, user)
        elif callable(user_of):
            user = user_of(namespace)
        else:  # "config", which __post_init__ turned into FromConfig()
            user = context_user
        if user is None or user == "":
            return NO_USER
        if not isinstance(user, str):
            raise InvalidNamespaceError(f"user_of gave {user!r} for {namespace}: a user id is a string")
        if user == NO_USER:
            raise InvalidNamespaceError(f"{NO_USER!r} is reserved for items of no user; {namespace} cannot use it")
        return user

    def _watch_mixing(self, namespace: Namespace, position: int, user: str) -> None:
        """Warn once per user when the labels before the user's position keep changing under one
        user (issue 50, item 9): `user_of=1` over LangGraph's documented `(user_id, "memories")`
        makes every user the one user "memories", their items mixed in one export and search."""
        seen = self._prefixes_seen.get(user)
        if seen is None:
            if len(self._prefixes_seen) >= 10_000:  # bounded: a long-lived store meets many users
                return
            seen = self._prefixes_seen[user] = set()
        elif len(seen) >= _MIXED_PREFIXES:  # warned already
            return
        seen.add(tuple(namespace[:position]))
        if len(seen) == _MIXED_PREFIXES:
            examples = ", ".join(repr((*prefix, user)) for prefix in sorted(seen))
            logger.warning(
                "MemlaneStore(user_of=%d) puts the items of %s under one memlane user, %r: their exports, "
                "searches and recall mix them. If each namespace's user is an earlier label (LangGraph's "
                "docs' (user_id, 'memories') is user_of=0), pass that position; if %r really is one user, "
                "ignore this.",
                position,
                examples,
                user,
                user,
            )

    def prefix_owner(self, prefix: Namespace, context_user: str | None = None) -> str | None:
        """The one owner every namespace under `prefix` has, or None when it may be any owner."""
        user_of = self.user_of
        if user_of is None:
            return NO_USER
        if isinstance(user_of, FromConfig):
            return context_user or NO_USER
        if isinstance(user_of, int) and len(prefix) > user_of and prefix[user_of] != "*":
            return self.owner(prefix, context_user)
        return None

    def conditions_owner(self, conditions: Sequence[MatchCondition], context_user: str | None = None) -> str | None:
        """`prefix_owner` of the first prefix condition that pins one owner, or None."""
        for condition in conditions:
            if condition.match_type == "prefix":
                owner = self.prefix_owner(tuple(condition.path), context_user)
                if owner is not None:
                    return owner
        return self.prefix_owner((), context_user)


# filters --------------------------------------------------------------------------------------
def filter_value(value: dict[str, Any], key: str) -> Any:
    """`value[key]`; a key absent as written whose dots name a nested path (`"user.access-level"`)
    reads that path, as the SQL stores do."""
    if key in value or "." not in key:
        return value.get(key)
    inner: Any = value
    for part in key.split("."):
        if not isinstance(inner, dict) or part not in inner:
            return None
        inner = inner[part]
    return inner


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item's value passes a search filter (every key must match)."""
    return not filter or all(matches_filter(filter_value(value, key), condition) for key, condition in filter.items())


def matches_filter(value: Any, condition: Any) -> bool:
    """LangGraph's filter semantics (as InMemoryStore): exact match, nested dicts, $eq $ne $gt $gte $lt $lte."""
    if isinstance(condition, dict):
        if any(name.startswith("$") for name in condition):
            return all(_compare(value, operator, operand) for operator, operand in condition.items())
        return isinstance(value, dict) and all(matches_filter(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(condition)
            and all(matches_filter(v, c) for v, c in zip(value, condition))
        )
    return bool(value == condition)


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {operator!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # InMemoryStore raises here; the SQL stores leave the item out, and so do we
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]


# namespaces -----------------------------------------------------------------------------------
def under(namespace: Namespace, prefix: Namespace) -> bool:
    """Whether `namespace` is `prefix` or below it (labels compared as written: no wildcards in a search)."""
    return namespace[: len(prefix)] == prefix


def namespace_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"unsupported match type {condition.match_type!r}: use 'prefix' or 'suffix'")
    return all(label == "*" or label == part for part, label in pairs)


def select_namespaces(
    namespaces: Iterable[Namespace],
    conditions: Sequence[MatchCondition],
    max_depth: int | None,
    offset: int,
    limit: int,
) -> list[Namespace]:
    """`list_namespaces`: those matching every condition, cut to `max_depth`, sorted, paged."""
    kept = {ns for ns in namespaces if all(namespace_matches(c, ns) for c in conditions)}
    if max_depth is not None:
        kept = {ns[:max_depth] for ns in kept}
    return sorted(kept)[offset : offset + limit]


# what an item is embedded by --------------------------------------------------------------------
def item_text(value: dict[str, Any], paths: Sequence[str] | None = None) -> str:
    """memlane's own text of an item (its search memory, recall): the text at `paths`, or every
    string in the value (`{"content": ...}` gives just the content, other fields `field: value`)."""
    if paths is not None:
        texts = [text for path in paths for text in get_text_at_path(value, tokenize_path(path))]
    else:
        texts = list(_value_lines(value))
    text = "\n".join(text for text in texts if text.strip())
    return text or (json.dumps(value, ensure_ascii=False) if value and paths is None else "")


def _value_lines(value: Any, field: str | None = None) -> Iterator[str]:
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _value_lines(inner, str(name))
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _value_lines(inner, field)
    elif isinstance(value, str):
        yield value if field is None or field in _PLAIN_FIELDS else f"{field}: {value}"


def path_texts(value: dict[str, Any], paths: Sequence[str]) -> list[str]:
    """The texts a LangGraph index config embeds for an item, one vector each: every text at
    every path ("$" is the whole value as JSON), as InMemoryStore reads them."""
    return [text for path in paths for text in get_text_at_path(value, path if path == "$" else tokenize_path(path))]


# scores -----------------------------------------------------------------------------------------
def similarities(query: np.ndarray, vectors: np.ndarray, distance: Distance = "cosine") -> np.ndarray:
    """Each row's similarity to the query as LangGraph's stores report it (higher is closer):
    cosine similarity, the inner product, or the negated Euclidean distance."""
    scores: np.ndarray  # numpy's stubs type these operations' results as Any
    if distance == "inner_product":
        scores = vectors @ query
    elif distance == "l2":
        scores = -np.linalg.norm(vectors - query, axis=1)
    else:
        norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
        scores = np.divide(vectors @ query, norms, out=np.zeros(len(vectors)), where=norms != 0)
    return scores


def rank_page(
    candidates: Sequence[tuple[T, np.ndarray | None]],
    query: np.ndarray,
    distance: Distance,
    offset: int,
    limit: int,
) -> list[tuple[T, float | None]]:
    """A page of query hits: candidates with vectors by their best row's similarity (max pooling,
    ties in candidate order), then those without a vector, unscored. Pages partition that one list
    (InMemoryStore repeats the unscored ones on every page)."""
    scored: list[tuple[float, int, T]] = []
    unscored: list[T] = []
    for position, (candidate, vectors) in enumerate(candidates):
        if vectors is None or not len(vectors):
            unscored.append(candidate)
        else:
            scored.append((float(similarities(query, vectors, distance).max()), position, candidate))
    scored.sort(key=lambda hit: (-hit[0], hit[1]))
    ranked: list[tuple[T, float | None]] = [(candidate, score) for score, _, candidate in scored]
    ranked.extend((candidate, None) for candidate in unscored)
    return ranked[offset : offset + limit]


def vector_rows(raw: bytes | None, dims: int) -> np.ndarray | None:
    """Stored float32 rows (`put_items(vectors=...)`, or a memory's embedding) as a matrix."""
    if not raw:
        return None
    rows = np.frombuffer(raw, dtype=np.float32)
    return rows.reshape(-1, dims) if dims and rows.size % dims == 0 else rows.reshape(1, -1)


def vector_bytes(vectors: Sequence[Sequence[float]]) -> bytes:
    return np.asarray(vectors, dtype=np.float32).tobytes()
