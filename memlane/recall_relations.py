"""Recall that follows links (issue 53): when a message names an entity of the user's ("Bea",
"王总") or one of the user's roles ("my sister", "我上司"), the links from it one or two hops out
become memory items, marked as relations, inside recall's budget.

The walk starts at each entity the message names, and at the user for each role it names. A link
whose role the message names extends the path for free ("我上司的女儿住在哪": user → boss → 王总 →
daughter → 小雨 → lives_in → 杭州); any other costs a hop, two at most. Only the links that hold
now, unless the message asks about the past, when the ended ones come too (after the current).
"""

from __future__ import annotations

import re
from collections import deque

from memlane.nodes.relation_rules import ROLE_PREDICATES
from memlane.recall_block import RecallItem
from memlane.store.relations import USER_ENTITY_NAME, Entity, Relation, RelationStore, normalized_name

_WORDS = re.compile(r"\w+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_USER_LABEL = {"en": "the user", "zh": "用户"}


def _words(text: str) -> str:
    """`text`'s words between spaces, for whole-word containment."""
    return f" {' '.join(_WORDS.findall(text))} "


def _mentions(message: str, message_words: str, name: str) -> bool:
    """Whether `message` (normalized; its `_words`) names `name`: as whole words, or as characters in Chinese."""
    wanted = normalized_name(name)
    if not wanted:
        return False
    if _CJK.search(wanted):
        return wanted in message
    return _words(wanted) in message_words


def _role_words(predicate: str) -> list[str]:
    """The words that name a predicate's role in either language (boss: boss, manager, 上司, 老板, 领导)."""
    return [predicate.replace("_", " "), *(word for word, named in ROLE_PREDICATES.items() if named == predicate)]


def linked(
    message: str, entities: list[Entity], relations: list[Relation], *, hops: int = 2, limit: int = 12
) -> list[Relation]:
    """The relations the walk from what `message` names reaches, nearest first (pure)."""
    said = normalized_name(message)
    said_words = _words(said)
    by_id = {entity.id: entity for entity in entities}
    user = next((entity.id for entity in entities if entity.name == USER_ENTITY_NAME), None)
    named_roles = {
        predicate
        for predicate in {relation.predicate for relation in relations}
        if any(_mentions(said, said_words, word) for word in _role_words(predicate))
    }
    starts = [
        entity.id
        for entity in entities
        if entity.id != user and any(_mentions(said, said_words, name) for name in entity.names())
    ]
    named = set(starts)
    queue: deque[tuple[str, int]] = deque((start, 0) for start in starts)
    if user is not None and named_roles:
        queue.appendleft((user, 0))
    touching: dict[str, list[Relation]] = {}  # entity id -> its links, in the given order
    for relation in relations:
        touching.setdefault(relation.subject, []).append(relation)
        if relation.object != relation.subject:
            touching.setdefault(relation.object, []).append(relation)
    spent: dict[str, int] = {}
    found: list[Relation] = []
    found_ids: set[str] = set()
    while queue and len(found) < limit:
        entity, cost = queue.popleft()
        if entity in spent and spent[entity] <= cost:
            continue
        spent[entity] = cost
        for relation in touching.get(entity, []):
            outgoing = relation.subject == entity
            if not outgoing and entity not in named:
                continue  # into a reached place or person: who else lives in Porto is not what was asked
            if entity == user and not (outgoing and relation.predicate in named_roles):
                continue  # from the user, only the roles the message names
            step = 0 if outgoing and relation.predicate in named_roles else 1
            if cost + step > hops or relation.id in found_ids:
                continue
            found.append(relation)
            found_ids.add(relation.id)
            other = relation.object if outgoing else relation.subject
            if other in by_id and other != user:
                (queue.appendleft if step == 0 else queue.append)((other, cost + step))
    return found[:limit]


def relation_text(relation: Relation, names: dict[str, str], language: str) -> str:
    """A link as a memory line: "Bea → lives in → Porto", "the user → sister → Bea"."""
    label = _USER_LABEL.get(language, _USER_LABEL["en"])

    def name(entity: str) -> str:
        shown = names.get(entity, entity)
        return label if shown == USER_ENTITY_NAME else shown

    return f"{name(relation.subject)} → {relation.predicate.replace('_', ' ')} → {name(relation.object)}"


async def relation_items(
    store: RelationStore,
    user_id: str,
    message: str,
    language: str,
    *,
    past: bool,
    as_of: float | None = None,
    hops: int = 2,
    limit: int = 12,
) -> list[RecallItem]:
    """The links `message` leads to, as memory items (layer "relation"), current first; past: the
    ended ones too, marked as earlier by their `valid_until`."""
    entities = await store.list_entities(user_id)
    if not entities:
        return []
    relations = await store.list_relations(user_id, as_of=as_of, include_past=past)
    # the current links lead the walk; an ended one is reached as its current one is
    relations.sort(key=lambda relation: (relation.valid_until is not None, -relation.valid_from))
    names = {entity.id: entity.name for entity in entities}
    return [
        RecallItem(
            layer="relation",
            text=relation_text(relation, names, language),
            memory_id=f"relation:{relation.id}",
            ref_id=relation.id,
            source_message_ids=relation.source_message_ids,
            created_at=relation.valid_from,
            valid_until=relation.valid_until,
            confidence=relation.confidence,
        )
        for relation in linked(message, entities, relations, hops=hops, limit=limit)
    ]
