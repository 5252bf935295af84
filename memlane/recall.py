"""Recall: what the model should know about the user before it answers, inside a token budget.

    profile (relevant and confident first) ─┐
    session summary + recent messages ──────┼─→ items with scores and sources ─→ system-prompt block
    hybrid search (profile/event/message) ──┘

Search hits keep search's ranking (memlane/recall_select.py documents each stage): search's
order value (`MemoryHit.score`: the measured chance that the hit holds what was asked, with the
rankings' votes, store/fusion.py `calibrated_relevance`; every door shows `MemoryHit.relevance`,
of the pair alone) times the layer's weight orders them; a hit whose order value is below
`recall_min_relevance` (`recall_impersonal_min_relevance` for a message not about the user)
leaves, unless a short entity query ("张伟", "Marco Morelli") names it verbatim; the first
`recall_max_memories` items are shown.

Every line carries its time (memlane/dates.py), in the conversation's language and relative
to `reference_time`: a profile entry since when it holds ("since 2026-10-12, 3 weeks ago" /
"自2026年10月12日起，三周前"), a searched turn or event when it was said. A memory a newer
fact replaced (`Memory.valid_until`, marked by the memory graph when an UPDATE replaced a
profile entry: no model runs here) comes after the current ones, as "earlier: …, until
<date>" / "之前：…，直到<date>"; a past value of a profile entry that the search found is shown
on the entry's line, after its current value. The budget drops the earlier ones first.

A memory longer than its share of the budget keeps the part that answers: a window around the
passage that matches the query (store/text/passage.py), with "…" where it was cut.

Before searching, a follow-up question ("他哪天出发？") is rewritten with the session's
previous turn (memlane/query.py). A recalled message brings its neighbours (the question it
answers, the answer it got) and says who said it: "朋友A: 我最喜欢的电影是《星际穿越》" is
never shown as the user's own words.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.change_grammar import asks_about_the_past
from memlane.config import ModelSettings, RecallSettings, SearchSettings, Settings, StoreSettings
from memlane.query import (
    cheap_rewrite,
    may_need_rewrite,
    needs_rewrite,
    rewrite_beside,
)
from memlane.recall_block import (
    HEADINGS,
    SECTION_SHARES,
    Layer,
    Recall,
    RecallItem,
    RewriteKind,
    fill_block,
)
from memlane.recall_changes import newest_changes, states_something
from memlane.recall_gate import gated_hits
from memlane.recall_items import (
    Clock,
    memory_items_of,
    profile_items_of,
    recalled_neighbours,
    recent_items_of,
    reply_to,
    summary_items_of,
)
from memlane.recall_relations import linked_in_store, relation_items_of, with_relation_items
from memlane.recall_select import (
    newer_first,
    unanswered,
)
from memlane.store.errors import RedisUnavailable
from memlane.store.hits import MemoryHit, MemoryHits
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.protocols import RecallStore, SearchStore
from memlane.store.records import Memory, Message, ProfileEntry, SessionSummary
from memlane.store.redis.metadata import MetadataFilter
from memlane.store.relations import Relation, RelationStore
from memlane.store.text.questions import is_question
from memlane.store.text.terms import (
    MAX_QUERY_CHARS,
    detect_language,
    is_short_entity_query,
)
from memlane.store.text.time_words import resolve_timezone

__all__ = [
    "HEADINGS",
    "SECTION_SHARES",
    "Layer",
    "Recall",
    "RecallItem",
    "RecallParts",
    "detect_language",
    "recall",
    "recall_system_prompt",
]

_SPACES = re.compile(r"\s+")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallParts:
    """The parts of the settings recall reads, each defaulting to its component's defaults (never
    the environment); a door that has `Settings` passes `RecallParts.of(settings)`."""

    recall: RecallSettings = field(default_factory=RecallSettings)  # budget, weights, floors, neighbours, rewrites
    models: ModelSettings = field(default_factory=ModelSettings)  # the rewrite model's calls
    store: StoreSettings = field(default_factory=StoreSettings)  # token encoding, time zone, embeddings' floor
    search: SearchSettings = field(default_factory=SearchSettings)  # a recalled message's context window

    @classmethod
    def of(cls, settings: Settings) -> RecallParts:
        """The parts recall reads of `settings` (at a door)."""
        return cls(recall=settings.recall, models=settings.models, store=settings.store, search=settings.search)


def _normalized(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


async def _searched(
    store: SearchStore,
    user_id: str,
    message: str,
    session_messages: Sequence[Message],
    recall: RecallSettings,
    models: ModelSettings,
    candidates: int,
    reference_time: float | None,
    rewrite_model: BaseChatModel | None,
    rewrite_breaker: CircuitBreaker | None,
    shared_user_id: str | None = None,
    metadata_filter: MetadataFilter | None = None,
) -> tuple[str, RewriteKind | None, list[MemoryHit]]:
    """The query recall searched with, how a follow-up was rewritten (None: it was not), and its
    hits. A follow-up is searched with the previous turn's words at once (the cheap rewrite),
    while the memory model rewrites it beside that
    search; a rewrite that lands within its budget is searched too and wins (not waited for while
    the model's recent rewrites took longer: memlane/query.py `RewriteTimes`). A long message is
    searched by its first `MAX_QUERY_CHARS` characters, all a search reads of it: what recall
    looks for in the query (changes asked about, exact terms) is looked for there too."""
    message = message[:MAX_QUERY_CHARS]

    async def search_of(owner: str, query: str) -> list[MemoryHit]:
        return await store.search_memories(
            owner,
            query,
            kinds=["profile", "event", "message"],
            limit=candidates,
            reference_time=reference_time,
            metadata_filter=metadata_filter,
        )

    async def search(query: str) -> list[MemoryHit]:
        if not query.strip():
            return []
        if shared_user_id is None:
            return await search_of(user_id, query)
        # the shared scope is another store user (on a cluster, another shard): two searches, one
        # ranking, since every hit's score is the same calibrated relevance
        own, shared = await asyncio.gather(search_of(user_id, query), search_of(shared_user_id, query))
        return MemoryHits(
            sorted([*own, *shared], key=lambda hit: -hit.score)[:candidates],
            [*getattr(own, "incomplete", []), *getattr(shared, "incomplete", [])],
        )

    if not message.strip() or not needs_rewrite(message, session_messages, recall):
        return message, None, await search(message)
    plain = cheap_rewrite(message, session_messages)
    if rewrite_model is None:
        return plain, "previous turn", await search(plain)
    rewritten, plain_hits = await rewrite_beside(
        message,
        session_messages,
        search(plain),
        recall=recall,
        models=models,
        llm=rewrite_model,
        breaker=rewrite_breaker,
    )
    if not rewritten:
        return plain, "previous turn", plain_hits
    return rewritten, "model", await search(rewritten)


async def recall(
    store: RecallStore,
    user_id: str,
    session_id: str | None,
    message: str,
    *,
    parts: RecallParts,
    max_tokens: int | None = None,
    enabled: bool | None = None,
    exclude_texts: Iterable[str] = (),
    include_recent: bool = True,
    rewrite_model: BaseChatModel | None = None,
    rewrite_breaker: CircuitBreaker | None = None,
    reference_time: float | None = None,
    shared_user_id: str | None = None,
    metadata_filter: MetadataFilter | None = None,
) -> Recall:
    """The memory context for `message` from `user_id` in `session_id`, inside the token budget.

    parts: the settings' parts recall reads (`RecallParts.of(settings)`).
    exclude_texts: texts the model already sees (the conversation in its prompt); recent
    messages and memories repeating them are left out. include_recent: False when the
    caller's prompt already holds the session's recent messages. rewrite_model: the model
    that rewrites follow-up questions (without one, the cheap rewrite); rewrite_breaker: that
    model's circuit breaker (the scheduler's `context.model_breaker`). reference_time:
    when the message was said (default now), for "昨天" and "last week". shared_user_id: a shared
    scope (`store/scopes.py`) searched beside the user's memories, its hits ranked with theirs.
    metadata_filter: only searched memories whose metadata match (`memlane.store.redis.metadata`; the
    profile and the session's summary and recent messages are recalled as always).
    """
    budget = max_tokens or parts.recall.max_tokens
    enabled = parts.recall.enabled if enabled is None else enabled
    if not enabled:
        return Recall(
            user_id=user_id,
            session_id=session_id,
            query=message,
            language=detect_language(message),
            enabled=False,
            budget=budget,
        )

    candidates = max(20, 3 * parts.recall.max_memories)
    recent_limit = max(parts.recall.recent_messages, 4) if session_id else 0

    async def session() -> tuple[list[ProfileEntry], SessionSummary | None, list[Message]]:
        return await asyncio.gather(
            store.get_profile(user_id),
            store.get_session_summary(user_id, session_id) if session_id else _none(),
            store.recent_messages(user_id, session_id, limit=recent_limit) if session_id else _empty(),
        )

    def searched(turns: Sequence[Message]) -> Awaitable[tuple[str, RewriteKind | None, list[MemoryHit]]]:
        return _searched(
            store,
            user_id,
            message,
            turns,
            parts.recall,
            parts.models,
            candidates,
            reference_time,
            rewrite_model,
            rewrite_breaker,
            shared_user_id,
            metadata_filter,
        )

    links = _links(store, user_id, message, parts, reference_time)
    if may_need_rewrite(message[:MAX_QUERY_CHARS], parts.recall):  # its search may need the session's turns
        (profile, summary, session_messages), linked = await _all(session(), links)
        search_query, rewrite, hits = await searched(session_messages)
    else:  # searched as it is: beside the reads (the query's embedding is most of a recall's wait)
        (profile, summary, session_messages), (search_query, rewrite, hits), linked = await _all(
            session(), searched(()), links
        )
    recent = (
        session_messages[-parts.recall.recent_messages :] if include_recent and parts.recall.recent_messages else []
    )
    language = detect_language(message, *(m.content for m in reversed(recent)))
    seen = {_normalized(text) for text in [message, *exclude_texts] if text.strip()}
    recent = [m for m in recent if _normalized(m.content) not in seen and m.content.strip()]
    recent_ids = {m.id for m in recent}
    seen |= {_normalized(m.content) for m in recent}

    profile_ids = {entry.id for entry in profile}
    fresh = []  # hits the prompt does not hold already
    for hit in hits:
        memory = hit.memory
        if memory.kind == "profile" and memory.ref_id in profile_ids:
            fresh.append(hit)  # ranks the profile below
        elif _normalized(memory.text) not in seen and not (
            memory.kind == "message" and set(memory.source_message_ids) & recent_ids
        ):
            fresh.append(hit)
    entity = _normalized(message).strip(" ?？!！。.") if is_short_entity_query(message) else None
    # the questions' neighbours, read now: a question whose reply only asks back holds nothing
    asking = [hit.memory for hit in fresh[: 2 * parts.recall.max_memories] if is_question(hit.memory)]
    neighbours = (
        await recalled_neighbours(store, user_id, asking, parts.recall) if parts.search.unanswered_weight != 1.0 else {}
    )
    no_answer = frozenset(
        hit.memory.id
        for hit in fresh
        if unanswered(hit.memory, reply_to(neighbours.get(hit.memory.id, []), hit.memory))
    )
    gated = gated_hits(
        message, search_query, fresh, entity, no_answer, recall=parts.recall, search=parts.search, store=parts.store
    )
    passing, intent, floor, max_memories = gated.passing, gated.intent, gated.floor, gated.max_memories
    stale: dict[str, float] = {}  # memory or profile entry id -> when a newer statement changed what it states
    changed_by: dict[str, str] = {}  # a searched memory's id -> the newer statement's (shown right after it)
    if parts.recall.newer_first and not asks_about_the_past(search_query):
        statements = [hit.memory for hit in fresh if states_something(hit.memory)]
        vectors = await store.memory_vectors(statements) if len(statements) > 1 else {}
        changes = newest_changes(search_query, fresh, vectors)
        passing = newer_first(passing, fresh, {change.memory.id: change.stale_memory_ids for change in changes})
        for change in changes:
            stale.update(dict.fromkeys([*change.stale_memory_ids, *change.stale_profile_ids], change.at))
            changed_by.update(dict.fromkeys(change.stale_memory_ids, change.memory.id))
    profile_scores: dict[str, float] = {}
    profile_earlier: dict[str, list[Memory]] = {}
    chosen: list[tuple[float, Memory]] = []
    for hit in passing:
        memory = hit.memory
        if memory.kind == "profile" and memory.ref_id is not None and memory.ref_id in profile_ids:
            if memory.valid_until is not None:  # a past value: shown on its entry's line, after the current one
                profile_earlier.setdefault(memory.ref_id, []).append(memory)
            profile_scores.setdefault(memory.ref_id, hit.score)  # ranks the profile; not listed twice
            continue
        key = _normalized(memory.text)
        if key in seen:
            continue
        seen.add(key)
        if len(chosen) < 2 * max_memories:  # room for those merged into a neighbour's item
            if memory.id in stale:
                memory = memory.model_copy(update={"valid_until": stale[memory.id]})
            chosen.append((hit.score, memory))
    neighbours |= await recalled_neighbours(
        store, user_id, [memory for _, memory in chosen if memory.id not in neighbours], parts.recall
    )
    memory_items = memory_items_of(
        chosen,
        neighbours,
        recent_ids,
        language,
        budget,
        search_query,
        max_memories=max_memories,
        neighbour_mode=parts.recall.neighbour_mode,
        context_tokens=parts.search.embed_context_max_tokens,
        encoding=parts.store.token_encoding,
    )
    clock = Clock(
        resolve_timezone(parts.store.timezone), language, time.time() if reference_time is None else reference_time
    )
    for item in memory_items:
        clock.date(item)
    memory_items = earlier_last(memory_items, changed_by)
    if linked is not None:  # the links the message's names lead to (`_links`)
        relation_items = relation_items_of(linked[0], linked[1], language)[:max_memories]
        for item in relation_items:  # a past link stays beside the current one, not after every memory
            clock.date(item)
        memory_items = with_relation_items(
            memory_items, relation_items, parts.search.relations_weight, parts.search.rrf_k
        )
    profile_items = profile_items_of(profile, profile_scores)
    for item in profile_items:
        item.valid_until = stale.get(item.ref_id or "")
        clock.date(item, profile_earlier.get(item.ref_id or "", []))
    profile_items.sort(key=lambda item: item.status == "earlier")

    result = Recall(
        user_id=user_id,
        session_id=session_id,
        query=message,
        search_query=search_query,
        rewrite=rewrite,
        language=language,
        threshold=floor,
        intent=intent,
        budget=budget,
        search_incomplete=list(getattr(hits, "incomplete", [])),
    )
    if result.search_incomplete:
        logger.warning("recall for %r searched part of the memories: %s", user_id, "; ".join(result.search_incomplete))
    fill_block(
        result,
        profile_items,
        summary_items_of(summary),
        memory_items,
        recent_items_of(recent, language),
        parts.store.token_encoding,
    )
    return result


def earlier_last(items: list[RecallItem], changed_by: dict[str, str]) -> list[RecallItem]:
    """The current items first, in rank order; a turn a newer statement was seen to change (no
    model said so: memlane/recall_changes.py) right after that statement, so that a wrong guess
    costs it no place; the ones a memory run marked replaced last (the budget drops them first)."""
    position = {item.memory_id: index for index, item in enumerate(items) if item.status != "earlier"}

    def place(index: int) -> tuple[float, int]:
        item = items[index]
        if item.status != "earlier":
            return index, 0
        newer = position.get(changed_by.get(item.memory_id or "", ""))
        return (newer, 1) if newer is not None else (len(items), index)

    return [items[index] for index in sorted(range(len(items)), key=place)]


async def _links(
    store: RecallStore,
    user_id: str,
    message: str,
    parts: RecallParts,
    reference_time: float | None,
) -> tuple[list[Relation], dict[str, str]] | None:
    """The links the message's names lead to, and the entities' names (memlane/recall_relations.py);
    None where recall follows no relations. Read beside the search: they depend on the message alone."""
    if not (parts.recall.follow_relations and parts.search.relations_weight > 0 and isinstance(store, RelationStore)):
        return None
    try:
        return await linked_in_store(
            store,
            user_id,
            message,
            as_of=reference_time,
            include_past=asks_about_the_past(message),
            limit=parts.recall.max_memories,
        )
    except RedisUnavailable as error:  # the memories found stay: only the links are missing
        logger.warning("recalling %r's memories without their relations: %s", user_id, error)
        return [], {}


async def _all(*steps: Awaitable[Any]) -> list[Any]:
    """The steps' answers, run side by side; when one fails, the others are cancelled and its
    error raised as it is (a StoreError stays one for the callers that answer without memory)."""
    tasks = [asyncio.ensure_future(step) for step in steps]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise


async def _none() -> None:
    return None


async def _empty() -> list[Message]:
    return []


def recall_system_prompt(base_prompt: str | None, recalled: Recall) -> str:
    """`base_prompt` with the recall block appended (unchanged when nothing was recalled)."""
    if not recalled.text:
        return base_prompt or ""
    return f"{base_prompt}\n\n{recalled.text}" if base_prompt else recalled.text
