"""Past conversations brought in whole (`memlane import FILE`, and the service's messages route):
a file read into messages, stored idempotently, then remembered in windows, oldest first.

Three shapes are read, each message with its time and speaker where the file has them:

- JSONL, one message a line: `{"role", "content", "id"?, "session_id"?, "name"?, "created_at"?}`
  (`created_at`: epoch seconds or an ISO 8601 time; `timestamp` is read too);
- an OpenAI `messages` list, as a JSON list or `{"messages": [...]}` (text parts of a content
  list are joined);
- a LoCoMo-style sessions file: `{"sessions": [{"session", "date_time", "turns": [{"id",
  "speaker", "text"}]}]}`, every turn a line of its named speaker, timed at its session's date
  (one second apart).

A message without an id gets one from its place and content, so importing the same file twice
stores each message once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane.store.errors import InvalidInput
from memlane.store.ids import check_id, now, stable_id
from memlane.store.protocols import HistoryStore, MemoryStore
from memlane.store.records import Message

IMPORT_BATCH = 200  # messages stored (and embedded) per call
_ROLES = ("user", "assistant", "system", "tool")
_LOCOMO_TIME_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


def read_messages(text: str, user_id: str, *, session_id: str = "import", source: str = "") -> list[Message]:
    """The messages of an export in any of the three shapes (module docstring), oldest first.

    Raises InvalidInput naming the line or entry that cannot be read.
    """
    stripped = text.strip()
    if not stripped:
        return []
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError:
        return _ordered([_message(row, place, user_id, session_id, source) for place, row in _jsonl_rows(stripped)])
    return messages_of(document, user_id, session_id=session_id, source=source)


def messages_of(document: Any, user_id: str, *, session_id: str = "import", source: str = "") -> list[Message]:
    """The messages of one parsed JSON document: an OpenAI messages list (or `{"messages": [...]}`),
    a LoCoMo-style `{"sessions": [...]}`, or one message; oldest first."""
    raw: list[tuple[int | str, Any]]  # (where in the file, the message as given)
    if isinstance(document, dict) and isinstance(document.get("sessions"), list):
        raw = list(_locomo_rows(document["sessions"]))
    elif isinstance(document, dict) and isinstance(document.get("messages"), list):
        raw = list(enumerate(document["messages"]))
    elif isinstance(document, list):
        raw = list(enumerate(document))
    elif isinstance(document, dict) and "content" in document:
        raw = [(0, document)]
    else:
        raise InvalidInput(
            "no messages found: give JSONL (one message a line), an OpenAI messages list, "
            "or a LoCoMo-style sessions file"
        )
    return _ordered([_message(row, place, user_id, session_id, source) for place, row in raw])


def _ordered(messages: list[Message]) -> list[Message]:
    """Oldest first; messages without a time keep the file's order, a microsecond apart, now."""
    untimed = now()
    timed = [
        message if message.created_at > 0 else message.model_copy(update={"created_at": untimed + index * 1e-6})
        for index, message in enumerate(messages)
    ]
    return sorted(timed, key=lambda message: message.created_at)


