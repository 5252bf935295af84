"""What every node needs besides the state: the store, the model, settings, slots.

The graph receives it as LangGraph's runtime context (`context_schema=MemoryContext`),
so a notebook or an application's own graph can swap the store or the model per run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import Settings, get_settings
from memlane.nodes.profile_config import ProfileConfig, default_profile_config
from memlane.store.base import MemoryStore


@dataclass
class MemoryContext:
    """Runtime context of the memory graph."""

    store: MemoryStore
    llm: BaseChatModel
    settings: Settings = field(default_factory=get_settings)
    profile_config: ProfileConfig = field(default_factory=default_profile_config)
