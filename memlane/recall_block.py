"""The block recall hands the model: its items, its sections and headings, and the cut into
the token budget (what the model sees). `memlane/recall.py` decides what goes in.

Each section may take its share of the budget (`SECTION_SHARES`) before leftovers flow on, in
priority order; one item takes at most `item_token_cap` tokens, cut around the part that
answers the query (store/text/passage.py) when it is longer.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from memlane import dates
from memlane.store.text.passage import answering_passage
from memlane.store.text.terms import Language
from memlane.store.text.tokens import count_tokens

Layer = Literal["profile", "summary", "recent", "event", "message", "relation"]

_SPACES = re.compile(r"\s+")

HEADINGS: dict[Language, dict[str, str]] = {
    "en": {
        "intro": "What you remember about this user (use it when it helps; do not recite it):",
        "profile": "## Profile",
        "summary": "## This conversation so far",
        "memories": "## Related memories",
        "recent": "## Recent messages",
        "user": "user",
        "assistant": "assistant",
    },
    "zh": {
        "intro": "你记得的关于该用户的信息（有帮助时使用，不要照读）：",
        "profile": "## 用户画像",
        "summary": "## 本次对话摘要",
        "memories": "## 相关记忆",
        "recent": "## 最近的消息",
        "user": "用户",
        "assistant": "助手",
    },
}

# Share of the budget each section may take before leftovers flow on, in priority order.
SECTION_SHARES: dict[str, float] = {"profile": 0.35, "summary": 0.2, "memories": 0.3, "recent": 0.15}


class RecallItem(BaseModel):
    """One line of recalled context."""

    layer: Layer
    text: str
    relevance: float | None = Field(
        default=None,
        description="relevance 0..1 for the message, of the message and this item alone: the same at every door "
        "(store/relevance.py; memlane/recall_relevance.py gives every item its own)",
    )
    score: float | None = Field(
        default=None, description="the relevance again (mem0's name) once given; before, the rank recall ordered by"
    )
    memory_id: str | None = None
    ref_id: str | None = Field(default=None, description="profile entry / event id the memory mirrors")
    source_message_ids: list[str] = Field(default_factory=list)
    created_at: float | None = None
    confidence: float | None = None
    when: str | None = Field(
        default=None,
        description='its time as the line shows it: "2026-10-12, 3 weeks ago" (a profile entry: "since …")',
    )
    status: Literal["current", "earlier"] = Field(default="current", description="earlier: a newer fact replaced it")
    valid_until: float | None = Field(default=None, description="when a newer fact replaced it")
    until: str | None = Field(default=None, description="valid_until as the line shows it")
    earlier: list[str] = Field(
        default_factory=list, description='a profile entry\'s past values the search found: "earlier: …, until <date>"'
    )
    tokens: int = 0


RewriteKind = Literal["model", "previous turn"]


class Recall(BaseModel):
    """What recall found and the block it renders for the system prompt."""

    user_id: str
    session_id: str | None
    query: str
    search_query: str = Field(default="", description="what was searched: the query, rewritten when it was a follow-up")
    rewrite: RewriteKind | None = Field(
        default=None,
        description="how a follow-up was made searchable: the memory model's rewrite in time, "
        "or the previous turn's words",
    )
    language: Language
    enabled: bool = True
    profile: list[RecallItem] = Field(default_factory=list)
    summary: RecallItem | None = None
    memories: list[RecallItem] = Field(default_factory=list)
    recent: list[RecallItem] = Field(default_factory=list)
    threshold: float | None = Field(
        default=None, description="the relevance floor search hits passed (recall_min_relevance)"
    )
    intent: str | None = Field(
        default=None,
        description="the kind of question (memlane/query_intent.py: general, temporal, relational, entity, "
        "factual), whose retrieval policy recall used",
    )
    dropped: int = Field(default=0, description="items left out for the budget")
    search_incomplete: list[str] = Field(
        default_factory=list,
        description="a degraded search: what part of the user's memories it could not read "
        "(a cluster primary still indexing, a slot moving); empty when whole",
    )
    budget: int
    tokens: int = 0
    text: str = ""

    @property
    def items(self) -> list[RecallItem]:
        summary = [self.summary] if self.summary else []
        return [*self.profile, *summary, *self.memories, *self.recent]


def item_token_cap(budget: int, language: Language, encoding: str) -> int:
    """The most tokens one item may take: one long message must not crowd out the rest, and
    one item must fit a small budget."""
    available = budget - count_tokens(HEADINGS[language]["intro"] + "\n", encoding)
    return max(8, min(available // 4, available // 2 - 12))


def _line(item: RecallItem, language: Language) -> str:
    """The item as the block shows it: a profile entry with since when it holds and its past
    values; a searched memory after its time, wrapped in "earlier: …, until <date>" once replaced."""
    text = _SPACES.sub(" ", item.text).strip()
    opening, closing = dates.BRACKETS[language]
    if item.layer == "profile":
        if item.when:
            text += (" " if language == "en" else "") + f"{opening}{item.when}{closing}"
        if item.earlier:
            text += ("; " if language == "en" else "；") + ("; " if language == "en" else "；").join(item.earlier)
        if item.status == "earlier" and item.until:  # a newer statement changed it (memlane/recall_changes.py)
            text = dates.LABELS[language]["earlier"].format(text=text, until=item.until)
    elif item.when:
        text = f"{opening}{item.when}{closing}" + (" " if language == "en" else "") + text
        if item.status == "earlier" and item.until:
            text = dates.LABELS[language]["earlier"].format(text=text, until=item.until)
    return "- " + text


def fill_block(
    result: Recall,
    profile: list[RecallItem],
    summary: list[RecallItem],
    memories: list[RecallItem],
    recent: list[RecallItem],
    encoding: str,
) -> None:
    """Choose items section by section inside the budget, then render the block (tokens counted
    in `encoding`, the store's)."""
    headings = HEADINGS[result.language]
    candidates = {"profile": profile, "summary": summary, "memories": memories, "recent": recent}
    available = result.budget - count_tokens(headings["intro"] + "\n", encoding)
    item_cap = item_token_cap(result.budget, result.language, encoding)
    for items in candidates.values():
        for item in items:  # a long item keeps the part that answers, never blindly its start
            item.text = answering_passage(item.text, result.search_query or result.query, item_cap, encoding)
            item.tokens = count_tokens(_line(item, result.language) + "\n", encoding)

    heading_tokens = {name: count_tokens("\n" + headings[name] + "\n", encoding) for name in candidates}
    chosen: dict[str, list[RecallItem]] = {name: [] for name in candidates}
    used = 0

    def take(name: str, limit: float) -> None:
        nonlocal used
        taken = {id(item) for item in chosen[name]}
        for item in candidates[name]:
            if id(item) in taken:
                continue
            cost = item.tokens + (0 if chosen[name] else heading_tokens[name])
            if used + cost <= limit:
                chosen[name].append(item)
                used += cost

    spent_before = 0
    for name, share in SECTION_SHARES.items():  # first pass: each section within its share
        take(name, spent_before + share * available)
        spent_before = used
    for name in SECTION_SHARES:  # second pass: leftovers in priority order
        take(name, available)

    # keep candidate order inside a section (take() may append a skipped earlier item later)
    for name in chosen:
        order = {id(item): index for index, item in enumerate(candidates[name])}
        chosen[name].sort(key=lambda item: order[id(item)])

    text = _render(chosen, headings, result.language)
    # the sum of parts bounds the whole in practice; this guards tokenizer merges at joins
    while text and count_tokens(text, encoding) > result.budget:
        for name in reversed(list(SECTION_SHARES)):
            if chosen[name]:
                chosen[name].pop()
                break
        text = _render(chosen, headings, result.language)

    result.profile = chosen["profile"]
    result.summary = chosen["summary"][0] if chosen["summary"] else None
    result.memories = chosen["memories"]
    result.recent = list(reversed(chosen["recent"]))
    result.dropped = sum(len(items) for items in candidates.values()) - sum(len(items) for items in chosen.values())
    result.text = text
    result.tokens = count_tokens(text, encoding)


def _render(chosen: dict[str, list[RecallItem]], headings: dict[str, str], language: Language) -> str:
    if not any(chosen.values()):
        return ""
    parts = [headings["intro"]]
    for name in SECTION_SHARES:
        items = chosen[name] if name != "recent" else list(reversed(chosen[name]))
        if items:
            parts.append("\n" + headings[name] + "\n" + "\n".join(_line(item, language) for item in items))
    return "\n".join(parts)
