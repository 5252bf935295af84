"""Does a new message continue the conversation, or start a new subject?

The seed's BrainMemory `is_related`: the model compares the new message with a summary of
the conversation so far. The chat app starts a fresh context on a shift. Parsing is
lenient (JSON, yes/no, true/false, 是/否, the seed's [TRUE]/[FALSE]); whatever goes wrong
the answer is True, "no shift", because a wrong shift loses context the user expected
the assistant to keep. It never raises.
"""

from __future__ import annotations

import logging
import re

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel

from memlane.config import ModelSettings
from memlane.nodes.llm import DATA_RULE, ModelCaller, ModelCallFailed, Step, data_line, render_message
from memlane.nodes.parsing import ParseFailed, extract_json
from memlane.store.records import Message
from memlane.store.text.trivial import is_trivial

logger = logging.getLogger(__name__)

CONTEXT_MAX_CHARS = 2000  # the newest part of the summary: what a follow-up refers to
MESSAGE_MAX_CHARS = 1000

TOPIC_SHIFT_PROMPT = f"""TASK: decide whether a new message continues a conversation.
Below are a summary of the conversation so far and the user's new message. The message
continues the conversation when it is about the same subject, follows up on it, answers
it or refers back to it ("and the second one?", "那第二个呢？"); small talk such as
"thanks" or "好的" continues it too. It does not when it starts a new, unrelated subject.
{DATA_RULE}
Answer with JSON only: {{"related": true}} or {{"related": false}}"""


class TopicShiftOutput(BaseModel):
    """The topic-shift answer (read by `parse_related`, which takes words too)."""

    related: bool


_ANSWER_KEYS = ("related", "is_related", "continues", "same_topic", "answer", "result")
_LEADING_NO = re.compile(r"^(?:no|nope|false|不是|不相关|无关|否|不)(?:\b|(?![a-z]))", re.IGNORECASE)
_LEADING_YES = re.compile(r"^(?:yes|yep|true|related|是|对|相关|有关)(?:\b|(?![a-z]))", re.IGNORECASE)
# phrases that decide an answer written as prose; the earliest one in the answer wins, so
# "unrelated", "not related", "不相关", "not a new topic" are never read by their second half
_PHRASES: list[tuple[re.Pattern[str], bool]] = [
    (re.compile(r"not (?:a )?new (?:topic|subject)|no(?:t a)? shift|same (?:topic|subject)|follow-?up", re.I), True),
    (
        re.compile(r"unrelated|not related|does(?: not|n't) continue|not a continuation|new (?:topic|subject)", re.I),
        False,
    ),
    (re.compile(r"\b(?:related|continues)\b", re.I), True),
    (re.compile(r"不相关|无关|没有关系|不是同一|新话题|新的话题|换了话题"), False),
    (re.compile(r"相关|有关|继续|同一(?:个)?话题|追问"), True),
    (re.compile(r"\b(?:no|false)\b", re.I), False),
    (re.compile(r"\b(?:yes|true)\b", re.I), True),
]
_DECORATION = "[]()【】「」\"'“”`*#.,:;!?。，：；！？ \t\n"


def read_verdict(value: object) -> bool | None:
    """True / False from an answer value (bool, 0/1, or words), None when it says neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if not isinstance(value, str):
        return None
    text = value.strip().strip(_DECORATION)
    if _LEADING_NO.match(text):
        return False
    if _LEADING_YES.match(text):
        return True
    found = [
        (match.start(), order, verdict)
        for order, (pattern, verdict) in enumerate(_PHRASES)
        if (match := pattern.search(text))
    ]
    return min(found)[2] if found else None


def parse_related(answer: str) -> bool | None:
    """The verdict of a topic-shift answer: JSON first, then the words; None when undecided."""

    def has_verdict(found: object) -> bool:
        return isinstance(found, dict) and any(key in found for key in _ANSWER_KEYS)

    try:
        value = extract_json(answer, step="topic_shift", accept=has_verdict)
    except ParseFailed:
        value = None
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if has_verdict(value):
        for key in _ANSWER_KEYS:
            if key in value:
                verdict = read_verdict(value[key])
                if verdict is not None:
                    return verdict
    if isinstance(value, bool):
        return value
    return read_verdict(re.sub(r'"[a-z_]+"\s*:', " ", answer))  # keys are not verdicts


async def is_related(llm: BaseChatModel, context: str, message: Message, models: ModelSettings) -> bool:
    """Whether `message` continues the conversation summarized in `context`; never raises.

    No context, or a message that says nothing to remember ("ok", "谢谢", only punctuation:
    store/text/trivial.py): True without a call. One try within
    `models.llm_timeout_seconds` (the reply may be waiting); any failure: True.
    """
    if not context.strip() or is_trivial(message.content):  # "ok", "谢谢": no shift, no call
        return True
    shown = message.model_copy(update={"content": message.content[:MESSAGE_MAX_CHARS]})
    user_text = (
        f"<chat>\nConversation so far: {data_line(context.strip()[-CONTEXT_MAX_CHARS:])}\n"
        f"New message: {render_message(shown)}\n</chat>"
    )
    caller = ModelCaller(llm, models.model_copy(update={"llm_max_retries": 0}), Step.TOPIC_SHIFT)
    try:
        answer = await caller.ask(TOPIC_SHIFT_PROMPT, user_text, schema=TopicShiftOutput)
    except ModelCallFailed as failure:
        logger.warning("topic shift: assuming the message continues the conversation: %s", failure)
        return True
    except Exception as error:  # a wrong "related" costs little; no failure may reach the chat
        logger.warning("topic shift: assuming no shift: %s: %s", type(error).__name__, error)
        return True
    verdict = parse_related(answer)
    if verdict is None:
        logger.warning("topic shift: no verdict in %r; assuming no shift", answer[:200])
        return True
    return verdict
