"""The store protocols, by role: what each caller needs from storage.

Nodes, graph, recall and the doors depend on these, never on Redis; `store/redis/store.py` implements
all of them (`MemoryStore`). A caller asks for the role it uses:

- the memory graph and its worker a `GraphStore` (`MemoryContext.store`): history, the profile,
  parked runs, the sweeps; its persist step a `ProfileStore` (`apply_update`), the session
  summary's fold a `HistoryStore`;
- recall a `RecallStore` (history, profile, search), the search tool a `SearchStore`;
- the queue helpers a `LocatedStore` (where Redis is) or a `RunStore` (parked runs), the recall
  budget a `ServiceStore` (did Redis answer lately);
- the administrative roles are split by what they administer: `RunStore`, `SweepStore`,
  `RequestStore`, `UserStore`, `ServiceStore`; `AdminStore` is all five, for the CLI's operator
  commands;
- the doors (the app, the service, the CLI, the facades) hold a `MemoryStore`, every role at once.

Every method is scoped to one user: no call can read or write another user's data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memlane.store.errors import QuotaExceeded
from memlane.store.forget_report import ForgetReport
from memlane.store.gc_report import GcReport
from memlane.store.held import HeldFact
from memlane.store.hits import MemoryHits
from memlane.store.item_fields import VectorKind
from memlane.store.models.breaker import BreakerStatus
from memlane.store.new_messages import NewMessages
from memlane.store.records import (
    Event,
    Memory,
    MemoryKind,
    MemoryUpdate,
    Message,
    ParkedRun,
    PastValue,
    ProfileEntry,
    ProfileRevision,
    SessionSummary,
    SpeakerRole,
    StoreItem,
    UserExport,
)
from memlane.store.text.sameness import RepeatedMemory

if TYPE_CHECKING:  # annotations only: the protocols load no embedder
    import numpy as np
    from langchain_core.embeddings import Embeddings
    from redisvl.query.filter import FilterExpression

    from memlane.store.models.workers import EmbeddingBacklog
    from memlane.store.redis.metadata import MetadataFilter

ForgetConfirm = Callable[[str, Sequence[str]], Awaitable[Sequence[int] | None]]
"""Which of the user's sentences state what a forget request asks to forget: called with the
request and the sentences nearest it, answers the indexes of those that do ([] for none), or
None when it cannot tell (then `forget` keeps to what it removes without a model). A memory
model answers it (`memlane.nodes.confirm_forget.forget_confirmer`); the store imports no model."""


@runtime_checkable
class HistoryStore(Protocol):
    """What the turn service and the memory graph need of history: messages (idempotent on id),
    the cursor past what the graph consumed, rolling session summaries and titles."""

    async def expire_messages(self, user_id: str, message_ids: Sequence[str], expires_at: float) -> None:
        """These messages and their search entries expire at `expires_at` (epoch seconds), or sooner."""

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

    async def add_new_messages(
        self,
        messages: Sequence[Message],
        *,
        before: Sequence[Message] = (),
        known: Sequence[Message] = (),
        resent: bool = True,
        index_later: bool = False,
    ) -> NewMessages:
        """Save a turn in one call: store `before` (an earlier save's messages) and then the
        messages that are new, in order; ids already stored are skipped, as `add_messages` does.

        With `resent` (the messages are a whole conversation a client sent again), only those
        after the last one its session already holds are new: by id, or a run that reads as the
        session's stored tail, its text compared as the store keeps it (`known`: the session's
        messages not in history on purpose count as held). A message that cannot be stored for what
        it holds (too large, its metadata refused) is refused alone, and said so in the answer;
        Redis being away is raised."""

    async def reindex_pending(self, user_id: str) -> int:
        """Index the user's stored messages whose indexing failed. Returns how many were indexed;
        those that fail again stay recorded for the next try."""

    async def users_with_unindexed_messages(self) -> list[str]:
        """Every user with stored messages waiting for their search entry (the worker's sweep
        calls `reindex_pending` for each)."""

    async def recent_messages(self, user_id: str, session_id: str, limit: int = 20) -> list[Message]:
        """The newest `limit` messages of a session, oldest first."""

    async def message_neighbours(
        self, user_id: str, message_id: str, *, before: int = 1, after: int = 1
    ) -> list[Message]:
        """The message with up to `before` / `after` messages of its session around it, in order."""

    async def messages_around(
        self, user_id: str, message_ids: Sequence[str], *, before: int = 1, after: int = 1
    ) -> dict[str, list[Message]]:
        """`message_neighbours` of many messages at once, by message id (an unknown one left out)."""

    async def unprocessed_messages(self, user_id: str, limit: int | None = None) -> list[Message]:
        """Messages after the user's cursor, oldest first: what the memory graph has not consumed."""

    async def get_cursor(self, user_id: str) -> int:
        """Seq of the last message the memory graph consumed (0 when none)."""

    async def advance_cursor(self, user_id: str, through_seq: int) -> int:
        """Move the cursor forward to `through_seq` (never backwards). Returns the cursor."""

    async def get_session_summary(self, user_id: str, session_id: str) -> SessionSummary | None: ...

    async def set_session_summary(self, summary: SessionSummary) -> None: ...

    async def list_sessions(self, user_id: str) -> list[str]:
        """Session ids of the user, most recently active first."""

    async def set_session_title(self, user_id: str, session_id: str, title: str) -> None:
        """Name a session (the app lists sessions by title); a new title replaces the old."""

    async def session_titles(self, user_id: str) -> dict[str, str]:
        """Session id → title, for the user's sessions that have one."""


