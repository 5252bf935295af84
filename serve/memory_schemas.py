"""The request and response models of the memories API (serve/memories.py): what a route takes
as its body and what it answers, each built from a store record by its `of`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memlane import Event, MemoryHit, ProfileEntry, SearchMemory
from memlane.persistence import DEFAULT_SESSION
from memlane.serve.auth import SESSION_ID_MAX_CHARS
from memlane.serve.chat import JsonBody
from memlane.shown_ids import record_id
from memlane.store.ids import check_id, check_slot, clean_text, event_memory_id, expiry_time, profile_memory_id
from memlane.store.records import MemoryKind, PastValue
from memlane.tools import NoteWritten


def _not_blank(text: str | None) -> str | None:
    if text is not None and not clean_text(text).strip():  # as it would be stored: NUL bytes dropped
        raise ValueError("must hold some text, not only spaces (or NUL bytes)")
    return text


def _no_nul(text: str | None) -> str | None:
    """A fact's text as sent, refused when it holds a NUL byte: a profile entry is what the caller
    says it is, not a text cleaned behind its back."""
    if text is not None and "\x00" in text:
        raise ValueError("holds a NUL byte (\\x00); remove it")
    return text


def _usable_id(value: str | None) -> str | None:
    """An id field as sent, refused (422 naming the field) when it holds a NUL byte or a lone
    surrogate: ids are used as given, never cleaned (store/ids.py's check_id)."""
    return check_id(value, "the id") if value is not None else value


# a path id ({entry_id}, {event_id}, ...): a NUL byte answers 422 naming the parameter
PathId = Annotated[str, AfterValidator(_usable_id)]
# a record's id in a path, as any door shows it: its own id, or its memory id ("profile:<entry>",
# "event:<card>", "message:<turn>": what search, recall and MCP show), which names the same record
EntryId = Annotated[PathId, AfterValidator(partial(record_id, kind="profile"))]
EventId = Annotated[PathId, AfterValidator(partial(record_id, kind="event"))]
MessageId = Annotated[PathId, AfterValidator(partial(record_id, kind="message"))]


def _expiry(value: Any) -> float | None:
    """`expires_at` as epoch seconds (`expiry_time`: seconds or ISO 8601, in the future), else a 422."""
    return expiry_time(value)


def _usable_slot(value: str) -> str:
    """A topic or subtopic in a path or a body: 1-64 characters of text (a NUL byte or only spaces:
    422), the rule of every door (`check_slot`)."""
    return check_slot(value)


# a profile slot's topic or subtopic in a path (/profile/{topic}/{subtopic})
PathSlot = Annotated[str, Path(min_length=1, max_length=64), AfterValidator(_usable_slot)]


class SearchRequest(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    query: str = Field(min_length=1, max_length=4000)
    limit: int = Field(default=10, ge=1, le=50)
    kinds: list[MemoryKind] | None = None
    session_id: str | None = Field(default=None, min_length=1, max_length=SESSION_ID_MAX_CHARS)
    since: float | None = None
    until: float | None = None
    filter: dict[str, Any] | None = Field(
        default=None,
        description='only memories whose metadata match: {"project": "apollo"}, {"priority": {"gte": 2, "lt": 5}}, '
        '{"project": {"in": [...]}} / {"ne": ...} / {"nin": [...]}, {"AND": [...]}, {"OR": [...]}; on the fields '
        "MEMLANE_METADATA_FIELDS declares (another is answered 422)",
    )

    check_id = field_validator("session_id")(_usable_id)


IMPORTANCE = "how much it matters, 0 to 1 (0.5: neutral; higher: search and recall rank it higher)"


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
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="the JSON object its note, message or item was written with"
    )
    expires_at: float | None = Field(default=None, description="when it expires (epoch seconds); null: kept")
    importance: float = Field(default=0.5, description=IMPORTANCE)

    @classmethod
    def of(cls, memory: SearchMemory) -> MemoryOut:
        return cls(
            attributed_text=memory.attributed_text,
            status=memory.status,
            **memory.model_dump(exclude={"user_id", "context"}),
        )


class RepeatOut(BaseModel):
    id: str = Field(description="the stored memory the note repeats; it keeps its id and is what this answer shows")
    similarity: float = Field(description="cosine similarity of the two notes' vectors (1.0 for the same text)")
    identical: bool = Field(description="the same text, case and spacing aside; false: a near duplicate")


class ExistsIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4000, description="the text to look for among the user's memories")

    check_blank = field_validator("text")(_not_blank)


