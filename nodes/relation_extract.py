"""Relations by the memory model (issue 53): the user's lines the rules (nodes/relation_rules.py) read
nothing in, turned into entities (with the other names the chat gives them) and links, through the
same structured-output path and `Step` tag as every step (`Step.RELATIONS`).

Parsing is forgiving and writing strict: every entity and link of the answer is checked on its own
(a name the store would refuse, a predicate that is no word, a wrong type, a link of a thing to
itself is left out with a note), so one bad item costs only itself, and an answer that is no JSON
at all costs only the model's part: what the rules read is stored whatever the model says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel, Field

from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, Step, data_line, render_chat
from memlane.nodes.parsing import ParseFailed, extract_json, sole_object
from memlane.nodes.relation_rules import SINGLE_VALUED, role_predicate
from memlane.store.errors import InvalidInput
from memlane.store.records import Message
from memlane.store.relations import (
    USER_ENTITY_ALIASES,
    USER_ENTITY_NAME,
    EntityType,
    RelationStatement,
    checked_name,
    checked_predicate,
    normalized_name,
)

MODEL_CONFIDENCE = 0.8  # a link the model read and gave no confidence for: below the rules' 1
MAX_KNOWN_NAMES = 60  # the user's names shown to the model, so that it calls them as they are stored
_MY_ROLE = re.compile(r"(?:my |我的?)(?P<role>\w[\w ]{0,30})", re.IGNORECASE)
_ENTITY_TYPES = frozenset(get_args(EntityType))

RELATIONS_PROMPT = (
    """TASK: read the user's numbered lines and list the people, places, organisations and pets \
they name, and the links between them.
- An entity: its name as the user says it, its type (person, place, organisation, pet, object, event \
or other), and the other names the chat gives it (a name in another language, a nickname) as aliases.
- A link: subject, predicate, object, and the number of the line that says it. The user is "me". A \
predicate is a short snake_case word: a role of the object for the subject (sister, boss, daughter, \
friend, dog), lives_in, works_at, or another short verb.
- Only what the lines state; no guesses, nothing a question only asks.
- Names already known (use them for the same person, place or thing): {known}
"""
    + LANGUAGE_RULE
    + "\n"
    + DATA_RULE
    + """
Answer with JSON only: {{"entities": [{{"name": "...", "type": "person", "aliases": ["..."]}}], \
"relations": [{{"subject": "me", "predicate": "sister", "object": "...", "line": 1}}]}}"""
)


class ExtractedEntity(BaseModel):
    name: str
    type: str = "other"
    aliases: list[str] = Field(default_factory=list)


class ExtractedRelation(BaseModel):
    subject: str
    predicate: str
    object: str
    line: int | None = None
    confidence: float | None = None


class RelationsOutput(BaseModel):
    """The relations step's answer (the schema sent where the model takes one)."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)


