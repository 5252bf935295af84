"""The memories API of `memlane serve`, under /v1/users/{user_id}: search, profile (with its
history), events, notes, forgetting, export, deleting a user, and memory runs on request
(remember-now, sessions/{session_id}/end). Its request and response models are here too."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal, Sequence

from fastapi import Depends, FastAPI, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memlane import (
    MEMORY_KINDS,
    Event,
    InvalidInput,
    Memory,
    MemoryHit,
    MemoryKind,
    PastValue,
    ProfileEntry,
    check_id,
    event_memory_id,
    forget_confirmer,
    profile_entry_id,
    profile_memory_id,
)
from memlane.importing import messages_of, store_messages
from memlane.middleware import DEFAULT_SESSION, MemoryAgentContext
from memlane.serve.auth import SESSION_ID_MAX_CHARS, authorized, tenant_user, valid_session_id
from memlane.serve.chat import JsonBody
from memlane.serve.config import ApiKey
from memlane.serve.errors import ApiError, watched
from memlane.serve.service import ServeService
from memlane.tools import forget_memory, remember_fact, remember_note


def _not_blank(text: str | None) -> str | None:
    if text is not None and not text.strip():
        raise ValueError("must hold some text, not only spaces")
    return text


def _usable_id(value: str | None) -> str | None:
    """An id field as sent, refused (422 naming the field) when it holds a NUL byte or a lone
    surrogate: ids are used as given, never cleaned (store/base.py's check_id)."""
    return check_id(value, "the id") if value is not None else value


# a path id ({entry_id}, {event_id}, ...): a NUL byte answers 422 naming the parameter
PathId = Annotated[str, AfterValidator(_usable_id)]


class SearchRequest(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    query: str = Field(min_length=1, max_length=4000)
    limit: int = Field(default=10, ge=1, le=50)
    kinds: list[MemoryKind] | None = None
    session_id: str | None = Field(default=None, min_length=1, max_length=SESSION_ID_MAX_CHARS)
    since: float | None = None
    until: float | None = None

    check_id = field_validator("session_id")(_usable_id)


class MemoryOut(BaseModel):
    id: str
    kind: MemoryKind
    text: str
    attributed_text: str
    speaker: str | None
    speaker_role: str
    session_id: str | None
    created_at: float
    ref_id: str | None
    source_message_ids: list[str]
    valid_until: float | None = Field(description="when a newer fact replaced what it says; null while it holds")
    status: Literal["current", "earlier"]

    @classmethod
    def of(cls, memory: Memory) -> "MemoryOut":
        return cls(
            attributed_text=memory.attributed_text, status=memory.status, **memory.model_dump(exclude={"user_id", "context"})
        )


class SearchHitOut(BaseModel):
    memory: MemoryOut
    score: float = Field(description="relevance 0..1: the chance, as measured, that it holds what was asked (README)")
    weak: bool = Field(description="relevance under 0.1: fewer than one hit in ten like it holds what was asked")
    vector_similarity: float
    text_score: float
    time_match: bool

    @classmethod
    def of(cls, hit: MemoryHit) -> "SearchHitOut":
        return cls(
            memory=MemoryOut.of(hit.memory),
            score=hit.score,
            weak=hit.weak,
            vector_similarity=hit.vector_similarity,
            text_score=hit.text_score,
            time_match=hit.time_match,
        )


class PastValueOut(BaseModel):
    content: str
    valid_from: float | None
    valid_until: float
    status: Literal["earlier"] = "earlier"

    @classmethod
    def of(cls, value: PastValue) -> "PastValueOut":
        return cls(content=value.content, valid_from=value.valid_from, valid_until=value.valid_until)


class ProfileEntryOut(BaseModel):
    id: str
    memory_id: str = Field(description="id of its search memory (DELETE /memories/{id} deletes the entry too)")
    topic: str
    subtopic: str
    content: str
    confidence: float
    created_at: float
    updated_at: float
    source_message_ids: list[str]
    valid_from: float = Field(description="since when it holds: when it was said (created_at for older entries)")
    status: Literal["current"] = "current"
    earlier: list[PastValueOut] = Field(
        default_factory=list, description="what it held before a memory run replaced it, newest first"
    )

    @classmethod
    def of(cls, entry: ProfileEntry, past_values: Sequence[PastValue] = ()) -> "ProfileEntryOut":
        return cls(
            id=entry.id,
            memory_id=profile_memory_id(entry.id),
            earlier=[PastValueOut.of(value) for value in reversed(past_values) if value.entry_id == entry.id],
            **entry.model_dump(exclude={"user_id", "metadata", "valid_from"}),
            valid_from=entry.since,
        )



class ProfileEntryIn(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    topic: str = Field(min_length=1, max_length=64)
    subtopic: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1, max_length=4000)
    confidence: float = Field(default=0.9, ge=0, le=1)

    check_blank = field_validator("topic", "subtopic", "content")(_not_blank)


class ProfileEntryEdit(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    content: str | None = Field(default=None, min_length=1, max_length=4000)
    confidence: float | None = Field(default=None, ge=0, le=1)

    check_blank = field_validator("content")(_not_blank)


class EventOut(BaseModel):
    id: str
    memory_id: str
    created_at: float
    summary: str
    tags: list[str]
    profile_delta: list[dict[str, Any]]
    session_ids: list[str]
    source_message_ids: list[str]

    @classmethod
    def of(cls, event: Event) -> "EventOut":
        return cls(memory_id=event_memory_id(event.id), **event.model_dump(exclude={"user_id"}))


class NoteIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4000)
    session_id: str = Field(default="api", min_length=1, max_length=SESSION_ID_MAX_CHARS)

    check_blank = field_validator("text", "session_id")(_not_blank)
    check_id = field_validator("session_id")(_usable_id)


class ForgetIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=1000, description='what to forget: "peanuts", "forget what I said about my ex"')
    dry_run: bool = Field(default=False, description="change nothing: answer what would go, each record with the clauses cut")

    check_blank = field_validator("query")(_not_blank)


class MessagesIn(BaseModel):
    """Past messages to store (`memlane import`'s shapes: `messages`, or LoCoMo-style `sessions`)."""

    model_config = ConfigDict(extra="forbid")
    messages: list[dict[str, Any]] | None = Field(
        default=None, description="each {role, content, id?, session_id?, name?, created_at?}; an OpenAI messages list reads as is"
    )
    sessions: list[dict[str, Any]] | None = Field(default=None, description="LoCoMo-style sessions: {session, date_time, turns}")
    session_id: str = Field(default="import", max_length=SESSION_ID_MAX_CHARS, description="for messages that name none")
    remember: Literal["now"] | None = Field(default=None, description='"now": queue a memory run over them at once')

    check_id = field_validator("session_id")(_usable_id)


class MessagesStored(BaseModel):
    user_id: str
    received: int
    stored: int = Field(description="new to the store (ids already stored are skipped)")
    queued: bool | None = Field(description='with remember "now": a memory run is queued; else null')


class RecallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(description="the user's message the model is about to answer")
    session_id: str = Field(default=DEFAULT_SESSION, max_length=SESSION_ID_MAX_CHARS)


class RunRequested(BaseModel):
    user_id: str
    session_id: str | None = Field(description="the session that ended (sessions/{session_id}/end), else null")
    queued: bool = Field(description="a memory run is queued, or follows the one in progress; false: nothing new to remember")


class Deleted(BaseModel):
    id: str
    deleted: Literal[True] = True


def _public(value: Any, store_user: str, user_id: str) -> Any:
    """A dumped record with each `user_id` shown as the caller's id (not the tenant-qualified store id)."""
    if isinstance(value, dict):
        return {k: (user_id if k == "user_id" and v == store_user else _public(v, store_user, user_id)) for k, v in value.items()}
    if isinstance(value, list):
        return [_public(item, store_user, user_id) for item in value]
    return value


def add_memory_routes(app: FastAPI, service: ServeService) -> None:
    """The memories API under /v1/users/{user_id}: search, profile, events, notes, forgetting, export, memory runs."""
    read = Depends(authorized("read"))
    write = Depends(authorized("write"))
    users = "/v1/users/{user_id}"

    @app.post(users + "/search", tags=["memories"])
    async def search(user_id: str, body: SearchRequest, key: ApiKey = read) -> dict[str, Any]:
        """Hybrid search over the user's memories (profile, events, notes, messages), best first."""
        hits = await watched(
            service.require_store().search_memories(
                tenant_user(key, user_id),
                body.query,
                kinds=body.kinds or list(MEMORY_KINDS),
                session_id=body.session_id,
                since=body.since,
                until=body.until,
                limit=body.limit,
            ),
            service.require_store(),
        )
        return {"object": "list", "data": [SearchHitOut.of(hit).model_dump() for hit in hits]}

    @app.get(users + "/profile", tags=["memories"])
    async def list_profile(user_id: str, key: ApiKey = read) -> dict[str, Any]:
        """The user's profile entries, by topic and subtopic, each since when it holds and with what
        it held before ("earlier")."""
        store_user = tenant_user(key, user_id)
        entries, past_values = await asyncio.gather(
            service.require_store().get_profile(store_user), service.require_store().past_values(store_user)
        )
        return {"object": "list", "data": [ProfileEntryOut.of(entry, past_values).model_dump() for entry in entries]}

    async def find_entry(store_user: str, entry_id: str) -> ProfileEntry:
        entry = next((e for e in await service.require_store().get_profile(store_user) if e.id == entry_id), None)
        if entry is None:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return entry

    @app.get(users + "/profile/{entry_id}", tags=["memories"])
    async def get_entry(user_id: str, entry_id: PathId, key: ApiKey = read) -> ProfileEntryOut:
        """One profile entry, with what it held before."""
        store_user = tenant_user(key, user_id)
        entry = await find_entry(store_user, entry_id)
        return ProfileEntryOut.of(entry, await service.require_store().past_values(store_user, entry_id))

    @app.post(users + "/profile", tags=["memories"], status_code=201)
    async def add_entry(user_id: str, body: ProfileEntryIn, key: ApiKey = write) -> ProfileEntryOut:
        """Add a profile entry (409 when its topic / subtopic slot is taken: PATCH that entry)."""
        store_user = tenant_user(key, user_id)
        store = service.require_store()
        entry_id = profile_entry_id(store_user, body.topic, body.subtopic)
        if any(e.id == entry_id for e in await store.get_profile(store_user)):
            raise ApiError(409, f"the user already has an entry {body.topic} / {body.subtopic} ({entry_id}); PATCH it", "entry_exists")
        await remember_fact(
            store, store_user, body.topic, body.subtopic, body.content, confidence=body.confidence, actor=key.actor
        )
        return ProfileEntryOut.of(await find_entry(store_user, entry_id))  # as stored (private data masked)

    @app.patch(users + "/profile/{entry_id}", tags=["memories"])
    async def edit_entry(user_id: str, entry_id: PathId, body: ProfileEntryEdit, key: ApiKey = write) -> ProfileEntryOut:
        """Change an entry's content and / or confidence; the change is kept in its history."""
        if body.content is None and body.confidence is None:
            raise ApiError(422, "send content, confidence or both", "nothing_to_change")
        try:
            edited = await service.require_store().edit_profile_entry(
                tenant_user(key, user_id), entry_id, content=body.content, confidence=body.confidence, actor=key.actor
            )
        except InvalidInput as error:
            raise ApiError(422, str(error), "invalid_edit") from None
        if edited is None:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return ProfileEntryOut.of(edited)

    @app.delete(users + "/profile/{entry_id}", tags=["memories"])
    async def delete_entry(user_id: str, entry_id: PathId, key: ApiKey = write) -> Deleted:
        """Delete a profile entry (its history keeps the deletion)."""
        if not await service.require_store().delete_profile_entry(tenant_user(key, user_id), entry_id, actor=key.actor):
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return Deleted(id=entry_id)

    @app.get(users + "/profile/{entry_id}/history", tags=["memories"])
    async def entry_history(user_id: str, entry_id: PathId, key: ApiKey = read) -> dict[str, Any]:
        """Every change of the entry, oldest first: who or what made it, before / after, when."""
        store_user = tenant_user(key, user_id)
        revisions = await service.require_store().profile_history(store_user, entry_id)
        if not revisions:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}, now or before", "entry_not_found")
        return {"object": "list", "data": [_public(r.model_dump(mode="json"), store_user, user_id) for r in revisions]}

    @app.get(users + "/events", tags=["memories"])
    async def list_events(
        user_id: str,
        key: ApiKey = read,
        limit: int = Query(default=50, ge=1, le=1000),
        since: float | None = Query(default=None, allow_inf_nan=False),
        until: float | None = Query(default=None, allow_inf_nan=False),
    ) -> dict[str, Any]:
        """The user's event cards, newest first."""
        events = await service.require_store().list_events(tenant_user(key, user_id), limit=limit, since=since, until=until)
        return {"object": "list", "data": [EventOut.of(event).model_dump() for event in events]}

    @app.delete(users + "/events/{event_id}", tags=["memories"])
    async def delete_event(user_id: str, event_id: PathId, key: ApiKey = write) -> Deleted:
        """Delete an event card and its search memory."""
        if not await service.require_store().delete_event(tenant_user(key, user_id), event_id):
            raise ApiError(404, f"the user has no event {event_id!r}", "event_not_found")
        return Deleted(id=event_id)

    @app.post(users + "/memories", tags=["memories"], status_code=201)
    async def add_note(user_id: str, body: NoteIn, key: ApiKey = write) -> dict[str, Any]:
        """Remember a note about the user (an event card tagged "remembered", found by search and recall)."""
        memory = await remember_note(service.require_store(), tenant_user(key, user_id), body.text.strip(), session_id=body.session_id)
        return MemoryOut.of(memory).model_dump()

    @app.delete(users + "/memories/{memory_id}", tags=["memories"])
    async def delete_memory(user_id: str, memory_id: PathId, key: ApiKey = write) -> Deleted:
        """Delete one search memory by id; a profile or event memory takes its entry or card with it."""
        if not await forget_memory(service.require_store(), tenant_user(key, user_id), memory_id, actor=key.actor):
            raise ApiError(404, f"the user has no memory {memory_id!r}", "memory_not_found")
        return Deleted(id=memory_id)

    @app.delete(users + "/messages/{message_id}", tags=["memories"])
    async def delete_message(user_id: str, message_id: PathId, key: ApiKey = write) -> Deleted:
        """Drop one message from history and search, and what it states from the summaries."""
        if not await service.require_store().delete_message(tenant_user(key, user_id), message_id):
            raise ApiError(404, f"the user has no message {message_id!r}", "message_not_found")
        return Deleted(id=message_id)

    @app.post(users + "/forget", tags=["memories"])
    async def forget(user_id: str, body: ForgetIn, key: ApiKey = write) -> dict[str, Any]:
        """Forget what the user said about something, everywhere recall reads (profile, events,
        messages, summaries). Says what was removed, each record with the clauses that went
        (`dry_run`: what would be, changing nothing)."""
        store_user = tenant_user(key, user_id)
        confirm = forget_confirmer(service.memory_model, service.settings)  # the memory model confirms what meaning finds
        report = await service.require_store().forget(
            store_user, body.query, actor=key.actor, confirm=confirm, dry_run=body.dry_run
        )
        return {**_public(report.model_dump(mode="json"), store_user, user_id), "description": report.describe()}

    def requested(user_id: str, session_id: str | None, queued: bool | None) -> RunRequested:
        if queued is None:
            raise ApiError(
                409,
                "memlane serve has no memory model, so turns are stored but nothing is remembered: "
                "add a [memory] section to the configuration file, or set MEMLANE_MEMORY_MODEL / OPENAI_BASE_URL",
                "no_memory_model",
            )
        return RunRequested(user_id=user_id, session_id=session_id, queued=queued)

    @app.post(users + "/recall", tags=["memories"])
    async def recall_block(user_id: str, body: RecallIn, key: ApiKey = read) -> dict[str, Any]:
        """The memory block for a message, for a client that calls its own model: what the chat
        route puts before the model (profile, the session's rolling summary, memories relevant to
        the message, within the recall budget), as `text` and as items with their relevance."""
        identity = MemoryAgentContext(user_id=tenant_user(key, user_id), session_id=valid_session_id(body.session_id))
        recalled = await service.require_turns().recall(identity, body.message)
        if recalled is None:
            raise ApiError(503, "the store cannot answer now; answer without memory and try again", "store_unavailable")
        items = [item.model_dump(exclude_none=True) for item in recalled.items]
        return {"user_id": user_id, "session_id": body.session_id, "text": recalled.text, "tokens": recalled.tokens,
                "search_query": recalled.search_query, "items": items}

    @app.post(users + "/messages", tags=["memories"], status_code=201)
    async def add_messages(user_id: str, body: MessagesIn, key: ApiKey = write) -> MessagesStored:
        """Store past messages of the user (a conversation held elsewhere), idempotent on message ids;
        they are remembered in windows, oldest first, by the next run, or at once with `remember: "now"`."""
        store_user = tenant_user(key, user_id)
        document = {"sessions": body.sessions} if body.sessions is not None else {"messages": body.messages or []}
        try:
            messages = messages_of(document, store_user, session_id=valid_session_id(body.session_id), source="api")
        except InvalidInput as error:
            raise ApiError(422, str(error), "invalid_messages") from None
        added = await store_messages(service.require_store(), messages)
        queued = None
        if body.remember == "now":
            queued = requested(user_id, None, await service.remember_now(store_user)).queued
        return MessagesStored(user_id=user_id, received=len(messages), stored=added, queued=queued)

    @app.post(users + "/remember-now", tags=["memories"], status_code=202)
    async def remember_now(user_id: str, key: ApiKey = write) -> RunRequested:
        """Remember the user's unprocessed messages now, without waiting for the token threshold,
        the session's end or the idle flush. The run is queued: poll the profile and events."""
        return requested(user_id, None, await service.remember_now(tenant_user(key, user_id)))

    @app.post(users + "/sessions/{session_id}/end", tags=["memories"], status_code=202)
    async def end_session(user_id: str, session_id: PathId, key: ApiKey = write) -> RunRequested:
        """The session (the X-Memlane-Session of its chats) ended: remember its messages now and fold
        its rolling summary."""
        session_id = valid_session_id(session_id)
        return requested(user_id, session_id, await service.end_session(tenant_user(key, user_id), session_id))

    @app.get(users + "/export", tags=["memories"])
    async def export_user(user_id: str, key: ApiKey = read) -> dict[str, Any]:
        """Everything stored about the user, as JSON."""
        store_user = tenant_user(key, user_id)
        exported = await service.require_store().export_user(store_user)
        return _public(exported.model_dump(mode="json"), store_user, user_id)

    @app.delete(users, tags=["memories"])
    async def delete_user(user_id: str, key: ApiKey = write) -> dict[str, Any]:
        """Delete everything of the user (after their pending saves)."""
        store_user = tenant_user(key, user_id)
        if service.persistence is not None:
            await service.persistence.wait_saved(store_user, timeout=10)
        if service.scheduler is not None:  # a run in progress would write the user back
            deadline = time.monotonic() + 30
            while await service.scheduler.user_busy(store_user):  # queued or running in any process
                if time.monotonic() > deadline:
                    raise ApiError(409, "a memory run of the user is still working; try again in a moment", "user_busy")
                await asyncio.sleep(0.1)
        removed = await service.require_store().delete_user(store_user)
        return {"id": user_id, "deleted": True, "keys_removed": removed}
