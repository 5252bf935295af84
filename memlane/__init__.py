"""memlane: long-term memory for LangGraph and LangChain agents, kept in Redis through RedisVL.

`__all__` is what the manual teaches, and nothing else. The records' helpers (ids, scopes, the
other records and errors) are in the store's data modules, `memlane.store.records`, `.errors`,
`.ids`, `.hits` and `.scopes`; what the app and the service use of the memory graph is in
`memlane.doors`.
"""

from typing import TYPE_CHECKING, Any

# Every public name is imported on first use: `import memlane` (and so `memlane --help`, whose
# package this is) loads nothing, and a name pulls in only its own module (the store: redis and
# RedisVL; the agent names: LangGraph and LangChain).
_LAZY = {
    # settings
    "Settings": "memlane.config",
    "get_settings": "memlane.config",
    # the store, its records and its errors
    "open_store": "memlane.store.redis.store",
    "MemoryStore": "memlane.store.protocols",
    "Message": "memlane.store.records",
    "ProfileEntry": "memlane.store.records",
    "Event": "memlane.store.records",
    "SearchMemory": "memlane.store.records",  # a searchable memory record (store.add_memories)
    "SessionSummary": "memlane.store.records",
    "MemoryHit": "memlane.store.hits",
    "StoreError": "memlane.store.errors",
    "RedisUnavailable": "memlane.store.errors",
    "QuotaExceeded": "memlane.store.errors",
    "scoped_user_id": "memlane.store.scopes",  # an agent's own memory of a user
    "SHARED_USER_ID": "memlane.store.scopes",  # the shared scope, read beside a user's memories
    # recall
    "Recall": "memlane.recall",  # the function is memlane.recall.recall
    # the agent's doors
    "MemoryAgentContext": "memlane.middleware",
    "MemoryMiddleware": "memlane.middleware",
    "memory_tools": "memlane.tools",
    "MemlaneStore": "memlane.langgraph_store",  # LangGraph's BaseStore over memlane
    "Memory": "memlane.memory",  # mem0's `Memory` (where mem0 users wrote `from mem0 import Memory`)
    "AsyncMemory": "memlane.memory",  # mem0's `AsyncMemory`
    "MemlaneClient": "memlane.client",  # memlane serve's memories API from Python
    "MemoryClient": "memlane.client",  # mem0's name for it: the same class
    "AsyncMemlaneClient": "memlane.client",
    # the memory graph
    "MemoryContext": "memlane.graph",
    "MemoryScheduler": "memlane.graph",
    "MemoryRunResult": "memlane.graph",
    "MemoryStep": "memlane.graph",  # a run's progress, step by step
    "build_memory_graph": "memlane.graph",
    "compile_memory_graph": "memlane.graph",
    "run_memory_graph": "memlane.graph",
    "ProfileConfig": "memlane.graph",
    "load_profile_configs": "memlane.graph",  # MEMLANE_PROFILE_CONFIG's file
}

# names this module exported before its API was cut to what the manual teaches: where they live now
_MOVED = {
    "MemoryKind": "memlane.store.records",
    "MEMORY_KINDS": "memlane.store.records",
    "PastValue": "memlane.store.records",
    "ProfileChange": "memlane.store.records",
    "ProfileRevision": "memlane.store.records",
    "StoreItem": "memlane.store.records",
    "InputTooLarge": "memlane.store.errors",
    "InvalidInput": "memlane.store.errors",
    "WEAK_RELEVANCE": "memlane.store.hits",
    "check_id": "memlane.store.ids",
    "check_slot": "memlane.store.ids",
    "clean_text": "memlane.store.ids",
    "event_memory_id": "memlane.store.ids",
    "profile_entry_id": "memlane.store.ids",
    "profile_memory_id": "memlane.store.ids",
    "stable_id": "memlane.store.ids",
    "split_user_id": "memlane.store.scopes",
    "ForgetConfirm": "memlane.store.protocols",
    "RedisMemoryStore": "memlane.store.redis",
    "RedisPoolExhausted": "memlane.store.redis.connections",
    "RecallItem": "memlane.recall",
    "ProfileConfigs": "memlane.graph",
    "profile_configs_of": "memlane.graph",
    "with_serve_sections": "memlane.graph",
    "StepCallback": "memlane.graph",
    "render_svg": "memlane.graph.diagram",
    "queue_memory_run": "memlane.graph.tasks",
    "MEMORY_MODEL_TAG": "memlane.nodes.llm",
    "forget_confirmer": "memlane.nodes.confirm_forget",
}