@runtime_checkable
class ProfileStore(Protocol):
    """The profile and the event timeline: read and edited by the user, written by the memory
    graph's one idempotent write (`apply_update`)."""

    async def get_profile(self, user_id: str) -> list[ProfileEntry]:
        """All profile entries of the user, sorted by topic and subtopic."""

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

    async def list_events(
        self, user_id: str, *, limit: int = 50, since: float | None = None, until: float | None = None
    ) -> list[Event]:
        """Events of the user, newest first."""

    async def get_events(self, user_id: str, event_ids: Sequence[str]) -> list[Event | None]:
        """The event cards with these ids, in order (None for an id not stored)."""

    async def apply_update(self, update: MemoryUpdate) -> None:
        """Apply a memory-graph run's result atomically (see `MemoryUpdate`), recording profile
        revisions. An entry it deletes is a correction (the fact changed): unlike
        `delete_profile_entry`, nothing else is forgotten with it."""


@runtime_checkable
class ReviewStore(Protocol):
    """Facts the memory model extracted under `memory_min_confidence`, held out of the profile until
    the user confirms (they become profile entries) or drops them."""

    async def held_facts(self, user_id: str) -> list[HeldFact]:
        """The user's held facts, oldest first."""

    async def confirm_held_fact(self, user_id: str, held_id: str, *, actor: str = "user") -> ProfileEntry | None:
        """Write the held fact into its profile slot at confidence 1; None when it is not held."""

    async def drop_held_fact(self, user_id: str, held_id: str) -> bool:
        """Forget the held fact; False when it is not held."""


@runtime_checkable
class SearchStore(Protocol):
    """Searchable memories: what recall asks, ranked by one calibrated relevance."""

    embeddings: Embeddings
    """The embedder of the search memories (queries compared with them are embedded by it too)."""

    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        """Embed and store memories (upsert by id). A memory that repeats one the user has of the same
        kind under another id is not stored again: the same text (case and spacing aside) or, above
        `near_duplicate_similarity`, a near duplicate that says nothing the stored one does not
        (turns excepted: each is its own). Returns each one's id: its own, or the stored one's."""

    async def repeated_memory(self, memory: Memory) -> RepeatedMemory | None:
        """The stored memory of the same user and kind that `memory` would repeat under another id
        (identical, or a near duplicate as `add_memories` reads one), with their similarity; None
        for a turn or when none does. Nothing is written."""

    async def delete_memory(self, user_id: str, memory_id: str) -> bool: ...

    async def memory_vectors(self, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
        """The stored vectors of `memories` (as search found them), by memory id; one with no
        vector stored is left out. Recall compares the user's statements with each other by them."""

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
        metadata_filter: MetadataFilter | FilterExpression | None = None,
    ) -> MemoryHits:
        """Hybrid (vector + BM25, rank-fused) search over the user's memories, best first (a list;
        its `incomplete` names what part of the memories could not be read, empty when none).

        speaker / speaker_roles: only what that person (or those roles) said.
        understand_time: time expressions in the query ("昨天", "on April 27th") boost the
        memories of that time, relative to `reference_time` (default: now).
        metadata_filter: only memories whose metadata match (`store/redis/metadata.py`:
        `{"project": "apollo", "priority": {"gte": 2}}` over the fields `metadata_fields`
        declares; another field is refused with `InvalidInput`), or a RedisVL filter expression.
        """

    async def relevances(
        self,
        user_id: str,
        query: str,
        memory_ids: Sequence[str],
        *,
        reference_time: float | None = None,
        texts: Mapping[str, tuple[str, float]] | None = None,
    ) -> dict[str, float]:
        """The relevance every door shows (`MemoryHit.relevance`, store/relevance.py) of each of the
        user's memories `memory_ids` for `query`, whether or not a search would find them; a memory
        the user does not have is left out. texts: what is not a memory (a session's summary), by a
        name of the caller's: (text, created_at), embedded for it."""

    async def embed_query(self, text: str) -> list[float]:
        """The store's embedding of a search query (what its search memories are compared with)."""


