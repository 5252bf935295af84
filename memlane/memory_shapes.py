"""The answers of the mem0-shaped doors (`memlane.memory`, `memlane.client`) in mem0's shape: each
memory a dict with mem0's keys (`id`, `memory`, `hash`, `metadata`, `created_at`, `updated_at`, the
scope's `user_id` / `agent_id` / `run_id`) and memlane's beside them (`kind`, `source_message_ids`),
times as ISO 8601 in UTC as mem0 writes them; history entries with mem0's `event`, `old_memory`,
`new_memory`; and the scope a call names, read from its keywords or from mem0's `filters`.

Pure functions over records: the facade and the service build the same answer from the same record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memlane.store.errors import InvalidInput
from memlane.store.hits import MemoryHit
from memlane.store.ids import check_id, event_memory_id, item_memory_id, past_value_memory_id, profile_memory_id
from memlane.store.records import Event, Message, NoteRevision, PastValue, ProfileEntry, ProfileRevision, StoreItem

SCOPE_KEYS = ("user_id", "agent_id", "run_id")
ADDED, UPDATED, DELETED, UNCHANGED = "ADD", "UPDATE", "DELETE", "NONE"  # mem0's `event` of a write
_ACTION_EVENTS = {"add": ADDED, "update": UPDATED, "delete": DELETED}


def iso(seconds: float | None) -> str | None:
    """A unix time as mem0 writes times: ISO 8601, in UTC."""
    return datetime.fromtimestamp(seconds, UTC).isoformat() if seconds else None


def text_hash(text: str) -> str:
    """mem0's `hash` of a memory: the MD5 of its text (a checksum, not a security measure)."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _shaped(
    memory_id: str,
    text: str,
    kind: str,
    created_at: float | None,
    updated_at: float | None,
    scope: Mapping[str, str | None],
    metadata: Mapping[str, Any] | None,
    **memlane: Any,
) -> dict[str, Any]:
    shaped: dict[str, Any] = {
        "id": memory_id,
        "memory": text,
        "hash": text_hash(text),
        "metadata": dict(metadata) if metadata else None,
        "created_at": iso(created_at),
        "updated_at": iso(updated_at),
    }
    shaped.update({key: value for key, value in scope.items() if value is not None})
    return {**shaped, "kind": kind, **memlane}


