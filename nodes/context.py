"""What every node needs besides the state: the store, the model, the settings' parts, slots.

The graph receives it as LangGraph's runtime context (`context_schema=MemoryContext`),
so a notebook or an application's own graph can swap the store or the model per run.
The memory model's circuit breaker lives here too: every step of every run that shares
the context (a scheduler's runs) counts failures of the one model together.

It holds the parts of the settings the graph, its scheduler and executor read (`CONTEXT_PARTS`),
each defaulting to its component's defaults, never to the environment: a door that has
`Settings` passes them (`MemoryContext(store=..., llm=..., **settings.parts(*CONTEXT_PARTS))`).
The store's own part (token encoding, key prefix, Redis URL) is the store's unless given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import Component, GraphSettings, ModelSettings, RetentionSettings, SchedulerSettings, StoreSettings
from memlane.nodes.llm import ModelCaller, model_label
from memlane.nodes.profile_config import ProfileConfig
from memlane.nodes.profile_configs import ProfileConfigs, configured_profile_configs
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.protocols import GraphStore

# the settings' parts a context takes by name (`**settings.parts(*CONTEXT_PARTS)`); the store's
# own part is `store_settings` (the name `store` is the store itself)
CONTEXT_PARTS = ("models", "graph", "scheduler", "retention")


@dataclass
class MemoryContext:
    """Runtime context of the memory graph."""

    store: GraphStore
    llm: BaseChatModel
    models: ModelSettings = field(default_factory=ModelSettings)  # the memory model's timeout, retries, breaker
    graph: GraphSettings = field(default_factory=GraphSettings)  # the steps' limits
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)  # the queue, retries, sweeps
    retention: RetentionSettings = field(default_factory=RetentionSettings)  # the garbage collector's sweep
    # token encoding, key prefix, Redis URL; None: the store's own (`store.parts`), else the defaults
    store_settings: StoreSettings | None = None
    # the slots and prompt rules of every run (the default of `profile_configs`); None: the default
    # of `graph.profile_config`, else the built-in slots
    profile_config: ProfileConfig | None = None
    # per tenant and per agent (nodes/profile_configs.py); None: `graph.profile_config`'s (a door
    # with `memlane serve`'s file passes `configured_profile_configs(..., serve_file)`)
    profile_configs: ProfileConfigs | None = None
    # None: one made from `models` (circuit_failure_threshold, circuit_reset_seconds)
    model_breaker: CircuitBreaker | None = None
    # the memory model's fallback chain after `llm` (`memory_models`): a run whose model fails moves down it
    fallback_llms: Sequence[BaseChatModel] = ()
    # one breaker per fallback, in order; made from `models` when not given
    fallback_breakers: Sequence[CircuitBreaker] = ()

    def __post_init__(self) -> None:
        if self.store_settings is None:
            # a store says which settings it was built with (RedisMemoryStore.parts); a double may not
            own = getattr(self.store, "parts", None)
            self.store_settings = own["store"] if isinstance(own, dict) and "store" in own else StoreSettings()
        if self.profile_configs is None:
            self.profile_configs = configured_profile_configs(self.graph.profile_config)
        if self.profile_config is None:
            self.profile_config = self.profile_configs.default
        else:  # given: the default of every run
            self.profile_configs = self.profile_configs.model_copy(update={"default": self.profile_config})
        if self.graph.validate_all:  # every run validates, whatever its tenant's or agent's configuration says
            self.profile_configs = self.profile_configs.validating_all()
            self.profile_config = self.profile_configs.default
        if self.model_breaker is None:
            self.model_breaker = CircuitBreaker.from_settings("the memory model", models=self.models)
        if len(self.fallback_breakers) != len(self.fallback_llms):
            self.fallback_breakers = [
                CircuitBreaker.from_settings(f"the fallback memory model {model_label(llm)}", models=self.models)
                for llm in self.fallback_llms
            ]

    def model_chain(self) -> list[tuple[str, MemoryContext]]:
        """(model name, the context a run on it uses) for the memory model and each fallback, in order:
        the same store, settings and slots, the model and its own breaker swapped."""
        chain: list[tuple[str, MemoryContext]] = [(model_label(self.llm), self)]
        for llm, breaker in zip(self.fallback_llms, self.fallback_breakers):
            chain.append(
                (
                    model_label(llm),
                    replace(self, llm=llm, model_breaker=breaker, fallback_llms=(), fallback_breakers=()),
                )
            )
        return chain

    def profile_config_of(self, user_id: str) -> ProfileConfig:
        """The slots and prompt rules of a run for the store user `user_id` (its agent's, its
        tenant's, else the default)."""
        assert self.profile_configs is not None  # set by __post_init__
        return self.profile_configs.of(user_id)

    @property
    def store_part(self) -> StoreSettings:
        """The store's settings this context reads (`store_settings`, resolved)."""
        assert self.store_settings is not None  # set by __post_init__
        return self.store_settings

    @property
    def secret_parts(self) -> tuple[Component, ...]:
        """The parts whose secrets a failed run's error must not show (keys, Redis and queue URLs)."""
        return (self.models, self.store_part, self.scheduler)

    def caller(self, step: str) -> ModelCaller:
        """A model caller for `step` with this context's parts and the memory model's breaker."""
        return ModelCaller(
            self.llm,
            self.models,
            step,
            breaker=self.model_breaker,
            token_encoding=self.store_part.token_encoding,
            graph=self.graph,
        )
