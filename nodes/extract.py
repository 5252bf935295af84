"""Step 3: extract facts about the user as (topic, subtopic, content).

Each fact says whose it is (`about`). The user's own facts go to their slots; a fact about
someone else (a friend's favourite film) goes to `people` / <their name>, phrased with the
name. The model's word is checked against who said the messages it cites (`attribute`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence

from pydantic import BaseModel, Field, field_validator

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, render_chat
from memlane.nodes.parsing import parse_items
from memlane.nodes.profile_config import DECISIONS_TOPIC, PEOPLE_TOPIC, ProfileConfig
from memlane.nodes.summarize import render_profile
from memlane.store.ids import normalize_slot
from memlane.store.records import Message, ProfileEntry
from memlane.store.text.terms import has_cjk

logger = logging.getLogger(__name__)

USER = "user"
# what models write in "about" for the user ("user (Alice)" is how the chat names an owner with a name)
_THE_USER = {USER, "the user", "用户", "owner", "me", "myself", "self", "我"}
_THE_ASSISTANT = {"assistant", "the assistant", "助手", "ai assistant"}
# a message speaking to its listener and not of its speaker ("你不是最爱吃辣吗"), and a fact's
# text speaking of the user: neither becomes a fact about the speaker
_SECOND_PERSON = re.compile(r"[你您]|\byou(?:'\w+)?\b|\byours?\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"我|\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b", re.IGNORECASE)
_NAMES_THE_USER = re.compile(r"用户|\buser(?:'s)?\b", re.IGNORECASE)

EXTRACT_PROMPT = f"""TASK: extract profile facts about the user from a chat.
List the lasting facts the chat states about the user ("user" in the chat): who they are,
work, interests, habits, health, relationships, goals, how they want the assistant to
behave. One fact per slot; a fact is a short statement. Skip what the known profile already
says unless the chat changes it. Use the profile slots' topic and subtopic names.
Each chat line starts with its speaker: "user" is the user; a named speaker is someone else.
"about" says whose fact it is: "user" for the user's own facts. A fact about another person
(what a named speaker says about themselves, or what the user says about them) is theirs,
never the user's: "about" is their name as the chat writes it, topic "{PEOPLE_TOPIC}", subtopic
that name, and the content names them ("Maria goes climbing on Sundays", "小王在上海读研").
What someone else says about the user is the user's fact only when a message of the user's
confirms it; cite that message.
A decision the chat states ("we decided to move the launch to May", "我们决定把发布会推迟到五月")
is a fact of topic "{DECISIONS_TOPIC}": subtopic its subject ("launch", "发布会"), content what was
decided and by whom ("the user and the team moved the launch to May").
"confidence" is 0..1; "messages" lists the [numbers] of the messages the fact comes from.
"importance" (optional) is 0..1, how much the fact matters later: 0.5 for an ordinary fact, more
for what must not be forgotten (a deadline, an allergy, a decision), less for small talk.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only:
{{"facts": [{{"about": "user", "topic": "...", "subtopic": "...", "content": "...", "confidence": 0.9, "messages": [1]}}]}}
With no facts, answer {{"facts": []}}."""  # noqa: E501  (the prompt's JSON example stays on one line)


class ExtractedFact(BaseModel):
    """One fact as the model states it."""

    about: str = Field(default=USER, description='whose fact: "user", or the other person\'s name')
    topic: str = Field(min_length=1)
    subtopic: str = Field(min_length=1)
    content: str = Field(min_length=1)
    confidence: float = 0.8
    importance: float = Field(default=0.5, description="how much it matters later, 0..1; 0.5: ordinary")
    messages: list[int] = Field(default_factory=list)

    @field_validator("topic", "subtopic", "content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be blank")
        return value

    @field_validator("about", mode="before")
    @classmethod
    def _whose(cls, value: object) -> str:
        # an answer from before `about`, or a null / number there: the user's, as it always was
        text = " ".join(value.split()) if isinstance(value, str) else ""
        return text or USER

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

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: object) -> float:
        # left out, null or not a number: an ordinary fact; "90" meant 90 %; outside 0..1: clamped
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 0.5
        if not math.isfinite(number):
            return 0.5
        return min(max(number / 100.0 if 1.0 < number <= 100.0 else number, 0.0), 1.0)

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
    importance: float = 0.5


def _is_the_user(about: str, chat: Sequence[Message]) -> bool:
    key = normalize_slot(about)
    if key in _THE_USER or key.startswith("user ("):
        return True
    return any(message.speaker_role == "owner" and normalize_slot(message.name or "") == key for message in chat)


def _is_the_assistant(about: str, chat: Sequence[Message]) -> bool:
    key = normalize_slot(about)
    return key in _THE_ASSISTANT or any(
        message.speaker_role == "assistant" and normalize_slot(message.name or "") == key for message in chat
    )


def _chat_spelling(person: str, chat: Sequence[Message]) -> str:
    """The person's name as the chat writes it, when they speak in it ("朋友a" → "朋友A")."""
    key = normalize_slot(person)
    for message in chat:
        if message.speaker_role == "other" and message.name and normalize_slot(message.name) == key:
            return " ".join(message.name.split())
    return person