class ExistsOut(BaseModel):
    exists: bool = Field(description="the user has it: the same text (case and spacing aside) or a near duplicate")
    memory: MemoryOut | None = Field(default=None, description="the stored memory it repeats")
    similarity: float | None = Field(default=None, description="cosine similarity of the two (1.0 for the same text)")
    identical: bool = Field(default=False, description="the same text; false: a near duplicate")

    @classmethod
    def found(cls, memory: SearchMemory, similarity: float, identical: bool) -> ExistsOut:
        return cls(exists=True, memory=MemoryOut.of(memory), similarity=similarity, identical=identical)


class NoteOut(MemoryOut):
    repeat_of: RepeatOut | None = Field(
        default=None,
        description="set when the note was not stored again because the user has it already (200, not 201)",
    )

    @classmethod
    def written(cls, written: NoteWritten) -> NoteOut:
        repeat = written.repeat_of
        return cls(
            **MemoryOut.of(written.memory).model_dump(),
            repeat_of=RepeatOut(id=repeat.memory.id, similarity=repeat.similarity, identical=repeat.identical)
            if repeat
            else None,
        )


class SearchHitOut(BaseModel):
    memory: MemoryOut
    relevance: float = Field(
        description="relevance 0..1: the chance, as measured, that it holds what was asked, of the query and "
        "the memory alone: the same at every door (README)"
    )
    score: float = Field(description="the relevance again, under the name mem0's answers use")
    weak: bool = Field(description="relevance under 0.1: fewer than one hit in ten like it holds what was asked")
    vector_similarity: float
    text_score: float
    time_match: bool

    @classmethod
    def of(cls, hit: MemoryHit) -> SearchHitOut:
        return cls(
            memory=MemoryOut.of(hit.memory),
            relevance=hit.relevance,
            score=hit.relevance,
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
    def of(cls, value: PastValue) -> PastValueOut:
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
    meta: dict[str, Any] = Field(default_factory=dict, description="the metadata its last write carried")
    valid_from: float = Field(description="since when it holds: when it was said (created_at for older entries)")
    expires_at: float | None = Field(default=None, description="when it expires (epoch seconds); null: kept")
    importance: float = Field(default=0.5, description=IMPORTANCE)
    status: Literal["current"] = "current"
    earlier: list[PastValueOut] = Field(
        default_factory=list, description="what it held before a memory run replaced it, newest first"
    )

    @classmethod
    def of(cls, entry: ProfileEntry, past_values: Sequence[PastValue] = ()) -> ProfileEntryOut:
        return cls(
            id=entry.id,
            memory_id=profile_memory_id(entry.id),
            earlier=[PastValueOut.of(value) for value in reversed(past_values) if value.entry_id == entry.id],
            **entry.model_dump(exclude={"user_id", "metadata", "valid_from"}),
            meta=entry.metadata,
            valid_from=entry.since,
        )


META_MAX_BYTES = 4096


def _small_meta(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    if meta is not None and len(json.dumps(meta, ensure_ascii=False).encode("utf-8")) > META_MAX_BYTES:
        raise ValueError(f"meta is larger than {META_MAX_BYTES} bytes as JSON; keep it to a few fields")
    return meta


class ProfileEntryWrite(JsonBody):
    """What a write of an entry's slot sends (PUT /profile/{topic}/{subtopic}): the content, and
    optionally how sure, which message said it and metadata of the caller's own."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    content: str = Field(min_length=1, max_length=4000)
    confidence: float = Field(default=0.9, ge=0, le=1)
    source_message_id: Annotated[str | None, AfterValidator(_usable_id)] = Field(
        default=None, max_length=512, description="the message the fact comes from (kept in the entry and its history)"
    )
    meta: dict[str, Any] | None = Field(
        default=None, description="a JSON object of the caller's own, kept with the entry and its history"
    )
    expires_at: float | None = Field(
        default=None, description="when it expires: epoch seconds or an ISO 8601 datetime; unset: kept"
    )
    importance: float = Field(default=0.5, ge=0, le=1, description=IMPORTANCE)

    check_blank = field_validator("content")(_not_blank)
    check_nul = field_validator("content")(_no_nul)
    check_meta = field_validator("meta")(_small_meta)
    check_expiry = field_validator("expires_at", mode="before")(_expiry)


class ProfileEntryIn(ProfileEntryWrite):
    topic: str = Field(min_length=1, max_length=64)
    subtopic: str = Field(min_length=1, max_length=64)

    check_slot = field_validator("topic", "subtopic")(_usable_slot)


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
    expires_at: float | None = Field(default=None, description="when it expires (epoch seconds); null: kept")
    importance: float = Field(default=0.5, description=IMPORTANCE)

    @classmethod
    def of(cls, event: Event) -> EventOut:
        return cls(memory_id=event_memory_id(event.id), **event.model_dump(exclude={"user_id"}))


class NoteIn(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    text: str = Field(min_length=1, max_length=4000)
    session_id: str = Field(default="api", min_length=1, max_length=SESSION_ID_MAX_CHARS)
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="a JSON object of the caller's own, kept with the note; search filters on its declared fields",
    )
    expires_at: float | None = Field(
        default=None, description="when it expires: epoch seconds or an ISO 8601 datetime; unset: kept"
    )
    importance: float | None = Field(default=None, ge=0, le=1, description=IMPORTANCE + "; unset: 0.5 or as stored")

    check_blank = field_validator("text", "session_id")(_not_blank)
    check_id = field_validator("session_id")(_usable_id)
    check_expiry = field_validator("expires_at", mode="before")(_expiry)


class ForgetIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1, max_length=1000, description='what to forget: "peanuts", "forget what I said about my ex"'
    )
    dry_run: bool = Field(
        default=False, description="change nothing: answer what would go, each record with the clauses cut"
    )

    check_blank = field_validator("query")(_not_blank)


class MessagesIn(BaseModel):
    """Past messages to store (`memlane import`'s shapes: `messages`, or LoCoMo-style `sessions`)."""

    model_config = ConfigDict(extra="forbid")
    messages: list[dict[str, Any]] | None = Field(
        default=None,
        description=(
            "each {role, content, id?, session_id?, name?, created_at?, metadata?}; an OpenAI messages list reads as is"
        ),
    )
    sessions: list[dict[str, Any]] | None = Field(
        default=None, description="LoCoMo-style sessions: {session, date_time, turns}"
    )
    conversation: dict[str, Any] | None = Field(
        default=None,
        description="LoCoMo's own layout, one conversation: {speaker_a, speaker_b, session_1_date_time, session_1...}",
    )
    session_id: str = Field(
        default="import", max_length=SESSION_ID_MAX_CHARS, description="for messages that name none"
    )
    user_speaker: str | None = Field(
        default=None,
        max_length=200,
        description="in a speaker-named history, the speaker who is the user; the others are people they talk to",
    )
    remember: Literal["now"] | None = Field(default=None, description='"now": queue a memory run over them at once')

    check_id = field_validator("session_id")(_usable_id)


class MessagesStored(BaseModel):
    user_id: str
    received: int
    stored: int = Field(description="new to the store (ids already stored are skipped)")
    queued: bool | None = Field(description='with remember "now": a memory run is queued; else null')


class ImportAccepted(BaseModel):
    """An import larger than MEMLANE_IMPORT_SYNC_MESSAGES: taken, stored and embedded by a job."""

    user_id: str
    received: int
    job_id: str
    job_url: str = Field(description="GET it for how far the job got: stored, embedded, failed, state")


class ImportJobOut(BaseModel):
    """How far an import job got (memlane/import_jobs.py)."""

    user_id: str
    id: str
    state: Literal["running", "done", "failed"]
    received: int
    stored: int = Field(description="stored, or held already (the same message imported before)")
    embedded: int = Field(description="made searchable (system and tool lines are stored, never searched)")
    failed: int = Field(description="not stored; the first 20 with their reason in failures")
    failures: list[dict[str, str]]
    error: str | None = Field(description="why a failed job stopped")
    started_at: float
    finished_at: float | None


class RecallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(description="the user's message the model is about to answer")
    session_id: str = Field(default=DEFAULT_SESSION, max_length=SESSION_ID_MAX_CHARS)
    include_shared: bool = Field(
        default=False, description="read the tenant's shared memory (/v1/shared) beside the user's"
    )


class RunRequested(BaseModel):
    user_id: str
    session_id: str | None = Field(description="the session that ended (sessions/{session_id}/end), else null")
    queued: bool = Field(
        description="a memory run is queued, or follows the one in progress; false: nothing new to remember"
    )


class Deleted(BaseModel):
    id: str
    deleted: Literal[True] = True
