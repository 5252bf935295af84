"""memlane: long-term memory for LangGraph and LangChain agents, kept in Redis through RedisVL."""

from typing import TYPE_CHECKING

# Every public name is imported on first use: `import memlane` (and so `memlane --help`, whose
# package this is) loads nothing, and a name pulls in only its own module (the store: redis and
# RedisVL; the agent names: LangGraph and LangChain).
_LAZY = {
    "Settings": "memlane.config",
    "get_settings": "memlane.config",
    "Event": "memlane.store.records",
    "Memory": "memlane.store.records",
    "MemoryHit": "memlane.store.records",
    "MemoryStore": "memlane.store.protocols",
    "Message": "memlane.store.records",
    "ProfileEntry": "memlane.store.records",
    "RedisUnavailable": "memlane.store.errors",
    "SessionSummary": "memlane.store.records",
    "StoreError": "memlane.store.errors",
    "Recall": "memlane.recall",  # the function is memlane.recall.recall
    "RecallItem": "memlane.recall",
    "RedisPoolExhausted": "memlane.store.connections",
    "RedisMemoryStore": "memlane.store.redis",
    "open_store": "memlane.store.redis",
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

if TYPE_CHECKING:  # what type checkers and editors see; at run time, `__getattr__` below
    from memlane.config import Settings, get_settings
    from memlane.graph import (
        MemoryContext,
        MemoryRunResult,
        MemoryScheduler,
        ProfileConfig,
        build_memory_graph,
        compile_memory_graph,
        run_memory_graph,
    )
    from memlane.langgraph_store import MemlaneStore
    from memlane.middleware import MemoryAgentContext, MemoryMiddleware
    from memlane.recall import Recall, RecallItem
    from memlane.store.connections import RedisPoolExhausted
    from memlane.store.errors import RedisUnavailable, StoreError
    from memlane.store.protocols import MemoryStore
    from memlane.store.records import Event, Memory, MemoryHit, Message, ProfileEntry, SessionSummary
    from memlane.store.redis import RedisMemoryStore, open_store
    from memlane.tools import memory_tools


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memlane' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
