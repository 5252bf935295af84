"""The store protocol and its record models.

Nodes, graph and recall depend on `MemoryStore` only; `store/redis.py` implements it.
Every method is scoped to one user: no call can read or write another user's data.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Awaitable, Callable, Literal, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from memlane.store.breaker import BreakerStatus

MemoryKind = Literal["profile", "event", "summary", "message"]
MEMORY_KINDS: tuple[MemoryKind, ...] = ("profile", "event", "summary", "message")
Role = Literal["user", "assistant", "system", "tool"]
SpeakerRole = Literal["owner", "assistant", "other"]


class StoreError(RuntimeError):
    """Base class of the store's errors; the message says what to do."""


class RedisUnavailable(StoreError):
    """Redis cannot be reached or started."""


class EmbeddingsUnavailable(StoreError):
    """The embedder failed (or its circuit breaker is open): search falls back to keywords,
    and messages stored meanwhile are indexed later (`MemoryStore.reindex_pending`)."""


class InvalidInput(ValueError):
    """The store refuses a record or an id for what it holds (a NUL byte in an id, a blank
    profile content, a confidence outside 0..1); the message says what to change."""


class InputTooLarge(InvalidInput):
    """A text or id is longer than its setting allows; the message names the setting."""


def stable_id(*parts: str) -> str:
    """A deterministic id from content parts: at-least-once delivery must not duplicate."""
    digest = hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:32]


def now() -> float:
    return time.time()


