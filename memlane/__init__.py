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
    "MemoryHit": "memlane.store.hits",
    "MemoryStore": "memlane.store.protocols",
    "Message": "memlane.store.records",
    "ProfileEntry": "memlane.store.records",
    "RedisUnavailable": "memlane.store.errors",
    "SessionSummary": "memlane.store.records",
    "StoreError": "memlane.store.errors",
    # records, limits and ids the app and the service show or check (ui/, serve/ import only this API)
    "ForgetConfirm": "memlane.store.protocols",
    "InputTooLarge": "memlane.store.errors",
    "InvalidInput": "memlane.store.errors",
    "QuotaExceeded": "memlane.store.errors",
    "MEMORY_KINDS": "memlane.store.records",
    "MemoryKind": "memlane.store.records",
    "PastValue": "memlane.store.records",
    "ProfileChange": "memlane.store.records",
    "ProfileRevision": "memlane.store.records",
    "StoreItem": "memlane.store.records",
    "WEAK_RELEVANCE": "memlane.store.hits",
    "check_id": "memlane.store.ids",
    "check_slot": "memlane.store.ids",  # a profile topic or subtopic a caller names
    "clean_text": "memlane.store.ids",  # a text as the store keeps it (NUL bytes dropped)
    "event_memory_id": "memlane.store.ids",
    "profile_entry_id": "memlane.store.ids",
    "profile_memory_id": "memlane.store.ids",
    "stable_id": "memlane.store.ids",
    "scoped_user_id": "memlane.store.scopes",  # an agent's own memory of a user
    "SHARED_USER_ID": "memlane.store.scopes",  # the shared scope, read beside a user's memories
    "split_user_id": "memlane.store.scopes",
    "Recall": "memlane.recall",  # the function is memlane.recall.recall
    "RecallItem": "memlane.recall",
    "RedisPoolExhausted": "memlane.store.redis.connections",
    "RedisMemoryStore": "memlane.store.redis.store",
    "open_store": "memlane.store.redis.store",
    "MemlaneStore": "memlane.langgraph_store",
    "AsyncMemory": "memlane.memory",  # mem0's calls over memlane (memlane.memory.Memory: the sync one)
    "MemlaneClient": "memlane.client",  # memlane serve's memories API from Python
    "AsyncMemlaneClient": "memlane.client",  # LangGraph's BaseStore over memlane
    "MemoryAgentContext": "memlane.middleware",
    "MemoryMiddleware": "memlane.middleware",
    "memory_tools": "memlane.tools",
    "MemoryContext": "memlane.graph",
    "MemoryRunResult": "memlane.graph",
    "MemoryScheduler": "memlane.graph",
    "MemoryStep": "memlane.graph",  # a run's progress, step by step
    "ProfileConfig": "memlane.graph",
    "ProfileConfigs": "memlane.graph",  # profile slots and prompt rules per tenant and per agent
    "profile_configs_of": "memlane.graph",
    "load_profile_configs": "memlane.graph",  # MEMLANE_PROFILE_CONFIG's file
    "with_serve_sections": "memlane.graph",  # and memlane serve's [profile] sections over it
    "StepCallback": "memlane.graph",
    "build_memory_graph": "memlane.graph",
    "compile_memory_graph": "memlane.graph",
    "run_memory_graph": "memlane.graph",
    "render_svg": "memlane.graph.diagram",  # the memory graph drawn, with a run's steps coloured
    "queue_memory_run": "memlane.graph.tasks",  # a run for the workers of a deployment, from a door without a scheduler
    "MEMORY_MODEL_TAG": "memlane.nodes.llm",  # the tag of every memory-model call (never part of a reply)
    "forget_confirmer": "memlane.nodes.confirm_forget",  # the memory model checks what forgetting by meaning found
}

if TYPE_CHECKING:  # what type checkers and editors see; at run time, `__getattr__` below
    from memlane.client import AsyncMemlaneClient, MemlaneClient
    from memlane.config import Settings, get_settings
    from memlane.graph import (
        MemoryContext,
        MemoryRunResult,
        MemoryScheduler,
        MemoryStep,
        ProfileConfig,
        ProfileConfigs,
        StepCallback,
        build_memory_graph,
        compile_memory_graph,
        load_profile_configs,
        profile_configs_of,
        run_memory_graph,
        with_serve_sections,
    )
    from memlane.graph.diagram import render_svg
    from memlane.graph.tasks import queue_memory_run
    from memlane.langgraph_store import MemlaneStore
    from memlane.memory import AsyncMemory
    from memlane.middleware import MemoryAgentContext, MemoryMiddleware
    from memlane.nodes.confirm_forget import forget_confirmer
    from memlane.nodes.llm import MEMORY_MODEL_TAG
    from memlane.recall import Recall, RecallItem
    from memlane.store.errors import InputTooLarge, InvalidInput, QuotaExceeded, RedisUnavailable, StoreError
    from memlane.store.ids import (
        check_id,
        check_slot,
        clean_text,
        event_memory_id,
        profile_entry_id,
        profile_memory_id,
        stable_id,
    )
    from memlane.store.protocols import ForgetConfirm, MemoryStore
    from memlane.store.records import (
        MEMORY_KINDS,
        WEAK_RELEVANCE,
        Event,
        Memory,
        MemoryHit,
        MemoryKind,
        Message,
        PastValue,
        ProfileChange,
        ProfileEntry,
        ProfileRevision,
        SessionSummary,
        StoreItem,
    )
    from memlane.store.redis.connections import RedisPoolExhausted
    from memlane.store.redis.store import RedisMemoryStore, open_store
    from memlane.store.scopes import SHARED_USER_ID, scoped_user_id, split_user_id
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
