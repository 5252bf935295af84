"""Past conversations brought in whole (`memlane import FILE`, and the service's messages route):
a file read into messages, stored idempotently, then remembered in windows, oldest first.

These shapes are read, each message with its time and speaker where the file has them:

- JSONL, one message a line: `{"role", "content", "id"?, "session_id"?, "name"?, "created_at"?}`
  (`created_at`: epoch seconds or an ISO 8601 time; `timestamp` and `time` are read too; a
  speaker-named history's `{"speaker", "text"}` reads as a `user` line of that speaker);
- an OpenAI `messages` list, as a JSON list or `{"messages": [...]}` (text parts of a content
  list are joined);
- a LoCoMo-style sessions file: `{"sessions": [{"session", "date_time", "turns": [{"id",
  "speaker", "text"}]}]}`, every turn a line of its named speaker, timed at its session's date
  (one second apart);
- LoCoMo's own layout (the release's `locomo10.json`): one `{"sample_id", "conversation":
  {"speaker_a", "speaker_b", "session_1_date_time", "session_1": [{"speaker", "dia_id", "text"}],
  ...}}` or a list of them (each conversation's sessions then named `<sample_id>_session_<n>`).

`user_speaker` names the user among a file's speakers: that speaker's lines are the user's own,
every other named speaker is someone the user talks to (`speaker_role` "other", the name kept).

A message without an id gets one from what it is: its user, session, role, speaker, time (as the
file gives it) and text, and how many identical messages came before it in its session. Neither
the file's name nor a line number goes in, so importing any overlapping export again (a file
that has grown, an export of the last month after one of the whole year) stores only what is
new. (Lines the file gives no time with are told apart by their text and repeats alone: two
exports that cut one session at different places may see its repeated short lines, an "ok"
said twice, as one.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, MutableMapping, Sequence
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
_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_SHAPES = "give JSONL (one message a line), an OpenAI messages list, LoCoMo sessions or LoCoMo's own layout"


def read_messages(
    text: str, user_id: str, *, session_id: str = "import", user_speaker: str | None = None
) -> list[Message]:
    """The messages of an export in any of the shapes of the module docstring, oldest first.

    Raises InvalidInput naming the line or entry that cannot be read and what to fix.
    """
    stripped = text.strip()
    if not stripped:
        return []
    skipped_lines = text[: len(text) - len(text.lstrip())].count("\n")  # blank lines before the first
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError as error:
        first_line = stripped.split("\n", 1)[0]
        if error.lineno > 1 and not _is_json(first_line):  # one JSON document, broken: where
            raise InvalidInput(
                f"line {error.lineno + skipped_lines} is not JSON ({error.msg} at column {error.colno}); {_SHAPES}"
            ) from None
        return _messages(_jsonl_rows(stripped, skipped_lines), user_id, session_id, user_speaker)
    try:
        return messages_of(document, user_id, session_id=session_id, user_speaker=user_speaker)
    except InvalidInput as error:
        where = _where_in(stripped, str(error))
        if where is None:
            raise
        raise InvalidInput(f"line {stripped.count(chr(10), 0, where) + 1 + skipped_lines}, {error}") from None


def _where_in(text: str, error: str) -> int | None:
    """Where in a JSON document the entry an error names starts: a message of its list by its
    place, a LoCoMo turn by its id (its first mention); None when it cannot be told."""
    if entry := re.match(r"message (\d+)", error):
        offsets = _entry_offsets(text)
        return offsets[int(entry.group(1))] if offsets and int(entry.group(1)) < len(offsets) else None
    if turn := re.match(r"session .*?, turn \d+ \((.+?)\)", error):
        found = text.find(json.dumps(turn.group(1)))
        return found if found >= 0 else None
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _entry_offsets(text: str) -> list[int] | None:
    """Where each entry of a JSON document's message list starts (a list, or `{"messages": [...]}`),
    to name an entry's line; None when the list cannot be found."""
    if text.startswith("["):
        position = 1
    elif match := re.match(r'\{\s*"messages"\s*:\s*\[', text):
        position = match.end()
    else:
        return None
    decoder, offsets = json.JSONDecoder(), list[int]()
    try:
        while True:
            while text[position] in " \t\r\n,":
                position += 1
            if text[position] == "]":
                return offsets
            offsets.append(position)
            _, position = decoder.raw_decode(text, position)
    except (ValueError, IndexError):
        return None


