"""A user's people, places and things and the links between them (issue 53), read through
`MemlaneStore` as two collections beside the profile and the events:

    ("memlane_entities", user_id)    key = entity id; value = name, aliases, type
    ("memlane_relations", user_id)   key = relation id; value = subject, subject_name, predicate,
                                     object, object_name, valid_from, valid_until (None while it
                                     holds), holds, source_message_ids, confidence

Listed oldest first (relations) or by name (entities), every link, ended ones too (filter
{"holds": True} for the current ones). A search with a query answers what the query leads to as
recall follows links (memlane/recall_relations.py): the links from the entities and roles it names
("my sister", "王总"), one or two hops out, nearest first, and the entities on them (the one on most
of those links first); their score is None, since a walk is not a similarity. The memory runs
write them, so a put is refused; a delete forgets the entity (with every link touching it) or the link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from memlane.langgraph_rules import Namespace, matches
from memlane.recall_relations import linked
from memlane.store.errors import StoreError
from memlane.store.ids import now
from memlane.store.relations import Entity, Relation, RelationStore

ENTITIES_COLLECTION = "memlane_entities"
RELATIONS_COLLECTION = "memlane_relations"
RELATION_COLLECTIONS = (ENTITIES_COLLECTION, RELATIONS_COLLECTION)


def entity_value(entity: Entity) -> dict[str, Any]:
    return {"name": entity.name, "aliases": entity.aliases, "type": entity.type}


def relation_value(relation: Relation, names: dict[str, str], when: float) -> dict[str, Any]:
    return {
        "subject": relation.subject,
        "subject_name": names.get(relation.subject, relation.subject),
        "predicate": relation.predicate,
        "object": relation.object,
        "object_name": names.get(relation.object, relation.object),
        "valid_from": relation.valid_from,
        "valid_until": relation.valid_until,
        "holds": relation.holds_at(when),
        "source_message_ids": relation.source_message_ids,
        "confidence": relation.confidence,
    }


@dataclass(frozen=True)
class RelationCollections:
    """Get, search, list and delete over a user's entities and relations collections."""

    store: object  # the memlane store; a store without the RelationStore role shows empty collections

    def _relations(self) -> RelationStore | None:
        return self.store if isinstance(self.store, RelationStore) else None

    async def _records(self, namespace: Namespace) -> tuple[list[Entity], list[Relation]]:
        graph = self._relations()
        if graph is None:
            return [], []
        user_id = namespace[1]
        entities = await graph.list_entities(user_id)
        relations = await graph.list_relations(user_id, include_past=True) if entities else []
        return entities, relations

    def _items(
        self, namespace: Namespace, entities: list[Entity], relations: list[Relation]
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        """Each record of the collection as (its search item without a score, its value)."""
        if namespace[0] == ENTITIES_COLLECTION:
            return [
                (_item(namespace, entity.id, entity_value(entity), entity.created_at, entity.created_at), value)
                for entity in entities
                for value in [entity_value(entity)]
            ]
        names = {entity.id: entity.name for entity in entities}
        when = now()
        return [
            (
                _item(namespace, relation.id, value, relation.valid_from, relation.valid_until or relation.valid_from),
                value,
            )
            for relation in relations
            for value in [relation_value(relation, names, when)]
        ]

    async def get(self, namespace: Namespace, key: str) -> SearchItem | None:
        entities, relations = await self._records(namespace)
        return next((item for item, _ in self._items(namespace, entities, relations) if item.key == key), None)

    async def search(self, prefix: Namespace, op: SearchOp) -> list[SearchItem]:
        """The records under the filter (relations oldest first, entities by name); with a query,
        what the walk from what it names reaches, nearest first."""
        if len(prefix) > 2:
            return []
        entities, relations = await self._records(prefix)
        if op.query:
            reached = linked(op.query, entities, relations, limit=len(relations) or 1)
            if prefix[0] == RELATIONS_COLLECTION:
                relations = reached
            else:
                ends = [end for relation in reached for end in (relation.subject, relation.object)]
                # the walk's hub first (the entity on most of its links: what the query named), then as reached
                order = sorted(dict.fromkeys(ends), key=lambda entity_id: -ends.count(entity_id))
                by_id = {entity.id: entity for entity in entities}
                entities = [by_id[entity_id] for entity_id in order if entity_id in by_id]
        kept = [item for item, value in self._items(prefix, entities, relations) if matches(value, op.filter)]
        return kept[op.offset : op.offset + op.limit]

    async def namespaces(self, conditions: Sequence[Any]) -> set[Namespace]:
        """The user's relation collections that hold records, where a prefix condition names the user."""
        graph = self._relations()
        found: set[Namespace] = set()
        if graph is None:
            return found
        for condition in conditions:
            path = tuple(condition.path)
            if condition.match_type != "prefix" or len(path) < 2 or path[1] == "*":
                continue
            wanted = [name for name in RELATION_COLLECTIONS if path[0] in ("*", name)]
            if not wanted or not await graph.list_entities(path[1]):
                continue
            if ENTITIES_COLLECTION in wanted:
                found.add((ENTITIES_COLLECTION, path[1]))
            if RELATIONS_COLLECTION in wanted and await graph.list_relations(path[1], include_past=True):
                found.add((RELATIONS_COLLECTION, path[1]))
        return found

    async def delete(self, namespace: Namespace, key: str) -> None:
        """Forget the entity (and every link touching it) or the link; an unknown key changes nothing."""
        graph = self._relations()
        if graph is None:
            raise StoreError("this store keeps no relations (a RedisMemoryStore does)")
        if namespace[0] == ENTITIES_COLLECTION:
            await graph.forget_entity(namespace[1], key)
        else:
            await graph.forget_relation(namespace[1], key)


def _item(namespace: Namespace, key: str, value: dict[str, Any], created: float, updated: float) -> SearchItem:
    return SearchItem(namespace, key, value, datetime.fromtimestamp(created, UTC), datetime.fromtimestamp(updated, UTC))
