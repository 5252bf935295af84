"""Step 7: tag the event with a few normalized tags; a failure leaves the tags empty."""

from __future__ import annotations

import logging
import re

from pydantic import BaseModel, Field

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, ModelCallFailed
from memlane.nodes.parsing import ParseFailed, extract_json, sole_object

logger = logging.getLogger(__name__)

TAG_PROMPT = f"""TASK: tag an event from the user's life.
Give up to {{max_tags}} short tags (one to four words, or two to six Chinese characters)
that name the themes of the event, e.g. "sleep problems", "work stress", "food preference"
or "作息", "工作", "饮食". Most important first.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{{{"tags": ["...", "..."]}}}}"""

# (?<!…): the ending is tried once per run of these characters, not at each one (linear time)
_EDGE_PUNCTUATION = re.compile(
    r"^[\s#\-*•·,，、.。:：;；\"'“”]+|(?<![\s#\-*•·,，、.。:：;；\"'“”])[\s#\-*•·,，、.。:：;；\"'“”]+$"
)


class TagOutput(BaseModel):
    """The tag step's answer (a bare list of strings is accepted too)."""

    tags: list[str] = Field(default_factory=list)


def normalize_tags(raw_tags: list[object], max_tags: int, max_chars: int) -> list[str]:
    """Trimmed, de-duplicated (case-insensitively), length-capped tags, in the model's order."""
    tags: list[str] = []
    seen: set[str] = set()
    for raw in raw_tags:
        if not isinstance(raw, str):
            continue
        tag = _EDGE_PUNCTUATION.sub("", " ".join(raw.split()))
        if not tag or len(tag) > max_chars or tag.casefold() in seen:
            continue
        seen.add(tag.casefold())
        tags.append(tag)
        if len(tags) >= max_tags:
            break
    return tags


async def tag_event(summary: str, max_tags: int, max_chars: int, caller: ModelCaller) -> tuple[list[str], list[str]]:
    """Tags of the event and a note when tagging failed (then the tags are empty)."""
    if max_tags == 0:
        return [], []
    try:
        answer = await caller.ask(
            TAG_PROMPT.format(max_tags=max_tags), f"<chat>\nEvent: {summary}\n</chat>", schema=TagOutput
        )
        value = sole_object(
            extract_json(
                answer,
                step="tag",
                accept=lambda found: isinstance(found, list) or (isinstance(found, dict) and "tags" in found),
            ),
            "tags",
        )
        if isinstance(value, dict):
            value = value.get("tags")
        if not isinstance(value, list):
            raise ParseFailed("tag", "the answer has no list of tags", answer)
    except (ModelCallFailed, ParseFailed) as failure:
        logger.warning("tag: no tags for this event: %s", failure)
        return [], [f"tag: no tags: {failure}"]
    output = TagOutput(tags=[item for item in value if isinstance(item, str)])
    return normalize_tags(list(output.tags), max_tags, max_chars), []
