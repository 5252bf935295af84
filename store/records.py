"""The store's records: what history, profile, events, search and the LangGraph items hold and
return. Pydantic models, cleaned and checked on the way in (`ids.clean_text`, `ids.check_id`)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

# what `forget` answers lives beside it (store/forget_report.py); its names stay importable here
from memlane.store.forget_report import ForgetReport, ForgottenRecord  # noqa: F401
from memlane.store.ids import (
    check_id,
    clean_text,
    event_memory_id,
    item_memory_id,
    now,
    past_value_memory_id,
    profile_entry_id,
    profile_memory_id,
)
from memlane.store.parked_run import ParkedRun as ParkedRun  # the run record lives beside it
from memlane.store.relations import Entity, Relation

MemoryKind = Literal["profile", "event", "summary", "message"]
MEMORY_KINDS: tuple[MemoryKind, ...] = ("profile", "event", "summary", "message")
Role = Literal["user", "assistant", "system", "tool"]
SpeakerRole = Literal["owner", "assistant", "other"]


def _cleaned(value: Any) -> Any:
    """A text field as `clean_text` leaves it (None and non-strings are pydantic's to judge)."""
    return clean_text(value) if isinstance(value, str) else value


def _checked(value: str | None) -> str | None:
    """An id field, refused by `check_id` when it holds a control character or a lone surrogate."""
    return value if value is None else check_id(value)


def _checked_user(value: str | None) -> str | None:
    """A store user id field (it may hold a scope's mark: `check_id`'s user)."""
    return value if value is None else check_id(value, "a user id", user=True)


class Message(BaseModel):
    """One chat message; `id` is the caller's and unique per user."""

    id: str = Field(min_length=1)
    user_id: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    role: Role
    content: str
    created_at: float = Field(default_factory=now)
    name: str | None = Field(default=None, description="speaker name, e.g. a friend in a group chat")
    speaker_is_owner: bool | None = Field(
        default=None,
        description="whether the user who owns this memory said it; unset: a 'user' message without a name "
        "is the owner's, a named one (朋友A in a group chat) is someone else's",
    )
    seq: int | None = Field(default=None, description="per-user order, assigned by the store")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="a JSON object of the caller's own, kept with the message and its search memory",
    )

    @field_validator("content", "name")
    @classmethod
    def _replace_lone_surrogates(cls, value: str | None) -> str | None:
        """A lone UTF-16 surrogate ("\\ud800") cannot be encoded for Redis or a model: it becomes
        U+FFFD; NUL bytes are dropped (see `clean_text`)."""
        return None if value is None else clean_text(value)

    @field_validator("id", "session_id")
    @classmethod
    def _check_ids(cls, value: str) -> str:
        return check_id(value)

    _check_user = field_validator("user_id")(_checked_user)

    @property
    def speaker_role(self) -> SpeakerRole:
        """Who said it, explicitly: the memory's owner, the assistant, or someone else."""
        if self.role == "assistant":
            return "assistant"
        if self.speaker_is_owner is not None:
            return "owner" if self.speaker_is_owner else "other"
        return "owner" if self.role == "user" and not self.name else "other"


class SessionSummary(BaseModel):
    """The rolling summary of one (user, session)."""

    user_id: str
    session_id: str
    summary: str
    updated_at: float = Field(default_factory=now)
    source_message_ids: list[str] = Field(default_factory=list)

    _check_ids = field_validator("session_id")(_checked)
    _check_user = field_validator("user_id")(_checked_user)
    _clean_texts = field_validator("summary", mode="before")(_cleaned)


EXPIRES_AT_DESCRIPTION = "when it stops being recalled, searched and listed (epoch seconds); unset: kept"
# how much a memory matters, 0..1: above the neutral 0.5 it votes in search (`fusion.importance_ranking`)
IMPORTANCE_DESCRIPTION = "how much it matters, 0..1 (0.5: neutral; above it, search and recall rank it higher)"