def entry_memory(entry: ProfileEntry, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """A profile entry as a mem0 memory: its text is "topic / subtopic: content"."""
    return _shaped(
        profile_memory_id(entry.id),
        f"{entry.topic} / {entry.subtopic}: {entry.content}",
        "profile",
        entry.created_at,
        entry.updated_at,
        scope,
        entry.metadata,
        confidence=entry.confidence,
        source_message_ids=entry.source_message_ids,
    )


def event_memory(event: Event, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """An event card (a memory run's, or a note) as a mem0 memory."""
    changed = event.revisions[-1].at if event.revisions else event.created_at
    return _shaped(
        event_memory_id(event.id),
        event.summary,
        "event",
        event.created_at,
        changed,
        scope,
        event.metadata,
        tags=event.tags,
        source_message_ids=event.source_message_ids,
    )


def past_value_memory(value: PastValue, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """What a profile entry held before a memory run replaced it, as a mem0 memory (search shows it
    as `profile:<entry>:earlier:…`): "topic / subtopic: content", until when it held."""
    return _shaped(
        past_value_memory_id(value.entry_id, value.content),
        f"{value.topic} / {value.subtopic}: {value.content}",
        "profile",
        value.valid_from,
        value.valid_until,
        scope,
        None,
        status="earlier",
        valid_until=value.valid_until,
        entry_id=profile_memory_id(value.entry_id),
        source_message_ids=value.source_message_ids,
    )


def item_memory(item: StoreItem, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """A LangGraph store item (`MemlaneStore`) as a mem0 memory: the text search finds it by."""
    return _shaped(
        item_memory_id(item.namespace, item.key),
        item.text,
        "item",
        item.created_at,
        item.updated_at,
        scope,
        None,
        namespace=item.namespace,
        key=item.key,
        value=item.value,
    )


def message_memory(message: Message, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """A stored turn as a mem0 memory (what mem0 keeps for `add(..., infer=False)`)."""
    return _shaped(
        f"message:{message.id}",
        message.content,
        "message",
        message.created_at,
        message.created_at,
        {**scope, "run_id": message.session_id},
        message.metadata,
        role=message.role,
        actor_id=message.name,
        source_message_ids=[message.id],
    )


def hit_memory(hit: MemoryHit, scope: Mapping[str, str | None]) -> dict[str, Any]:
    """A search hit as mem0's search result: the memory and its `score`, memlane's relevance (0..1,
    of the query and the memory alone), under `relevance` too."""
    memory = hit.memory
    return {
        **_shaped(
            memory.id,
            memory.text,
            memory.kind,
            memory.created_at,
            memory.created_at,
            {**scope, "run_id": memory.session_id} if memory.kind == "message" else scope,
            memory.metadata,
            weak=hit.weak,
            source_message_ids=memory.source_message_ids,
        ),
        "score": hit.relevance,  # the relevance every door shows (store/relevance.py)
        "relevance": hit.relevance,
    }


def entry_history(memory_id: str, revisions: list[ProfileRevision]) -> list[dict[str, Any]]:
    """A profile entry's revisions as mem0's history entries, oldest first."""
    return [
        history_entry(
            memory_id,
            number,
            _ACTION_EVENTS[revision.action],
            f"{revision.topic} / {revision.subtopic}: {revision.before_content}"
            if revision.before_content is not None
            else None,
            f"{revision.topic} / {revision.subtopic}: {revision.after_content}"
            if revision.after_content is not None
            else None,
            revision.at,
            actor=revision.actor,
        )
        for number, revision in enumerate(revisions)
    ]


def event_history(memory_id: str, event: Event) -> list[dict[str, Any]]:
    """An event card's making and each change of its text (a note's), oldest first."""
    first = event.revisions[0].before if event.revisions else event.summary
    made = history_entry(memory_id, 0, ADDED, None, first, event.created_at, actor="run")
    changes = [
        history_entry(memory_id, number, UPDATED, revision.before, revision.after, revision.at, actor=revision.actor)
        for number, revision in enumerate(event.revisions, 1)
    ]
    return [made, *changes]


def note_revision(event: Event, text: str, actor: str) -> Event:
    """The card with its new text, the change kept in its revisions."""
    revision = NoteRevision(actor=actor, before=event.summary, after=text)
    return event.model_copy(update={"summary": text, "revisions": [*event.revisions, revision]})


def history_entry(
    memory_id: str,
    number: int,
    event: str,
    old: str | None,
    new: str | None,
    at: float,
    *,
    actor: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """One mem0 history entry: the change `event` (ADD / UPDATE / DELETE) from `old` to `new`."""
    return {
        "id": f"{memory_id}#{number}",
        "memory_id": memory_id,
        "old_memory": old,
        "new_memory": new,
        "event": event,
        "created_at": iso(at),
        "updated_at": iso(at),
        "is_deleted": event == DELETED,
        "actor_id": actor,
        "role": role,
    }


def call_scope(
    *,
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    filters: Mapping[str, Any] | None = None,
) -> tuple[dict[str, str | None], dict[str, Any] | None]:
    """The scope a call names ({"user_id", "agent_id", "run_id"}), from its keywords or, as mem0 2.x
    writes it, from the top of `filters`; and what is left of `filters` (metadata conditions)."""
    rest = dict(filters or {})
    scope: dict[str, str | None] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    for key in SCOPE_KEYS:
        if key not in rest:
            continue
        value = rest.pop(key)
        if not isinstance(value, str) or value == "*":
            raise InvalidInput(
                f"filters[{key!r}] must be one {key} as a string (memlane keeps memory per user: "
                "no wildcard and no operator on the scope)"
            )
        if scope[key] is not None and scope[key] != value:
            raise InvalidInput(f"{key} is given twice with different values ({scope[key]!r}, {value!r})")
        scope[key] = value
    for logical in ("AND", "OR", "NOT"):
        for condition in rest.get(logical) or []:
            if isinstance(condition, Mapping) and any(key in condition for key in SCOPE_KEYS):
                raise InvalidInput(
                    f"a scope key inside filters[{logical!r}]: memlane reads one user's memory at a time; "
                    'put user_id (and agent_id, run_id) at the top of filters: {"user_id": "alice", ...}'
                )
    for key in SCOPE_KEYS:
        value = scope[key]
        if value is not None and (not value.strip() or any(char.isspace() for char in value.strip())):
            raise InvalidInput(f"{key} {value!r} is blank or holds spaces; give an id without spaces")
        scope[key] = value.strip() if value is not None else None
    return scope, rest or None


def require_user(scope: Mapping[str, str | None], call: str) -> str:
    """The user a call acts on: memlane keeps memory per user, so a scope without one is refused."""
    user_id = scope.get("user_id")
    if not user_id:
        named = [key for key in ("agent_id", "run_id") if scope.get(key)]
        raise InvalidInput(
            f"{call} needs user_id: memlane keeps memory per user"
            + (f" ({' and '.join(named)} narrow a user's memory; they do not replace the user)" if named else "")
            + '. Pass user_id="...", or filters={"user_id": "..."}'
        )
    for key in ("user_id", "agent_id", "run_id"):  # said here, not as a record's validation error later
        if (value := scope.get(key)) is not None:
            check_id(value, key)
    return user_id


_NOT_TAKEN = {  # mem0's add options memlane has no counterpart for, and what to do instead
    "prompt": "memlane's memory graph has its own prompts, step by step",
    "memory_type": "procedural memory is not kept apart; add the steps as a note or as messages",
    "timestamp": "give each message a created_at instead",
}


def refuse_options(call: str, options: Mapping[str, Any]) -> None:
    """`InvalidInput` naming each of mem0's options a call was given that memlane does not take, and why."""
    given = {name: value for name, value in options.items() if value is not None}
    if given:
        reasons = "; ".join(f"{name}: {_NOT_TAKEN.get(name, 'not an option memlane knows')}" for name in given)
        raise InvalidInput(f"{call} does not take {', '.join(given)} ({reasons})")


def answer_count(limit: int | None, top_k: int | None, default: int) -> int:
    """How many to answer: `limit` (mem0 1.x, memlane) or `top_k` (mem0 2.x)."""
    if limit is not None and top_k is not None and limit != top_k:
        raise InvalidInput(f"limit={limit} and top_k={top_k} differ: give one of them")
    count = limit if limit is not None else top_k if top_k is not None else default
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInput(f"limit / top_k must be a whole number of 1 or more, not {count!r}")
    return count


def metadata_holds(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether `metadata` holds each value `wanted` names (get_all's filters: by value only)."""
    for key, value in wanted.items():
        if isinstance(value, Mapping) or key in ("AND", "OR", "NOT"):
            raise InvalidInput(
                "get_all filters metadata by value ({'category': 'travel'}); search takes mem0's operators"
            )
        if metadata.get(key) != value:
            return False
    return True


__all__ = [
    "ADDED",
    "DELETED",
    "SCOPE_KEYS",
    "UNCHANGED",
    "UPDATED",
    "answer_count",
    "call_scope",
    "entry_history",
    "entry_memory",
    "event_history",
    "event_memory",
    "hit_memory",
    "history_entry",
    "iso",
    "message_memory",
    "metadata_holds",
    "refuse_options",
    "note_revision",
    "require_user",
    "text_hash",
]
