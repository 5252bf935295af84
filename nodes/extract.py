"""Step 3: extract facts about the user as (topic, subtopic, content)."""

from __future__ import annotations

import logging
import math
from typing import Sequence

from pydantic import BaseModel, Field, field_validator

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, render_chat
from memlane.nodes.parsing import parse_items
from memlane.nodes.profile_config import ProfileConfig
from memlane.nodes.summarize import render_profile
from memlane.store.base import Message, ProfileEntry

logger = logging.getLogger(__name__)

EXTRACT_PROMPT = f"""TASK: extract profile facts about the user from a chat.
List the lasting facts the chat states about the user ("user" in the chat): who they are,
work, interests, habits, health, relationships, goals, how they want the assistant to
behave. One fact per slot; a fact is a short statement. Facts said by other speakers
count only when they are clearly about the user. Skip what the known profile already
says unless the chat changes it. Use the profile slots' topic and subtopic names.
"confidence" is 0..1; "messages" lists the [numbers] of the messages the fact comes from.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only:
{{"facts": [{{"topic": "...", "subtopic": "...", "content": "...", "confidence": 0.9, "messages": [1]}}]}}
With no facts, answer {{"facts": []}}."""


class ExtractedFact(BaseModel):
    """One fact as the model states it."""

    topic: str = Field(min_length=1)
    subtopic: str = Field(min_length=1)
    content: str = Field(min_length=1)
    confidence: float = 0.8
    messages: list[int] = Field(default_factory=list)

    @field_validator("topic", "subtopic", "content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamp(cls, value: object) -> float:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 0.8
        if not math.isfinite(number):  # JSON NaN / Infinity: the model's number means nothing
            raise ValueError(f"confidence is {number}, not a number between 0 and 1")
        if 1.0 < number <= 100.0:
            number /= 100.0  # "90" meant 90 %
        return min(max(number, 0.0), 1.0)

    @field_validator("messages", mode="before")
    @classmethod
    def _numbers(cls, value: object) -> list[int]:
        items = value if isinstance(value, list) else [value]
        numbers: list[int] = []
        for item in items:
            try:
                numbers.append(int(str(item).strip("[] m#")))
            except ValueError:
                continue
        return numbers


class ExtractOutput(BaseModel):
    """The extract step's answer (a bare list, or one fact object, is accepted too)."""

    facts: list[ExtractedFact]


class ProfileFact(BaseModel):
    """A fact ready to merge: canonical slot names and the message ids it came from."""

    topic: str
    subtopic: str
    content: str
    confidence: float
    source_message_ids: list[str]


def resolve_fact(fact: ExtractedFact, chat: Sequence[Message], profile_config: ProfileConfig) -> ProfileFact:
    """Canonical slot spelling from the config; message numbers turned into message ids."""
    topic, subtopic = fact.topic, fact.subtopic
    configured_topic = profile_config.find_topic(topic)
    if configured_topic is not None:
        topic = configured_topic.name
        configured_subtopic = profile_config.find_subtopic(topic, subtopic)
        if configured_subtopic is not None:
            subtopic = configured_subtopic.name
    sources = [chat[number - 1].id for number in fact.messages if 1 <= number <= len(chat)]
    if not sources:
        sources = [message.id for message in chat if message.role == "user"]
    return ProfileFact(
        topic=topic,
        subtopic=subtopic,
        content=fact.content,
        confidence=fact.confidence,
        source_message_ids=list(dict.fromkeys(sources)),
    )


async def extract_facts(
    chat: Sequence[Message],
    summary: str,
    profile: Sequence[ProfileEntry],
    profile_config: ProfileConfig,
    caller: ModelCaller,
) -> tuple[list[ProfileFact], list[str]]:
    """Facts to merge, and a note per dropped item. Raises `ParseFailed` on an unusable answer."""
    user_text = (
        f"Event summary: {summary}\n\nKnown profile:\n{render_profile(profile)}\n\n"
        f"Profile slots:\n{profile_config.describe()}\n\n{render_chat(chat)}"
    )
    answer = await caller.ask(EXTRACT_PROMPT, user_text, schema=ExtractOutput)
    items, notes = parse_items(answer, ExtractedFact, key="facts", step="extract")
    max_chars, max_facts = caller.settings.memory_slot_max_chars, caller.settings.memory_max_facts_per_run
    facts: list[ProfileFact] = []
    for item in items:
        fact = resolve_fact(item, chat, profile_config)
        if len(fact.topic) > max_chars or len(fact.subtopic) > max_chars:
            notes.append(
                f"skipped a fact whose slot name is over {max_chars} characters "
                f"({fact.topic[:24]!r}/{fact.subtopic[:24]!r}; memory_slot_max_chars)"
            )
            continue
        if not profile_config.allows(fact.topic, fact.subtopic):
            notes.append(f"strict mode: dropped {fact.topic}/{fact.subtopic}")
            continue
        facts.append(fact)
    if len(facts) > max_facts:
        notes.append(f"kept the first {max_facts} of {len(facts)} facts (memory_max_facts_per_run)")
        facts = facts[:max_facts]
    for note in notes:
        logger.info("extract: %s", note)
    return facts, [f"extract: {note}" for note in notes]
