"""A circuit breaker for a dependency that can go away (the embedder, the memory model).

Closed: calls go through and consecutive failures are counted. After
`circuit_failure_threshold` of them in a row it opens: calls are refused at once
(`CircuitOpen`) instead of waiting on a dependency that is down. After
`circuit_reset_seconds` it is half-open: one trial call goes through; its success closes
the breaker, its failure opens it again. Opening and closing are logged, one line each.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from memlane.config import ModelSettings

logger = logging.getLogger(__name__)

T = TypeVar("T")
BreakerState = Literal["closed", "open", "half-open"]


class CircuitOpen(RuntimeError):
    """A call refused because its breaker is open: the dependency failed too often just now."""

    def __init__(self, name: str, retry_in: float) -> None:
        super().__init__(
            f"{name} is paused after repeated failures; the next try is in {max(retry_in, 0.0):.0f}s "
            "(MEMLANE_CIRCUIT_RESET_SECONDS)"
        )
        self.name = name
        self.retry_in = retry_in


@dataclass(frozen=True)
class BreakerStatus:
    """A breaker's state as an app shows it; `retry_in` is None unless it is open."""

    name: str
    state: BreakerState
    consecutive_failures: int
    retry_in: float | None = None

    def describe(self) -> str:
        """One line for a status bar: "" while closed."""
        if self.state == "open":
            return (
                f"{self.name} paused after {self.consecutive_failures} failures, "
                f"retry in {max(self.retry_in or 0.0, 0.0):.0f}s"
            )
        if self.state == "half-open":
            return f"{self.name} paused after {self.consecutive_failures} failures, trying again"
        return ""


class CircuitBreaker:
    """Counts consecutive failures of one dependency and stops calling it while they last."""

    def __init__(self, name: str, *, failure_threshold: int = 5, reset_seconds: float = 60.0) -> None:
        self.name = name
        self.failure_threshold = max(1, failure_threshold)
        self.reset_seconds = reset_seconds
        self.state: BreakerState = "closed"
        self.consecutive_failures = 0
        self._opened_at = 0.0
        self._trial_running = False

    @classmethod
    def from_settings(cls, name: str, *, models: ModelSettings) -> CircuitBreaker:
        return cls(
            name,
            failure_threshold=models.circuit_failure_threshold,
            reset_seconds=models.circuit_reset_seconds,
        )

    def status(self) -> BreakerStatus:
        """The state now, without changing it (an open breaker past its reset time reads
        half-open: the next call is its trial)."""
        if self.state == "closed":
            return BreakerStatus(self.name, "closed", self.consecutive_failures)
        retry_in = self.reset_seconds - (time.monotonic() - self._opened_at)
        if self.state == "half-open" or retry_in <= 0:
            return BreakerStatus(self.name, "half-open", self.consecutive_failures, 0.0)
        return BreakerStatus(self.name, "open", self.consecutive_failures, retry_in)

    def _acquire(self) -> None:
        """Let one call through, or raise `CircuitOpen`."""
        if self.state == "closed":
            return
        waited = time.monotonic() - self._opened_at
        if self.state == "open" and waited >= self.reset_seconds:
            self.state = "half-open"
        if self.state == "half-open" and not self._trial_running:
            self._trial_running = True  # one trial at a time: the others are still refused
            return
        raise CircuitOpen(self.name, self.reset_seconds - waited)

    def record_success(self) -> None:
        self._trial_running = False
        self.consecutive_failures = 0
        if self.state != "closed":
            self.state = "closed"
            logger.warning("circuit closed: %s answers again", self.name)

    def record_failure(self, error: BaseException) -> None:
        self._trial_running = False
        self.consecutive_failures += 1
        if self.state == "half-open" or (
            self.state == "closed" and self.consecutive_failures >= self.failure_threshold
        ):
            if self.state == "closed":
                logger.warning(
                    "circuit open: %s failed %d times in a row (last: %s: %s); calls are refused for %gs",
                    self.name,
                    self.consecutive_failures,
                    type(error).__name__,
                    error,
                    self.reset_seconds,
                )
            self.state = "open"
            self._opened_at = time.monotonic()

    async def call(self, make_call: Callable[[], Awaitable[T]]) -> T:
        """`await make_call()` through the breaker. The awaitable is only made when the call is
        let through, so a refused call leaves no coroutine un-awaited."""
        self._acquire()
        try:
            result = await make_call()
        except asyncio.CancelledError:
            self._trial_running = False  # a cancelled trial proves nothing either way
            raise
        except Exception as error:
            self.record_failure(error)
            raise
        self.record_success()
        return result