def _jsonl_rows(text: str) -> Iterable[tuple[int, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidInput(
                f"line {number} is not JSON ({error.msg}); give JSONL (one message a line), an OpenAI "
                "messages list, or a LoCoMo-style sessions file"
            ) from None


def _locomo_rows(sessions: Sequence[Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for number, session in enumerate(sessions, start=1):
        if not isinstance(session, dict) or not isinstance(session.get("turns"), list):
            raise InvalidInput(f"session {number} has no list of turns")
        name = str(session.get("session") or f"session_{number}")
        start = _parse_time(session.get("date_time"), f"session {name}'s date_time")
        for index, turn in enumerate(session["turns"]):
            if not isinstance(turn, dict):
                raise InvalidInput(f"turn {index + 1} of session {name} is not an object")
            yield (
                f"{name}:{index}",
                {
                    "id": turn.get("id"),
                    "session_id": name,
                    "role": "user",
                    "name": turn.get("speaker"),
                    "content": turn.get("text", ""),
                    "created_at": start + index if start else None,
                },
            )


def _message(row: Any, place: Any, user_id: str, session_id: str, source: str) -> Message:
    where = f"message {place}"
    if not isinstance(row, dict):
        raise InvalidInput(f"{where} is not an object with a role and a content")
    role = row.get("role", "user")
    if role not in _ROLES:
        raise InvalidInput(f"{where} has the role {role!r}; use one of {', '.join(_ROLES)}")
    content = _text(row.get("content"), where)
    session = str(row.get("session_id") or session_id)
    name = row.get("name") or row.get("speaker")
    created = row.get("created_at", row.get("timestamp"))
    check_id(session, f"{where}'s session_id")  # a bad id is the caller's to fix: InvalidInput, never a 500
    message_id = row.get("id")
    if not message_id:
        message_id = stable_id("import", source, session, str(place), role, str(name or ""), content)
    return Message(
        id=check_id(str(message_id), f"{where}'s id"),
        user_id=user_id,
        session_id=session,
        role=role,
        content=content,
        name=str(name) if name else None,
        created_at=_parse_time(created, f"{where}'s time") or 0.0,
        metadata=_metadata(row.get("metadata"), where),
    )


def _metadata(metadata: Any, where: str) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput(f'{where} has metadata that is not a JSON object; give {{"key": value, ...}}')
    return metadata


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: the text ones
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    if content is None:
        return ""
    raise InvalidInput(f"{where} has a content that is neither text nor a list of parts")


def _parse_time(value: Any, what: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
        for pattern in _LOCOMO_TIME_FORMATS:
            try:
                parsed = datetime.strptime(text, pattern)
                break
            except ValueError:
                continue
    if parsed is None:
        raise InvalidInput(f"{what} {text!r} is not a time: give epoch seconds, ISO 8601, or '1:56 pm on 8 May, 2023'")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


async def store_messages(
    store: HistoryStore, messages: Sequence[Message], *, progress: Callable[[int], None] | None = None
) -> int:
    """Store `messages` in order, `IMPORT_BATCH` at a time (each batch embedded in one call);
    ids already stored are skipped. Returns how many were new; `progress(n)` after each batch."""
    added = 0
    for start in range(0, len(messages), IMPORT_BATCH):
        batch = messages[start : start + IMPORT_BATCH]
        added += len(await store.add_messages(batch))
        if progress is not None:
            progress(len(batch))
    return added


def read_file(path: Path, user_id: str, *, session_id: str = "import") -> list[Message]:
    """`read_messages` of a file (UTF-8)."""
    return read_messages(path.read_text(encoding="utf-8"), user_id, session_id=session_id, source=path.name)


async def import_messages(
    store: MemoryStore,
    user_id: str,
    messages: Sequence[Message],
    *,
    context: Any = None,
    stored: Callable[[int], None] | None = None,
    windows: Callable[[int, int], None] | None = None,
) -> tuple[int, Any]:
    """Store the messages, then, with a memory `context` (`MemoryContext`), remember the user's
    whole unprocessed buffer in windows, oldest first (`run_memory_graph`).

    stored(n): after each stored batch. windows(done, total): as each window starts and ends.
    Returns (messages new to the store, the run's `MemoryRunResult` or None without a context).
    """
    added = await store_messages(store, messages, progress=stored)
    if context is None:
        return added, None
    from memlane.graph import run_memory_graph
    from memlane.nodes.truncate import input_windows

    total = len(
        input_windows(
            await store.unprocessed_messages(user_id),
            context.graph.max_input_tokens,
            context.store_part.token_encoding,
        )
    )
    done = 0

    async def on_step(step: Any) -> None:
        nonlocal done
        if step.step == "truncate" and step.finished:
            done += 1
        if windows is not None:
            windows(done, total)

    return added, await run_memory_graph(user_id, context, on_step=on_step if windows else None)
