"""The rolling summary of one session: previous summary + new messages → new summary.

Text longer than one model window is summarized recursively: split into overlapping
windows, summarize each, and summarize the joined window summaries again.

Why it terminates: lines longer than W/4 tokens are split first (W = window tokens),
the overlap is at most W/4, so every window but the last adds at least W/2 new tokens;
L tokens make at most 2L/W + 1 windows, each summary is cut to W/8 tokens, and the next
level holds at most L/4 + W/8 < L/2 tokens (L > W, or it would fit one window). Every
level halves the text; `summary_max_depth` caps the levels anyway, after which the
newest tokens that fit are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel

from memlane.config import GraphSettings
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, Step, render_message
from memlane.nodes.parsing import ParseFailed, parse_object, strip_fences
from memlane.store.protocols import HistoryStore
from memlane.store.records import Message, SessionSummary
from memlane.store.text.tokens import count_tokens, count_tokens_many, get_encoding, truncate_to_tokens

logger = logging.getLogger(__name__)

SESSION_SUMMARY_PROMPT = f"""TASK: update the rolling summary of a conversation.
Rewrite the previous summary so it also covers the new part of the conversation, in at
most {{max_tokens}} tokens: topics discussed, what the user asked, decided or told about
themselves, open questions. Newer information wins when they conflict.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{{{"summary": "..."}}}}"""

WINDOW_SUMMARY_PROMPT = f"""TASK: summarize one part of a long conversation.
Summarize the part below in at most {{max_tokens}} tokens, keeping names, numbers,
decisions and what the user said about themselves. It overlaps its neighbours a little.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{{{"summary": "..."}}}}"""

MAX_TRACKED_MESSAGE_IDS = 2000


class SummaryText(BaseModel):
    """The answer of a session-summary call."""

    summary: str


def _answer_text(answer: str, step: str) -> str:
    try:
        return parse_object(answer, SummaryText, step=step).summary.strip()
    except ParseFailed:
        prose = strip_fences(answer)
        if not prose or "{" in prose:
            raise
        return prose


def split_long_line(line: str, max_tokens: int, encoding: str) -> list[str]:
    """A line cut into pieces of at most `max_tokens` tokens."""
    tokens = get_encoding(encoding).encode(line, disallowed_special=())
    if len(tokens) <= max_tokens:
        return [line]
    decode = get_encoding(encoding).decode
    return [decode(tokens[start : start + max_tokens]) for start in range(0, len(tokens), max_tokens)]


def split_windows(lines: Sequence[str], window_tokens: int, overlap_tokens: int, encoding: str) -> list[list[str]]:
    """Consecutive lines grouped into windows of at most `window_tokens`, neighbours sharing
    up to `overlap_tokens` (capped at a quarter window) of trailing lines."""
    piece_limit = max(window_tokens // 4, 1)
    overlap_tokens = min(overlap_tokens, window_tokens // 4)
    pieces = [piece for line in lines for piece in split_long_line(line, piece_limit, encoding)]
    sizes = count_tokens_many(pieces, encoding)
    windows: list[list[str]] = []
    start = 0
    while start < len(pieces):
        end, used = start, 0
        while end < len(pieces) and used + sizes[end] <= window_tokens:
            used += sizes[end]
            end += 1
        end = max(end, start + 1)  # a piece re-encoded over the window still moves on
        windows.append(pieces[start:end])
        if end >= len(pieces):
            break
        # step back over trailing lines worth at most `overlap_tokens`, never to `start`
        next_start, shared = end, 0
        while next_start - 1 > start and shared + sizes[next_start - 1] <= overlap_tokens:
            next_start -= 1
            shared += sizes[next_start]
        start = next_start
    return windows


async def condense(lines: Sequence[str], graph: GraphSettings, caller: ModelCaller, depth: int = 0) -> str:
    """`lines` as one text that fits a window (`graph.summary_window_tokens`, in the caller's
    token encoding): as is when it fits, else windowed summaries."""
    encoding = caller.token_encoding
    window = graph.summary_window_tokens
    text = "\n".join(lines)
    if count_tokens(text, encoding) <= window:
        return text
    if depth >= graph.summary_max_depth:
        logger.warning("session summary: depth %d reached, keeping the newest %d tokens", depth, window)
        tokens = get_encoding(encoding).encode(text, disallowed_special=())
        return get_encoding(encoding).decode(tokens[-window:])
    target = max(window // 8, 16)
    summaries: list[str] = []
    for part in split_windows(lines, window, graph.summary_window_overlap_tokens, encoding):
        answer = await caller.ask(
            WINDOW_SUMMARY_PROMPT.format(max_tokens=target),
            "<chat>\n" + "\n".join(part) + "\n</chat>",
            schema=SummaryText,
            step=Step.WINDOW_SUMMARY,
        )
        summaries.append(truncate_to_tokens(_answer_text(answer, "session summary"), target, encoding))
    return await condense([summary for summary in summaries if summary], graph, caller, depth + 1)


def render_lines(messages: Sequence[Message]) -> list[str]:
    """One line per message with content (see `render_message`)."""
    return [render_message(message) for message in messages if message.content.strip()]


async def summarize_session(
    previous: str, new_messages: Sequence[Message], graph: GraphSettings, caller: ModelCaller
) -> str:
    """The previous summary updated with `new_messages`, at most `graph.session_summary_max_tokens`."""
    encoding = caller.token_encoding
    limit = graph.session_summary_max_tokens
    digest = await condense(render_lines(new_messages), graph, caller)
    answer = await caller.ask(
        SESSION_SUMMARY_PROMPT.format(max_tokens=limit),
        f"Previous summary: {previous or '(none)'}\n\nNew part:\n<chat>\n{digest}\n</chat>",
        schema=SummaryText,
        step=Step.SESSION_SUMMARY,
    )
    summary = _answer_text(answer, "session summary")
    if count_tokens(summary, encoding) > limit:
        answer = await caller.ask(
            WINDOW_SUMMARY_PROMPT.format(max_tokens=limit),
            f"<chat>\n{summary}\n</chat>",
            schema=SummaryText,
            step=Step.WINDOW_SUMMARY,
        )
        summary = truncate_to_tokens(_answer_text(answer, "session summary"), limit, encoding)
    return summary


async def update_session_summary(
    store: HistoryStore, caller: ModelCaller, user_id: str, session_id: str, *, max_new_messages: int = 500
) -> SessionSummary | None:
    """Fold the session's messages not yet summarized into its rolling summary; None when none."""
    previous = await store.get_session_summary(user_id, session_id)
    covered = set(previous.source_message_ids) if previous else set()
    recent = await store.recent_messages(user_id, session_id, limit=max_new_messages)
    new_messages = [message for message in recent if message.id not in covered]
    if not new_messages:
        return previous
    text = await summarize_session(previous.summary if previous else "", new_messages, caller.graph, caller)
    source_ids = (previous.source_message_ids if previous else []) + [message.id for message in new_messages]
    summary = SessionSummary(
        user_id=user_id,
        session_id=session_id,
        summary=text,
        source_message_ids=source_ids[-MAX_TRACKED_MESSAGE_IDS:],
    )
    await store.set_session_summary(summary)
    return summary
