"""Recall's items: one per thing the memory block shows, and the clock that dates them.

A recalled message comes with its neighbours (the question it answers, the answer it got), each
line saying who said it ("朋友A: …" is never shown as the user's own words) and cut around the part
that answers the query (store/text/passage.py); an event or a past profile value is its text; the
profile's entries rank by the score search gave them, then confidence; the session's summary and
its recent messages (newest first: the budget keeps the newest) follow. `Clock` gives each item
its time in the reader's zone and language (memlane/dates.py). memlane/recall.py chooses what is
recalled; memlane/recall_block.py fits these items into the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo

from memlane import dates
from memlane.config import RecallSettings
from memlane.recall_block import HEADINGS, RecallItem, item_token_cap
from memlane.recall_select import NeighbourMode, neighbours_shown
from memlane.store.protocols import HistoryStore
from memlane.store.records import Memory, Message, ProfileEntry, SessionSummary, past_value_text
from memlane.store.text.passage import answering_passage
from memlane.store.text.terms import Language
from memlane.store.text.tokens import count_tokens


@dataclass(frozen=True)
class Clock:
    """Dates recall's items in the reader's zone and language, relative to the message's time."""

    zone: tzinfo
    language: Language
    reference: float

    def date(self, item: RecallItem, past_values: Sequence[Memory] = ()) -> None:
        """Set the item's `when` (a profile entry: since when it holds), its status and its
        end when a newer fact replaced it, and a profile entry's past values found by search."""
        if item.created_at is None:
            return
        if item.layer == "profile":
            item.when = dates.since(item.created_at, self.zone, self.language, self.reference)
            item.earlier = [
                dates.earlier(past_value_text(memory), memory.valid_until, self.zone, self.language)
                for memory in sorted(past_values, key=lambda memory: memory.valid_until or 0.0, reverse=True)
                if memory.valid_until is not None
            ]
            if item.valid_until is not None:  # a newer statement changed it since (memlane/recall_changes.py)
                item.status = "earlier"
                item.until = dates.day(item.valid_until, self.zone, self.language)
            return
        item.when = dates.when(item.created_at, self.zone, self.language, self.reference)
        if item.valid_until is not None:
            item.status = "earlier"
            item.until = dates.day(item.valid_until, self.zone, self.language)


async def recalled_neighbours(
    store: HistoryStore, user_id: str, memories: Sequence[Memory], recall: RecallSettings
) -> dict[str, list[Message]]:
    """Per recalled message memory: the messages around it (the hit included), in order."""
    wanted = [m for m in memories if m.kind == "message" and m.source_message_ids] if recall.neighbour_messages else []
    if not wanted:
        return {}
    around = await store.messages_around(
        user_id,
        [memory.source_message_ids[0] for memory in wanted],
        before=recall.neighbour_messages,
        after=recall.neighbour_messages,
    )
    return {memory.id: around.get(memory.source_message_ids[0], []) for memory in wanted}


def reply_to(around: Sequence[Message], memory: Memory) -> Message | None:
    """The message after `memory`'s own among `around` (its neighbours), if any."""
    ids = [message.id for message in around]
    if not memory.source_message_ids or memory.source_message_ids[0] not in ids:
        return None
    index = ids.index(memory.source_message_ids[0])
    return around[index + 1] if index + 1 < len(around) else None


def speaker_label(role: str, speaker: str | None, language: Language) -> str:
    """Who said it, as recall shows it: the owner is "user"/"用户", a friend by name."""
    if role == "owner":
        return HEADINGS[language]["user"]
    if role == "assistant":
        return speaker or HEADINGS[language]["assistant"]
    return speaker or ("其他人" if language == "zh" else "someone else")


def _message_parts(
    around: Sequence[Message], hit_ids: Sequence[str], query: str, language: Language, budget: int, encoding: str
) -> list[str]:
    """A recalled message and its neighbours as "speaker: words", each cut around what answers
    `query`: a neighbour to a small share, the hit itself to what the item's cap leaves it
    (tokens counted in `encoding`)."""
    neighbour_cap = max(16, budget // 20)
    labels = [f"{speaker_label(m.speaker_role, m.name, language)}: " for m in around]
    parts = [
        label + ("" if m.id in hit_ids else answering_passage(m.content, query, neighbour_cap, encoding))
        for label, m in zip(labels, around)
    ]
    hit_cap = max(neighbour_cap, item_token_cap(budget, language, encoding) - count_tokens(" / ".join(parts), encoding))
    return [
        label + answering_passage(m.content, query, hit_cap, encoding) if m.id in hit_ids else part
        for label, part, m in zip(labels, parts, around)
    ]


def memory_items_of(
    chosen: Sequence[tuple[float, Memory]],
    neighbours: dict[str, list[Message]],
    recent_ids: set[str],
    language: Language,
    budget: int,
    query: str,
    *,
    max_memories: int,
    neighbour_mode: NeighbourMode,
    context_tokens: int,
    encoding: str,
) -> list[RecallItem]:
    """One item per recalled memory, the first `max_memories`; a message comes with its
    neighbours (`neighbours_shown`, in `neighbour_mode`: a short answer is `context_tokens` long)
    and its speakers (tokens counted in `encoding`)."""
    covered: set[str] = set()
    items: list[RecallItem] = []
    for score, memory in chosen:
        if len(items) == max_memories:
            break
        if memory.kind != "message":
            text = (
                past_value_text(memory) if memory.kind == "profile" and memory.valid_until is not None else memory.text
            )
            source_ids = memory.source_message_ids
        else:
            if set(memory.source_message_ids) <= covered:
                continue  # already shown as the neighbour of an earlier hit
            shown = (
                neighbours_shown(
                    neighbours.get(memory.id, []),
                    memory.source_message_ids[0],
                    neighbour_mode,
                    context_tokens,
                    encoding,
                )
                if memory.source_message_ids
                else []
            )
            around = [m for m in shown if m.id not in recent_ids and m.content.strip()]
            if any(m.id in memory.source_message_ids for m in around):
                lines = _message_parts(around, memory.source_message_ids, query, language, budget, encoding)
                source_ids = [m.id for m in around]
            else:  # no neighbours asked for, or the turn is gone from history: the memory alone
                lines = [f"{speaker_label(memory.speaker_role, memory.speaker, language)}: {memory.text}"]
                source_ids = memory.source_message_ids
            covered.update(source_ids)
            text = " / ".join(lines)
        items.append(
            RecallItem(
                layer="event" if memory.kind != "message" else "message",
                text=text,
                score=round(score, 4),
                memory_id=memory.id,
                ref_id=memory.ref_id,
                source_message_ids=source_ids,
                created_at=memory.created_at,
                valid_until=memory.valid_until,
            )
        )
    return items


def profile_items_of(profile: Sequence[ProfileEntry], scores: dict[str, float]) -> list[RecallItem]:
    ranked = sorted(profile, key=lambda e: (scores.get(e.id, 0.0), e.confidence, e.since), reverse=True)
    return [
        RecallItem(
            layer="profile",
            text=entry.line,
            score=round(scores[entry.id], 4) if entry.id in scores else None,
            ref_id=entry.id,
            source_message_ids=entry.source_message_ids,
            created_at=entry.since,
            confidence=entry.confidence,
        )
        for entry in ranked
    ]


def summary_items_of(summary: SessionSummary | None) -> list[RecallItem]:
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


def recent_items_of(recent: Sequence[Message], language: Language) -> list[RecallItem]:
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
