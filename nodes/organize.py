"""Step 5: regroup a topic that has more subtopics than the configured maximum.

A topic with open subtopics (people: one per person) is never regrouped: merging two of its
subtopics would make two people one.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Sequence

from pydantic import BaseModel, Field, field_validator

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, data_line
from memlane.nodes.parsing import ParseFailed, parse_items
from memlane.store.ids import normalize_slot, now
from memlane.store.records import ProfileEntry

logger = logging.getLogger(__name__)

ORGANIZE_PROMPT = f"""TASK: organize the subtopics of one profile topic.
The topic below has too many subtopics. Regroup them into at most {{max_subtopics}}
subtopics: merge overlapping ones, rename vague ones, keep every fact. Each new subtopic
lists in "merged_from" the old subtopic names it replaces; every old name must appear
in exactly one "merged_from".
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only:
{{{{"subtopics": [{{{{"subtopic": "...", "content": "...", "merged_from": ["old name", ...]}}}}]}}}}"""


class OrganizedSubtopic(BaseModel):
    """One subtopic of the organize step's answer."""

    subtopic: str = Field(min_length=1)
    content: str = Field(min_length=1)
    merged_from: list[str] = Field(min_length=1)

    @field_validator("subtopic", "content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class OrganizeOutput(BaseModel):
    """The organize step's answer."""

    subtopics: list[OrganizedSubtopic]


def topics_over_limit(
    profile: Sequence[ProfileEntry], max_subtopics: int, open_topics: Collection[str] = ()
) -> list[str]:
    """The topics with more than `max_subtopics` subtopics, but for `open_topics`."""
    kept_apart = {normalize_slot(topic) for topic in open_topics}
    counts: dict[str, list[ProfileEntry]] = defaultdict(list)
    for entry in profile:
        if normalize_slot(entry.topic) not in kept_apart:
            counts[normalize_slot(entry.topic)].append(entry)
    return [entries[0].topic for entries in counts.values() if len(entries) > max_subtopics]


def regroup(
    topic_entries: Sequence[ProfileEntry], answer: Sequence[OrganizedSubtopic], max_subtopics: int
) -> list[ProfileEntry]:
    """New entries of the topic; raises ValueError when the answer loses or invents subtopics."""
    if not 1 <= len(answer) <= max_subtopics:
        raise ValueError(f"{len(answer)} subtopics, expected 1..{max_subtopics}")
    by_name = {normalize_slot(entry.subtopic): entry for entry in topic_entries}
    covered: set[str] = set()
    regrouped: list[ProfileEntry] = []
    first = topic_entries[0]
    for item in answer:
        sources = [by_name[key] for key in map(normalize_slot, item.merged_from) if key in by_name]
        if not sources:
            raise ValueError(f"{item.subtopic!r} merges no existing subtopic")
        covered.update(normalize_slot(entry.subtopic) for entry in sources)
        regrouped.append(
            ProfileEntry(
                user_id=first.user_id,
                topic=first.topic,
                subtopic=item.subtopic,
                content=item.content,
                confidence=min(entry.confidence for entry in sources),
                importance=max(entry.importance for entry in sources),
                created_at=min(entry.created_at for entry in sources),
                updated_at=now(),
                source_message_ids=list(dict.fromkeys(i for entry in sources for i in entry.source_message_ids)),
            )
        )
    missing = set(by_name) - covered
    if missing:
        raise ValueError(f"the answer drops subtopics {sorted(missing)}")
    if len({entry.id for entry in regrouped}) != len(regrouped):
        raise ValueError("the answer names one subtopic twice")
    return regrouped


async def organize_profile(
    profile: Sequence[ProfileEntry],
    max_subtopics: int,
    caller: ModelCaller,
    open_topics: Collection[str] = (),
) -> tuple[list[ProfileEntry], list[str]]:
    """The profile with every over-full topic regrouped; a topic whose answer is unusable stays.

    open_topics: topics whose subtopics are never regrouped, however many (one per person).
    """
    over = topics_over_limit(profile, max_subtopics, open_topics)
    if not over:
        return list(profile), []
    organized = list(profile)
    notes: list[str] = []
    for topic in over:
        key = normalize_slot(topic)
        topic_entries = [entry for entry in organized if normalize_slot(entry.topic) == key]
        listing = "\n".join(f"- {data_line(entry.subtopic)}: {data_line(entry.content)}" for entry in topic_entries)
        answer = await caller.ask(
            ORGANIZE_PROMPT.format(max_subtopics=max_subtopics),
            f"<chat>\nTopic: {data_line(topic)}\nSubtopics:\n{listing}\n</chat>",
            schema=OrganizeOutput,
        )
        try:
            items, skipped = parse_items(answer, OrganizedSubtopic, key="subtopics", step="organize")
            if skipped:
                raise ValueError("; ".join(skipped))
            max_chars = caller.graph.slot_max_chars
            if any(len(item.subtopic) > max_chars for item in items):
                raise ValueError(f"a subtopic name is over {max_chars} characters (memory_slot_max_chars)")
            regrouped = regroup(topic_entries, items, max_subtopics)
        except (ParseFailed, ValueError) as failure:
            notes.append(f"organize: left {topic} as it was: {failure}")
            logger.warning("organize: left %s as it was: %s", topic, failure)
            continue
        organized = [entry for entry in organized if normalize_slot(entry.topic) != key] + regrouped
    return organized, notes
