"""Relations: the people, places and things in a user's life and the links between them, each
link with the time it became true and the time it stopped (issue 53).

Records and the pure rules over them live here (no Redis): an `Entity` (canonical name, aliases
in any language, a type), a `Relation` (subject, predicate, object by entity id, `valid_from`,
`valid_until`, source messages, confidence) and a `RelationStatement`, what an extractor says
(names, not ids). `store/redis/relations.py` keeps them per user; `RelationStore` is the role
callers ask for.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from memlane.store.errors import InvalidInput
from memlane.store.ids import now, stable_id

EntityType = Literal["person", "place", "organisation", "pet", "object", "event", "other"]

# the user is an entity too ("my sister" is a link from the user); its canonical name and aliases
USER_ENTITY_NAME = "user"
USER_ENTITY_ALIASES = ("me", "myself", "i", "我", "我自己")

MAX_NAME_CHARS = 200
MAX_PREDICATE_CHARS = 64
_PREDICATE = re.compile(r"[^\W\d_]\w*")  # a word, any language ("lives_in", "上司")


def normalized_name(name: str) -> str:
    """The form names are looked up by: NFKC, case folded, inner whitespace collapsed, outer
    punctuation and whitespace dropped ("  Bea. " → "bea", "ＢＥＡ" → "bea")."""
    folded = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return folded.strip(" .,;:!?'\"“”‘’。，；：！？、")


def checked_name(name: str, what: str = "an entity name") -> str:
    """`name` with outer whitespace dropped, or `InvalidInput` saying what is wrong with it."""
    if not isinstance(name, str):
        raise InvalidInput(f"{what} must be text, not {type(name).__name__}")
    stripped = " ".join(name.split())
    if not normalized_name(stripped):
        raise InvalidInput(f"{what} is empty (or only punctuation); give the name as the user says it")
    if len(stripped) > MAX_NAME_CHARS:
        raise InvalidInput(f"{what} of {len(stripped)} characters is longer than {MAX_NAME_CHARS}; shorten it")
    if not stripped.isprintable():
        raise InvalidInput(f"{what} holds a control character; remove it")
    return stripped


def checked_predicate(predicate: str) -> str:
    """`predicate` in snake_case ("Lives in" → "lives_in"; a word of any language as it is), or `InvalidInput`."""
    if not isinstance(predicate, str):
        raise InvalidInput(f"a predicate must be text, not {type(predicate).__name__}")
    snake = "_".join(predicate.strip().lower().replace("-", " ").split())
    if not _PREDICATE.fullmatch(snake) or len(snake) > MAX_PREDICATE_CHARS:
        raise InvalidInput(
            f"predicate {predicate[:60]!r} is not a snake_case name of at most {MAX_PREDICATE_CHARS} "
            "characters (as lives_in, sister, works_at)"
        )
    return snake


def entity_id(name: str) -> str:
    """An entity's id, from its canonical name's normalized form: the same name is one entity."""
    return stable_id("entity", normalized_name(name))


def relation_id(subject_id: str, predicate: str, object_id: str, valid_from: float) -> str:
    """A relation's id, from its link and the time it began: a statement delivered twice is stored once."""
    return stable_id("relation", subject_id, predicate, object_id, repr(float(valid_from)))


class Entity(BaseModel):
    """A person, place, organisation, pet, object or event of the user's life."""

    id: str
    name: str = Field(description="canonical name, as first said")
    aliases: list[str] = Field(default_factory=list, description="other names, in any language")
    type: EntityType = "other"
    created_at: float = Field(default_factory=now)

    def names(self) -> list[str]:
        """The canonical name and the aliases."""
        return [self.name, *self.aliases]


class Relation(BaseModel):
    """A link subject -predicate-> object between two entities (by id), with when it held."""

    id: str
    subject: str = Field(description="entity id")
    predicate: str
    object: str = Field(description="entity id")
    valid_from: float
    valid_until: float | None = Field(default=None, description="None: holds still")
    source_message_ids: list[str] = Field(default_factory=list)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    exclusive: bool = Field(
        default=True, description="a newer link with the same subject and predicate ends this one (lives_in)"
    )

    def holds_at(self, when: float) -> bool:
        """Whether the link held at `when` (epoch seconds)."""
        return self.valid_from <= when and (self.valid_until is None or when < self.valid_until)


class RelationStatement(BaseModel):
    """What an extractor states: a link between two names, from some messages, at some time."""

    subject: str
    predicate: str
    object: str
    subject_type: EntityType = "other"
    object_type: EntityType = "other"
    valid_from: float = Field(default_factory=now)
    source_message_ids: list[str] = Field(default_factory=list)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    exclusive: bool = True

    @field_validator("subject", "object")
    @classmethod
    def _name(cls, value: str) -> str:
        return checked_name(value)

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, value: str) -> str:
        return checked_predicate(value)


def closed_by(current: list[Relation], newer: Relation) -> list[Relation]:
    """The current relations that `newer` ends: exclusive ones with its subject and predicate, another
    object, that began before it (each returned with `valid_until` set to `newer.valid_from`)."""
    if not newer.exclusive:
        return []
    return [
        relation.model_copy(update={"valid_until": newer.valid_from})
        for relation in current
        if relation.subject == newer.subject
        and relation.predicate == newer.predicate
        and relation.object != newer.object
        and relation.valid_until is None
        and relation.valid_from <= newer.valid_from
    ]


def links_at(relations: list[Relation], *, as_of: float | None = None, include_past: bool = False) -> list[Relation]:
    """The relations that held at `as_of` (None: now; include_past: every one), oldest first."""
    if include_past:
        kept = list(relations)
    else:
        when = now() if as_of is None else as_of
        kept = [relation for relation in relations if relation.holds_at(when)]
    return sorted(kept, key=lambda relation: (relation.valid_from, relation.id))


@dataclass
class Neighbourhood:
    """What is read around the names a message may hold: the entities they name (normalized name →
    id), the user's entity and every predicate of its links, and, by entity id, the links the walk
    may take from each entity read (a named or asked entity: all that touch it; the user: its links
    with the roles asked; one read ahead: only its outgoing links), held at the time asked; the
    names of every entity seen."""

    named: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    user_roles: list[str] = field(default_factory=list)
    links: dict[str, list[Relation]] = field(default_factory=dict)
    outgoing_only: set[str] = field(default_factory=set)  # read ahead: their incoming links were not read
    names: dict[str, str] = field(default_factory=dict)  # entity id -> canonical name


@runtime_checkable
class RelationStore(Protocol):
    """The role of a store that keeps a user's entities and relations."""

    async def record_relations(self, user_id: str, statements: list[RelationStatement]) -> list[Relation]: ...

    async def remember_entity(
        self,
        user_id: str,
        name: str,
        *,
        aliases: list[str] | None = None,
        type: EntityType = "other",
        merge: bool = False,
    ) -> Entity: ...

    async def find_entity(self, user_id: str, name: str) -> Entity | None: ...

    async def list_entities(self, user_id: str) -> list[Entity]: ...

    async def list_relations(
        self, user_id: str, *, as_of: float | None = None, include_past: bool = False, entity: str | None = None
    ) -> list[Relation]: ...

    async def forget_entity(self, user_id: str, entity: str) -> int: ...

    async def forget_relation(self, user_id: str, relation_id: str) -> bool: ...

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
    ) -> Neighbourhood: ...
