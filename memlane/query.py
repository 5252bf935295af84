"""Follow-up questions made searchable: "他哪天出发？" says nothing a search can find.

`rewrite_followup(question, recent, llm=...)` turns a question that leans on the
conversation into one that stands alone, before recall searches with it:

- with a memory model: the model rewrites it from the session's last turns (the seed's
  BrainMemory `rewrite`), answer parsed leniently, within a fixed budget
  (`recall_rewrite_timeout_seconds`, 0.3 s: the reply waits for it); past the budget or on
  any failure it falls back to (running out of the budget is not counted as a failure on the
  memory model's circuit breaker: a model slower than that still serves the memory graph)
- the cheap rewrite: the previous user turn's words are carried into the query
  ("他哪天出发？ 还记得我同事张伟吗"), so its names and nouns reach both the vector and
  the text search. The original question keeps its own words; nothing is removed.

A question that already stands alone is left as it is (see `is_followup`: "What is my job?"
stands alone, "Why?" does not), and so is any question without an earlier turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import ModelSettings, RecallSettings
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, ModelCallFailed, Step, render_chat
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.records import Message
from memlane.store.text.terms import query_terms

logger = logging.getLogger(__name__)

# words that point back at something said before: a third person, a demonstrative
_ZH_REFERENCES = re.compile(r"[他她它]|那[个里儿些次天时]?|这[个里儿些次天时]|其|对方|上面|刚才|之前说")
_EN_REFERENCES = re.compile(
    r"\b(he|she|it|they|him|her|them|his|hers|its|their|that|this|those|these|there|then|one)\b", re.I
)
# phrases with such a word that point at nothing said before: "is there", "this week", "这个月"
_NOT_REFERENCES = re.compile(
    r"\b(is|are|was|were|isn't|aren't)\s+there\b|\bthere\s+(is|are|was|were|'s)\b"
    r"|\b(this|that)\s+(morning|afternoon|evening|night|week|weekend|month|year)\b"
    r"|这个?(月|星期|礼拜|周末|周)",
    re.I,
)
# an opening that carries the last question over to something new: "And the second one?", "What about Paris?",
# "还有呢？"
_CARRY_OVER = re.compile(r"^\s*(and|or|but|also|what about|how about)\b|^\s*(还有|然后|而且)", re.I)
# the user naming themselves: "my job", "I drink", "我住在哪"
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|mine|myself)\b|我", re.I)
# Han characters that ask or bind, not name: "为什么", "怎么样", "多少", "是谁"
_ZH_QUESTION_CHARS = set("为什么怎样哪谁几吗呢吧啊呀么是的了在有个多少呢嘛")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_MAX_CONTEXT_CHARS = 300
# what the memory model is shown of each earlier turn when it rewrites a follow-up: enough to
# name what "he" or "that city" is, not a pasted document (the reply waits on this call)
_MAX_REWRITE_TURN_CHARS = 2000
_FRAGMENT_TERMS = 1  # a question naming at most one thing ("why?", "where?", "多少钱？") leans on what came before

REWRITE_PROMPT = f"""You rewrite the user's last question so that it can be understood without the conversation.
Replace pronouns and references ("he", "that place", "他", "那个") with what they refer to in the chat, and
keep everything else the question asks. If the question already stands alone, repeat it unchanged.
Answer with the rewritten question only: no explanation, no quotes.
{LANGUAGE_RULE}
{DATA_RULE}"""


def content_words(question: str) -> int:
    """How many things the question names: its English search terms, and its Han characters
    that are not question words or particles."""
    english = [term for term in query_terms(question) if not _HAN.search(term)]
    han = [char for char in _HAN.findall(question) if char not in _ZH_QUESTION_CHARS]
    return len(english) + len(han)


def is_followup(question: str) -> bool:
    """True when the question leans on earlier turns, so searching with its own words misses.

    - it points back: a third person or a demonstrative ("他哪天出发？", "那个城市怎么样？",
      "What about her?"), not counting "is there" or "this week";
    - it carries the last question over: "And the second one?", "What about Paris?", "还有呢？";
    - it is a fragment that does not name the user: "Why?", "多少钱？".

    A question that names what it asks about with the user's own first person stands alone,
    however short: "What do I drink?", "What is my job?", "我住在哪？".
    """
    unanchored = _NOT_REFERENCES.sub(" ", question)
    if _ZH_REFERENCES.search(unanchored) or _EN_REFERENCES.search(unanchored) or _CARRY_OVER.search(question):
        return True
    if _FIRST_PERSON.search(question) and content_words(_FIRST_PERSON.sub(" ", question)) >= 1:
        return False  # "my job": the user and the thing asked about, named
    return content_words(question) <= _FRAGMENT_TERMS


def cheap_rewrite(question: str, previous_turns: Sequence[Message]) -> str:
    """The question followed by the previous user turn (the owner's, or a named speaker's)."""
    earlier = [
        message.content.strip()
        for message in previous_turns
        if message.role == "user" and message.content.strip() and message.content.strip() != question.strip()
    ]
    if not earlier:
        return question
    return f"{question} {earlier[-1][:_MAX_CONTEXT_CHARS]}"


def _clean_answer(answer: str, question: str) -> str | None:
    lines = [line.strip().strip("\"'“”「」`") for line in answer.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = re.sub(
        r"^.*?(rewritten question|rewritten|standalone question|question|改写后的问题|改写|问题)\s*[:：]\s*",
        "",
        lines[-1],
        flags=re.I,
    ).strip()
    if not text or len(text) > max(400, 4 * len(question)):
        return None
    return text


def needs_rewrite(question: str, previous_turns: Sequence[Message], recall: RecallSettings) -> bool:
    """Whether recall should search with a rewrite of `question`: it leans on earlier turns."""
    return bool(recall.rewrite_followups and previous_turns and is_followup(question))


async def model_rewrite(
    question: str,
    previous_turns: Sequence[Message],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel,
    breaker: CircuitBreaker | None = None,
) -> str | None:
    """The memory model's standalone form of `question`, or None when it gave none within
    `recall_rewrite_timeout_seconds` (0.3 s: the reply waits on it) or failed."""
    global _told_about_budget
    # the reply waits for this call: a short timeout and no retry
    quick = models.model_copy(update={"llm_timeout_seconds": recall.rewrite_timeout_seconds, "llm_max_retries": 0})
    # past the budget the call is given up, not failed: a model slower than 0.3 s still works
    # for the memory graph, and its breaker must not open on the reply path's impatience
    caller = ModelCaller(llm=llm, models=quick, step=Step.REWRITE, breaker=breaker, timeout_is_budget=True, quiet=True)
    turns = previous_turns[-6:]
    chat = render_chat([turn.model_copy(update={"content": turn.content[:_MAX_REWRITE_TURN_CHARS]}) for turn in turns])
    try:
        answer = await caller.ask(REWRITE_PROMPT, f"{chat}\n\nLast question: {question}")
    except ModelCallFailed as error:
        if "no answer within" in str(error):
            if not _told_about_budget:  # said once: a slow model times out on every follow-up
                _told_about_budget = True
                logger.warning(
                    "follow-up rewrite: the memory model gave no answer within MEMLANE_RECALL_REWRITE_TIMEOUT_SECONDS "
                    "(%gs), so recall searched with the previous turn's words; raise it for a slower model "
                    "(the reply waits up to that long on follow-ups). Said once.",
                    recall.rewrite_timeout_seconds,
                )
        else:
            logger.warning("follow-up rewrite failed, searching with the previous turn's words: %s", error)
        return None
    rewritten = _clean_answer(answer, question)
    if not rewritten:
        logger.warning("follow-up rewrite gave no usable question (%r); using the previous turn", answer[:200])
    return rewritten


_told_about_budget = False  # the rewrite budget's warning is said once a process


async def rewrite_followup(
    question: str,
    previous_turns: Sequence[Message],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel | None = None,
    breaker: CircuitBreaker | None = None,
) -> str:
    """`question` as a standalone search query (see the module docstring). breaker: the memory
    model's circuit breaker when `llm` is that model (while it is open, the cheap rewrite)."""
    if not needs_rewrite(question, previous_turns, recall):
        return question
    if llm is not None:
        rewritten = await model_rewrite(
            question, previous_turns, recall=recall, models=models, llm=llm, breaker=breaker
        )
        if rewritten:
            return rewritten
    return cheap_rewrite(question, previous_turns)
