"""memlane: long-term memory for LangGraph and LangChain agents, kept in Redis through RedisVL."""

from memlane.config import Settings, get_settings
from memlane.store.base import (
    Event,
    Memory,
    MemoryHit,
    MemoryStore,
    Message,
    ProfileEntry,
    RedisUnavailable,
    SessionSummary,
    StoreError,
)
from memlane.store.redis import RedisMemoryStore, open_store

__all__ = [
    "Event",
    "Memory",
    "MemoryHit",
    "MemoryStore",
    "Message",
    "ProfileEntry",
    "RedisMemoryStore",
    "RedisUnavailable",
    "SessionSummary",
    "Settings",
    "StoreError",
    "get_settings",
    "open_store",
]
