"""Ids and the text rules records are held to: deterministic ids (at-least-once delivery must not
duplicate), the id of each search memory that mirrors a record, and the cleaning every stored
text gets."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache

from memlane.store.errors import InvalidInput


def stable_id(*parts: str) -> str:
    """A deterministic id from content parts: at-least-once delivery must not duplicate."""
    digest = hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:32]


def now() -> float:
    return time.time()


def clean_text(value: str) -> str:
    """`value` safe to store, embed and send to a model: NUL bytes dropped, each lone UTF-16
    surrogate ("\\ud800") replaced by U+FFFD (a pair of surrogates is joined into the character
    it encodes)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    if value.isascii():
        return value
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_SCOPE_MARKS = "\x1e\x1f"  # store/scopes.py's SCOPE_MARK and SHARED_USER_ID's first character


def check_id(value: str, what: str = "an id", *, user: bool = False) -> str:
    """`value` as it is, or `InvalidInput` when it holds a control character (\\x00-\\x1f, \\x7f)
    or a lone surrogate. Ids are used as given, never cleaned: a changed id could name another
    record, or another user. A NUL made RediSearch fail (a 500), any other control character was
    kept in an id no filter could match, a tab or a newline in an id no one could type again.
    user: a store user id, which may hold the marks the store itself puts there (\\x1e, \\x1f:
    store/scopes.py); the doors refuse them in the user ids callers give."""
    if "\x00" in value:
        raise InvalidInput(f"{what} holds a NUL byte (\\x00); ids are used as given, so remove it")
    if not value.isprintable():
        allowed = _SCOPE_MARKS if user else ""
        if control := next((c for c in value if (c < " " or c == "\x7f") and c not in allowed), None):
            raise InvalidInput(f"{what} holds a control character ({control!r}); ids are used as given, so remove it")
    if not value.isascii() and any("\ud800" <= char <= "\udfff" for char in value):
        raise InvalidInput(f"{what} holds a lone UTF-16 surrogate; ids must be valid Unicode text")
    return value


# the moments a date can be told of in any time zone (Python's years 1 to 9999, a day inside)
EARLIEST_MOMENT = -62_135_596_800.0 + 86_400
LATEST_MOMENT = 253_402_300_799.0 - 86_400


def check_moment(value: float, what: str) -> float:
    """`value`, a Unix time in seconds, or `InvalidInput` when no date can be told of it (NaN, an
    infinity, 1e308): its day was read when it was indexed, an OverflowError (a 500) after the checks."""
    if not EARLIEST_MOMENT <= value <= LATEST_MOMENT:
        raise InvalidInput(f"{what} {value!r} is no moment: send a Unix time in seconds, between the years 1 and 9999")
    return value


# a profile topic or subtopic a caller names (the API, a tool, MCP): the memory graph's own may be longer
PROFILE_SLOT_MAX_CHARS = 64


def check_slot(value: str) -> str:
    """A profile topic or subtopic a caller names, as it is: 1-64 characters of text, or
    `InvalidInput` (a NUL byte, a lone surrogate, only spaces, or longer). The same rule at every
    door: a tool or MCP caller's NUL topic raised an unexpected error there, and a topic of 5,000
    characters was kept, where the API answered 422 for both."""
    check_id(value, "the topic or subtopic")
    if not value.strip():
        raise InvalidInput("the topic or subtopic must hold some text, not only spaces")
    if len(value) > PROFILE_SLOT_MAX_CHARS:
        raise InvalidInput(f"a topic or subtopic of {len(value)} characters: at most {PROFILE_SLOT_MAX_CHARS}")
    return value


def normalize_slot(text: str) -> str:
    """Topic/subtopic key: case and surrounding space do not make a new slot."""
    return " ".join(text.strip().lower().split())


@lru_cache(maxsize=8192)
def profile_entry_id(user_id: str, topic: str, subtopic: str) -> str:
    """Kept for the latest 8,192 slots: a profile's ids are asked again at every recall (150 a
    recall of 30 entries, 1.5 ms of its time before)."""
    return stable_id("profile", user_id, normalize_slot(topic), normalize_slot(subtopic))


def profile_memory_id(entry_id: str) -> str:
    """Id of the search memory that mirrors a profile entry (deleted with the entry)."""
    return f"profile:{entry_id}"


def past_value_memory_id(entry_id: str, content: str) -> str:
    """Id of the search memory that keeps one past value of a profile entry ("where did I live
    before?"); under the entry's `profile_memory_id`, so deleting the entry's memories by that
    prefix takes its past values too."""
    return f"{profile_memory_id(entry_id)}:earlier:{stable_id(content)}"


def event_memory_id(event_id: str) -> str:
    return f"event:{event_id}"


def message_memory_id(message_id: str) -> str:
    return f"message:{message_id}"


ITEM_MEMORY_PREFIX = "item:"


def item_memory_id(namespace: Sequence[str], key: str) -> str:
    """Id of the search memory that keeps a LangGraph store item (memlane/langgraph_store.py)."""
    return ITEM_MEMORY_PREFIX + stable_id("item", json.dumps([list(namespace), key], ensure_ascii=False))


# the latest epoch second a datetime can hold (9999-12-31): a larger number is milliseconds or nonsense
_LAST_SECOND = 253_402_300_799.0


def expiry_time(value: object, *, at: float | None = None) -> float | None:
    """A memory's `expires_at` as epoch seconds, from epoch seconds (a number or its digits) or an ISO
    8601 date or datetime (a naive one read as UTC); None for None or "". Anything else, a time in the
    past, or milliseconds: `InvalidInput` saying what was sent and what to send."""
    if value is None or value == "":
        return None
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."  # never a megabyte echoed back
    seconds: float | None = None
    if isinstance(value, datetime):
        seconds = (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                seconds = None
            else:
                seconds = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise InvalidInput(
            f"expires_at must be epoch seconds or an ISO 8601 datetime (2027-01-31T18:00:00Z), not {shown}"
        )
    if seconds > _LAST_SECOND:
        raise InvalidInput(f"expires_at {shown} is past the year 9999: send seconds, not milliseconds")
    if seconds <= (time.time() if at is None else at):
        raise InvalidInput(f"expires_at {shown} is in the past: a memory that has expired is not stored")
    return seconds


def expired(expires_at: float | None, at: float | None = None) -> bool:
    """Whether a record with this `expires_at` has expired (at `at`, default now)."""
    return expires_at is not None and expires_at <= (time.time() if at is None else at)
