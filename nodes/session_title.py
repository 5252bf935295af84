"""A short title for a chat session, from its first turns (the chat app's session list).

The seed's BrainMemory `get_title`: the model names the subject of the conversation in
its language. Whatever goes wrong (no answer, garbage, a title in the wrong language)
the title falls back to the first thing the user said, cut to length; it never raises.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel

from memlane.config import ModelSettings
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, ModelCallFailed, Step, render_chat
from memlane.nodes.parsing import ParseFailed, extract_json, sole_object, strip_fences
from memlane.store.records import Message
from memlane.store.text.terms import detect_language

logger = logging.getLogger(__name__)

TITLE_MAX_CHARS = 40
TITLE_MESSAGES = 6  # the first turns say what a session is about
TITLE_MESSAGE_CHARS = 500  # of each of them
DEFAULT_TITLE = "New chat"

TITLE_PROMPT = f"""TASK: title a conversation.
Give the conversation below a short title, at most {TITLE_MAX_CHARS} characters, that names
its subject, e.g. "Planning a trip to Lisbon" or "周末去杭州的计划". No quotes, no full stop.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{"title": "..."}}"""


class TitleOutput(BaseModel):
    """The title answer (read by `clean_title`, which takes a bare line too)."""

    title: str


# each run of spaces has one place to go (a long run of them is matched in linear time)
_LABEL = re.compile(r"^\s*(?:\*+\s*)?(?:title|session title|标题|题目)\s*(?:\*+\s*)?[:：]\s*", re.IGNORECASE)
_EDGES = "\"'“”‘’「」『』《》【】`*#_ \t"
_END_PUNCTUATION = "。．.!！?？;；,，、:："
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def shorten_title(text: str, max_chars: int = TITLE_MAX_CHARS) -> str:
    """`text` on one line, at most `max_chars` characters; a cut one ends at a word and "…"."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:  # a Latin-script title is cut between words
        cut = cut[:space]
    return cut.rstrip(" ,，、;；:：-") + "…"


def fallback_title(messages: Sequence[Message]) -> str:
    """The first thing the user said, cut to length; the first non-blank message without one."""
    said = [message for message in messages if message.content.strip()]
    owner = [message for message in said if message.speaker_role == "owner"]
    first = (owner or said)[:1]
    return shorten_title(first[0].content) if first else DEFAULT_TITLE


def _candidate(answer: str) -> str:
    """The title text in a model answer: JSON {"title": ...}, a "Title:" line, or a bare line."""
    try:
        value = sole_object(
            extract_json(
                answer,
                step="session_title",
                accept=lambda found: (
                    isinstance(sole_object(found, "title"), dict) and "title" in sole_object(found, "title")
                ),
            ),
            "title",
        )
    except ParseFailed:
        value = None
    if isinstance(value, dict) and isinstance(value.get("title"), str):
        title: str = value["title"]
        return title
    if "{" in answer:
        return ""  # broken JSON: its pieces are no title
    lines = [line.strip() for line in strip_fences(answer).splitlines() if line.strip()]
    labelled = [_LABEL.sub("", line) for line in lines if _LABEL.match(line)]
    if labelled:
        return labelled[0]
    plain = [line for line in lines if not line.endswith((":", "："))]
    return plain[0] if plain else ""


def clean_title(answer: str, conversation_language: str) -> str | None:
    """A usable title from the answer, or None when it holds none in the conversation's language."""
    title = _LABEL.sub("", " ".join(_candidate(answer).split())).strip(_EDGES).rstrip(_END_PUNCTUATION).strip(_EDGES)
    if not title or len(title) > 3 * TITLE_MAX_CHARS:  # empty, or a paragraph rather than a title
        return None
    if conversation_language == "zh" and not _HAN.search(title):
        return None
    if conversation_language == "en" and not _LATIN.search(title):
        return None
    return shorten_title(title)


async def session_title(llm: BaseChatModel, messages: Sequence[Message], models: ModelSettings) -> str:
    """A short title for the session that starts with `messages`; never raises.

    One try within `models.llm_timeout_seconds` (a title is not worth a retry); on any
    failure the title is the first user message, cut to about 40 characters.
    """
    first_turns = [message for message in messages if message.content.strip()][:TITLE_MESSAGES]
    fallback = fallback_title(first_turns)
    if not first_turns:
        return fallback
    shown = [message.model_copy(update={"content": message.content[:TITLE_MESSAGE_CHARS]}) for message in first_turns]
    owner_text = " ".join(message.content for message in shown if message.speaker_role == "owner")
    language = detect_language(owner_text or " ".join(message.content for message in shown))
    caller = ModelCaller(llm, models.model_copy(update={"llm_max_retries": 0}), Step.SESSION_TITLE)
    try:
        answer = await caller.ask(TITLE_PROMPT, render_chat(shown), schema=TitleOutput)
    except ModelCallFailed as failure:
        logger.warning("session title: using the first message: %s", failure)
        return fallback
    except Exception as error:  # a title is cosmetic: no failure of any kind may reach the chat
        logger.warning("session title: using the first message: %s: %s", type(error).__name__, error)
        return fallback
    title = clean_title(answer, language)
    if title is None:
        logger.warning("session title: no usable title in %r; using the first message", answer[:200])
        return fallback
    return title
