"""Recall that follows links (issue 53): when a message names an entity of the user's ("Bea",
"王总") or one of the user's roles ("my sister", "我上司"), the links from it one or two hops out
become memory items, marked as relations, inside recall's budget.

The walk starts at each entity the message names, and at the user for each role it names. A link
whose role the message names extends the path for free ("我上司的女儿住在哪": user → boss → 王总 →
daughter → 小雨 → lives_in → 杭州); any other costs a hop, two at most. Only the links that hold
now, unless the message asks about the past, when the ended ones come too (after the current).

The cost does not grow with what the user holds: the entities a message names are looked up by the
message's word n-grams and Chinese substrings in the name map, the user's roles by the user's
outgoing predicates, and the walk reads only the links of the entities it reaches, through the
store's link index (`RelationStore.links_of`). `linked` is the same walk over lists in memory.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from functools import cache

from memlane.nodes.relation_rules import ROLE_PREDICATES
from memlane.recall_block import RecallItem
from memlane.relation_labels import predicate_words
from memlane.store.fusion import Ranking, fuse
from memlane.store.relations import USER_ENTITY_NAME, Entity, Neighbourhood, Relation, RelationStore, normalized_name

_WORDS = re.compile(r"\w+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_RUN = re.compile(r"\S+")
_USER_LABEL = {"en": "the user", "zh": "用户"}
MAX_NAME_WORDS = 8  # a name of more words is not looked up in a message
MAX_CJK_NAME_CHARS = 12  # nor a Chinese name of more characters
MAX_CANDIDATES = 4_000  # a message giving more candidate names is matched against every name instead

# What the walk asks for: the entities whose links it needs next; what it is sent: their links.
Walk = Generator[list[str], Mapping[str, list[Relation]], list[Relation]]


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


def _cjk_runs(text: str) -> list[str]:
    """The runs of `text` between spaces that hold a Chinese character (Chinese has no spaces)."""
    return [run for run in _RUN.findall(text) if _CJK.search(run)]


def role_namer(message: str) -> Callable[[str], bool]:
    """Whether `message` names a predicate's role (by any of its words, in either language)."""
    said = normalized_name(message)
    said_words = _words(said)

    @cache
    def names(predicate: str) -> bool:
        return any(_mentions(said, said_words, word) for word in _role_words(predicate))

    return names


def candidate_names(message: str) -> list[str] | None:
    """The normalized names `message` could hold: its runs of up to `MAX_NAME_WORDS` words (as
    written and as words between spaces) and the substrings of its Chinese runs up to
    `MAX_CJK_NAME_CHARS` characters; None when there are more than `MAX_CANDIDATES`."""
    said = normalized_name(message)
    found: dict[str, None] = {}
    spans = [(match.start(), match.end()) for match in _WORDS.finditer(said)]
    for first in range(len(spans)):
        for last in range(first, min(first + MAX_NAME_WORDS, len(spans))):
            found[said[spans[first][0] : spans[last][1]]] = None
            found[" ".join(said[a:b] for a, b in spans[first : last + 1])] = None
        if len(found) > MAX_CANDIDATES:
            return None
    for text in _cjk_runs(said):
        for begin in range(len(text)):
            for end in range(begin + 1, min(begin + MAX_CJK_NAME_CHARS, len(text)) + 1):
                if _CJK.search(text[begin:end]):
                    found[text[begin:end]] = None
        if len(found) > MAX_CANDIDATES:
            return None
    return [name for name in found if normalized_name(name) == name]


def candidate_roles(message: str) -> list[str]:
    """The predicates whose role `message` may name: those of the role words it holds in either
    language, its runs of words joined by "_" ("lives in" → lives_in) and its Chinese substrings
    (for a very long message only the first: a role it names otherwise is read on its own)."""
    said = normalized_name(message)
    said_words = _words(said)
    by_words = {predicate for word, predicate in ROLE_PREDICATES.items() if _mentions(said, said_words, word)}
    roles = set(by_words)
    words = _WORDS.findall(said)
    for first in range(len(words)):
        roles.update("_".join(words[first : last + 1]) for last in range(first, min(first + 4, len(words))))
    for text in _cjk_runs(said):
        roles.update(
            text[begin:end]
            for begin in range(len(text))
            for end in range(begin + 1, min(begin + MAX_CJK_NAME_CHARS, len(text)) + 1)
            if _CJK.search(text[begin:end])
        )
        if len(roles) > MAX_CANDIDATES:
            break
    return sorted(roles if len(roles) <= MAX_CANDIDATES else by_words)


