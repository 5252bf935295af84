"""The `relations` key of the mem0-shaped facade's answers (`memlane.memory`, issue 53), as mem0's
graph memory writes it:

    add       {"results": [...], "relations": {"added_entities": [[{source, relationship, target}]],
                                               "deleted_entities": [[{source, relationship, target}]]}}
    search    {"results": [...], "relations": [{source, relationship, destination}]}
    get_all   {"results": [...], "relations": [{source, relationship, target}]}

`source` and `target` / `destination` are entity names; the user themself is named by the call's
`user_id`, as mem0 names self-references. memlane's own keys stand beside mem0's: the relation `id`,
the entity types (`source_type`, `target_type` / `destination_type`), `valid_from`, `valid_until`
(ISO 8601, UTC; null while the link holds) and `source_message_ids`. mem0 deletes a link a newer
fact contradicts; memlane ends it (its `valid_until`), and `add` reports it under `deleted_entities`.

The key is there when relations are on: the store keeps them (the `RelationStore` role) and the
memory runs link them (`MEMLANE_MEMORY_EXTRACT_RELATIONS`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from memlane.config_agent import GraphSettings
from memlane.memory_shapes import iso
from memlane.recall_relations import linked_in_store
from memlane.store.relations import USER_ENTITY_NAME, Entity, Relation, RelationStore

SEARCH_LIMIT = 20  # links a search answers at most (mem0 answers a handful, ranked)


def relation_store(store: object, settings: GraphSettings) -> RelationStore | None:
    """The store as the relations' role when the facade's answers carry `relations` (the store keeps
    them and the memory runs extract them), else None."""
    if isinstance(store, RelationStore) and settings.extract_relations:
        return store
    return None


def relation_shape(
    relation: Relation, entities: dict[str, Entity], user_label: str, *, target: str = "target"
) -> dict[str, Any]:
    """One link as mem0 writes it (`target`: "destination" for search), with memlane's keys beside."""

    def name(entity_id: str) -> str:
        entity = entities.get(entity_id)
        if entity is None:
            return entity_id
        return user_label if entity.name == USER_ENTITY_NAME else entity.name

    def kind(entity_id: str) -> str:
        entity = entities.get(entity_id)
        return entity.type if entity is not None else "other"

    return {
        "source": name(relation.subject),
        "relationship": relation.predicate,
        target: name(relation.object),
        "id": relation.id,
        "source_type": kind(relation.subject),
        f"{target}_type": kind(relation.object),
        "valid_from": iso(relation.valid_from),
        "valid_until": iso(relation.valid_until),
        "source_message_ids": relation.source_message_ids,
    }


async def _entities(store: RelationStore, store_user: str) -> dict[str, Entity]:
    return {entity.id: entity for entity in await store.list_entities(store_user)}


async def search_relations(store: RelationStore, store_user: str, query: str, user_label: str) -> list[dict[str, Any]]:
    """The links that hold now from what `query` names (an entity's name or alias, or one of the
    user's roles: "my sister"), one or two hops out, nearest first, as recall follows them: only the
    names the query may hold and the links the walk reaches are read (`linked_in_store`)."""
    found, names = await linked_in_store(store, store_user, query, limit=SEARCH_LIMIT)
    if not found:
        return []
    ends = sorted({end for relation in found for end in (relation.subject, relation.object)})
    looked_up = await asyncio.gather(*(store.find_entity(store_user, names[end]) for end in ends if end in names))
    entities = {entity.id: entity for entity in looked_up if entity is not None}
    for end in ends:  # a canonical name another entity lists as an alias finds that one: named, untyped
        entities.setdefault(end, Entity(id=end, name=names.get(end, end)))
    return [relation_shape(relation, entities, user_label, target="destination") for relation in found]


async def all_relations(store: RelationStore, store_user: str, user_label: str) -> list[dict[str, Any]]:
    """Every link of the user's that holds now, oldest first."""
    entities = await _entities(store, store_user)
    return [relation_shape(relation, entities, user_label) for relation in await store.list_relations(store_user)]


async def relations_snapshot(store: RelationStore, store_user: str) -> dict[str, Relation]:
    """Every link of the user's, ended ones too, by id: what `add` compares after its run."""
    return {relation.id: relation for relation in await store.list_relations(store_user, include_past=True)}


async def changed_relations(
    store: RelationStore, store_user: str, before: dict[str, Relation], user_label: str
) -> dict[str, list[list[dict[str, Any]]]]:
    """What changed since `before`: the links added, and those ended ("deleted_entities"), each in a
    list of its own as mem0 answers them."""
    after = await relations_snapshot(store, store_user)
    entities = await _entities(store, store_user)
    added = [relation for key, relation in after.items() if key not in before]
    ended = [
        relation
        for key, relation in after.items()
        if key in before and before[key].valid_until is None and relation.valid_until is not None
    ]

    def shaped(relations: list[Relation]) -> list[list[dict[str, Any]]]:
        ordered = sorted(relations, key=lambda relation: (relation.valid_from, relation.id))
        return [[relation_shape(relation, entities, user_label)] for relation in ordered]

    return {"added_entities": shaped(added), "deleted_entities": shaped(ended)}


# the facade's calls: each answers its part of the answer, {} when relations are off


async def searched(store: object, settings: GraphSettings, store_user: str, query: str, user_id: str) -> dict[str, Any]:
    """`search`'s {"relations": [...]} (or {})."""
    graph = relation_store(store, settings)
    return {} if graph is None else {"relations": await search_relations(graph, store_user, query, user_id)}


async def listed(store: object, settings: GraphSettings, store_user: str, user_id: str) -> dict[str, Any]:
    """`get_all`'s {"relations": [...]} (or {})."""
    graph = relation_store(store, settings)
    return {} if graph is None else {"relations": await all_relations(graph, store_user, user_id)}


async def before_run(store: object, settings: GraphSettings, store_user: str) -> dict[str, Relation] | None:
    """The user's links before `add`'s run (None when relations are off)."""
    graph = relation_store(store, settings)
    return None if graph is None else await relations_snapshot(graph, store_user)


async def after_run(
    store: object, settings: GraphSettings, store_user: str, before: dict[str, Relation] | None, user_id: str
) -> dict[str, Any]:
    """`add`'s {"relations": {"added_entities", "deleted_entities"}} since `before_run` (or {})."""
    graph = relation_store(store, settings)
    if graph is None or before is None:
        return {}
    return {"relations": await changed_relations(graph, store_user, before, user_id)}


def unchanged(store: object, settings: GraphSettings) -> dict[str, Any]:
    """`add(infer=False)`'s: no run, so no link added or ended (or {})."""
    graph = relation_store(store, settings)
    return {} if graph is None else {"relations": {"added_entities": [], "deleted_entities": []}}


__all__ = [
    "after_run",
    "all_relations",
    "before_run",
    "changed_relations",
    "listed",
    "relation_shape",
    "relation_store",
    "relations_snapshot",
    "search_relations",
    "searched",
    "unchanged",
]
