"""The memories API of `memlane serve`, under /v1/users/{user_id}: search, profile (with its
history), events, notes, forgetting, export, deleting a user, and memory runs on request
(remember-now, sessions/{session_id}/end). Its request and response models are
serve/memory_schemas.py's.

`router` holds every route as a module-level function; what each needs comes in by dependency
(`Reader` / `Writer`: the key, with its scope checked, and the user in its tenant; `Store`,
`Service`: what the app runs on), so a handler can be called alone with those objects.
`create_app` includes the router."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from memlane import MemoryStore, ProfileEntry, scoped_user_id
from memlane.doors import forget_confirmer
from memlane.persistence import MemoryAgentContext
from memlane.serve.auth import authorized, tenant_user, valid_agent_id, valid_session_id
from memlane.serve.config import ApiKey, Scope
from memlane.serve.errors import ApiError
from memlane.serve.memory_schemas import (
    Deleted,
    EntryId,
    EventId,
    EventOut,
    ExistsIn,
    ExistsOut,
    ForgetIn,
    MessageId,
    NoteIn,
    NoteOut,
    PathId,
    PathSlot,
    ProfileEntryEdit,
    ProfileEntryIn,
    ProfileEntryOut,
    ProfileEntryWrite,
    RecallIn,
    RunRequested,
    SearchHitOut,
    SearchRequest,
)
from memlane.serve.service import Service, Store
from memlane.store.errors import InvalidInput
from memlane.store.ids import profile_entry_id
from memlane.store.records import MEMORY_KINDS
from memlane.store.scopes import split_user_id
from memlane.tenants import shared_store_user_id
from memlane.tools import existing_note, forget_memory, remember_fact, write_note


def _public(value: Any, store_user: str, user_id: str) -> Any:
    """A dumped record with each `user_id` shown as the caller's id (not the tenant-qualified store
    id, nor an agent's scope of it: an export's `agents` holds those)."""
    if isinstance(value, dict):
        return {
            k: (user_id if k == "user_id" and _same_user(v, store_user) else _public(v, store_user, user_id))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_public(item, store_user, user_id) for item in value]
    return value


def _same_user(value: Any, store_user: str) -> bool:
    return isinstance(value, str) and split_user_id(value)[0] == split_user_id(store_user)[0]


@dataclass(frozen=True)
class Caller:
    """Who a memories request acts for: its key, the user id as the caller wrote it, and that
    user's store id inside the key's tenant (no id a caller sends reaches another tenant)."""

    key: ApiKey
    user_id: str
    store_user: str

    @property
    def actor(self) -> str:
        """Who profile histories name for a change made by this request."""
        return self.key.actor


def _caller(scope: Scope) -> Callable[..., Awaitable[Caller]]:
    async def dependency(
        user_id: str,
        key: ApiKey = Depends(authorized(scope)),
        agent_id: str | None = Query(
            default=None, description="an agent's (a persona's) own memory of the user; unset: the user's own memory"
        ),
    ) -> Caller:
        return Caller(
            key=key, user_id=user_id, store_user=scoped_user_id(tenant_user(key, user_id), valid_agent_id(agent_id))
        )

    return dependency


def _shared_caller(scope: Scope) -> Callable[..., Awaitable[Caller]]:
    async def dependency(key: ApiKey = Depends(authorized(scope))) -> Caller:
        return Caller(key=key, user_id=SHARED_USER, store_user=shared_store_user_id(key.tenant))

    return dependency


Reader = Annotated[Caller, Depends(_caller("read"))]
Writer = Annotated[Caller, Depends(_caller("write"))]
SHARED_USER = "shared"  # how answers about the tenant's shared memory name its "user"
SharedReader = Annotated[Caller, Depends(_shared_caller("read"))]
SharedWriter = Annotated[Caller, Depends(_shared_caller("shared"))]

router = APIRouter(prefix="/v1/users/{user_id}", tags=["memories"])
"""The memories API: search, profile, events, notes, forgetting, export, memory runs. Every route
takes `?agent_id=`: that agent's own memory of the user instead of the user's."""

shared = APIRouter(prefix="/v1/shared", tags=["shared memory"])
"""The tenant's shared memory (store/scopes.py), which recall reads beside a user's own for the
personas configured to (`read_shared`): search and export with the `read` scope, notes added and
deleted with the `shared` scope, which keys get only when listed (what is written here reaches
every user's recall)."""


@router.post("/search")
async def search(body: SearchRequest, caller: Reader, store: Store) -> dict[str, Any]:
    """Hybrid search over the user's memories (profile, events, notes, messages), best first; `filter`
    keeps those whose metadata match (a field not declared in MEMLANE_METADATA_FIELDS: 422)."""
    hits = await store.search_memories(
        caller.store_user,
        body.query,
        kinds=body.kinds or list(MEMORY_KINDS),
        session_id=body.session_id,
        since=body.since,
        until=body.until,
        limit=body.limit,
        metadata_filter=body.filter,
    )
    return {"object": "list", "data": [SearchHitOut.of(hit).model_dump() for hit in hits]}


@router.get("/profile")
async def list_profile(caller: Reader, store: Store) -> dict[str, Any]:
    """The user's profile entries, by topic and subtopic, each since when it holds and with what
    it held before ("earlier")."""
    entries, past_values = await asyncio.gather(
        store.get_profile(caller.store_user), store.past_values(caller.store_user)
    )
    return {"object": "list", "data": [ProfileEntryOut.of(entry, past_values).model_dump() for entry in entries]}


async def find_entry(store: MemoryStore, store_user: str, entry_id: str) -> ProfileEntry:
    """The user's profile entry `entry_id`; 404 when there is none."""
    entry = next((e for e in await store.get_profile(store_user) if e.id == entry_id), None)
    if entry is None:
        raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
    return entry


@router.get("/profile/{entry_id}")
async def get_entry(entry_id: EntryId, caller: Reader, store: Store) -> ProfileEntryOut:
    """One profile entry, with what it held before."""
    entry = await find_entry(store, caller.store_user, entry_id)
    return ProfileEntryOut.of(entry, await store.past_values(caller.store_user, entry_id))


@router.post("/profile", status_code=201)
async def add_entry(body: ProfileEntryIn, caller: Writer, store: Store) -> ProfileEntryOut:
    """Add a profile entry (409 when its topic / subtopic slot is taken: PUT the slot to replace it)."""
    entry_id = profile_entry_id(caller.store_user, body.topic, body.subtopic)
    if any(e.id == entry_id for e in await store.get_profile(caller.store_user)):
        raise ApiError(
            409,
            f"the user already has an entry {body.topic} / {body.subtopic} ({entry_id}); "
            "PUT /profile/{topic}/{subtopic} replaces it, PATCH /profile/{entry_id} edits it",
            "entry_exists",
        )
    return await write_slot(store, caller, body.topic, body.subtopic, body)


@router.put("/profile/{topic}/{subtopic}")
async def put_slot(
    topic: PathSlot, subtopic: PathSlot, body: ProfileEntryWrite, caller: Writer, store: Store, response: Response
) -> ProfileEntryOut:
    """Write the user's entry of this topic / subtopic: created (201) or replaced (200), one entry per
    user and slot. Its history records the write, with the source message and the meta sent."""
    entry_id = profile_entry_id(caller.store_user, topic, subtopic)
    existed = any(e.id == entry_id for e in await store.get_profile(caller.store_user))
    response.status_code = 200 if existed else 201
    return await write_slot(store, caller, topic, subtopic, body)


async def write_slot(
    store: MemoryStore, caller: Caller, topic: str, subtopic: str, body: ProfileEntryWrite
) -> ProfileEntryOut:
    """Write a slot's entry as sent, and answer it as stored (private data masked)."""
    try:
        entry = await remember_fact(
            store,
            caller.store_user,
            topic,
            subtopic,
            body.content,
            confidence=body.confidence,
            actor=caller.actor,
            source_message_ids=[body.source_message_id] if body.source_message_id else [],
            metadata=body.meta,
            expires_at=body.expires_at,
            importance=body.importance,
        )
    except InvalidInput as error:
        raise ApiError(422, str(error), "invalid_entry") from None
    return ProfileEntryOut.of(await find_entry(store, caller.store_user, entry.id))


@router.patch("/profile/{entry_id}")
async def edit_entry(entry_id: EntryId, body: ProfileEntryEdit, caller: Writer, store: Store) -> ProfileEntryOut:
    """Change an entry's content and / or confidence; the change is kept in its history."""
    if body.content is None and body.confidence is None:
        raise ApiError(422, "send content, confidence or both", "nothing_to_change")
    try:
        edited = await store.edit_profile_entry(
            caller.store_user, entry_id, content=body.content, confidence=body.confidence, actor=caller.actor
        )
    except InvalidInput as error:
        raise ApiError(422, str(error), "invalid_edit") from None
    if edited is None:
        raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
    return ProfileEntryOut.of(edited)


@router.delete("/profile/{entry_id}")
async def delete_entry(entry_id: EntryId, caller: Writer, store: Store) -> Deleted:
    """Delete a profile entry (its history keeps the deletion)."""
    if not await store.delete_profile_entry(caller.store_user, entry_id, actor=caller.actor):
        raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
    return Deleted(id=entry_id)


@router.get("/profile/{entry_id}/history")
async def entry_history(entry_id: EntryId, caller: Reader, store: Store) -> dict[str, Any]:
    """Every change of the entry, oldest first: who or what made it, before / after, when."""
    revisions = await store.profile_history(caller.store_user, entry_id)
    if not revisions:
        raise ApiError(404, f"the user has no profile entry {entry_id!r}, now or before", "entry_not_found")
    return {
        "object": "list",
        "data": [_public(r.model_dump(mode="json"), caller.store_user, caller.user_id) for r in revisions],
    }


@router.get("/events")
async def list_events(
    caller: Reader,
    store: Store,
    limit: int = Query(default=50, ge=1, le=1000),
    since: float | None = Query(default=None, allow_inf_nan=False),
    until: float | None = Query(default=None, allow_inf_nan=False),
) -> dict[str, Any]:
    """The user's event cards, newest first."""
    events = await store.list_events(caller.store_user, limit=limit, since=since, until=until)
    return {"object": "list", "data": [EventOut.of(event).model_dump() for event in events]}


@router.delete("/events/{event_id}")
async def delete_event(event_id: EventId, caller: Writer, store: Store) -> Deleted:
    """Delete an event card and its search memory."""
    if not await store.delete_event(caller.store_user, event_id):
        raise ApiError(404, f"the user has no event {event_id!r}", "event_not_found")
    return Deleted(id=event_id)


@router.post("/memories", status_code=201)
async def add_note(body: NoteIn, caller: Writer, store: Store, response: Response) -> dict[str, Any]:
    """Remember a note about the user (an event card tagged "remembered", found by search and recall),
    with its metadata (422 when a declared field cannot hold its value). A note the user has already
    (the same text, or a near duplicate) is not stored again: 200 with the stored memory and
    `repeat_of`."""
    written = await write_note(
        store,
        caller.store_user,
        body.text.strip(),
        session_id=body.session_id,
        metadata=body.metadata,
        expires_at=body.expires_at,
        importance=body.importance,
    )
    if written.repeat_of is not None:
        response.status_code = 200
    return NoteOut.written(written).model_dump()


@router.post("/memories/exists")
async def note_exists(body: ExistsIn, caller: Reader, store: Store) -> dict[str, Any]:
    """Whether the user already has this text, as adding it as a note would find a repeat: the same
    note, a note or a profile fact with the same text (case and spacing aside), or a near duplicate
    (`near_duplicate_similarity`); the stored memory when so. Nothing is written."""
    repeat = await existing_note(store, caller.store_user, body.text.strip())
    if repeat is None:
        return ExistsOut(exists=False).model_dump()
    return ExistsOut.found(repeat.memory, repeat.similarity, repeat.identical).model_dump()


@router.delete("/memories/{memory_id}")
async def delete_memory(memory_id: PathId, caller: Writer, store: Store) -> Deleted:
    """Delete one search memory by id; a profile or event memory takes its entry or card with it."""
    if not await forget_memory(store, caller.store_user, memory_id, actor=caller.actor):
        raise ApiError(404, f"the user has no memory {memory_id!r}", "memory_not_found")
    return Deleted(id=memory_id)


@router.delete("/messages/{message_id}")
async def delete_message(message_id: MessageId, caller: Writer, store: Store) -> Deleted:
    """Drop one message from history and search, and what it states from the summaries."""
    if not await store.delete_message(caller.store_user, message_id):
        raise ApiError(404, f"the user has no message {message_id!r}", "message_not_found")
    return Deleted(id=message_id)


@router.post("/forget")
async def forget(body: ForgetIn, caller: Writer, service: Service) -> dict[str, Any]:
    """Forget what the user said about something, everywhere recall reads (profile, events,
    messages, summaries). Says what was removed, each record with the clauses that went
    (`dry_run`: what would be, changing nothing)."""
    confirm = forget_confirmer(
        service.memory_model, service.settings.models
    )  # the memory model confirms what meaning finds
    report = await service.require_store().forget(
        caller.store_user, body.query, actor=caller.actor, confirm=confirm, dry_run=body.dry_run
    )
    return {
        **_public(report.model_dump(mode="json"), caller.store_user, caller.user_id),
        "description": report.describe(),
    }


def run_requested(user_id: str, session_id: str | None, queued: bool | None) -> RunRequested:
    """The answer to a memory run asked for; 409 when the service has no memory model (None)."""
    if queued is None:
        raise ApiError(
            409,
            "memlane serve has no memory model, so turns are stored but nothing is remembered: "
            "add a [memory] section to the configuration file, or set MEMLANE_MEMORY_MODEL / OPENAI_BASE_URL",
            "no_memory_model",
        )
    return RunRequested(user_id=user_id, session_id=session_id, queued=queued)


@router.post("/recall")
async def recall_block(body: RecallIn, caller: Reader, service: Service) -> dict[str, Any]:
    """The memory block for a message, for a client that calls its own model: what the chat
    route puts before the model (profile, the session's rolling summary, memories relevant to
    the message, within the recall budget), as `text` and as items with their relevance."""
    identity = MemoryAgentContext(
        user_id=caller.store_user,
        session_id=valid_session_id(body.session_id),
        shared_user_id=shared_store_user_id(caller.key.tenant) if body.include_shared else None,
    )
    recalled = await service.require_turns().recall(identity, body.message)
    if recalled is None:
        raise ApiError(503, "the store cannot answer now; answer without memory and try again", "store_unavailable")
    items = [item.model_dump(exclude_none=True) for item in recalled.items]
    return {
        "user_id": caller.user_id,
        "session_id": body.session_id,
        "text": recalled.text,
        "tokens": recalled.tokens,
        "search_query": recalled.search_query,
        "intent": recalled.intent,
        "items": items,
    }


@router.post("/remember-now", status_code=202)
async def remember_now(caller: Writer, service: Service) -> RunRequested:
    """Remember the user's unprocessed messages now, without waiting for the token threshold,
    the session's end or the idle flush. The run is queued: poll the profile and events."""
    return run_requested(caller.user_id, None, await service.remember_now(caller.store_user))


@router.post("/sessions/{session_id}/end", status_code=202)
async def end_session(session_id: PathId, caller: Writer, service: Service) -> RunRequested:
    """The session (the X-Memlane-Session of its chats) ended: remember its messages now and fold
    its rolling summary."""
    session_id = valid_session_id(session_id)
    return run_requested(caller.user_id, session_id, await service.end_session(caller.store_user, session_id))


@router.get("/export")
async def export_user(caller: Reader, store: Store) -> dict[str, Any]:
    """Everything stored about the user, as JSON."""
    exported = await store.export_user(caller.store_user)
    return _public(exported.model_dump(mode="json"), caller.store_user, caller.user_id)


@router.delete("")
async def delete_user(caller: Writer, service: Service) -> dict[str, Any]:
    """Delete everything of the user, each agent's memory of the user too (after their pending
    saves); with `agent_id`, that agent's memory of the user only."""
    store = service.require_store()
    owners = [caller.store_user]
    if split_user_id(caller.store_user)[1] is None:
        owners += [scoped_user_id(caller.store_user, agent) for agent in await store.agents(caller.store_user)]
    for owner in owners:
        if service.persistence is not None:
            await service.persistence.wait_saved(owner, timeout=10)
        if service.scheduler is not None:  # a run in progress would write the user back
            deadline = time.monotonic() + 30
            while await service.scheduler.user_busy(owner):  # queued or running in any process
                if time.monotonic() > deadline:
                    raise ApiError(409, "a memory run of the user is still working; try again in a moment", "user_busy")
                await asyncio.sleep(0.1)
    removed = await store.delete_user(caller.store_user)
    return {"id": caller.user_id, "deleted": True, "keys_removed": removed}


# the tenant's shared memory: the same handlers over the tenant's shared scope ----------------------
@shared.post("/search")
async def search_shared(body: SearchRequest, caller: SharedReader, store: Store) -> dict[str, Any]:
    """Hybrid search over the tenant's shared memory, best first."""
    return await search(body, caller, store)


@shared.post("/memories", status_code=201)
async def add_shared_note(body: NoteIn, caller: SharedWriter, store: Store, response: Response) -> dict[str, Any]:
    """Remember a note in the tenant's shared memory (needs the `shared` scope)."""
    return await add_note(body, caller, store, response)


@shared.delete("/memories/{memory_id}")
async def delete_shared_memory(memory_id: PathId, caller: SharedWriter, store: Store) -> Deleted:
    """Delete one memory of the tenant's shared memory (needs the `shared` scope)."""
    return await delete_memory(memory_id, caller, store)


@shared.get("/export")
async def export_shared(caller: SharedReader, store: Store) -> dict[str, Any]:
    """Everything in the tenant's shared memory, as JSON."""
    return await export_user(caller, store)