class ProfileEntry(BaseModel):
    """One fact about the user, unique on (user, topic, subtopic)."""

    user_id: str
    topic: str = Field(min_length=1)
    subtopic: str = Field(min_length=1)
    content: str = Field(min_length=1)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    source_message_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    valid_from: float | None = Field(
        default=None,
        description="since when it holds: when it was said (its newest source message), not when it was written; "
        "unset for entries written before memlane kept it (`since` falls back to created_at)",
    )
    expires_at: float | None = Field(default=None, description=EXPIRES_AT_DESCRIPTION)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, description=IMPORTANCE_DESCRIPTION)

    @field_validator("topic", "subtopic")
    @classmethod
    def _strip(cls, value: str) -> str:
        value = " ".join(clean_text(value).split())
        if not value:
            raise ValueError("topic and subtopic must not be blank")
        return value

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = clean_text(value)
        if not value.strip():
            raise ValueError("a profile entry's content must not be blank")
        return value

    _check_user = field_validator("user_id")(_checked_user)

    @property
    def id(self) -> str:
        return profile_entry_id(self.user_id, self.topic, self.subtopic)

    @property
    def line(self) -> str:
        """ "topic / subtopic: content", the way prompts, recall and search show an entry."""
        return f"{self.topic} / {self.subtopic}: {self.content}"

    @property
    def since(self) -> float:
        """Since when the fact holds: `valid_from`, else when the entry was created."""
        return self.valid_from if self.valid_from is not None else self.created_at

    def as_memory(self) -> Memory:
        """The search memory mirroring this entry (rewritten and deleted with it)."""
        return Memory(
            id=profile_memory_id(self.id),
            user_id=self.user_id,
            kind="profile",
            text=self.line,
            created_at=self.since,
            source_message_ids=self.source_message_ids,
            ref_id=self.id,
            expires_at=self.expires_at,
            importance=self.importance,
        )


class PastValue(BaseModel):
    """What a profile entry held before a memory-graph run replaced it (an UPDATE): kept, dated,
    and searchable ("where did I live before?"), from the entry's history."""

    entry_id: str
    user_id: str
    topic: str
    subtopic: str
    content: str
    valid_from: float | None = Field(default=None, description="since when it held (unknown for old entries)")
    valid_until: float = Field(description="when the new value was said")
    source_message_ids: list[str] = Field(default_factory=list)

    _clean_texts = field_validator("content", mode="before")(_cleaned)

    def as_memory(self) -> Memory:
        """Its search memory: the entry's line marked as earlier, in the content's language
        ("earlier: lived in Beijing", "以前：住在北京"), dated by `valid_until`."""
        marker = (
            PAST_VALUE_MARKERS[1]
            if any("\u4e00" <= char <= "\u9fff" for char in self.content)
            else PAST_VALUE_MARKERS[0]
        )
        return Memory(
            id=past_value_memory_id(self.entry_id, self.content),
            user_id=self.user_id,
            kind="profile",
            text=f"{self.topic} / {self.subtopic}: {marker}{self.content}",
            created_at=self.valid_from if self.valid_from is not None else self.valid_until,
            source_message_ids=self.source_message_ids,
            ref_id=self.entry_id,
            context=PAST_VALUE_CONTEXT,
            valid_until=self.valid_until,
        )


# indexed beside a past value (never shown): "before" / "以前" questions find it by keyword too
PAST_VALUE_CONTEXT = "earlier before previously formerly used to past 以前 之前 原来 过去 曾经"
PAST_VALUE_MARKERS = ("earlier: ", "以前：")


def past_value_text(memory: Memory) -> str:
    """The content a past-value memory keeps ("lived in Beijing"), without its slot and marker."""
    text = memory.text.split(": ", 1)[1] if ": " in memory.text else memory.text
    for marker in PAST_VALUE_MARKERS:
        if text.startswith(marker):
            return text[len(marker) :]
    return text


