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
from memlane.nodes.profile_config import ProfileConfig
from memlane.nodes.profile_configs import ProfileConfigs, configured_profile_configs
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.protocols import MemoryStore


@dataclass
class MemoryContext:
    """Runtime context of the memory graph."""

    store: MemoryStore
    llm: BaseChatModel
    settings: Settings = field(default_factory=get_settings)
    # the slots and prompt rules of every run (the default of `profile_configs`); None: the default
    # of MEMLANE_PROFILE_CONFIG (settings.graph.profile_config), else the built-in slots
    profile_config: ProfileConfig | None = None
    # per tenant and per agent (nodes/profile_configs.py); None: MEMLANE_PROFILE_CONFIG's, under
    # MEMLANE_SERVE_CONFIG's [profile] sections
    profile_configs: ProfileConfigs | None = None
    # None: one made from the settings (circuit_failure_threshold, circuit_reset_seconds)
    model_breaker: CircuitBreaker | None = None

    def __post_init__(self) -> None:
        if self.profile_configs is None:
            self.profile_configs = configured_profile_configs(self.settings)
        if self.profile_config is None:
            self.profile_config = self.profile_configs.default
        else:  # given: the default of every run
            self.profile_configs = self.profile_configs.model_copy(update={"default": self.profile_config})
        if self.model_breaker is None:
            self.model_breaker = CircuitBreaker.from_settings("the memory model", models=self.settings.models)

    def profile_config_of(self, user_id: str) -> ProfileConfig:
        """The slots and prompt rules of a run for the store user `user_id` (its agent's, its
        tenant's, else the default)."""
        assert self.profile_configs is not None  # set by __post_init__
        return self.profile_configs.of(user_id)