@runtime_checkable
class ItemStore(Protocol):
    """LangGraph store items (memlane/langgraph_store.py): namespaced values, each with its search memory."""

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

    async def newest_items(
        self,
        owner: str | None,
        prefix: Sequence[str],
        *,
        match: Sequence[str] = (),
        limit: int,
        vectors: VectorKind | None = None,
    ) -> list[tuple[StoreItem, bytes | None]]:
        """At most `limit` items under the namespace `prefix` (of `owner`; None: of any) holding every
        value tag of `match` (store/item_fields.py), most recently written first, each with the vectors
        asked for: its own ("own") or its search memory's embedding ("memlane"). On a cluster without
        an owner, at most `limit` from each primary. An index query: no other namespace's item is read."""

    async def nearest_items(
        self,
        owner: str | None,
        prefix: Sequence[str],
        vector: Sequence[float],
        *,
        match: Sequence[str] = (),
        limit: int,
    ) -> list[tuple[StoreItem, bytes | None]]:
        """The `limit` items under `prefix` (as `newest_items`) whose search memory's embedding is
        nearest `vector` (exact KNN under the filter), each with that embedding, in no promised order."""

    async def item_namespaces(self, owner: str | None, prefix: Sequence[str]) -> set[tuple[str, ...]]:
        """Every namespace holding an item under `prefix` (of `owner`; None: of any)."""

    async def get_items(self, user_id: str, memory_ids: Sequence[str]) -> list[StoreItem | None]:
        """The user's items with these memory ids, in order (None for one not stored or expired)."""

    async def list_items(self, user_id: str) -> list[StoreItem]:
        """Every item of the user (per-user, not a scan of the keyspace)."""

    async def refresh_items(self, items: Sequence[StoreItem]) -> None:
        """Restart the expiry clock of the items that have a ttl (a read counts as an access)."""

    async def delete_items(self, user_id: str, memory_ids: Sequence[str]) -> int:
        """Delete items with their search memories. Returns how many existed."""


