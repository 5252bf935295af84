"""The Redis wing: `RedisMemoryStore` (store.py), a small facade over one module per concern
(history, profile, events, search memories, search, forgetting, quotas, retention, the sweep,
idempotent requests, parked runs, exports), all sharing one `StoreCore` (core.py).

`from memlane.store.redis import RedisMemoryStore, open_store` keeps working: both are loaded
on first use, so importing one part of the wing does not load the rest."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlane.store.redis.store import RedisMemoryStore, open_store

__all__ = ["RedisMemoryStore", "open_store"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'memlane.store.redis' has no attribute {name!r}")
    from memlane.store.redis import store

    return getattr(store, name)