class ProfileRevision(BaseModel):
    """One change of a profile entry, as its history keeps it (oldest first).

    Recorded by `edit_profile_entry`, `delete_profile_entry`, `forget` and `apply_update`; an
    update that changes neither content nor confidence records none. The history outlives
    the entry (the delete is its last revision) and goes with `delete_user`.
    """

    entry_id: str
    user_id: str
    action: Literal["add", "update", "delete"]
    actor: str = Field(
        description='who made the change: "run:<event id>" (a memory-graph run), "user" (the app), '
        '"api:<key name>", "tool", "cli", "forget"'
    )
    at: float = Field(default_factory=now, description="unix time")
    topic: str
    subtopic: str
    before_content: str | None = None
    after_content: str | None = None
    before_confidence: float | None = None
    after_confidence: float | None = None
    before_valid_from: float | None = Field(default=None, description="since when the replaced content held")
    valid_until: float | None = Field(
        default=None,
        description="set when a memory-graph run replaced the content (an UPDATE, not an APPEND): when the new "
        "value was said; the before content is then a past value of the entry (`PastValue`)",
    )
    before_source_message_ids: list[str] = Field(
        default_factory=list, description="where the replaced content came from"
    )
    after_source_message_ids: list[str] = Field(
        default_factory=list,
        description="where the written content came from (the messages a run read, or the one an API write names)",
    )
    after_metadata: dict[str, Any] = Field(
        default_factory=dict, description="the metadata the write carried (`ProfileEntry.metadata`)"
    )

    def past_value(self) -> PastValue | None:
        """The content this revision replaced, as a dated past value (None unless it was replaced)."""
        if self.valid_until is None or not self.before_content:
            return None
        return PastValue(
            entry_id=self.entry_id,
            user_id=self.user_id,
            topic=self.topic,
            subtopic=self.subtopic,
            content=self.before_content,
            valid_from=self.before_valid_from,
            valid_until=self.valid_until,
            source_message_ids=self.before_source_message_ids,
        )


class ProfileChange(BaseModel):
    """One line of an event's profile delta."""

    action: Literal["add", "update", "delete"]
    entry_id: str
    topic: str
    subtopic: str
    content: str = ""
    previous_content: str | None = None

    _clean_texts = field_validator("content", "previous_content", mode="before")(_cleaned)


# the tag of a note: a card remembered on request (the tools, the API, MCP), kept for its own time
REMEMBERED_TAG = "remembered"


class NoteRevision(BaseModel):
    """One change of a note's text (`memlane.memory.AsyncMemory.update`)."""

    at: float = Field(default_factory=now)
    actor: str = "api"
    before: str
    after: str


class Event(BaseModel):
    """An event card: what one memory-graph run learned."""

    id: str
    user_id: str
    created_at: float = Field(default_factory=now)
    summary: str
    tags: list[str] = Field(default_factory=list)
    profile_delta: list[ProfileChange] = Field(default_factory=list)
    session_ids: list[str] = Field(default_factory=list)
    source_message_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="a JSON object of the caller's own (a note's), kept with the card and its search memory",
    )
    revisions: list[NoteRevision] = Field(
        default_factory=list, description="a note's earlier texts, oldest first (a card of a run is never rewritten)"
    )
    expires_at: float | None = Field(default=None, description=EXPIRES_AT_DESCRIPTION)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, description=IMPORTANCE_DESCRIPTION)

    _check_ids = field_validator("id")(_checked)
    _check_user = field_validator("user_id")(_checked_user)
    _clean_texts = field_validator("summary", mode="before")(_cleaned)

    def as_memory(self) -> Memory:
        """The search memory that makes the event's summary searchable."""
        return Memory(
            id=event_memory_id(self.id),
            user_id=self.user_id,
            kind="event",
            text=self.summary,
            session_id=self.session_ids[-1] if self.session_ids else None,
            created_at=self.created_at,
            source_message_ids=self.source_message_ids,
            ref_id=self.id,
            metadata=self.metadata,
            expires_at=self.expires_at,
            importance=self.importance,
        )


class Memory(BaseModel):
    """A searchable memory: a text with its embedding, kind and sources."""

    id: str
    user_id: str
    kind: MemoryKind
    text: str = Field(min_length=1)
    session_id: str | None = None
    created_at: float = Field(default_factory=now)
    source_message_ids: list[str] = Field(default_factory=list)
    ref_id: str | None = Field(default=None, description="id of the profile entry / event it mirrors")
    context: str | None = Field(
        default=None,
        description="text that helps find it but is not part of it (for a message: the message before it "
        "in its session); embedded and indexed with the text, never shown",
    )
    speaker: str | None = Field(default=None, description="who said it, when someone other than the owner did")
    speaker_role: SpeakerRole = Field(
        default="owner", description="owner (the user, and facts about them), assistant, or other (a friend)"
    )
    valid_until: float | None = Field(
        default=None,
        description="when what it states stopped holding (a newer fact replaced it); unset while it holds",
    )
    expires_at: float | None = Field(default=None, description=EXPIRES_AT_DESCRIPTION)
    importance: float = Field(default=0.5, ge=0.0, le=1.0, description=IMPORTANCE_DESCRIPTION)
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="a JSON object of the caller's own (of the note, message or item it makes searchable); "
        "search filters on the keys `StoreSettings.metadata_fields` declares",
    )

    _check_ids = field_validator("id", "session_id")(_checked)
    _check_user = field_validator("user_id")(_checked_user)
    _clean_texts = field_validator("text", "context", "speaker", mode="before")(_cleaned)

    @property
    def attributed_text(self) -> str:
        """The text with its speaker in front when it is not the owner's ("朋友A: …")."""
        if self.speaker_role == "other":
            return f"{self.speaker or 'other'}: {self.text}"
        if self.speaker_role == "assistant":
            return f"{self.speaker or 'assistant'}: {self.text}"
        return self.text

    @property
    def status(self) -> Literal["current", "earlier"]:
        """ "earlier" once a newer fact replaced what it states, else "current"."""
        return "current" if self.valid_until is None else "earlier"