if TYPE_CHECKING:  # what type checkers and editors see; at run time, `__getattr__` below
    from memlane.client import AsyncMemlaneClient as AsyncMemlaneClient
    from memlane.client import MemlaneClient as MemlaneClient
    from memlane.client import MemoryClient as MemoryClient
    from memlane.config import Settings as Settings
    from memlane.config import get_settings as get_settings
    from memlane.graph import MemoryContext as MemoryContext
    from memlane.graph import MemoryRunResult as MemoryRunResult
    from memlane.graph import MemoryScheduler as MemoryScheduler
    from memlane.graph import MemoryStep as MemoryStep
    from memlane.graph import ProfileConfig as ProfileConfig
    from memlane.graph import build_memory_graph as build_memory_graph
    from memlane.graph import compile_memory_graph as compile_memory_graph
    from memlane.graph import load_profile_configs as load_profile_configs
    from memlane.graph import run_memory_graph as run_memory_graph
    from memlane.langgraph_store import MemlaneStore as MemlaneStore
    from memlane.memory import AsyncMemory as AsyncMemory
    from memlane.memory import Memory as Memory
    from memlane.middleware import MemoryMiddleware as MemoryMiddleware
    from memlane.persistence import MemoryAgentContext as MemoryAgentContext
    from memlane.recall import Recall as Recall
    from memlane.store.errors import QuotaExceeded as QuotaExceeded
    from memlane.store.errors import RedisUnavailable as RedisUnavailable
    from memlane.store.errors import StoreError as StoreError
    from memlane.store.hits import MemoryHit as MemoryHit
    from memlane.store.protocols import MemoryStore as MemoryStore
    from memlane.store.records import Event as Event
    from memlane.store.records import Message as Message
    from memlane.store.records import ProfileEntry as ProfileEntry
    from memlane.store.records import SearchMemory as SearchMemory
    from memlane.store.records import SessionSummary as SessionSummary
    from memlane.store.redis.store import open_store as open_store
    from memlane.store.scopes import SHARED_USER_ID as SHARED_USER_ID
    from memlane.store.scopes import scoped_user_id as scoped_user_id
    from memlane.tools import memory_tools as memory_tools


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _MOVED:
            raise AttributeError(
                f"memlane.{name} is no longer part of memlane's public API: import it from {_MOVED[name]}"
            )
        raise AttributeError(f"module 'memlane' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "SHARED_USER_ID",
    "AsyncMemlaneClient",
    "AsyncMemory",
    "Event",
    "MemlaneClient",
    "MemlaneStore",
    "Memory",
    "MemoryClient",
    "MemoryAgentContext",
    "MemoryContext",
    "MemoryHit",
    "MemoryMiddleware",
    "MemoryRunResult",
    "MemoryScheduler",
    "MemoryStep",
    "MemoryStore",
    "Message",
    "ProfileConfig",
    "ProfileEntry",
    "QuotaExceeded",
    "Recall",
    "RedisUnavailable",
    "SearchMemory",
    "SessionSummary",
    "Settings",
    "StoreError",
    "build_memory_graph",
    "compile_memory_graph",
    "get_settings",
    "load_profile_configs",
    "memory_tools",
    "open_store",
    "run_memory_graph",
    "scoped_user_id",
]
