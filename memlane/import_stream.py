"""A large JSONL export imported as a stream (`memlane import FILE`, issue 52 item 4): the file is read twice,
line by line, and never held whole. The first pass checks every line (a bad one is named before anything is
stored); the second stores and embeds `batch_messages` at a time, oldest first as the file orders them.

What a kill leaves is finished by importing the same file again: each message's id comes from what it is
(memlane/importing.py `content_id`), so the batches stored already are skipped (one round trip each, no
embedding), a batch stored but not embedded when the process stopped is embedded then (its messages were recorded
for indexing as they were stored), and nothing is stored twice.

Other shapes (an OpenAI messages list, LoCoMo) are one JSON document: read whole by `read_file`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from memlane.importing import read_file, read_message, store_messages
from memlane.store.errors import InvalidInput
from memlane.store.ids import now
from memlane.store.protocols import HistoryStore
from memlane.store.records import Message


class _Repeats(dict[bytes, int]):
    """How many identical messages of a session came before (`content_id`'s repeat), each message kept as a
    12-byte digest: 100,000 distinct lines hold about 10 MB, not their texts."""

    @staticmethod
    def _key(what: Any) -> bytes:
        return hashlib.blake2b(repr(what).encode("utf-8"), digest_size=12).digest()

    def __getitem__(self, what: Any) -> int:
        return self.get(self._key(what), 0)

    def __setitem__(self, what: Any, count: int) -> None:
        super().__setitem__(self._key(what), count)


# keys of a whole export in one JSON object (an OpenAI messages list, LoCoMo's two layouts), never of one message
_DOCUMENT_KEYS = frozenset({"messages", "sessions", "conversation"})


def is_jsonl(path: Path) -> bool:
    """Whether the file's first non-blank line is one whole message object (a JSONL export), not the start of a
    JSON document nor a whole export written on one line."""
    try:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    first = json.loads(line)
                    return isinstance(first, dict) and not _DOCUMENT_KEYS & first.keys()
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return False
    return False


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    yield f"line {number}", json.loads(line)
                except json.JSONDecodeError as error:
                    raise InvalidInput(
                        f"{path} line {number} is not JSON ({error.msg} at column {error.colno}); "
                        "give one message a line"
                    ) from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text; save the export as UTF-8") from None


def jsonl_messages(
    path: Path, user_id: str, *, session_id: str = "import", user_speaker: str | None = None, untimed_from: float = 0.0
) -> Iterator[Message]:
    """The messages of a JSONL file, one at a time, in the file's order (lines without a time are timed
    `untimed_from` onward, a microsecond apart). Raises InvalidInput naming the line to fix."""
    repeats = _Repeats()
    untimed = 0
    for where, row in _rows(path):
        try:
            message = read_message(row, where, user_id, session_id, user_speaker, repeats)
        except InvalidInput as error:
            raise InvalidInput(f"{path} {error}") from None
        if message.created_at <= 0:
            message = message.model_copy(update={"created_at": (untimed_from or now()) + untimed * 1e-6})
            untimed += 1
        yield message


def checked_jsonl(path: Path, user_id: str, *, session_id: str = "import", user_speaker: str | None = None) -> int:
    """How many messages the JSONL file holds, every line read and checked first (nothing kept)."""
    count = 0
    speakers: set[str] = set()
    for message in jsonl_messages(path, user_id, session_id=session_id, user_speaker=user_speaker, untimed_from=1):
        count += 1
        if user_speaker is not None and message.name and len(speakers) < 50:
            speakers.add(message.name)
    if user_speaker is not None and count and user_speaker not in speakers:
        raise InvalidInput(
            f"{path}: the user speaker {user_speaker!r} says nothing here; name one of its speakers "
            f"({', '.join(map(repr, sorted(speakers))) or 'it names none'})"
        )
    return count


async def import_file(
    store: HistoryStore,
    path: Path,
    user_id: str,
    *,
    session_id: str = "import",
    user_speaker: str | None = None,
    batch_messages: int = 100,
    stored: Callable[[int], None] | None = None,
    checked: bool = False,
) -> tuple[int, int]:
    """Store (and embed) the messages of an export file, `batch_messages` at a time; a JSONL file streamed,
    another shape read whole. stored(n): after each batch. checked: the caller ran `checked_jsonl` on it already.
    Returns (messages read, messages new to the store)."""
    if not is_jsonl(path):
        messages = read_file(path, user_id, session_id=session_id, user_speaker=user_speaker)
        return len(messages), await store_messages(store, messages, progress=stored, batch=batch_messages)
    if not checked:
        checked_jsonl(path, user_id, session_id=session_id, user_speaker=user_speaker)
    read = added = 0
    lines = jsonl_messages(path, user_id, session_id=session_id, user_speaker=user_speaker, untimed_from=now())
    while batch := list(islice(lines, batch_messages)):
        added += len(await store.add_messages(batch))
        read += len(batch)
        if stored is not None:
            stored(len(batch))
    return read, added