def walk(
    starts: Sequence[str],
    user: str | None,
    role_named: Callable[[str], bool],
    *,
    from_user: bool,
    hops: int,
    limit: int,
) -> Walk:
    """The walk from `starts` (and from `user` when `from_user`: its named roles lead somewhere; the
    user is never reached otherwise). It yields the entities whose links it needs (of `user`: its
    named roles' only) and returns the relations it reached, nearest first. Each entity's links
    come in the order current first, newest first."""
    named = set(starts)
    queue: deque[tuple[str, int]] = deque((start, 0) for start in starts)
    if user is not None and from_user:
        queue.appendleft((user, 0))
    touching: dict[str, list[Relation]] = {}
    spent: dict[str, int] = {}
    found: list[Relation] = []
    found_ids: set[str] = set()
    while queue and len(found) < limit:
        if queue[0][0] not in touching:  # one read for every entity waiting, not one each
            wanted = list(dict.fromkeys(entity for entity, _ in queue if entity not in touching))
            links = yield wanted
            touching.update({entity: list(links.get(entity, [])) for entity in wanted})
        entity, cost = queue.popleft()
        if entity in spent and spent[entity] <= cost:
            continue
        spent[entity] = cost
        for relation in touching[entity]:
            outgoing = relation.subject == entity
            if not outgoing and entity not in named:
                continue  # into a reached place or person: who else lives in Porto is not what was asked
            if entity == user and not (outgoing and role_named(relation.predicate)):
                continue  # from the user, only the roles the message names
            step = 0 if outgoing and role_named(relation.predicate) else 1
            if cost + step > hops or relation.id in found_ids:
                continue
            found.append(relation)
            found_ids.add(relation.id)
            other = relation.object if outgoing else relation.subject
            if other != user:
                (queue.appendleft if step == 0 else queue.append)((other, cost + step))
    return found[:limit]


def _walk_order(relation: Relation) -> tuple[bool, float, str]:
    """Current links first, then newest first (the walk reaches an ended link as its current one is)."""
    return (relation.valid_until is not None, -relation.valid_from, relation.id)


def linked(
    message: str, entities: list[Entity], relations: list[Relation], *, hops: int = 2, limit: int = 12
) -> list[Relation]:
    """The relations the walk from what `message` names reaches, nearest first (pure: the entities
    and relations in memory, in the order given)."""
    said = normalized_name(message)
    said_words = _words(said)
    known = {entity.id for entity in entities}
    user = next((entity.id for entity in entities if entity.name == USER_ENTITY_NAME), None)
    role_named = role_namer(message)
    starts = [
        entity.id
        for entity in entities
        if entity.id != user and any(_mentions(said, said_words, name) for name in entity.names())
    ]
    touching: dict[str, list[Relation]] = {}
    for relation in relations:
        if relation.subject in known and relation.object in known:
            touching.setdefault(relation.subject, []).append(relation)
            touching.setdefault(relation.object, []).append(relation)
    if user is not None:
        touching[user] = [r for r in touching.get(user, []) if r.subject == user and role_named(r.predicate)]
    from_user = user is not None and bool(touching.get(user))
    steps = walk(starts, user, role_named, from_user=from_user, hops=hops, limit=limit)
    try:
        wanted = next(steps)
        while True:
            wanted = steps.send({entity: touching.get(entity, []) for entity in wanted})
    except StopIteration as done:
        return list(done.value)


async def _candidates(store: RelationStore, user_id: str, message: str) -> list[str]:
    """The normalized names `message` may hold (`candidate_names`; for a very long message, those
    of the user's names it holds, matched in memory)."""
    candidates = candidate_names(message)
    if candidates is not None:
        return candidates
    said = normalized_name(message)
    said_words = _words(said)
    every = [name for entity in await store.list_entities(user_id) for name in entity.names()]
    return [normalized_name(name) for name in every if _mentions(said, said_words, name)]


