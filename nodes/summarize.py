"""Step 2: summarize the chat into an event summary; empty when it says nothing worth keeping
about the user or about a named person in their chat."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, render_chat
from memlane.nodes.parsing import ParseFailed, parse_object, strip_fences
from memlane.nodes.profile_config import ProfileConfig
from memlane.store.records import Message, ProfileEntry
from memlane.store.text.tokens import count_tokens, truncate_to_tokens

logger = logging.getLogger(__name__)

SUMMARIZE_PROMPT = f"""TASK: summarize a chat for the user's long-term memory.
You keep long-term memory for a personal assistant. Read the chat and write a short event
summary (one to four sentences) of what it reveals about the user ("user" in the chat):
what happened, what they did, felt, like, plan or told about themselves. A named other
speaker (a friend in a group chat) counts too when they state a lasting fact about
themselves (their job, home, tastes, plans, or a change to one): add it in a short clause
that names them ("Maria started climbing" / "朋友A最喜欢的电影是《星际穿越》"), never as the
user's. Skip greetings, small talk and chatter, whoever says it.
When the chat holds nothing worth remembering about the user or the people who speak in
it, the summary is "".
Use the known profile and the profile slots below as context; do not repeat known facts
unless the chat changes them.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{"summary": "..."}}"""


class SummaryOutput(BaseModel):
    """The summarize step's answer."""

    summary: str


def render_profile(profile: Sequence[ProfileEntry]) -> str:
    if not profile:
        return "(empty)"
    return "\n".join(f"- {entry.line}" for entry in profile)


async def summarize_chat(
    chat: Sequence[Message],
    profile: Sequence[ProfileEntry],
    profile_config: ProfileConfig,
    caller: ModelCaller,
) -> str:
    """The event summary, "" when the chat says nothing worth keeping (about the user, or what a
    named speaker says about themselves).

    A prose answer without JSON is taken as the summary; an empty answer raises `ParseFailed`.
    """
    user_text = (
        f"Known profile:\n{render_profile(profile)}\n\nProfile slots:\n{profile_config.describe()}\n\n"
        f"{render_chat(chat)}"
    )
    answer = await caller.ask(profile_config.prompt("summarize", SUMMARIZE_PROMPT), user_text, schema=SummaryOutput)
    try:
        summary = parse_object(answer, SummaryOutput, step="summarize").summary.strip()
    except ParseFailed as failure:
        summary = strip_fences(answer)
        if not summary or "{" in summary:
            raise failure
    return cap_summary(summary, caller.graph.summary_max_tokens, caller.token_encoding)


def cap_summary(summary: str, limit: int, encoding: str) -> str:
    """The summary cut to `limit` tokens (`memory_summary_max_tokens`): a runaway answer is not stored whole."""
    tokens = count_tokens(summary, encoding)
    if tokens <= limit:
        return summary
    logger.warning("summarize: the summary had %d tokens, cut to %d (memory_summary_max_tokens)", tokens, limit)
    return truncate_to_tokens(summary, limit, encoding).strip()
