"""Recall: what the model should know about the user before it answers, inside a token budget.

    profile (relevant and confident first) ─┐
    session summary + recent messages ──────┼─→ items with scores and sources ─→ system-prompt block
    hybrid search (profile/event/message) ──┘

Relevance of a search hit: the store's cosine similarity is rescaled from
[`recall_similarity_floor`, 1] to [0, 1] (multilingual-e5 puts unrelated texts near 0.75,
so a raw cosine threshold would pass everything), fused with the normalized BM25 score by
`hybrid_alpha`, and multiplied by the layer's weight. The thresholds in `recall_thresholds`
apply to that number, tried in turn until one lets a memory through.
"""

from __future__ import annotations

import asyncio
import re
from typing import Iterable, Literal, Sequence

from pydantic import BaseModel, Field

from memlane.config import Settings, get_settings
from memlane.store.base import MemoryHit, MemoryStore, Message, ProfileEntry, SessionSummary
from memlane.store.tokens import count_tokens, truncate_to_tokens

Language = Literal["en", "zh"]
Layer = Literal["profile", "summary", "recent", "event", "message"]

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
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
    score: float | None = Field(default=None, description="relevance 0..1 (search hits, ranked profile entries)")
    memory_id: str | None = None
    ref_id: str | None = Field(default=None, description="profile entry / event id the memory mirrors")
    source_message_ids: list[str] = Field(default_factory=list)
    created_at: float | None = None
    confidence: float | None = None
    tokens: int = 0


class Recall(BaseModel):
    """What recall found and the block it renders for the system prompt."""

    user_id: str
    session_id: str | None
    query: str
    language: Language
    enabled: bool = True
    profile: list[RecallItem] = Field(default_factory=list)
    summary: RecallItem | None = None
    memories: list[RecallItem] = Field(default_factory=list)
    recent: list[RecallItem] = Field(default_factory=list)
    threshold: float | None = Field(default=None, description="the threshold that let memories through")
    dropped: int = Field(default=0, description="items left out for the budget")
    budget: int
    tokens: int = 0
    text: str = ""

    @property
    def items(self) -> list[RecallItem]:
        summary = [self.summary] if self.summary else []
        return [*self.profile, *summary, *self.memories, *self.recent]


def detect_language(*texts: str) -> Language:
    """Chinese when the first text with letters has more Han characters than Latin words."""
    for text in texts:
        han = len(_HAN.findall(text or ""))
        latin = len(_LATIN_WORD.findall(text or ""))
        if han or latin:
            return "zh" if han > latin else "en"
    return "en"


def relevance(hit: MemoryHit, settings: Settings) -> float:
    """The hit's relevance before layer weights (see the module docstring)."""
    floor = settings.recall_similarity_floor
    similarity = max(0.0, (hit.vector_similarity - floor) / (1.0 - floor))
    alpha = settings.hybrid_alpha
    return alpha * min(similarity, 1.0) + (1 - alpha) * hit.text_score


def layer_weight(kind: str, settings: Settings) -> float:
    return {
        "profile": settings.recall_weight_profile,
        "event": settings.recall_weight_event,
        "message": settings.recall_weight_message,
    }.get(kind, settings.recall_weight_event)


