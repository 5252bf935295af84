"""memlane's own records of a user, read through `MemlaneStore` as collections:

    ("memlane_profile", user_id)   profile entries: key = entry id; value = topic, subtopic,
                                   content, confidence, source_message_ids
    ("memlane_events", user_id)    event cards: key = event id; value = summary, tags,
                                   profile_delta, session_ids, source_message_ids
    ("memlane_entities", user_id)    the user's people, places and things, and
    ("memlane_relations", user_id)   the links between them (memlane/langgraph_relations.py)

They can be read, searched (memlane's hybrid search order, each scored by the relevance every
door shows, store/relevance.py: these are its records) and deleted from; the memory graph writes
them, so a put is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from langgraph.store.base import SearchItem, SearchOp

from memlane.langgraph_relations import RELATION_COLLECTIONS, RelationCollections
from memlane.langgraph_rules import Namespace, matches
from memlane.store.errors import StoreError
from memlane.store.protocols import ForgettingStore, ProfileStore, SearchStore
from memlane.store.records import Event, MemoryKind, ProfileEntry

PROFILE_COLLECTION = "memlane_profile"
EVENTS_COLLECTION = "memlane_events"
COLLECTIONS = (PROFILE_COLLECTION, EVENTS_COLLECTION, *RELATION_COLLECTIONS)


def is_collection(namespace: Namespace) -> bool:
    """Whether `namespace` (or a search prefix) is one of a user's memlane collections."""
    return len(namespace) >= 2 and namespace[0] in COLLECTIONS


def check_collection_put(namespace: Namespace, value: Any) -> str:
    """The user whose record a delete (`value` None) of `namespace` removes; StoreError for a put."""
    if value is not None or len(namespace) != 2:
        raise StoreError(
            f"{namespace} is memlane's own {namespace[0].removeprefix('memlane_')}, written by its memory "
            "graph: it can be read, searched and deleted from; put items in a namespace of your own, "
            "like ('memories', user_id)"
        )
    return namespace[1]


