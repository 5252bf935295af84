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

import asyncio
import logging
import re
import statistics
import time
import weakref
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import ModelSettings, RecallSettings
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, ModelCallFailed, Step, render_chat
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.records import Message
from memlane.store.text.terms import query_terms
from memlane.store.text.trivial import is_trivial

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
    return bool(previous_turns) and may_need_rewrite(question, recall)


def may_need_rewrite(question: str, recall: RecallSettings) -> bool:
    """Whether `question` would be rewritten after some earlier turn (`needs_rewrite`): when not,
    recall searches with its own words before the session's turns are read."""
    return bool(recall.rewrite_followups and not is_trivial(question) and is_followup(question))


async def model_rewrite(
    question: str,
    previous_turns: Sequence[Message],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel,
    breaker: CircuitBreaker | None = None,
    timeout: float | None = None,
    times: RewriteTimes | None = None,
) -> str | None:
    """The memory model's standalone form of `question`, or None when it gave none within
    `timeout` (default `recall_rewrite_timeout_seconds`, 0.3 s: the reply waits on it) or failed.
    `times`: where the call's duration is recorded (a call cut at `timeout` counts as that long)."""
    budget = recall.rewrite_timeout_seconds if timeout is None else timeout
    # the reply waits for this call: a short timeout and no retry
    quick = models.model_copy(update={"llm_timeout_seconds": budget, "llm_max_retries": 0})
    # past the budget the call is given up, not failed: a model slower than 0.3 s still works
    # for the memory graph, and its breaker must not open on the reply path's impatience
    caller = ModelCaller(llm=llm, models=quick, step=Step.REWRITE, breaker=breaker, timeout_is_budget=True, quiet=True)
    turns = previous_turns[-6:]
    chat = render_chat([turn.model_copy(update={"content": turn.content[:_MAX_REWRITE_TURN_CHARS]}) for turn in turns])
    started = time.monotonic()
    try:
        answer = await caller.ask(REWRITE_PROMPT, f"{chat}\n\nLast question: {question}")
    except ModelCallFailed as error:
        if "no answer within" in str(error):
            if times is not None:
                times.record(budget)
            told_about_budget(recall.rewrite_timeout_seconds)
        else:
            logger.warning("follow-up rewrite failed, searching with the previous turn's words: %s", error)
        return None
    if times is not None:
        times.record(time.monotonic() - started)
    rewritten = _clean_answer(answer, question)
    if not rewritten:
        logger.warning("follow-up rewrite gave no usable question (%r); using the previous turn", answer[:200])
    return rewritten


def told_about_budget(budget: float) -> None:
    """Say once a process that a rewrite missed the budget: a slow model misses it on every follow-up."""
    global _told_about_budget
    if not _told_about_budget:
        _told_about_budget = True
        logger.warning(
            "follow-up rewrite: the memory model gave no answer within MEMLANE_RECALL_REWRITE_TIMEOUT_SECONDS "
            "(%gs), so recall searched with the previous turn's words; raise it for a slower model "
            "(the reply waits up to that long on follow-ups, and stops waiting while the model's recent "
            "rewrites took longer). Said once.",
            budget,
        )


# How long the memory model's rewrites take decides whether the reply waits for one (issue 48,
# item 4): with the default 0.3 s budget and a model answering in 0.4 s, every follow-up waited
# the whole budget for a rewrite that never landed.
_RECENT_REWRITES = 5  # the rewrites whose times decide
_TIMED_ENOUGH = 3  # fewer timed than this: the reply waits (nothing says the model cannot make it)
_TIMED_BUDGETS = 10  # a rewrite is timed for up to this many budgets; past that it counts as that long
_TIMING_AFTER_SECONDS = 0.1  # a rewrite only timed starts this long after the search it was not waited for


