"""Step 1: cut the unprocessed chat to the run's token budget, newest messages kept; and the
windows a backlog larger than one run's budget is remembered in, oldest first."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memlane.store.records import Message
from memlane.store.text.tokens import count_tokens_many, truncate_to_tokens

logger = logging.getLogger(__name__)


class NothingToProcess(ValueError):
    """The run was handed no message with content."""


def truncate_chat(messages: Sequence[Message], max_tokens: int, encoding: str = "cl100k_base") -> list[Message]:
    """The newest messages whose tokens fit `max_tokens`, oldest first.

    Blank messages are dropped. A newest message larger than the whole budget is cut
    to it rather than dropped. Raises `NothingToProcess` when nothing is left.
    """
    candidates = [message for message in messages if message.content.strip()]
    counts = count_tokens_many([message.content for message in candidates], encoding)
    kept: list[Message] = []
    used = 0
    for message, tokens in zip(reversed(candidates), reversed(counts), strict=True):
        if used + tokens > max_tokens:
            if not kept:
                kept.append(
                    message.model_copy(update={"content": truncate_to_tokens(message.content, max_tokens, encoding)})
                )
            break
        kept.append(message)
        used += tokens
    if not kept:
        raise NothingToProcess("no messages to process after truncating: the buffer holds no message with content")
    dropped = len(candidates) - len(kept)
    if dropped:
        logger.info("truncate: dropped the %d oldest messages to fit %d tokens", dropped, max_tokens)
    kept.reverse()
    return kept


def input_windows(messages: Sequence[Message], max_tokens: int, encoding: str = "cl100k_base") -> list[list[Message]]:
    """`messages` cut into consecutive windows of at most `max_tokens` content tokens each,
    oldest first, so that a run over each window reads all of it (`truncate_chat` then drops
    nothing). A message larger than the whole budget is a window of its own (the run reads its
    start). Blank messages ride along with their neighbours; they cost nothing.
    """
    windows: list[list[Message]] = []
    current: list[Message] = []
    used = 0
    for message, tokens in zip(messages, count_tokens_many([m.content for m in messages], encoding), strict=True):
        if current and used + tokens > max_tokens:
            windows.append(current)
            current, used = [], 0
        current.append(message)
        used += tokens
    if current:
        windows.append(current)
    return windows