@runtime_checkable
class ForgettingStore(Protocol):
    """Forgetting: a request in words, or one record deleted with what it stated everywhere recall reads."""

    async def forget(
        self,
        user_id: str,
        query: str,
        *,
        actor: str = "forget",
        confirm: ForgetConfirm | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Forget what the user said about something ("peanuts", "forget what I said about my
        ex", "忘掉关于花生的事"), everywhere recall reads: profile entries stating it are
        deleted (or rewritten without it), and the sentences stating it leave messages (a
        message left with nothing is dropped from history), event summaries (an event left
        with nothing is deleted), session summaries, the history of the profile entries
        touched, and LangGraph store items (deleted).

        Words first: a sentence holding the subject's words states it (`store/text/fact_sentences.py`),
        among memories of `forget_min_relevance` or more. Then meaning
        (`store/text/forget_by_meaning.py`): with `confirm` (a memory model), the sentences nearest the
        request that it confirms; without, when the words found nothing and the request asks a
        question ("what car I drive"), the one sentence clearly nearest it
        (`forget_meaning_margin`), never one about someone else for a request about the user.
        The unit cut is the clause (Chinese "，、；", English commas and "and"/"but"), never the
        whole sentence. Returns what was removed (each record with the clauses that went);
        `dry_run`: what would be, changing nothing."""

    async def delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str = "user") -> bool:
        """Delete one entry and forget its fact: its search memory, and the fact in the turns it
        came from, in event summaries and in session summaries (see `forget`). Records a
        revision. False when it did not exist."""

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        """Drop one message from history and search, and what it states from event and
        session summaries. False when it was not stored."""

    async def delete_event(self, user_id: str, event_id: str) -> bool:
        """Delete one event card and its search memory, and forget what its summary states in
        its source turns, in other event summaries and in session summaries (see `forget`).
        False when it did not exist."""


@runtime_checkable
class LocatedStore(Protocol):
    """A store that says where its Redis is: the memory graph's queue defaults to the same Redis."""

    url: str | None
    """Where this Redis is (`redis://…`): background workers started for this store share it; None for a
    store built on a client without `open_store`."""


@runtime_checkable
class RunStore(Protocol):
    """The memory graph's dead-letter list: runs that failed every retry, kept for a retry or an operator."""

    async def park_run(self, run: ParkedRun) -> ParkedRun:
        """Add a failed run to the dead-letter list. A run already parked under the same id keeps
        its first failure time and adds the attempts. Returns the run as stored."""

    async def parked_runs(self, user_id: str | None = None) -> list[ParkedRun]:
        """The user's parked runs, oldest first; without a user, every user's (an operator's
        view, for `memlane runs`)."""

    async def drop_parked_run(self, run_id: str) -> ParkedRun | None:
        """Remove a run from the dead-letter list. Returns it, or None when no run has the id."""


@runtime_checkable
class SweepStore(Protocol):
    """The retention sweep: what expiry cannot remove (`memlane gc`, the worker's scheduled sweep)."""

    async def collect_garbage(self, user_id: str | None = None, *, recount: bool = False) -> GcReport:
        """One retention sweep (`memlane gc`) over the user, or every user: the listings of expired
        records, sessions with no message left, search entries whose record is gone, the quota usage
        of what was deleted or expired (with `recount`, counted again from the records); what it did."""


@runtime_checkable
class RequestStore(Protocol):
    """Requests the service has seen under an Idempotency-Key."""

    async def claim_request_key(self, user_id: str, key: str, fingerprint: str, *, ttl_seconds: int) -> str | None:
        """Note that the user's request keyed `key` has `fingerprint`, unless the key was seen within
        `ttl_seconds`: then nothing changes and the fingerprint first noted is returned (None: first)."""


@runtime_checkable
class UserStore(Protocol):
    """A user's data as a whole (export, delete, the agents' scopes of it), and the whole store's (reset)."""

    async def delete_user(self, user_id: str) -> int:
        """Delete everything of the user, its agents' scopes included (`store/scopes.py`; of one
        agent's scope, that scope). Returns the number of keys removed."""

    async def export_user(self, user_id: str) -> UserExport:
        """Everything stored about the user; each agent's scope of it under `agents`."""

    async def agents(self, user_id: str) -> list[str]:
        """The agents that have a scope of the user's (`scoped_user_id`), sorted."""

    async def reset(self) -> int:
        """Delete everything the store holds (every user, every scope; the index stays, empty).
        Returns the number of keys removed."""


@runtime_checkable
class ServiceStore(LocatedStore, Protocol):
    """The store as a running service: where its Redis is, whether it answers, its breakers, what the
    embedder has still to do, and closing it."""

    def health(self) -> list[BreakerStatus]:
        """The state of the store's circuit breakers (the embedder's), without changing it."""

    async def check_ready(self) -> None:
        """Raise StoreError saying what is wrong unless the store can serve (Redis answers, its index exists)."""

    async def quota_refusal(self, user_id: str, records: int, text_bytes: int) -> QuotaExceeded | None:
        """The refusal a write of `records` new records with `text_bytes` bytes of text would meet now
        (None: it fits, or no quota is set), reserving nothing."""

    def answered_within(self, seconds: float) -> bool:
        """Whether one of the store's calls got its reply from Redis in the last `seconds` (a busy
        process still hears from Redis; a frozen Redis says nothing)."""

    def embedding_backlog(self) -> EmbeddingBacklog | None:
        """Stored texts handed to the embedder and not embedded yet (None for an embedder that keeps no
        queue): how far search lags behind what was saved."""

    async def aclose(self) -> None: ...


@runtime_checkable
class AdminStore(RunStore, SweepStore, RequestStore, UserStore, ServiceStore, Protocol):
    """Every administrative role at once, for a caller that administers all of them (the CLI's operator
    commands)."""


@runtime_checkable
class GraphStore(HistoryStore, ProfileStore, RunStore, SweepStore, LocatedStore, Protocol):
    """What the memory graph and its worker use: history and its cursor, session summaries, the profile
    and a run's one write (`apply_update`), parked runs, the reindex and retention sweeps, and where
    the store's Redis is (the queue's default)."""


@runtime_checkable
class MemoryStore(GraphStore, SearchStore, ItemStore, ForgettingStore, AdminStore, ReviewStore, Protocol):
    """Every role at once: what `RedisMemoryStore` implements and `open_store` returns. Callers that
    need one role ask for it (a scripted store in a test then only implements that role)."""


@runtime_checkable
class RecallStore(HistoryStore, ProfileStore, SearchStore, Protocol):
    """What recall reads before a model call: the profile, the session's summary and messages, and
    search over the user's memories."""