# `memlane.SearchMemory`: the public name of `Memory` above, since `memlane.Memory` is mem0's facade
# (memlane/memory.py); inside the store the record keeps its short name
SearchMemory = Memory


class StoreItem(BaseModel):
    """A LangGraph store item: a search memory of kind "event" whose hash also keeps the item.

    Recall and the app see the memory (id `item_memory_id`); deleting the memory deletes the item.
    """

    user_id: str = Field(min_length=1)
    namespace: list[str] = Field(
        min_length=1,
        description="LangGraph's namespace, any shape; `user_id` is the user it maps to (memlane/langgraph_store.py)",
    )
    key: str
    value: dict[str, Any]
    text: str = Field(default="", description="what search finds it by; empty: not searchable (index=False)")
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    ttl_minutes: float | None = Field(default=None, description="expires this long after its last write or read")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="a JSON object of the caller's own, kept with the item and its search memory"
    )

    _check_user = field_validator("user_id")(_checked_user)
    _clean_texts = field_validator("text", mode="before")(_cleaned)

    @property
    def memory_id(self) -> str:
        return item_memory_id(self.namespace, self.key)

    def as_memory(self) -> Memory:
        """The search memory that carries the item (the JSON value stands in for an unsearchable one's text)."""
        return Memory(
            id=self.memory_id,
            user_id=self.user_id,
            kind="event",
            text=self.text or json.dumps(self.value, ensure_ascii=False) or "{}",
            created_at=self.created_at,
            metadata=self.metadata,
        )


class MemoryUpdate(BaseModel):
    """Everything one memory-graph run writes, applied in one transaction.

    Idempotent: profile entries are keyed by (user, topic, subtopic), events and
    memories by deterministic ids, and the cursor only moves forward.
    """

    user_id: str
    # deleting a profile entry also deletes its `profile_memory_id` memory
    upsert_profile: list[ProfileEntry] = Field(default_factory=list)
    delete_profile_ids: list[str] = Field(default_factory=list)
    event: Event | None = None
    memories: list[Memory] = Field(default_factory=list)
    delete_memory_ids: list[str] = Field(default_factory=list)
    advance_cursor_to: int | None = Field(
        default=None, description="last message seq this run consumed; moves the buffer cursor"
    )
    held_profile: list[ProfileEntry] = Field(
        default_factory=list, description="facts under memory_min_confidence, held for review (store/redis/review.py)"
    )
    actor: str | None = Field(
        default=None, description='who writes it, for profile history; unset: "run:<event id>" ("run" without an event)'
    )


class UserExport(BaseModel):
    """Everything stored about one user."""

    user_id: str
    exported_at: float = Field(default_factory=now)
    messages: list[Message]
    session_summaries: list[SessionSummary]
    session_titles: dict[str, str] = Field(default_factory=dict, description="session id → title")
    profile: list[ProfileEntry]
    events: list[Event]
    memories: list[Memory]
    cursor: int
    profile_history: list[ProfileRevision] = Field(
        default_factory=list, description="revisions of every profile entry, deleted ones included, oldest first"
    )
    items: list[StoreItem] = Field(
        default_factory=list, description="LangGraph store items (memlane/langgraph_store.py), values as written"
    )
    held_for_review: list[ProfileEntry] = Field(default_factory=list, description="facts held for review")
    entities: list[Entity] = Field(default_factory=list, description="people, places and things (store/relations.py)")
    relations: list[Relation] = Field(default_factory=list, description="links between them, ended ones included")
    agents: dict[str, UserExport] = Field(
        default_factory=dict, description="agent id → what that agent's scope of the user holds (store/scopes.py)"
    )