@dataclass(eq=False)
class RewriteTimes:
    """How long one memory model's recent follow-up rewrites took, to the end (a rewrite the
    reply stopped waiting for is still timed, in the background).

    The reply waits for a rewrite, up to the budget, while the median of the last few is within
    it; otherwise it searches with the previous turn's words at once, and one rewrite at a time
    runs in the background only to time the model, so that a model that got faster is waited
    for again."""

    seconds: deque[float] = field(default_factory=lambda: deque(maxlen=_RECENT_REWRITES))
    background: set[asyncio.Task[Any]] = field(default_factory=set)

    def record(self, seconds: float) -> None:
        self.seconds.append(seconds)

    def worth_waiting(self, budget: float) -> bool:
        """Whether a rewrite is likely to land within `budget`, as the recent ones did."""
        return len(self.seconds) < _TIMED_ENOUGH or statistics.median(self.seconds) <= budget

    @property
    def timing(self) -> bool:
        """A rewrite is still running in the background."""
        return bool(self.background)

    def finish_in_background(self, rewrite: asyncio.Task[Any]) -> None:
        """Let `rewrite` run to its end, timed; its answer is not used."""
        self.background.add(rewrite)
        rewrite.add_done_callback(self._finished)

    def _finished(self, rewrite: asyncio.Task[Any]) -> None:
        self.background.discard(rewrite)
        if not rewrite.cancelled() and rewrite.exception() is not None:
            logger.debug("a follow-up rewrite timed in the background failed: %s", rewrite.exception())

    @staticmethod
    def timed_for(budget: float, models: ModelSettings) -> float:
        """How long a rewrite may run to be timed: `_TIMED_BUDGETS` budgets, at most the models' timeout."""
        return min(models.llm_timeout_seconds, _TIMED_BUDGETS * budget)


_rewrite_times: dict[int, tuple[weakref.ref[BaseChatModel], RewriteTimes]] = {}


def rewrite_times(llm: BaseChatModel) -> RewriteTimes:
    """The recent rewrite times of `llm` (kept while the model object lives)."""
    known = _rewrite_times.get(id(llm))
    if known is not None and known[0]() is llm:
        return known[1]
    for key in [key for key, (model, _) in _rewrite_times.items() if model() is None]:
        del _rewrite_times[key]
    times = RewriteTimes()
    _rewrite_times[id(llm)] = (weakref.ref(llm), times)
    return times


async def rewrite_beside(
    question: str,
    previous_turns: Sequence[Message],
    beside: Coroutine[Any, Any, Any],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel,
    breaker: CircuitBreaker | None = None,
) -> tuple[str | None, Any]:
    """The model's rewrite of `question` if it lands within the budget
    (`recall_rewrite_timeout_seconds`) and what `beside` (the search with the previous turn's
    words) gave, run together. While the model's recent rewrites took longer than the budget
    (`RewriteTimes`), the rewrite is not waited for: None at once beside `beside`'s answer."""
    times = rewrite_times(llm)
    budget = recall.rewrite_timeout_seconds
    timed = RewriteTimes.timed_for(budget, models)

    def rewriting() -> asyncio.Task[str | None]:
        return asyncio.ensure_future(
            model_rewrite(
                question,
                previous_turns,
                recall=recall,
                models=models,
                llm=llm,
                breaker=breaker,
                timeout=timed,
                times=times,
            )
        )

    if not times.worth_waiting(budget):
        found = await beside

        def time_one() -> None:  # one at a time, to see whether the model got faster
            if not times.timing:
                times.finish_in_background(rewriting())

        # after the reply's own request is on its way: a model call's setup holds the event loop
        # for milliseconds, which the search and the upstream request waited behind
        asyncio.get_running_loop().call_later(_TIMING_AFTER_SECONDS, time_one)
        return None, found
    started = time.monotonic()
    rewrite = rewriting()
    try:
        found = await beside
    except BaseException:
        rewrite.cancel()
        raise
    done, _ = await asyncio.wait({rewrite}, timeout=max(0.0, budget - (time.monotonic() - started)))
    if rewrite not in done:
        told_about_budget(budget)
        times.finish_in_background(rewrite)
        return None, found
    return rewrite.result(), found


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
