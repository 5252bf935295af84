"""Relations in Redis: a user's entities and the links between them (store/relations.py).

Four hashes under the user's prefix (so in the user's hash slot on a cluster, isolated per user,
agent scope and tenant as every record is, deleted with the user and listed by `export_user`):
`entities` (entity id → `Entity` JSON), `entity_names` (normalized name or alias → entity id: the
lookup by name, in any language), `relations` (relation id → `Relation` JSON) and `entity_links`,
the per-entity link index (`relation_index.py`), kept by every write in its transaction. A write
reads the user's hashes whole; recall reads only the names a message may hold and the links of
the entities they name, in one script call (`neighbourhood`).

A recorded link that is exclusive (lives_in) ends the user's current link with the same subject
and predicate to another object: its `valid_until` is set to the newer link's `valid_from`. A
statement older than the current link is stored already ended (at the current one's start).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from redis.commands.core import AsyncScript
from redis.exceptions import WatchError

from memlane.store.errors import InvalidInput, StoreError
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.relation_index import (
    NEIGHBOURHOOD_LUA,
    IndexUnbuilt,
    entity_links_key,
    index_changes,
    index_fields,
    read_neighbourhood,
)
from memlane.store.relations import (
    USER_ENTITY_ALIASES,
    USER_ENTITY_NAME,
    Entity,
    EntityType,
    Neighbourhood,
    Relation,
    RelationStatement,
    checked_name,
    closed_by,
    entity_id,
    links_at,
    normalized_name,
    relation_id,
)
from memlane.store.schema import KeyLayout

_WRITE_ATTEMPTS = 8
T = TypeVar("T")


def entities_key(layout: KeyLayout, user_id: str) -> str:
    return layout.entities(user_id)  # every key in KeyLayout (store/schema.py)


def entity_names_key(layout: KeyLayout, user_id: str) -> str:
    return layout.entity_names(user_id)  # every key in KeyLayout (store/schema.py)


def relations_key(layout: KeyLayout, user_id: str) -> str:
    return layout.relations(user_id)  # every key in KeyLayout (store/schema.py)


def _merged(entity: Entity, names: Sequence[str], type: EntityType) -> Entity:
    """`entity` with the names it lacked added as aliases, and a type where it had none."""
    known = {normalized_name(name) for name in entity.names()}
    added = []
    for name in names:
        if normalized_name(name) not in known:
            known.add(normalized_name(name))
            added.append(name)
    kind = entity.type if entity.type != "other" else type
    if not added and kind == entity.type:
        return entity
    return entity.model_copy(update={"aliases": [*entity.aliases, *added], "type": kind})


@dataclass(eq=False, repr=False)
class Relations(StorePart):
    """Entities, their names, and relations of one user."""

    _neighbours: AsyncScript = field(init=False)

    def __post_init__(self) -> None:
        self._neighbours = self.client.register_script(NEIGHBOURHOOD_LUA)

    def _keys(self, user_id: str) -> tuple[str, str, str, str]:
        return (
            entities_key(self.layout, user_id),
            entity_names_key(self.layout, user_id),
            relations_key(self.layout, user_id),
            entity_links_key(self.layout, user_id),
        )

    async def list_entities(self, user_id: str) -> list[Entity]:
        """The user's entities, by name."""
        raw = await self._run(self.client.hvals(entities_key(self.layout, user_id)))
        return sorted((Entity.model_validate_json(value) for value in raw), key=lambda entity: (entity.name, entity.id))

    async def find_entity(self, user_id: str, name: str) -> Entity | None:
        """The entity one of whose names or aliases is `name` (case and width aside), or None."""
        entities, names, _, _ = self._keys(user_id)
        found = await self._run(self.client.hget(names, normalized_name(checked_name(name))))
        if found is None:
            return None
        raw = await self._run(self.client.hget(entities, as_text(found)))
        return None if raw is None else Entity.model_validate_json(raw)

    async def list_relations(
        self, user_id: str, *, as_of: float | None = None, include_past: bool = False, entity: str | None = None
    ) -> list[Relation]:
        """The relations that held at `as_of` (None: now; include_past: all), oldest first;
        entity: only those whose subject or object is that entity (by id)."""
        raw = await self._run(self.client.hvals(relations_key(self.layout, user_id)))
        relations = [Relation.model_validate_json(value) for value in raw]
        if entity is not None:
            relations = [relation for relation in relations if entity in (relation.subject, relation.object)]
        return links_at(relations, as_of=as_of, include_past=include_past)

    async def neighbourhood(
        self,
        user_id: str,
        *,
        names: Collection[str] = (),
        roles: Collection[str] = (),
        entities: Collection[str] = (),
        ahead: int = 2,
        as_of: float | None = None,
        include_past: bool = False,
    ) -> Neighbourhood:
        """The entities `names` name (normalized here; "user" gives the user) with every link that
        touches them, the user's links with `roles`, every link touching `entities`, and `ahead`
        levels further out, outgoing links only; each entity's links held at `as_of` (None: now;
        include_past: all). One round trip reading only these links, through the link index
        (`relation_index.py`; built first for a store written before it)."""
        wanted = list(dict.fromkeys(filter(None, map(normalized_name, names))))
        entities_hash, names_hash, relations, links = self._keys(user_id)
        keys = (names_hash, links, relations, entities_hash)
        for attempt in range(2):
            try:
                read: Neighbourhood = await self._run(
                    read_neighbourhood(
                        self._neighbours, keys, names=wanted, roles=roles, entities=entities, ahead=ahead
                    )
                )
                break
            except IndexUnbuilt:
                if attempt:
                    raise StoreError(f"the link index of {user_id!r} could not be built; try again") from None
                await self._write(user_id, lambda known: None)  # a write keeps the index: this one builds it
        read.links = {
            entity: links_at(found, as_of=as_of, include_past=include_past) for entity, found in read.links.items()
        }
        return read

    async def remember_entity(
        self,
        user_id: str,
        name: str,
        *,
        aliases: list[str] | None = None,
        type: EntityType = "other",
        merge: bool = False,
    ) -> Entity:
        """The entity named `name` or one of `aliases` (created when none is known), with every
        name given added to its aliases. Two known entities named by the names are not merged
        (the first found is used, and a name already another's stays the other's) unless `merge`:
        the chat said they are one ("Bea (贝亚)"), so the first found keeps its id and takes the
        others' names and links (a link both had is one; one between them goes), in one write."""
        names = [checked_name(name), *(checked_name(alias, "an alias") for alias in aliases or [])]

        def plan(known: _Known) -> Entity:
            if merge:
                found = list(dict.fromkeys(known.by_name[n] for n in map(normalized_name, names) if n in known.by_name))
                for other in found[1:]:
                    if found[0] != entity_id(USER_ENTITY_NAME) and other != entity_id(USER_ENTITY_NAME):
                        known.merge_into(found[0], other)
            return self._resolve(known, [(names, type)])[0]

        return await self._write(user_id, plan)

    async def forget_entity(self, user_id: str, entity: str) -> int:
        """Forget the entity whose id, name or alias is `entity`, its names and every relation that
        touches it, in one transaction; returns how many records went (the entity and its
        relations), 0 when no entity is so named. A name it shared with another entity's aliases
        then names the other."""
        wanted = checked_name(entity, "an entity id or name")

        def plan(known: _Known) -> int:
            found = wanted if wanted in known.entities else known.by_name.get(normalized_name(wanted))
            return 0 if found is None else known.drop_entity(found)

        return await self._write(user_id, plan)

    async def forget_relation(self, user_id: str, relation_id: str) -> bool:
        """Forget one relation by id (its entities stay); False when the user holds none so named.
        A link it ended stays ended: forgetting is not saying the older one holds again."""
        wanted = checked_name(relation_id, "a relation id")
        return await self._write(user_id, lambda known: known.drop_relation(wanted))

    async def record_relations(self, user_id: str, statements: Sequence[RelationStatement]) -> list[Relation]:
        """Store the links the statements give (their entities resolved by name, created when new),
        ending the current links they replace; returns the relations written, ended ones included.
        The same statement twice is stored once."""
        checked = [RelationStatement.model_validate(statement) for statement in statements]
        if not checked:
            return []

        def plan(known: _Known) -> list[Relation]:
            written: list[Relation] = []
            for statement in checked:
                subject, target = self._resolve(
                    known,
                    [([statement.subject], statement.subject_type), ([statement.object], statement.object_type)],
                )
                if subject.id == target.id:
                    raise InvalidInput(f"a relation links {statement.subject!r} to itself; give two entities")
                written += known.link(statement, subject.id, target.id)
            return written

        return await self._write(user_id, plan)

    def _resolve(self, known: _Known, wanted: list[tuple[list[str], EntityType]]) -> list[Entity]:
        resolved = []
        for names, type in wanted:
            looked_up = names
            if normalized_name(names[0]) in {USER_ENTITY_NAME, *USER_ENTITY_ALIASES}:
                names, type = [USER_ENTITY_NAME, *USER_ENTITY_ALIASES, *names[1:]], "person"
                looked_up = names[: 1 + len(USER_ENTITY_ALIASES)]  # the user is found by the user's names only
            found = next((known.by_name[n] for n in map(normalized_name, looked_up) if n in known.by_name), None)
            entity = (
                known.entities[found] if found is not None else Entity(id=entity_id(names[0]), name=names[0], type=type)
            )
            entity = _merged(entity, names, type)
            known.put_entity(entity)
            resolved.append(entity)
        return resolved

    async def _write(self, user_id: str, plan: Callable[[_Known], T]) -> T:
        """Read the user's entities, names and relations, run `plan` over them, write what it
        changed and the link index it implies in one transaction (again when another writer changed
        them meanwhile)."""
        keys = self._keys(user_id)
        for _ in range(_WRITE_ATTEMPTS):
            async with self.client.pipeline(transaction=True) as pipe:
                try:
                    await self._run(pipe.watch(*keys))
                    known = _Known(
                        entities={
                            as_text(key): Entity.model_validate_json(value)
                            for key, value in (await self._run(pipe.hgetall(keys[0]))).items()
                        },
                        by_name={
                            as_text(key): as_text(value)
                            for key, value in (await self._run(pipe.hgetall(keys[1]))).items()
                        },
                        relations={
                            as_text(key): Relation.model_validate_json(value)
                            for key, value in (await self._run(pipe.hgetall(keys[2]))).items()
                        },
                    )
                    stored_index = {
                        as_text(key): as_text(value) for key, value in (await self._run(pipe.hgetall(keys[3]))).items()
                    }
                    result = plan(known)
                    index_set, index_dropped = index_changes(stored_index, index_fields(known.relations.values()))
                    pipe.multi()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                    if known.changed_entities:
                        pipe.hset(keys[0], mapping={e.id: e.model_dump_json() for e in known.changed_entities.values()})
                    if known.changed_names:
                        pipe.hset(keys[1], mapping=cast("Any", known.changed_names))  # redis-py's key type is invariant
                    if known.changed_relations:
                        pipe.hset(
                            keys[2], mapping={r.id: r.model_dump_json() for r in known.changed_relations.values()}
                        )
                    for key, fields in zip(keys, (*known.removed(), index_dropped), strict=True):
                        if fields:
                            pipe.hdel(key, *fields)
                    if index_set:  # the link index follows the relations in the same transaction
                        pipe.hset(keys[3], mapping=cast("Any", index_set))
                    await self._run(pipe.execute())
                    if known.changed_entities or known.changed_relations:
                        await self.core.note_scopes([user_id])
                    return result
                except WatchError:
                    continue
        raise StoreError(f"the relations of {user_id!r} changed {_WRITE_ATTEMPTS} times during one write; try again")


