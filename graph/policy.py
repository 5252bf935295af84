"""When a memory-graph run starts: not on every message, because runs cost model calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from memlane.store.records import Message
from memlane.store.text.tokens import count_tokens_many

Reason = Literal["threshold", "session_end", "flush", "below_threshold", "empty"]


class RunDecision(BaseModel):
    """Whether to run now, and why."""

    due: bool
    reason: Reason
    buffer_tokens: int
    buffer_messages: int
    threshold_tokens: int  # what the buffer must pass (a new user's first run starts at a lower one)


def decide_run(
    unprocessed_messages: Sequence[Message],
    *,
    threshold_tokens: int,
    session_ended: bool = False,
    flush: bool = False,
    encoding: str = "cl100k_base",
) -> RunDecision:
    """Due when the buffer passes `threshold_tokens`, the session ended, or a flush is asked.

    An empty buffer is never due: there is nothing to learn from.
    """
    tokens = sum(count_tokens_many([message.content for message in unprocessed_messages], encoding))
    count = len(unprocessed_messages)
    if count == 0:
        return RunDecision(
            due=False, reason="empty", buffer_tokens=0, buffer_messages=0, threshold_tokens=threshold_tokens
        )
    if flush:
        reason: Reason = "flush"
    elif session_ended:
        reason = "session_end"
    elif tokens >= threshold_tokens:
        reason = "threshold"
    else:
        return RunDecision(
            due=False,
            reason="below_threshold",
            buffer_tokens=tokens,
            buffer_messages=count,
            threshold_tokens=threshold_tokens,
        )
    return RunDecision(
        due=True, reason=reason, buffer_tokens=tokens, buffer_messages=count, threshold_tokens=threshold_tokens
    )