async def linked_in_store(
    store: RelationStore,
    user_id: str,
    message: str,
    *,
    as_of: float | None = None,
    include_past: bool = False,
    hops: int = 2,
    limit: int = 12,
) -> tuple[list[Relation], dict[str, str]]:
    """The walk of `linked` over the user's stored relations, reading only the names the message may
    hold and the links of what it reaches (one round trip for most messages); with the canonical
    names of the entities of the relations found."""
    candidates = await _candidates(store, user_id, message)
    said_roles = candidate_roles(message)
    role_named = role_namer(message)
    links: dict[str, list[Relation]] = {}
    names: dict[str, str] = {}

    async def read(
        names_said: Collection[str] = (), roles: Collection[str] = (), entities: Collection[str] = ()
    ) -> Neighbourhood:
        around = await store.neighbourhood(
            user_id, names=names_said, roles=roles, entities=entities, as_of=as_of, include_past=include_past
        )
        names.update(around.names)
        for entity, found in around.links.items():
            if entity not in links or entity not in around.outgoing_only:  # merged: the user's roles come in parts
                merged = {relation.id: relation for relation in [*links.get(entity, []), *found]}
                links[entity] = sorted(merged.values(), key=_walk_order)
        return around

    around = await read([USER_ENTITY_NAME, *candidates], said_roles)
    user = around.user
    user_roles = [predicate for predicate in around.user_roles if role_named(predicate)]
    if user is not None and set(user_roles) - set(said_roles):  # a role named in a way not foreseen
        await read([USER_ENTITY_NAME], sorted(set(user_roles) - set(said_roles)))
    start_ids = {entity for entity in around.named.values() if entity != user}
    if not start_ids and not user_roles:
        return [], {}
    starts = sorted(start_ids, key=lambda entity: (names.get(entity, ""), entity))  # as the entities are listed
    steps = walk(starts, user, role_named, from_user=bool(user_roles), hops=hops, limit=limit)
    try:
        needed = next(steps)
        while True:
            missing = [entity for entity in needed if entity not in links]
            if missing:  # past what was read ahead: one more read
                await read(entities=missing)
            needed = steps.send({entity: links.get(entity, []) for entity in needed})
    except StopIteration as done:
        return list(done.value), names


def relation_text(relation: Relation, names: dict[str, str], language: str) -> str:
    """A link as a memory line: "Bea → lives in → Porto", "the user → sister → Bea"; "用户 → 上司 → 王总"."""
    label = _USER_LABEL.get(language, _USER_LABEL["en"])

    def name(entity: str) -> str:
        shown = names.get(entity, entity)
        return label if shown == USER_ENTITY_NAME else shown

    return f"{name(relation.subject)} → {predicate_words(relation.predicate, language)} → {name(relation.object)}"


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
    found, names = await linked_in_store(
        store, user_id, message, as_of=as_of, include_past=past, hops=hops, limit=limit
    )
    return relation_items_of(found, names, language)


def relation_items_of(found: Sequence[Relation], names: dict[str, str], language: str) -> list[RecallItem]:
    """The links found (`linked_in_store`) as memory items, in `language`."""
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
        for relation in found
    ]


def with_relation_items(
    memory_items: list[RecallItem], linked: list[RecallItem], weight: float, k: int
) -> list[RecallItem]:
    """Recall's memory items and the relation items in one order, by the rank fusion every signal
    votes in (store/fusion.py `fuse`): search's order as one ranking of weight 1, the walk's
    (nearest first) as the relations signal's, of `weight` (`search_relations_weight`); 0: no
    relation item. Equal votes keep a link first."""
    if weight <= 0 or not linked:
        return memory_items
    items = {f"relation {index}": item for index, item in enumerate(linked)}
    items |= {f"memory {index}": item for index, item in enumerate(memory_items)}
    rankings = [
        Ranking("relations", weight, [{"id": key} for key in items if key.startswith("relation")]),
        Ranking("search", 1.0, [{"id": key} for key in items if key.startswith("memory")]),
    ]
    return [items[key] for key in fuse(rankings, k).ranked]
