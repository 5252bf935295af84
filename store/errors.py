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


class QuotaExceeded(StoreError):
    """A write would take a user past a quota of `settings.retention`; nothing was written, and what
    the user had is untouched. `quota` is "memories" (how many records) or "bytes" (their text);
    `setting` the variable that sets it."""

    def __init__(self, message: str, *, quota: str, setting: str, limit: int, used: int) -> None:
        super().__init__(message)
        self.quota, self.setting, self.limit, self.used = quota, setting, limit, used