def _normalized(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def passing_hits(scored: Sequence[tuple[float, MemoryHit]], thresholds: Sequence[float]) -> tuple[float | None, list[tuple[float, MemoryHit]]]:
    """Hits passing the first threshold that lets any through (thresholds tried in order)."""
    for threshold in thresholds:
        passing = [(score, hit) for score, hit in scored if score >= threshold]
        if passing:
            return threshold, passing
    return None, []


async def recall(
    store: MemoryStore,
    user_id: str,
    session_id: str | None,
    message: str,
    *,
    settings: Settings | None = None,
    max_tokens: int | None = None,
    enabled: bool | None = None,
    exclude_texts: Iterable[str] = (),
    include_recent: bool = True,
) -> Recall:
    """The memory context for `message` from `user_id` in `session_id`, inside the token budget.

    exclude_texts: texts the model already sees (the conversation in its prompt); recent
    messages and memories repeating them are left out. include_recent: False when the
    caller's prompt already holds the session's recent messages.
    """
    settings = settings or get_settings()
    budget = max_tokens or settings.recall_max_tokens
    enabled = settings.recall_enabled if enabled is None else enabled
    if not enabled:
        return Recall(user_id=user_id, session_id=session_id, query=message, language=detect_language(message), enabled=False, budget=budget)

    candidates = max(20, 3 * settings.recall_max_memories)
    profile, summary, recent, hits = await asyncio.gather(
        store.get_profile(user_id),
        store.get_session_summary(user_id, session_id) if session_id else _none(),
        store.recent_messages(user_id, session_id, limit=settings.recall_recent_messages)
        if session_id and include_recent and settings.recall_recent_messages
        else _empty(),
        store.search_memories(user_id, message, kinds=["profile", "event", "message"], limit=candidates)
        if message.strip()
        else _empty(),
    )
    language = detect_language(message, *(m.content for m in reversed(recent)))
    seen = {_normalized(text) for text in [message, *exclude_texts] if text.strip()}
    recent = [m for m in recent if _normalized(m.content) not in seen and m.content.strip()]
    recent_ids = {m.id for m in recent}
    seen |= {_normalized(m.content) for m in recent}

    scored = sorted(
        ((relevance(hit, settings) * layer_weight(hit.memory.kind, settings), hit) for hit in hits),
        key=lambda pair: pair[0],
        reverse=True,
    )
    threshold, passing = passing_hits(scored, settings.recall_thresholds)
    profile_ids = {entry.id for entry in profile}
    profile_scores: dict[str, float] = {}
    memory_items: list[RecallItem] = []
    for score, hit in passing:
        memory = hit.memory
        if memory.kind == "profile" and memory.ref_id in profile_ids:
            profile_scores.setdefault(memory.ref_id, score)  # ranks the profile; not listed twice
            continue
        key = _normalized(memory.text)
        if key in seen or (memory.kind == "message" and set(memory.source_message_ids) & recent_ids):
            continue
        seen.add(key)
        if len(memory_items) < settings.recall_max_memories:
            memory_items.append(
                RecallItem(
                    layer="event" if memory.kind != "message" else "message",
                    text=memory.text,
                    score=round(score, 4),
                    memory_id=memory.id,
                    ref_id=memory.ref_id,
                    source_message_ids=memory.source_message_ids,
                    created_at=memory.created_at,
                )
            )

    result = Recall(
        user_id=user_id,
        session_id=session_id,
        query=message,
        language=language,
        threshold=threshold,
        budget=budget,
    )
    _fill(result, _profile_items(profile, profile_scores), _summary_item(summary), memory_items, _recent_items(recent, language), settings)
    return result


async def _none() -> None:
    return None


async def _empty() -> list:
    return []


def _profile_items(profile: Sequence[ProfileEntry], scores: dict[str, float]) -> list[RecallItem]:
    ranked = sorted(profile, key=lambda e: (scores.get(e.id, 0.0), e.confidence, e.updated_at), reverse=True)
    return [
        RecallItem(
            layer="profile",
            text=f"{entry.topic} / {entry.subtopic}: {entry.content}",
            score=round(scores[entry.id], 4) if entry.id in scores else None,
            ref_id=entry.id,
            source_message_ids=entry.source_message_ids,
            created_at=entry.updated_at,
            confidence=entry.confidence,
        )
        for entry in ranked
    ]


def _summary_item(summary: SessionSummary | None) -> list[RecallItem]:
    if summary is None or not summary.summary.strip():
        return []
    return [
        RecallItem(
            layer="summary",
            text=summary.summary.strip(),
            source_message_ids=summary.source_message_ids[-20:],
            created_at=summary.updated_at,
        )
    ]


def _recent_items(recent: Sequence[Message], language: Language) -> list[RecallItem]:
    """Newest first: the budget keeps the newest; rendering restores the order."""
    items = []
    for message in reversed(recent):
        speaker = message.name or HEADINGS[language].get(message.role, message.role)
        items.append(
            RecallItem(
                layer="recent",
                text=f"{speaker}: {message.content}",
                source_message_ids=[message.id],
                created_at=message.created_at,
            )
        )
    return items


def _line(item: RecallItem) -> str:
    return "- " + _SPACES.sub(" ", item.text).strip()


def _fill(
    result: Recall,
    profile: list[RecallItem],
    summary: list[RecallItem],
    memories: list[RecallItem],
    recent: list[RecallItem],
    settings: Settings,
) -> None:
    """Choose items section by section inside the budget, then render the block."""
    encoding = settings.token_encoding
    headings = HEADINGS[result.language]
    candidates = {"profile": profile, "summary": summary, "memories": memories, "recent": recent}
    available = result.budget - count_tokens(headings["intro"] + "\n", encoding)
    # one long message must not crowd out the rest, and one item must fit a small budget
    item_cap = max(8, min(available // 4, available // 2 - 12))
    for items in candidates.values():
        for item in items:
            text = truncate_to_tokens(item.text, item_cap, encoding)
            if text != item.text:
                item.text = text + "…"
            item.tokens = count_tokens(_line(item) + "\n", encoding)

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

    text = _render(chosen, headings)
    # the sum of parts bounds the whole in practice; this guards tokenizer merges at joins
    while text and count_tokens(text, encoding) > result.budget:
        for name in reversed(list(SECTION_SHARES)):
            if chosen[name]:
                chosen[name].pop()
                break
        text = _render(chosen, headings)

    result.profile = chosen["profile"]
    result.summary = chosen["summary"][0] if chosen["summary"] else None
    result.memories = chosen["memories"]
    result.recent = list(reversed(chosen["recent"]))
    result.dropped = sum(len(items) for items in candidates.values()) - sum(len(items) for items in chosen.values())
    result.text = text
    result.tokens = count_tokens(text, encoding)


def _render(chosen: dict[str, list[RecallItem]], headings: dict[str, str]) -> str:
    if not any(chosen.values()):
        return ""
    parts = [headings["intro"]]
    for name in SECTION_SHARES:
        items = chosen[name] if name != "recent" else list(reversed(chosen[name]))
        if items:
            parts.append("\n" + headings[name] + "\n" + "\n".join(_line(item) for item in items))
    return "\n".join(parts)


def recall_system_prompt(base_prompt: str | None, recalled: Recall) -> str:
    """`base_prompt` with the recall block appended (unchanged when nothing was recalled)."""
    if not recalled.text:
        return base_prompt or ""
    return f"{base_prompt}\n\n{recalled.text}" if base_prompt else recalled.text
