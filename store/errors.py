"""The store's errors: each message says what to do."""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base class of the store's errors; the message says what to do."""


class RedisUnavailable(StoreError):
    """Redis cannot be reached or started."""


class EmbeddingsUnavailable(StoreError):
    """The embedder failed (or its circuit breaker is open): search falls back to keywords,
    and messages stored meanwhile are indexed later (`MemoryStore.reindex_pending`)."""


class InvalidInput(ValueError):
    """The store refuses a record or an id for what it holds (a NUL byte in an id, a blank
    profile content, a confidence outside 0..1); the message says what to change."""


class InputTooLarge(InvalidInput):
    """A text or id is longer than its setting allows; the message names the setting."""