@dataclass
class _Known:
    """A user's entities, names and relations as read, with what a write changes."""

    entities: dict[str, Entity]
    by_name: dict[str, str]
    relations: dict[str, Relation]

    def __post_init__(self) -> None:
        self.changed_entities: dict[str, Entity] = {}
        self.changed_names: dict[str, str] = {}
        self.changed_relations: dict[str, Relation] = {}
        self.removed_entities: set[str] = set()
        self.removed_names: set[str] = set()
        self.removed_relations: set[str] = set()

    def put_entity(self, entity: Entity) -> None:
        self.removed_entities.discard(entity.id)
        if self.entities.get(entity.id) != entity:
            self.entities[entity.id] = self.changed_entities[entity.id] = entity
        for name in map(normalized_name, entity.names()):
            if name not in self.by_name:  # a name already another entity's stays the other's
                self.by_name[name] = self.changed_names[name] = entity.id
                self.removed_names.discard(name)

    def put_relation(self, relation: Relation) -> None:
        self.relations[relation.id] = self.changed_relations[relation.id] = relation
        self.removed_relations.discard(relation.id)

    def removed(self) -> tuple[set[str], set[str], set[str]]:
        """The fields a write deletes: of entities, names and relations."""
        return self.removed_entities, self.removed_names, self.removed_relations

    def drop_relation(self, relation_id: str) -> bool:
        """Drop one relation; False when there is none so named."""
        if self.relations.pop(relation_id, None) is None:
            return False
        self.changed_relations.pop(relation_id, None)
        self.removed_relations.add(relation_id)
        return True

    def merge_into(self, keep: str, other: str) -> None:
        """Make `other` one with `keep`: its names `keep`'s aliases, its links `keep`'s (a link
        `keep` holds already gains the other's sources; one between the two goes)."""
        merged = _merged(self.entities[keep], self.entities[other].names(), self.entities[other].type)
        self.put_entity(merged)
        moved = [r for r in self.relations.values() if other in (r.subject, r.object)]
        self.drop_entity(other)  # its names now name `keep`, which lists them
        for relation in moved:
            subject = keep if relation.subject == other else relation.subject
            target = keep if relation.object == other else relation.object
            if subject == target:
                continue
            same = next(
                (
                    r
                    for r in self.relations.values()
                    if (r.subject, r.predicate, r.object) == (subject, relation.predicate, target)
                    and (r.valid_until is None) == (relation.valid_until is None)
                ),
                None,
            )
            if same is not None:  # the sources of the one said first first
                earlier, later = sorted((same, relation), key=lambda r: r.valid_from)
                sources = [*earlier.source_message_ids]
                sources += [source for source in later.source_message_ids if source not in sources]
                first = earlier.valid_from
                self.put_relation(same.model_copy(update={"source_message_ids": sources, "valid_from": first}))
                continue
            moved_id = relation_id(subject, relation.predicate, target, relation.valid_from)
            self.put_relation(relation.model_copy(update={"id": moved_id, "subject": subject, "object": target}))
        # two homes of one entity now: the newer ended the older when it began, as a move does
        current = sorted(
            (r for r in self.relations.values() if r.subject == keep and r.exclusive and r.valid_until is None),
            key=lambda r: r.valid_from,
        )
        for older, newer in zip(current, current[1:], strict=False):
            if older.predicate == newer.predicate and older.object != newer.object:
                self.put_relation(older.model_copy(update={"valid_until": newer.valid_from}))

    def drop_entity(self, entity_id: str) -> int:
        """Drop an entity, its names and the relations that touch it; how many records went."""
        del self.entities[entity_id]
        self.changed_entities.pop(entity_id, None)
        self.removed_entities.add(entity_id)
        touching = [r.id for r in self.relations.values() if entity_id in (r.subject, r.object)]
        for relation in touching:
            self.drop_relation(relation)
        for name in [name for name, owner in self.by_name.items() if owner == entity_id]:
            del self.by_name[name]
            self.changed_names.pop(name, None)
            heir = next((e.id for e in self.entities.values() if name in map(normalized_name, e.names())), None)
            if heir is None:
                self.removed_names.add(name)
            else:  # another entity's alias too: it names that one now
                self.by_name[name] = self.changed_names[name] = heir
        return 1 + len(touching)

    def link(self, statement: RelationStatement, subject: str, target: str) -> list[Relation]:
        """The relations the statement writes: itself (or the current one it repeats, with its
        sources added) and the ones it ends."""
        same = [
            relation
            for relation in self.relations.values()
            if (relation.subject, relation.predicate, relation.object) == (subject, statement.predicate, target)
            and relation.valid_until is None
        ]
        if same:  # said again: the link holds since it was first said
            current = same[0]
            sources = [*current.source_message_ids]
            sources += [source for source in statement.source_message_ids if source not in sources]
            if sources != current.source_message_ids:
                current = current.model_copy(update={"source_message_ids": sources})
                self.put_relation(current)
            return [current]
        relation = Relation(
            id=relation_id(subject, statement.predicate, target, statement.valid_from),
            subject=subject,
            predicate=statement.predicate,
            object=target,
            valid_from=statement.valid_from,
            source_message_ids=list(statement.source_message_ids),
            confidence=statement.confidence,
            exclusive=statement.exclusive,
        )
        if relation.id in self.relations:  # delivered again after it was ended: as stored
            return [self.relations[relation.id]]
        later = [
            other
            for other in self.relations.values()
            if relation.exclusive
            and (other.subject, other.predicate) == (subject, statement.predicate)
            and other.valid_until is None
            and other.valid_from > relation.valid_from
        ]
        if later:  # an older statement than the current link: it held until the current one began
            relation = relation.model_copy(update={"valid_until": min(other.valid_from for other in later)})
        ended = closed_by(list(self.relations.values()), relation) if relation.valid_until is None else []
        for item in (relation, *ended):
            self.put_relation(item)
        return [relation, *ended]
