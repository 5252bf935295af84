"""What every node needs besides the state: the store, the model, settings, slots.

The graph receives it as LangGraph's runtime context (`context_schema=MemoryContext`),
so a notebook or an application's own graph can swap the store or the model per run.
The memory model's circuit breaker lives here too: every step of every run that shares
the context (a scheduler's runs) counts failures of the one model together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import Settings, get_settings
from memlane.nodes.profile_config import ProfileConfig, default_profile_config, load_profile_config
from memlane.store.breaker import CircuitBreaker
from memlane.store.protocols import MemoryStore


@dataclass
class MemoryContext:
    """Runtime context of the memory graph."""

    store: MemoryStore
    llm: BaseChatModel
    settings: Settings = field(default_factory=get_settings)
    # None: the slots of MEMLANE_PROFILE_CONFIG (settings.graph.profile_config), else the built-in ones
    profile_config: ProfileConfig | None = None
    # None: one made from the settings (circuit_failure_threshold, circuit_reset_seconds)
    model_breaker: CircuitBreaker | None = None

    def __post_init__(self) -> None:
        if self.profile_config is None:
            configured = self.settings.graph.profile_config
            self.profile_config = load_profile_config(configured) if configured else default_profile_config()
        if self.model_breaker is None:
            self.model_breaker = CircuitBreaker.from_settings("the memory model", self.settings)