class MemlaneSearchItem(SearchItem):
    """A `SearchItem` with memlane's own relevance beside LangGraph's `score` (`MemlaneStore(...,
    relevance=True)`): the calibrated 0..1 relevance of the query and the item alone that every
    door shows (`MemoryHit.relevance`, store/relevance.py), on items and memlane's own collections
    alike."""

    __slots__ = ("relevance",)

    def __init__(self, *args: Any, relevance: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.relevance = relevance

    def dict(self) -> dict[str, Any]:
        return {**super().dict(), "relevance": self.relevance}


def search_item_at(
    namespace: Namespace, key: str, value: dict[str, Any], created: float, updated: float, score: float | None
) -> SearchItem:
    return SearchItem(
        namespace, key, value, datetime.fromtimestamp(created, UTC), datetime.fromtimestamp(updated, UTC), score
    )


def _profile_value(entry: ProfileEntry) -> dict[str, Any]:
    return {
        "topic": entry.topic,
        "subtopic": entry.subtopic,
        "content": entry.content,
        "confidence": entry.confidence,
        "source_message_ids": entry.source_message_ids,
    }


def _event_value(event: Event) -> dict[str, Any]:
    return {
        "summary": event.summary,
        "tags": event.tags,
        "profile_delta": [change.model_dump() for change in event.profile_delta],
        "session_ids": event.session_ids,
        "source_message_ids": event.source_message_ids,
    }


def _profile_item(entry: ProfileEntry, score: float | None) -> SearchItem:
    return search_item_at(
        (PROFILE_COLLECTION, entry.user_id), entry.id, _profile_value(entry), entry.created_at, entry.updated_at, score
    )


def _event_item(event: Event, score: float | None) -> SearchItem:
    return search_item_at(
        (EVENTS_COLLECTION, event.user_id), event.id, _event_value(event), event.created_at, event.created_at, score
    )


class CollectionsStore(ProfileStore, SearchStore, ForgettingStore, Protocol):
    """What the two collections read and change: the profile and the event cards, their search, and
    deleting an entry or a card (with what it stated)."""


@dataclass(frozen=True)
class MemlaneCollections:
    """Get, search, list and delete over a user's profile and events collections."""

    store: CollectionsStore
    relevance: bool = False  # query searches answer `MemlaneSearchItem`s (MemlaneStore(relevance=True))

    @property
    def _relations(self) -> RelationCollections:
        return RelationCollections(self.store)

    async def get(self, namespace: Namespace, key: str) -> SearchItem | None:
        if namespace[0] in RELATION_COLLECTIONS:
            return await self._relations.get(namespace, key)
        user_id = namespace[1]
        if namespace[0] == PROFILE_COLLECTION:
            entry = next((e for e in await self.store.get_profile(user_id) if e.id == key), None)
            return _profile_item(entry, None) if entry else None
        (event,) = await self.store.get_events(user_id, [key])
        return _event_item(event, None) if event else None

    async def search(self, prefix: Namespace, op: SearchOp) -> list[SearchItem]:
        """The collection's records under the filter: newest first without a query; with one,
        in memlane's hybrid search order, scored by the relevance every door shows."""
        if prefix[0] in RELATION_COLLECTIONS:
            return self._with_relevance(await self._relations.search(prefix, op))
        if len(prefix) > 2:
            return []
        user_id = prefix[1]
        # each record as (its search item at a score, its value)
        records: dict[str, tuple[partial[SearchItem], dict[str, Any]]]
        if prefix[0] == PROFILE_COLLECTION:
            entries = await self.store.get_profile(user_id)
            records = {e.id: (partial(_profile_item, e), _profile_value(e)) for e in entries}
        else:
            events = await self.store.list_events(user_id, limit=1_000_000)
            records = {e.id: (partial(_event_item, e), _event_value(e)) for e in events}
        kept = {key: as_item for key, (as_item, value) in records.items() if matches(value, op.filter)}
        if not op.query:
            return self._with_relevance(
                [as_item(None) for as_item in list(kept.values())[op.offset : op.offset + op.limit]]
            )
        kind: MemoryKind = "profile" if prefix[0] == PROFILE_COLLECTION else "event"
        hits = await self.store.search_memories(user_id, op.query, kinds=[kind], limit=max(len(kept), 1))
        found, seen = [], set()
        for hit in hits:
            ref = hit.memory.ref_id or ""
            if ref in kept and ref not in seen and not hit.memory.id.startswith("item:"):
                seen.add(ref)
                found.append(kept[ref](hit.relevance))
        return self._with_relevance(found[op.offset : op.offset + op.limit])

    def _with_relevance(self, page: list[SearchItem]) -> list[SearchItem]:
        """`page` as `MemlaneSearchItem`s where relevance was asked for: their score is the relevance
        (None without a query)."""
        if not self.relevance:
            return page
        return [
            MemlaneSearchItem(
                item.namespace, item.key, item.value, item.created_at, item.updated_at, item.score, relevance=item.score
            )
            for item in page
        ]

    async def namespaces(self, conditions: Sequence[Any]) -> set[Namespace]:
        """The user's collections that hold records, where a prefix condition names the user and allows them."""
        found: set[Namespace] = set()
        for condition in conditions:
            path = tuple(condition.path)
            if condition.match_type != "prefix" or len(path) < 2 or path[1] == "*":
                continue
            user_id = path[1]
            if path[0] in ("*", PROFILE_COLLECTION) and await self.store.get_profile(user_id):
                found.add((PROFILE_COLLECTION, user_id))
            if path[0] in ("*", EVENTS_COLLECTION) and await self.store.list_events(user_id, limit=1):
                found.add((EVENTS_COLLECTION, user_id))
        return found | await self._relations.namespaces(conditions)

    async def delete(self, namespace: Namespace, key: str) -> None:
        if namespace[0] in RELATION_COLLECTIONS:
            await self._relations.delete(namespace, key)
        elif namespace[0] == PROFILE_COLLECTION:
            await self.store.delete_profile_entry(namespace[1], key)
        else:
            await self.store.delete_event(namespace[1], key)