@dataclass
class ModelRelations:
    """What the model's answer gives, checked: links, (name, aliases, type) to remember, notes."""

    statements: list[RelationStatement] = field(default_factory=list)
    aliases: list[tuple[str, list[str], EntityType]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(value: Any, what: str, notes: list[str]) -> str | None:
    """`value` as a name the store takes ("me" as the user), or None with a note."""
    try:
        name = checked_name(value, what)
    except InvalidInput as error:
        notes.append(f"relations: left out {what} {_short(value)}: {error}")
        return None
    return USER_ENTITY_NAME if normalized_name(name) in {USER_ENTITY_NAME, *USER_ENTITY_ALIASES} else name


def read_entities(items: Any, lines: Sequence[Message], found: ModelRelations) -> None:
    """The answer's entities: each alias kept, but "my sister" / "我姐姐", a role, which is a link."""
    if not isinstance(items, list):
        if items is not None:
            found.notes.append(f"relations: 'entities' is not a list: {_short(items)}")
        return
    for item in items:
        if not isinstance(item, dict):
            found.notes.append(f"relations: left out the entity {_short(item)}: not an object")
            continue
        name = _name(item.get("name"), "an entity name", found.notes)
        if name is None or name == USER_ENTITY_NAME:
            continue
        kind = item.get("type")
        kind = kind.strip().lower() if isinstance(kind, str) and kind.strip().lower() in _ENTITY_TYPES else "other"
        raw_aliases = item.get("aliases")
        aliases = []
        for alias in raw_aliases if isinstance(raw_aliases, list) else []:
            role = _MY_ROLE.fullmatch(alias.strip()) if isinstance(alias, str) else None
            if role is not None:  # "my sister": the user's sister is this one
                statement = _statement(USER_ENTITY_NAME, role.group("role"), name, None, None, lines, found.notes)
                if statement is not None:
                    found.statements.append(statement)
            elif (checked := _name(alias, "an alias", found.notes)) is not None and checked != USER_ENTITY_NAME:
                aliases.append(checked)
        found.aliases.append((name, aliases, kind))  # type: ignore[arg-type]  # checked against EntityType


def _statement(
    subject: Any,
    predicate: Any,
    target: Any,
    line: Any,
    confidence: Any,
    lines: Sequence[Message],
    notes: list[str],
) -> RelationStatement | None:
    subject_name, target_name = _name(subject, "a subject", notes), _name(target, "an object", notes)
    if subject_name is None or target_name is None:
        return None
    try:
        checked = checked_predicate(role_predicate(predicate) if isinstance(predicate, str) else predicate)
    except InvalidInput as error:
        notes.append(f"relations: left out a link of {subject_name!r}: {error}")
        return None
    if normalized_name(subject_name) == normalized_name(target_name):
        notes.append(f"relations: left out a link of {subject_name!r} to itself")
        return None
    said = lines[line - 1] if isinstance(line, int) and not isinstance(line, bool) and 1 <= line <= len(lines) else None
    sources = [said.id] if said is not None else [message.id for message in lines]
    valid = isinstance(confidence, (int, float)) and not isinstance(confidence, bool) and 0 <= confidence <= 1
    return RelationStatement(
        subject=subject_name,
        predicate=checked,
        object=target_name,
        valid_from=(said or lines[-1]).created_at,
        source_message_ids=sources,
        confidence=float(confidence) if valid else MODEL_CONFIDENCE,
        exclusive=checked in SINGLE_VALUED,
    )


def read_answer(answer: str, lines: Sequence[Message]) -> ModelRelations:
    """The checked entities and links of the model's answer. Raises `ParseFailed` when it holds no
    object with entities or relations."""
    value = sole_object(
        extract_json(
            answer,
            step=Step.RELATIONS,
            accept=lambda found: isinstance(found, dict) and ("relations" in found or "entities" in found),
        ),
        "relations",
    )
    if not isinstance(value, dict) or not ("relations" in value or "entities" in value):
        raise ParseFailed(Step.RELATIONS, "the answer has no entities or relations", answer)
    found = ModelRelations()
    read_entities(value.get("entities"), lines, found)
    relations = value.get("relations")
    if not isinstance(relations, list):
        if relations is not None:
            found.notes.append(f"relations: 'relations' is not a list: {_short(relations)}")
        return found
    for item in relations:
        if not isinstance(item, dict):
            found.notes.append(f"relations: left out the link {_short(item)}: not an object")
            continue
        statement = _statement(
            item.get("subject"),
            item.get("predicate"),
            item.get("object"),
            item.get("line"),
            item.get("confidence"),
            lines,
            found.notes,
        )
        if statement is not None:
            found.statements.append(statement)
    return found


async def relations_by_model(
    lines: Sequence[Message], known_names: Sequence[str], caller: ModelCaller
) -> ModelRelations:
    """The entities and links the memory model reads in `lines` (the user's, oldest first).
    Raises `ModelCallFailed` or `ParseFailed`; the caller keeps what the rules read."""
    known = ", ".join(map(data_line, sorted(set(known_names) - {USER_ENTITY_NAME})[:MAX_KNOWN_NAMES])) or "none"
    system = RELATIONS_PROMPT.format(known=known)
    answer = await caller.ask(system, render_chat(lines), schema=RelationsOutput)
    return read_answer(answer, lines)