def clean_text(value: str) -> str:
    """`value` safe to store, embed and send to a model: NUL bytes dropped, each lone UTF-16
    surrogate ("\\ud800") replaced by U+FFFD (a pair of surrogates is joined into the character
    it encodes)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    if value.isascii():
        return value
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def check_id(value: str, what: str = "an id") -> str:
    """`value` as it is, or `InvalidInput` when it holds a NUL byte or a lone surrogate. Ids are
    used as given, never cleaned: a changed id could name another record, or another user."""
    if "\x00" in value:
        raise InvalidInput(f"{what} holds a NUL byte (\\x00); ids are used as given, so remove it")
    if not value.isascii() and any("\ud800" <= char <= "\udfff" for char in value):
        raise InvalidInput(f"{what} holds a lone UTF-16 surrogate; ids must be valid Unicode text")
    return value


def _cleaned(value: Any) -> Any:
    """A text field as `clean_text` leaves it (None and non-strings are pydantic's to judge)."""
    return clean_text(value) if isinstance(value, str) else value


def _checked(value: str | None) -> str | None:
    """An id field, refused by `check_id` when it holds a NUL byte or a lone surrogate."""
    return value if value is None else check_id(value)


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

    @field_validator("content", "name")
    @classmethod
    def _replace_lone_surrogates(cls, value: str | None) -> str | None:
        """A lone UTF-16 surrogate ("\\ud800") cannot be encoded for Redis or a model: it becomes
        U+FFFD; NUL bytes are dropped (see `clean_text`)."""
        return None if value is None else clean_text(value)

    @field_validator("id", "user_id", "session_id")
    @classmethod
    def _check_ids(cls, value: str) -> str:
        return check_id(value)

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

    _check_ids = field_validator("user_id", "session_id")(_checked)
    _clean_texts = field_validator("summary", mode="before")(_cleaned)


def normalize_slot(text: str) -> str:
    """Topic/subtopic key: case and surrounding space do not make a new slot."""
    return " ".join(text.strip().lower().split())


def profile_entry_id(user_id: str, topic: str, subtopic: str) -> str:
    return stable_id("profile", user_id, normalize_slot(topic), normalize_slot(subtopic))


def profile_memory_id(entry_id: str) -> str:
    """Id of the search memory that mirrors a profile entry (deleted with the entry)."""
    return f"profile:{entry_id}"


def past_value_memory_id(entry_id: str, content: str) -> str:
    """Id of the search memory that keeps one past value of a profile entry ("where did I live
    before?"); under the entry's `profile_memory_id`, so deleting the entry's memories by that
    prefix takes its past values too."""
    return f"{profile_memory_id(entry_id)}:earlier:{stable_id(content)}"


def event_memory_id(event_id: str) -> str:
    return f"event:{event_id}"


def message_memory_id(message_id: str) -> str:
    return f"message:{message_id}"


ITEM_MEMORY_PREFIX = "item:"


def item_memory_id(namespace: Sequence[str], key: str) -> str:
    """Id of the search memory that keeps a LangGraph store item (memlane/langgraph_store.py)."""
    return ITEM_MEMORY_PREFIX + stable_id("item", json.dumps([list(namespace), key], ensure_ascii=False))


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

    _check_ids = field_validator("user_id")(_checked)

    @property
    def id(self) -> str:
        return profile_entry_id(self.user_id, self.topic, self.subtopic)

    @property
    def line(self) -> str:
        """"topic / subtopic: content", the way prompts, recall and search show an entry."""
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
        marker = PAST_VALUE_MARKERS[1] if any("\u4e00" <= char <= "\u9fff" for char in self.content) else PAST_VALUE_MARKERS[0]
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
    before_source_message_ids: list[str] = Field(default_factory=list, description="where the replaced content came from")

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

    _check_ids = field_validator("id", "user_id")(_checked)
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

    _check_ids = field_validator("id", "user_id", "session_id")(_checked)
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
        """"earlier" once a newer fact replaced what it states, else "current"."""
        return "current" if self.valid_until is None else "earlier"


WEAK_RELEVANCE = 0.1  # below it, fewer than one hit in ten holds what was asked (bench/relevance_calibration.py)


class MemoryHit(BaseModel):
    """A search result: the memory and how it scored.

    The fusion (`rank_score`: reciprocal-rank fusion of the vector and the text ranking, plus
    the time-scoped and speaker rankings) picks the candidates; hits come sorted by `score`, the
    relevance every surface shows: the measured chance that the hit holds what the query asks
    (store/search.py `calibrated_relevance`), independent of the other hits.
    """

    memory: Memory
    score: float = Field(description="relevance 0..1: the chance, as measured, that it holds what was asked")
    match: float = Field(
        default=0.0, description="rescaled similarity fused with the BM25 score normalized to the best text hit (forget's gate)"
    )
    rank_score: float = Field(default=0.0, description="reciprocal-rank fusion score: the order of the hits")
    vector_similarity: float = Field(description="cosine similarity, 0..1")
    text_score: float = Field(description="BM25 score normalized to the best text hit, 0..1")
    time_match: bool = Field(default=False, description="inside a time the query names (\"yesterday\", \"5月2日\")")
    coverage: float = Field(default=0.0, description="share of the query's terms the memory's text holds, 0..1")
    rank_share: float = Field(
        default=0.0, description="rank_score over the most the voting rankings could give one memory (first in each), 0..1"
    )

    @property
    def weak(self) -> bool:
        """Shown as weak: fewer than one hit in ten at this relevance holds what was asked."""
        return self.score < WEAK_RELEVANCE


class StoreItem(BaseModel):
    """A LangGraph store item: a search memory of kind "event" whose hash also keeps the item.

    Recall and the app see the memory (id `item_memory_id`); deleting the memory deletes the item.
    """

    user_id: str = Field(min_length=1)
    namespace: list[str] = Field(
        min_length=1, description="LangGraph's namespace, any shape; `user_id` is the user it maps to (memlane/langgraph_store.py)"
    )
    key: str
    value: dict[str, Any]
    text: str = Field(default="", description="what search finds it by; empty: not searchable (index=False)")
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    ttl_minutes: float | None = Field(default=None, description="expires this long after its last write or read")

    _check_ids = field_validator("user_id")(_checked)
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
    actor: str | None = Field(
        default=None, description='who writes it, for profile history; unset: "run:<event id>" ("run" without an event)'
    )


ForgetConfirm = Callable[[str, Sequence[str]], Awaitable[Sequence[int] | None]]
"""Which of the user's sentences state what a forget request asks to forget: called with the
request and the sentences nearest it, answers the indexes of those that do ([] for none), or
None when it cannot tell (then `forget` keeps to what it removes without a model). A memory
model answers it (`memlane.nodes.confirm_forget.forget_confirmer`); the store imports no model."""


class ForgottenRecord(BaseModel):
    """One record `forget` changed."""

    kind: Literal["profile", "event", "message", "summary", "item"]
    id: str = Field(description="profile entry, event, message or item memory id; the session id of a summary")
    action: Literal["deleted", "rewritten"] = Field(
        description="deleted: the whole record went; rewritten: the sentences stating the fact went"
    )
    removed: list[str] = Field(
        default_factory=list, description="what went: the clauses cut from it, or its whole text when it was deleted"
    )


class ForgetReport(BaseModel):
    """What `forget` (or deleting a profile entry, event or message) removed, and where."""

    user_id: str
    query: str
    subject: str = Field(default="", description='what was matched: the query without "forget what I said about"')
    records: list[ForgottenRecord] = Field(default_factory=list)
    dry_run: bool = Field(default=False, description="a preview: the records say what forget would change, nothing was changed")

    def add(self, kind: str, record_id: str, action: str, removed: Sequence[str] = ()) -> None:
        if not any(r.kind == kind and r.id == record_id for r in self.records):
            self.records.append(ForgottenRecord(kind=kind, id=record_id, action=action, removed=list(removed)))  # type: ignore[arg-type]

    def has(self, kind: str, record_id: str) -> bool:
        return any(r.kind == kind and r.id == record_id for r in self.records)

    @property
    def forgot_anything(self) -> bool:
        return bool(self.records)

    def describe(self) -> str:
        """One line: "forgot 1 profile entry, 2 messages (1 rewritten), 1 session summary"."""
        if not self.records:
            return f"nothing stored matched {self.subject or self.query!r}"
        verb = "would forget " if self.dry_run else "forgot "
        nouns = {
            "profile": ("profile entry", "profile entries"),
            "event": ("event", "events"),
            "message": ("message", "messages"),
            "summary": ("session summary", "session summaries"),
            "item": ("item", "items"),
        }
        parts = []
        for kind, (singular, plural) in nouns.items():
            records = [r for r in self.records if r.kind == kind]
            if records:
                rewritten = sum(1 for r in records if r.action == "rewritten")
                parts.append(
                    f"{len(records)} {singular if len(records) == 1 else plural}" + (f" ({rewritten} rewritten)" if rewritten else "")
                )
        return verb + ", ".join(parts)

    def details(self) -> str:
        """`describe`, then one line a record with what goes from it: what a dry run shows
        ("- message m0, rewritten: 我住在成都，")."""
        lines = [self.describe()]
        for record in self.records:
            removed = " | ".join(" ".join(text.split()) for text in record.removed)
            lines.append(f"- {record.kind} {record.id}, {record.action}" + (f": {removed}" if removed else ""))
        return "\n".join(lines)


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


class ParkedRun(BaseModel):
    """A memory-graph run that failed every retry, kept in the dead-letter list with its error.

    Its buffer is not lost: the cursor did not move, so retrying queues a run for the user.
    """

    id: str
    user_id: str
    error: str
    attempts: int = Field(ge=1, description="attempts made, over every time this run was parked")
    first_failed_at: float = Field(default_factory=now)
    last_failed_at: float = Field(default_factory=now)


@runtime_checkable
class MemoryStore(Protocol):
    """What the graph, recall and the app need from storage. All methods are async."""

    # history ----------------------------------------------------------------------
    async def add_messages(
        self, messages: Sequence[Message], *, index_for_search: bool = True, index_later: bool = False
    ) -> list[Message]:
        """Store messages; ids already stored are skipped. Returns the newly stored ones, with seq.

        With `index_for_search`, new messages are indexed for search at once, together with
        any of the user's messages whose indexing failed before. A message that cannot be
        indexed now (the embedder is down) is still stored, and recorded for `reindex_pending`.
        With `index_later`, the messages are stored and recorded for `reindex_pending` without
        embedding them now (history answers at once; search finds them once indexed).
        """

    async def reindex_pending(self, user_id: str) -> int:
        """Index the user's stored messages whose indexing failed. Returns how many were indexed;
        those that fail again stay recorded for the next try."""

    async def recent_messages(self, user_id: str, session_id: str, limit: int = 20) -> list[Message]:
        """The newest `limit` messages of a session, oldest first."""

    async def unprocessed_messages(self, user_id: str, limit: int | None = None) -> list[Message]:
        """Messages after the user's cursor, oldest first: what the memory graph has not consumed."""

    async def get_cursor(self, user_id: str) -> int:
        """Seq of the last message the memory graph consumed (0 when none)."""

    async def advance_cursor(self, user_id: str, through_seq: int) -> int:
        """Move the cursor forward to `through_seq` (never backwards). Returns the cursor."""

    # rolling summaries ---------------------------------------------------------------
    async def get_session_summary(self, user_id: str, session_id: str) -> SessionSummary | None: ...

    async def set_session_summary(self, summary: SessionSummary) -> None: ...

    async def list_sessions(self, user_id: str) -> list[str]:
        """Session ids of the user, most recently active first."""

    async def set_session_title(self, user_id: str, session_id: str, title: str) -> None:
        """Name a session (the app lists sessions by title); a new title replaces the old."""

    async def session_titles(self, user_id: str) -> dict[str, str]:
        """Session id → title, for the user's sessions that have one."""

    # profile ---------------------------------------------------------------------------
    async def get_profile(self, user_id: str) -> list[ProfileEntry]:
        """All profile entries of the user, sorted by topic and subtopic."""

    async def delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str = "user") -> bool:
        """Delete one entry and forget its fact: its search memory, and the fact in the turns it
        came from, in event summaries and in session summaries (see `forget`). Records a
        revision. False when it did not exist."""

    async def edit_profile_entry(
        self,
        user_id: str,
        entry_id: str,
        *,
        content: str | None = None,
        confidence: float | None = None,
        actor: str = "user",
    ) -> ProfileEntry | None:
        """Change an entry's content and/or confidence; a new content re-embeds its search memory.
        Records a revision when something changed. None when the entry does not exist; a blank
        content or a confidence outside 0..1 raises `InvalidInput`."""

    async def profile_history(self, user_id: str, entry_id: str) -> list[ProfileRevision]:
        """The entry's revisions, oldest first (kept after the entry is deleted)."""

    async def past_values(self, user_id: str, entry_id: str | None = None) -> list[PastValue]:
        """What the entry (every entry, without `entry_id`) held before a memory-graph run
        replaced it, dated, oldest first (from its history; each is also a search memory)."""

    async def forget(
        self, user_id: str, query: str, *, actor: str = "forget", confirm: ForgetConfirm | None = None, dry_run: bool = False
    ) -> ForgetReport:
        """Forget what the user said about something ("peanuts", "forget what I said about my
        ex", "忘掉关于花生的事"), everywhere recall reads: profile entries stating it are
        deleted (or rewritten without it), and the sentences stating it leave messages (a
        message left with nothing is dropped from history), event summaries (an event left
        with nothing is deleted), session summaries, the history of the profile entries
        touched, and LangGraph store items (deleted).

        Words first: a sentence holding the subject's words states it (`store/forget.py`),
        among memories of `forget_min_relevance` or more. Then meaning
        (`store/forget_meaning.py`): with `confirm` (a memory model), the sentences nearest the
        request that it confirms; without, when the words found nothing and the request asks a
        question ("what car I drive"), the one sentence clearly nearest it
        (`forget_meaning_margin`), never one about someone else for a request about the user.
        The unit cut is the clause (Chinese "，、；", English commas and "and"/"but"), never the
        whole sentence. Returns what was removed (each record with the clauses that went);
        `dry_run`: what would be, changing nothing."""

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        """Drop one message from history and search, and what it states from event and
        session summaries. False when it was not stored."""

    # events ------------------------------------------------------------------------------
    async def list_events(
        self, user_id: str, *, limit: int = 50, since: float | None = None, until: float | None = None
    ) -> list[Event]:
        """Events of the user, newest first."""

    async def delete_event(self, user_id: str, event_id: str) -> bool:
        """Delete one event card and its search memory, and forget what its summary states in
        its source turns, in other event summaries and in session summaries (see `forget`).
        False when it did not exist."""

    async def get_events(self, user_id: str, event_ids: Sequence[str]) -> list[Event | None]:
        """The event cards with these ids, in order (None for an id not stored)."""

    # the memory graph's one write --------------------------------------------------------
    async def apply_update(self, update: MemoryUpdate) -> None:
        """Apply a memory-graph run's result atomically (see `MemoryUpdate`), recording profile
        revisions. An entry it deletes is a correction (the fact changed): unlike
        `delete_profile_entry`, nothing else is forgotten with it."""

    # vector memories -------------------------------------------------------------------
    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        """Embed and store memories (upsert by id). Returns their ids."""

    async def delete_memory(self, user_id: str, memory_id: str) -> bool: ...

    async def search_memories(
        self,
        user_id: str,
        query: str,
        *,
        kinds: Sequence[MemoryKind] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 10,
        speaker: str | None = None,
        speaker_roles: Sequence[SpeakerRole] | None = None,
        reference_time: float | None = None,
        understand_time: bool = True,
    ) -> list[MemoryHit]:
        """Hybrid (vector + BM25, rank-fused) search over the user's memories, best first.

        speaker / speaker_roles: only what that person (or those roles) said.
        understand_time: time expressions in the query ("昨天", "on April 27th") boost the
        memories of that time, relative to `reference_time` (default: now).
        """

    async def message_neighbours(
        self, user_id: str, message_id: str, *, before: int = 1, after: int = 1
    ) -> list[Message]:
        """The message with up to `before` / `after` messages of its session around it, in order."""

    # LangGraph store items (memlane/langgraph_store.py) ----------------------------------
    async def put_items(
        self, items: Sequence[StoreItem], *, vectors: Sequence[bytes | None] | None = None
    ) -> list[StoreItem]:
        """Upsert items with their search memories; a stored item keeps its created_at. An item with
        `ttl_minutes` expires that long after this write, one without never. `vectors`, one per item:
        the item's own vectors (float32 rows, from a LangGraph index config's embedder), or None for
        an item scored by its search memory's embedding. Returns them as stored."""

    async def list_items_with_vectors(self, user_id: str, *, own: bool) -> list[tuple[StoreItem, bytes | None]]:
        """`list_items`, each with its vectors as float32 bytes: its own (`put_items(vectors=...)`) or
        its search memory's embedding; None where it has none (index=False)."""

    async def item_owners(self) -> list[str]:
        """Every user id that items were put under (a deleted user's is dropped)."""

    async def embed_query(self, text: str) -> list[float]:
        """The store's embedding of a search query (what its search memories are compared with)."""

    async def get_items(self, user_id: str, memory_ids: Sequence[str]) -> list[StoreItem | None]:
        """The user's items with these memory ids, in order (None for one not stored or expired)."""

    async def list_items(self, user_id: str) -> list[StoreItem]:
        """Every item of the user (per-user, not a scan of the keyspace)."""

    async def refresh_items(self, items: Sequence[StoreItem]) -> None:
        """Restart the expiry clock of the items that have a ttl (a read counts as an access)."""

    async def delete_items(self, user_id: str, memory_ids: Sequence[str]) -> int:
        """Delete items with their search memories. Returns how many existed."""

    # parked runs (the dead-letter list) and health ---------------------------------------
    async def park_run(self, run: ParkedRun) -> ParkedRun:
        """Add a failed run to the dead-letter list. A run already parked under the same id keeps
        its first failure time and adds the attempts. Returns the run as stored."""

    async def parked_runs(self, user_id: str | None = None) -> list[ParkedRun]:
        """The user's parked runs, oldest first; without a user, every user's (an operator's
        view, for `memlane runs`)."""

    async def drop_parked_run(self, run_id: str) -> ParkedRun | None:
        """Remove a run from the dead-letter list. Returns it, or None when no run has the id."""

    def health(self) -> list[BreakerStatus]:
        """The state of the store's circuit breakers (the embedder's), without changing it."""

    # requests seen under an Idempotency-Key ------------------------------------------------
    async def claim_request_key(self, user_id: str, key: str, fingerprint: str, *, ttl_seconds: int) -> str | None:
        """Note that the user's request keyed `key` has `fingerprint`, unless the key was seen within
        `ttl_seconds`: then nothing changes and the fingerprint first noted is returned (None: first)."""

    # whole user --------------------------------------------------------------------------
    async def delete_user(self, user_id: str) -> int:
        """Delete everything of the user. Returns the number of keys removed."""

    async def export_user(self, user_id: str) -> UserExport: ...

    async def check_ready(self) -> None:
        """Raise StoreError saying what is wrong unless the store can serve (Redis answers, its index exists)."""

    def answered_within(self, seconds: float) -> bool:
        """Whether one of the store's calls got its reply from Redis in the last `seconds` (a busy
        process still hears from Redis; a frozen Redis says nothing)."""

    async def aclose(self) -> None: ...