def messages_of(
    document: Any, user_id: str, *, session_id: str = "import", user_speaker: str | None = None
) -> list[Message]:
    """The messages of one parsed JSON document: an OpenAI messages list (or `{"messages": [...]}`),
    LoCoMo sessions, LoCoMo's own layout, or one message; oldest first."""
    raw: Iterable[tuple[str, Any]]  # (where in the file, the message as given)
    if isinstance(document, dict) and isinstance(document.get("sessions"), list):
        raw = _locomo_rows(document["sessions"])
    elif isinstance(document, dict) and isinstance(document.get("conversation"), dict):
        raw = _locomo_rows(_locomo_sessions(document, ""))
    elif (
        isinstance(document, list)
        and document
        and all(isinstance(sample, dict) and isinstance(sample.get("conversation"), dict) for sample in document)
    ):
        raw = _locomo_rows(
            [session for number, sample in enumerate(document, start=1) for session in _locomo_sessions(sample, number)]
        )
    elif isinstance(document, dict) and isinstance(document.get("messages"), list):
        raw = ((f"message {place}", row) for place, row in enumerate(document["messages"]))
    elif isinstance(document, list):
        raw = ((f"message {place}", row) for place, row in enumerate(document))
    elif isinstance(document, dict) and ("content" in document or "text" in document):
        raw = [("message 0", document)]
    else:
        raise InvalidInput(f"no messages found; {_SHAPES}")
    return _messages(raw, user_id, session_id, user_speaker)


def _messages(raw: Iterable[tuple[str, Any]], user_id: str, session_id: str, user_speaker: str | None) -> list[Message]:
    repeats: Counter[tuple[str, ...]] = Counter()  # identical messages of a session seen so far
    messages = [read_message(row, where, user_id, session_id, user_speaker, repeats) for where, row in raw]
    if user_speaker is not None and messages and not any(message.name == user_speaker for message in messages):
        speakers = sorted({message.name for message in messages if message.name})
        raise InvalidInput(
            f"the user speaker {user_speaker!r} says nothing here; name one of its speakers "
            f"({', '.join(map(repr, speakers)) or 'it names none'})"
        )
    return _ordered(messages)


def _ordered(messages: list[Message]) -> list[Message]:
    """Oldest first; messages without a time keep the file's order, a microsecond apart, now."""
    untimed = now()
    timed = [
        message if message.created_at > 0 else message.model_copy(update={"created_at": untimed + index * 1e-6})
        for index, message in enumerate(messages)
    ]
    return sorted(timed, key=lambda message: message.created_at)


