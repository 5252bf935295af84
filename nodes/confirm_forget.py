"""Which of the user's sentences state what a forget request asks to forget: the memory model's
confirmation of what the store found by meaning (`MemoryStore.forget(..., confirm=...)`).

The store finds the sentences nearest the request by its embedder ("forget what car I drive":
"I drive a blue Subaru to work", but also "I drive my kids to school"); the model says which of
them state it. Parsing is lenient (fences, prose, trailing commas, numbers written as strings,
sentences quoted instead of numbered). An answer that names nothing usable, or a sentence that
was not shown, is None: the store then removes only what it removes without a model. It never
raises for the model's sake: a call that fails is logged and answers None.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel

from memlane.config import ModelSettings
from memlane.nodes.llm import DATA_RULE, ModelCaller, ModelCallFailed, Step, data_line
from memlane.nodes.parsing import ParseFailed, extract_json, strip_fences
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.protocols import ForgetConfirm

logger = logging.getLogger(__name__)

REQUEST_MAX_CHARS = 1000
SENTENCE_MAX_CHARS = 500

CONFIRM_FORGET_PROMPT = f"""TASK: a user asked you to forget something they told you. Below are their
request and sentences from what is stored about them, cut into numbered clauses, one a line (a
blank line ends a sentence). Say which clauses state what the request asks to forget, in any
words or language: for "forget what phone I have", "I just got a Pixel 8" states it. Name only
those clauses: in "I live in Chengdu, and I play badminton on weekends", forgetting where the
user lives names the first clause, not the second. A clause that is only near it does not
state it: one about someone else ("my wife has an iPhone"), or another fact on a similar
subject ("I check my phone too often"). When unsure, leave the clause out.
{DATA_RULE}
Answer with JSON only: {{"sentences": [the numbers of the sentences that state it]}}, or
{{"sentences": []}} when none does."""


class ConfirmForgetOutput(BaseModel):
    """The confirmation: the numbers (from 1) of the clauses that state what is to be forgotten."""

    sentences: list[int]


_ENDS_SENTENCE = re.compile(r"[。！？.!?;；]\s*$")  # a clause that ends its sentence (a blank line after it)
_ANSWER_KEYS = ("sentences", "numbers", "indexes", "indices", "forget", "stating", "answer", "result")
# each run of spaces has one place to go (a long run of them is matched in linear time)
_NUMBER = re.compile(r"^\s*(?:\[\s*)?(\d{1,4})\s*(?:\]\s*)?$")


def _position(value: Any, sentences: Sequence[str]) -> int | None:
    """The 0-based position a value of the answer names: a number from 1 ("2", 2.0, "[2]"), or
    a sentence quoted as shown; None when it names none of the sentences."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        number = _NUMBER.match(value)
        if number:
            value = int(number.group(1))
        else:
            quoted = value.strip().strip("\"'“”")
            return next((index for index, sentence in enumerate(sentences) if sentence.strip() == quoted), None)
    if isinstance(value, int) and 1 <= value <= len(sentences):
        return value - 1
    return None


def parse_confirmation(answer: str, sentences: Sequence[str]) -> list[int] | None:
    """The 0-based positions of the sentences the answer says state the fact ([] for none);
    None when the answer holds no such list, or names anything that is not one of the sentences."""

    def has_list(value: object) -> bool:
        return isinstance(value, dict) and any(key in value for key in _ANSWER_KEYS)

    try:
        value = extract_json(answer, step="confirm_forget", accept=has_list)
    except ParseFailed:
        return None
    if isinstance(value, list) and len(value) == 1 and has_list(value[0]):
        value = value[0]
    if has_list(value):
        while has_list(value):  # {"result": {"sentences": [...]}}: the list inside
            value = next(value[key] for key in _ANSWER_KEYS if key in value)
    elif not (isinstance(value, list) and strip_fences(answer).startswith("[")):
        return None  # a list quoted inside prose ("sentence [2] does not") is no answer
    if value is None:
        value = []
    if not isinstance(value, list):
        value = [value]
    positions = [_position(item, sentences) for item in value]
    if any(position is None for position in positions):
        return None
    return list(dict.fromkeys(position for position in positions if position is not None))


async def confirm_forget(
    llm: BaseChatModel,
    models: ModelSettings,
    request: str,
    sentences: Sequence[str],
    *,
    breaker: CircuitBreaker | None = None,
) -> list[int] | None:
    """Which of `sentences` (clauses, a sentence's in its order) state what `request` asks to
    forget (0-based positions), by asking the memory model once (the user waits on forget);
    None when it gives no usable answer."""
    if not sentences:
        return []
    numbered = "".join(
        f"[{number}] {data_line(sentence[:SENTENCE_MAX_CHARS])}\n" + ("\n" if _ENDS_SENTENCE.search(sentence) else "")
        for number, sentence in enumerate(sentences, 1)
    ).rstrip("\n")
    user_text = f"<chat>\nRequest: {data_line(request[:REQUEST_MAX_CHARS])}\n{numbered}\n</chat>"
    caller = ModelCaller(llm, models.model_copy(update={"llm_max_retries": 0}), Step.CONFIRM_FORGET, breaker=breaker)
    try:
        answer = await caller.ask(CONFIRM_FORGET_PROMPT, user_text, schema=ConfirmForgetOutput)
    except ModelCallFailed as failure:
        logger.warning("confirm_forget: no confirmation, forget keeps to what is clear without one: %s", failure)
        return None
    chosen = parse_confirmation(answer, sentences)
    if chosen is None:
        logger.warning(
            "confirm_forget: no usable answer in %r; forget keeps to what is clear without one", answer[:200]
        )
    return chosen


def forget_confirmer(
    llm: BaseChatModel | None, models: ModelSettings, *, breaker: CircuitBreaker | None = None
) -> ForgetConfirm | None:
    """The `confirm` a surface with a memory model passes to `MemoryStore.forget` (None without one).

    breaker: the memory model's circuit breaker where the surface has one (a model that keeps
    failing is then not waited on)."""
    if llm is None:
        return None
    model = llm

    async def confirm(request: str, sentences: Sequence[str]) -> list[int] | None:
        return await confirm_forget(model, models, request, sentences, breaker=breaker)

    return confirm
