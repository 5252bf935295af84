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
from memlane.recall import Recall, RecallItem  # the function is memlane.recall.recall
from memlane.store.connections import RedisPoolExhausted
from memlane.store.redis import RedisMemoryStore, open_store

# Names whose modules pull in LangGraph / LangChain agents: imported on first use,
# so `import memlane` (the CLI, the store) stays quick.
_LAZY = {
    "MemlaneStore": "memlane.langgraph_store",  # LangGraph's BaseStore over memlane
    "MemoryAgentContext": "memlane.middleware",
    "MemoryMiddleware": "memlane.middleware",
    "memory_tools": "memlane.tools",
    "MemoryContext": "memlane.graph",
    "MemoryRunResult": "memlane.graph",
    "MemoryScheduler": "memlane.graph",
    "ProfileConfig": "memlane.graph",
    "build_memory_graph": "memlane.graph",
    "compile_memory_graph": "memlane.graph",
    "run_memory_graph": "memlane.graph",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memlane' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    *_LAZY,
    "Event",
    "Memory",
    "MemoryHit",
    "MemoryStore",
    "Message",
    "ProfileEntry",
    "Recall",
    "RecallItem",
    "RedisMemoryStore",
    "RedisPoolExhausted",
    "RedisUnavailable",
    "SessionSummary",
    "Settings",
    "StoreError",
    "get_settings",
    "open_store",
]
