"""One memory by its id, and what a memory run learned, for the mem0-shaped doors: the facade
(`memlane.memory`) and `memlane serve`'s memories API, which `memlane.client` calls. One place for
both, so that `get`, `update`, `history` and `get_all` answer the same through either.

Memory ids are the store's search-memory ids: `profile:<entry>`, `event:<card>` (a memory run's
card or a note), `message:<turn>`. Answers are mem0's shapes (memlane/memory_shapes.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memlane.memory_shapes import (
    ADDED,
    DELETED,
    UNCHANGED,
    UPDATED,
    entry_history,
    entry_memory,
    event_history,
    event_memory,
    history_entry,
    item_memory,
    message_memory,
    note_revision,
    past_value_memory,
)
from memlane.shown_ids import memory_id_of
from memlane.store.errors import InvalidInput
from memlane.store.ids import check_id, event_memory_id, past_value_memory_id, profile_memory_id
from memlane.store.protocols import MemoryStore
from memlane.store.records import MemoryUpdate, Message, PastValue

KINDS = ("profile", "event", "message")
PAST_VALUE_MARK = ":earlier:"  # in a past value's memory id, after its entry's (store/ids.py)
_RUN_ACTIONS = {"added": ADDED, "updated": UPDATED, "deleted": DELETED}


def split_memory_id(memory_id: str) -> tuple[str, str]:
    """(kind, the record's own id) of a memory id; `InvalidInput` for anything else. A profile
    entry's past value is ("profile", "<entry>:earlier:…"); a LangGraph item ("item", its memory id)."""
    kind, _, ref = memory_id.partition(":")
    if kind == "item" and ref:
        return kind, memory_id
    if kind not in KINDS or not ref:
        raise InvalidInput(
            f"{memory_id!r} is not a memory id: they start with profile:, event:, message: or item: "
            "(the ids add, search and get_all answer), or are a profile entry's, an event's or a message's own id"
        )
    return kind, ref


async def past_value_of(store: MemoryStore, user_id: str, memory_id: str) -> PastValue | None:
    """The profile entry's past value that search shows as `memory_id` (`profile:<entry>:earlier:…`)."""
    entry_id = memory_id.removeprefix("profile:").split(PAST_VALUE_MARK)[0]
    values = await store.past_values(user_id, entry_id)
    return next((value for value in values if past_value_memory_id(entry_id, value.content) == memory_id), None)


async def get_memory(
    store: MemoryStore, user_id: str, memory_id: str, scope: Mapping[str, str | None]
) -> dict[str, Any] | None:
    """The memory `memory_id` of the user, in mem0's shape, or None."""
    memory_id = await memory_id_of(store, user_id, memory_id) or memory_id  # a record's own id too
    kind, ref = split_memory_id(memory_id)
    if kind == "profile" and PAST_VALUE_MARK in ref:
        value = await past_value_of(store, user_id, memory_id)
        return past_value_memory(value, scope) if value is not None else None
    if kind == "item":
        (item,) = await store.get_items(user_id, [memory_id])
        return item_memory(item, scope) if item is not None else None
    if kind == "profile":
        entry = next((entry for entry in await store.get_profile(user_id) if entry.id == ref), None)
        return entry_memory(entry, scope) if entry is not None else None
    if kind == "event":
        (event,) = await store.get_events(user_id, [ref])
        return event_memory(event, scope) if event is not None else None
    around = await store.message_neighbours(user_id, ref, before=0, after=0)
    return next((message_memory(message, scope) for message in around if message.id == ref), None)


async def update_memory(
    store: MemoryStore, user_id: str, memory_id: str, text: str, *, actor: str, scope: Mapping[str, str | None]
) -> dict[str, Any]:
    """Give a profile entry new content, or an event card (a note or a memory run's card) new text;
    the change is kept in its history. A turn is what was said: it is deleted, not edited.
    Answers the memory as it now is; `InvalidInput` when the user has no such memory."""
    memory_id = await memory_id_of(store, user_id, memory_id) or memory_id  # a record's own id too
    kind, ref = split_memory_id(memory_id)
    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text:
        raise InvalidInput("the new text is empty; delete the memory instead")
    if kind == "message":
        raise InvalidInput(
            f"{memory_id!r} is a stored turn, kept as it was said: delete it and add what is true instead"
        )
    if kind == "profile" and PAST_VALUE_MARK in ref:
        raise InvalidInput(
            f"{memory_id!r} is what a profile entry held before, kept as it was: update the entry "
            f"(profile:{ref.split(PAST_VALUE_MARK)[0]}) or delete this past value"
        )
    if kind == "item":
        raise InvalidInput(f"{memory_id!r} is a LangGraph store item: put its new value through MemlaneStore")
    if kind == "profile":
        entry = await store.edit_profile_entry(user_id, ref, content=text, actor=actor)
        if entry is None:
            raise InvalidInput(f"the user has no memory {memory_id!r}")
        return entry_memory(entry, scope)
    (event,) = await store.get_events(user_id, [ref])
    if event is None:
        raise InvalidInput(f"the user has no memory {memory_id!r}")
    if text == event.summary:
        return event_memory(event, scope)
    edited = note_revision(event, text, actor)
    # the card and its search memory in one write: same id, same time, the new text searchable at once
    await store.apply_update(MemoryUpdate(user_id=user_id, event=edited, memories=[edited.as_memory()], actor=actor))
    return event_memory(edited, scope)


async def memory_history(store: MemoryStore, user_id: str, memory_id: str) -> list[dict[str, Any]]:
    """How the memory came to be, oldest first, as mem0's history entries: a profile entry's every
    revision (its deletion too); an event card's making and each change of its text; a turn's one
    making. [] when the user has no such memory, now or before."""
    memory_id = await memory_id_of(store, user_id, memory_id) or memory_id  # a record's own id too
    kind, ref = split_memory_id(memory_id)
    if kind == "profile" and PAST_VALUE_MARK in ref:  # what the entry held: its entry's history says when
        if await past_value_of(store, user_id, memory_id) is None:
            return []
        entry_id = ref.split(PAST_VALUE_MARK)[0]
        return entry_history(profile_memory_id(entry_id), await store.profile_history(user_id, entry_id))
    if kind == "item":
        (item,) = await store.get_items(user_id, [memory_id])
        if item is None:
            return []
        return [history_entry(memory_id, 0, ADDED, None, item.text, item.created_at)] + (
            [history_entry(memory_id, 1, UPDATED, None, item.text, item.updated_at)]
            if item.updated_at > item.created_at
            else []
        )
    if kind == "profile":
        return entry_history(memory_id, await store.profile_history(user_id, ref))
    if kind == "event":
        (event,) = await store.get_events(user_id, [ref])
        return event_history(memory_id, event) if event is not None else []
    around = await store.message_neighbours(user_id, ref, before=0, after=0)
    return [
        history_entry(memory_id, 0, ADDED, None, message.content, message.created_at, role=message.role)
        for message in around
        if message.id == ref
    ]


async def list_memories(
    store: MemoryStore, user_id: str, scope: Mapping[str, str | None], *, limit: int, offset: int = 0
) -> tuple[list[dict[str, Any]], int | None]:
    """The user's memories, most recently changed first, a page at a time: profile entries, event
    cards, and the turns no memory run has read yet (what `add(infer=False)` keeps); with the next
    page's offset, or None after the last."""
    if limit < 1 or offset < 0:
        raise InvalidInput("limit (top_k) must be 1 or more and offset 0 or more")
    if (run_id := scope.get("run_id")) is not None:
        check_id(run_id, "run_id")  # a session id: a control character in it matches nothing, refused as at every door
    events = await store.list_events(user_id, limit=offset + limit + 1)
    everything = [
        *(entry_memory(entry, scope) for entry in await store.get_profile(user_id)),
        *(event_memory(event, scope) for event in events),
        *(message_memory(message, scope) for message in await store.unprocessed_messages(user_id)),
    ]
    if run_id is not None:  # a run (a session) holds its turns and the cards of the runs that read it
        everything = [memory for memory in everything if memory.get("run_id") == run_id or memory["kind"] != "message"]
    everything.sort(key=lambda memory: memory["updated_at"] or "", reverse=True)
    page = everything[offset : offset + limit]
    return page, (offset + limit if len(everything) > offset + limit else None)


async def run_results(
    store: MemoryStore, user_id: str, run: Any, scope: Mapping[str, str | None]
) -> list[dict[str, Any]]:
    """What a memory run (`MemoryRunResult`) learned, as mem0's add results: each profile entry it
    added, updated or deleted, and each event card it wrote, with `event` ADD / UPDATE / DELETE."""
    if run is None:
        return []
    profile = {entry.id: entry for entry in await store.get_profile(user_id)}
    results: list[dict[str, Any]] = []
    for field, action in _RUN_ACTIONS.items():
        for entry_id in getattr(run, field):
            shown = entry_memory(profile[entry_id], scope)["memory"] if entry_id in profile else ""
            results.append({"id": profile_memory_id(entry_id), "memory": shown, "event": action, "kind": "profile"})
    for event_id in run.event_ids or ([run.event_id] if run.event_id else []):
        results.append({"id": event_memory_id(event_id), "memory": run.summary, "event": ADDED, "kind": "event"})
    return results


async def expire_results(
    store: MemoryStore, user_id: str, results: Sequence[Mapping[str, Any]], expires_at: float
) -> None:
    """Give what a run added or updated (its profile entries and event card, from `run_results`)
    the expiry mem0's `add(expiration_date=)` asks for: written again with `expires_at`."""
    written = [result["id"] for result in results if result["event"] != DELETED]
    entry_ids = {memory_id.removeprefix("profile:") for memory_id in written if memory_id.startswith("profile:")}
    entries = [
        entry.model_copy(update={"expires_at": expires_at})
        for entry in await store.get_profile(user_id)
        if entry.id in entry_ids
    ]
    if entries:
        update = MemoryUpdate(
            user_id=user_id, upsert_profile=entries, memories=[e.as_memory() for e in entries], actor="api"
        )
        await store.apply_update(update)
    event_ids = [memory_id.removeprefix("event:") for memory_id in written if memory_id.startswith("event:")]
    for event in await store.get_events(user_id, event_ids):
        if event is not None:
            event = event.model_copy(update={"expires_at": expires_at})
            await store.apply_update(MemoryUpdate(user_id=user_id, event=event, memories=[event.as_memory()]))


def stored_results(sent: Sequence[Message], new: Sequence[Message]) -> list[dict[str, Any]]:
    """The turns an `add(infer=False)` sent, as mem0's add results: ADD for each the store did not
    hold, NONE for each it held already (memlane keeps a message once, by its id)."""
    new_ids = {message.id for message in new}
    return [
        {
            "id": f"message:{message.id}",
            "memory": message.content,
            "event": ADDED if message.id in new_ids else UNCHANGED,
            "kind": "message",
            "role": message.role,
            "actor_id": message.name,
        }
        for message in sent
    ]


__all__ = [
    "KINDS",
    "expire_results",
    "get_memory",
    "list_memories",
    "memory_history",
    "run_results",
    "split_memory_id",
    "stored_results",
    "update_memory",
]
