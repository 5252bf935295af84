"""Step 6: shorten profile entries longer than the configured token maximum."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, data_line
from memlane.nodes.parsing import ParseFailed, parse_object, strip_fences
from memlane.store.ids import now
from memlane.store.records import ProfileEntry
from memlane.store.text.tokens import count_tokens, truncate_to_tokens

logger = logging.getLogger(__name__)

RESUMMARIZE_PROMPT = f"""TASK: shorten one profile entry.
Rewrite the entry below in at most {{max_tokens}} tokens. Keep every fact that still
holds, the newest first when they conflict; drop repetition.
{LANGUAGE_RULE}
{DATA_RULE}
Answer with JSON only: {{{{"content": "..."}}}}"""


class ResummarizedEntry(BaseModel):
    """The re-summarize step's answer."""

    content: str


async def resummarize_entries(
    profile: Sequence[ProfileEntry], max_tokens: int, caller: ModelCaller, encoding: str = "cl100k_base"
) -> tuple[list[ProfileEntry], list[str]]:
    """The profile with every entry over `max_tokens` rewritten to fit.

    An answer still too long, or unusable, is cut to the limit: no entry is stored over it.
    """
    shortened: list[ProfileEntry] = []
    notes: list[str] = []
    for entry in profile:
        if count_tokens(entry.content, encoding) <= max_tokens:
            shortened.append(entry)
            continue
        answer = await caller.ask(
            RESUMMARIZE_PROMPT.format(max_tokens=max_tokens),
            f"<chat>\nSlot: {data_line(entry.topic)} / {data_line(entry.subtopic)}\n"
            f"Entry: {data_line(entry.content)}\n</chat>",
            schema=ResummarizedEntry,
        )
        try:
            content = parse_object(answer, ResummarizedEntry, step="resummarize").content.strip()
        except ParseFailed as failure:
            prose = strip_fences(answer)
            content = prose if prose and "{" not in prose else ""
            if not content:
                notes.append(f"resummarize: cut {entry.topic}/{entry.subtopic} to the limit: {failure}")
        if not content:
            content = entry.content
        if count_tokens(content, encoding) > max_tokens:
            content = truncate_to_tokens(content, max_tokens, encoding)
        shortened.append(entry.model_copy(update={"content": content, "updated_at": now()}))
    return shortened, notes