def _jsonl_rows(text: str, skipped_lines: int = 0) -> Iterable[tuple[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1 + skipped_lines):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidInput(f"line {number} is not JSON ({error.msg} at column {error.colno}); {_SHAPES}") from None


def _locomo_sessions(sample: dict[str, Any], number: int | str) -> list[dict[str, Any]]:
    """LoCoMo's own layout, one conversation (`sample_id`, `conversation` with `session_<n>` lists
    and their `session_<n>_date_time`), as LoCoMo sessions; named after the sample when the file
    holds several (`number` is its place then)."""
    conversation = sample["conversation"]
    prefix = f"{sample.get('sample_id') or f'conversation_{number}'}_" if number else ""
    found = sorted(
        (int(match.group(1)), key)
        for key in conversation
        if (match := _LOCOMO_SESSION.fullmatch(key)) and isinstance(conversation[key], list)
    )
    if not found:
        raise InvalidInput(
            f"conversation {sample.get('sample_id') or number or ''} has no session_<n> list of turns; "
            'LoCoMo\'s layout is {"conversation": {"session_1": [{"speaker", "dia_id", "text"}], ...}}'
        )
    return [
        {
            "session": f"{prefix}{key}",
            "date_time": conversation.get(f"{key}_date_time"),
            "turns": [
                {**turn, "id": turn.get("dia_id", turn.get("id"))} if isinstance(turn, dict) else turn
                for turn in conversation[key]
            ],
        }
        for _, key in found
    ]


def _locomo_rows(sessions: Sequence[Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for number, session in enumerate(sessions, start=1):
        if not isinstance(session, dict) or not isinstance(session.get("turns"), list):
            raise InvalidInput(f'session {number} has no list of turns; give it "turns": [{{"speaker", "text"}}, ...]')
        name = str(session.get("session") or f"session_{number}")
        start = _parse_time(session.get("date_time"), f"session {name}'s date_time")
        for index, turn in enumerate(session["turns"]):
            turn_id = turn.get("id") if isinstance(turn, dict) else None
            where = f"session {name}, turn {index + 1}" + (f" ({turn_id})" if turn_id else "")
            if not isinstance(turn, dict):
                raise InvalidInput(f'{where} is not an object; give {{"speaker", "text"}}')
            yield (
                where,
                {
                    "session_id": name,
                    "role": "user",
                    "name": turn.get("speaker"),
                    "content": turn.get("text", ""),
                    "created_at": start + index if start else None,
                    "metadata": {"turn_id": str(turn_id)} if turn_id else None,
                },
            )


def content_id(user_id: str, session_id: str, role: str, speaker: str, time: str, text: str, repeat: int) -> str:
    """A message's id from what it is (the module docstring): the same message in any export of
    the conversation gets the same id; `repeat` counts identical ones before it in its session."""
    return stable_id("import", user_id, session_id, role, speaker, time, text, str(repeat))


def read_message(
    row: Any,
    where: str,
    user_id: str,
    session_id: str,
    user_speaker: str | None,
    repeats: MutableMapping[Any, int],
) -> Message:
    """One message of an export (`row`, found at `where`); `repeats` counts the identical ones before it."""
    if not isinstance(row, dict):
        raise InvalidInput(f'{where} is not an object; give {{"role", "content"}} or {{"speaker", "text"}}')
    role = row.get("role", "user")
    if role not in _ROLES:
        raise InvalidInput(
            f"{where} has the role {role!r}; use one of {', '.join(_ROLES)} "
            '(a person\'s name goes in "name" or "speaker", with the role user)'
        )
    content = _text(row.get("content", row.get("text")), where)
    session = str(row.get("session_id") or session_id)
    name = row.get("name") or row.get("speaker")
    name = str(name) if name else None
    given_time = row.get("created_at", row.get("timestamp", row.get("time")))
    check_id(session, f"{where}'s session_id")  # a bad id is the caller's to fix: InvalidInput, never a 500
    created_at = _parse_time(given_time, f"{where}'s time") or 0.0
    message_id = row.get("id")
    if not message_id:
        what = (session, role, name or "", repr(created_at) if created_at else "", content)
        message_id = content_id(user_id, *what, repeats[what])
        repeats[what] += 1
    speaker_is_owner = None
    if user_speaker is not None and name and role == "user":
        speaker_is_owner = name == user_speaker
    return Message(
        id=check_id(str(message_id), f"{where}'s id"),
        user_id=user_id,
        session_id=session,
        role=role,
        content=content,
        name=name,
        speaker_is_owner=speaker_is_owner,
        created_at=created_at,
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
    store: HistoryStore,
    messages: Sequence[Message],
    *,
    progress: Callable[[int], None] | None = None,
    batch: int = IMPORT_BATCH,
) -> int:
    """Store `messages` in order, `batch` at a time (each batch embedded in one call);
    ids already stored are skipped. Returns how many were new; `progress(n)` after each batch."""
    added = 0
    for start in range(0, len(messages), batch):
        batch_messages = messages[start : start + batch]
        added += len(await store.add_messages(batch_messages))
        if progress is not None:
            progress(len(batch_messages))
    return added


def read_file(
    path: Path, user_id: str, *, session_id: str = "import", user_speaker: str | None = None
) -> list[Message]:
    """`read_messages` of a file (UTF-8); an error names the file first."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file; give the path of the conversation to import") from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise InvalidInput(f"{path} line {line}: not UTF-8 text; save the export as UTF-8") from None
    try:
        return read_messages(text, user_id, session_id=session_id, user_speaker=user_speaker)
    except InvalidInput as error:
        raise InvalidInput(f"{path} {error}" if str(error).startswith("line ") else f"{path}: {error}") from None


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
    return added, await remember_imported(store, user_id, context, windows)


async def remember_imported(
    store: MemoryStore, user_id: str, context: Any, windows: Callable[[int, int], None] | None = None
) -> Any:
    """Remember the user's whole unprocessed buffer in windows, oldest first (`run_memory_graph` with the memory
    `context`); windows(done, total) as each window starts and ends. Returns the run's `MemoryRunResult`."""
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

    return await run_memory_graph(user_id, context, on_step=on_step if windows else None)