def naming(person: str, content: str) -> str:
    """`content` phrased with the person's name: as it is when it names them, else "朋友A：…" / "Caroline: …"."""
    if normalize_slot(person) in normalize_slot(content):
        return content
    return f"{person}：{content}" if has_cjk(person + content) else f"{person}: {content}"


def _about_person(fact: ExtractedFact, person: str) -> ExtractedFact:
    """The fact filed under people / <person>, whatever slot the model chose."""
    content = naming(person, fact.content)
    return fact.model_copy(update={"about": person, "topic": PEOPLE_TOPIC, "subtopic": person, "content": content})


def attribute(fact: ExtractedFact, chat: Sequence[Message]) -> tuple[ExtractedFact | None, str | None]:
    """The fact filed under whoever it is about, and a note when the model's word was not taken;
    None when it is nobody's to keep.

    The model's "about" is checked against the speakers of the messages it cites: a fact "about
    the user" that only one named other person said is theirs (people / <name>), unless that
    person was speaking to the user ("你不是最爱吃辣吗") or the fact names the user: such a fact
    is the user's only when a message of the user's says it, so it is dropped. Facts citing no
    message, or one of the user's, are taken at the model's word.
    """
    if normalize_slot(fact.topic) == PEOPLE_TOPIC and _is_the_user(fact.about, chat):
        fact = fact.model_copy(update={"about": fact.subtopic})  # filed under a person, so about them
    if _is_the_assistant(fact.about, chat):
        return None, f"dropped a fact about the assistant ({fact.topic}/{fact.subtopic})"
    if not _is_the_user(fact.about, chat):
        return _about_person(fact, _chat_spelling(fact.about, chat)), None
    cited = [chat[number - 1] for number in fact.messages if 1 <= number <= len(chat)]
    others = [message for message in cited if message.speaker_role == "other"]
    if not others or any(message.speaker_role == "owner" for message in cited):
        return fact, None
    where = f"{fact.topic}/{fact.subtopic}, messages {sorted(set(fact.messages))}"
    names = {" ".join(message.name.split()) for message in others if message.name}
    if len(names) != 1 or any(not message.name for message in others):
        return None, f"dropped a fact the model gave the user that only others said ({where})"
    [person] = names
    to_the_user = any(
        _SECOND_PERSON.search(message.content) and not _FIRST_PERSON.search(message.content) for message in others
    )
    if to_the_user or _NAMES_THE_USER.search(fact.content) or _SECOND_PERSON.search(fact.content):
        return None, f"dropped a fact about the user that only {person} said and the user did not ({where})"
    moved = f"moved a fact only {person} said from the user's {where} to {PEOPLE_TOPIC}/{person}"
    return _about_person(fact, person), moved


def resolve_fact(fact: ExtractedFact, chat: Sequence[Message], profile_config: ProfileConfig) -> ProfileFact:
    """Canonical slot spelling from the config; message numbers turned into message ids
    (without any, the messages of whoever the fact is about)."""
    topic, subtopic = fact.topic, fact.subtopic
    configured_topic = profile_config.find_topic(topic)
    if configured_topic is not None:
        topic = configured_topic.name
        configured_subtopic = profile_config.find_subtopic(topic, subtopic)
        if configured_subtopic is not None:
            subtopic = configured_subtopic.name
    sources = [chat[number - 1].id for number in fact.messages if 1 <= number <= len(chat)]
    if not sources:
        person = None if _is_the_user(fact.about, chat) else normalize_slot(fact.about)
        sources = [
            message.id
            for message in chat
            if (message.speaker_role == "owner" if person is None else normalize_slot(message.name or "") == person)
        ]
    return ProfileFact(
        topic=topic,
        subtopic=subtopic,
        content=fact.content,
        confidence=fact.confidence,
        source_message_ids=list(dict.fromkeys(sources)),
        importance=fact.importance,
    )


def hold_unsure(facts: Sequence[ProfileFact], min_confidence: float) -> tuple[list[ProfileFact], list[ProfileFact]]:
    """(the facts to merge, the facts held for review): those under `min_confidence` are held, so
    nothing the model was unsure of enters the profile, or recall, before the user confirms it."""
    kept = [fact for fact in facts if fact.confidence >= min_confidence]
    return kept, [fact for fact in facts if fact.confidence < min_confidence]


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
    answer = await caller.ask(profile_config.prompt("extract", EXTRACT_PROMPT), user_text, schema=ExtractOutput)
    items, notes = parse_items(answer, ExtractedFact, key="facts", step="extract")
    max_chars, max_facts = caller.graph.slot_max_chars, caller.graph.max_facts_per_run
    facts: list[ProfileFact] = []
    for item in items:
        attributed, note = attribute(item, chat)
        if note:
            notes.append(note)
        if attributed is None:
            continue
        fact = resolve_fact(attributed, chat, profile_config)
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
