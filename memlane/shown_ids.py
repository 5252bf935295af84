"""Ids that work where they are shown (issue 49, item 4): every id a door shows names one memory,
and every call that takes an id (`forget`, `delete`, `get`, `update`, `history`, at every door)
takes each of them, with or without its kind's prefix.

The doors show two spellings of one memory: its memory id (`profile:<entry>`, `event:<card>`,
`message:<turn>`, `item:…`: search, recall, MCP, `memlane search`, the facade) and its record's own
id (a profile entry's, an event card's or a note's, a turn's: the profile and events lists, the
source message ids, `MemlaneStore`'s collections). `memory_id_of` turns either into the memory id.
"""

from __future__ import annotations

from typing import Protocol

from memlane.store.ids import ITEM_MEMORY_PREFIX, event_memory_id, message_memory_id, profile_memory_id
from memlane.store.protocols import HistoryStore, ProfileStore

# what the store's ids of search memories start with (store/ids.py `*_memory_id`)
MEMORY_ID_PREFIXES = ("profile:", "event:", "message:", ITEM_MEMORY_PREFIX)


class RecordStore(ProfileStore, HistoryStore, Protocol):
    """What finding a record by its own id reads: the profile, the event cards, the history."""


def shown_id(value: str) -> str:
    """An id as a door showed it, without the brackets MCP and the tools put around it."""
    return value.strip().strip("[]").strip()


def record_id(shown: str, kind: str) -> str:
    """A record's own id (what the store's calls on profile entries, events or turns take) from an
    id a door showed of it: its memory id loses its kind's prefix ("profile:<entry>" → "<entry>")."""
    return shown_id(shown).removeprefix(f"{kind}:")


async def memory_id_of(store: RecordStore, user_id: str, shown: str) -> str | None:
    """The memory id of whatever id a door showed: a memory id as it is (whether the user has it is
    the caller's to find); a profile entry's, an event card's (a note's) or a turn's own id as that
    record's memory id, looked up in that order; None when the user has no record of that id."""
    value = shown_id(shown)
    if not value or any(char.isspace() for char in value):
        return None
    if value.startswith(MEMORY_ID_PREFIXES):
        return value
    if any(entry.id == value for entry in await store.get_profile(user_id)):
        return profile_memory_id(value)
    (event,) = await store.get_events(user_id, [value])
    if event is not None:
        return event_memory_id(value)
    around = await store.message_neighbours(user_id, value, before=0, after=0)
    if any(message.id == value for message in around):
        return message_memory_id(value)
    return None
