"""The relations of a run's window: the links its templated statements name (nodes/relation_rules.py),
the other names the chat gives an entity ("Bea (贝亚)"), and, when a model is given, what the memory
model reads in the user's lines the rules read nothing in (nodes/relation_extract.py). Resolved
through the user's stored links and written before the run's one write, so that a run delivered
again writes each link once (`RelationStore.record_relations` is idempotent) and a link is never
lost behind a cursor that moved.

The rules come first and are stored whatever the model answers: a model that fails, answers no
JSON or names garbage costs only its own part (a note says why)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memlane.nodes.llm import ModelCaller, ModelCallFailed
from memlane.nodes.parsing import ParseFailed
from memlane.nodes.relation_extract import relations_by_model
from memlane.nodes.relation_rules import statements_from_messages
from memlane.store.errors import InvalidInput
from memlane.store.records import Message
from memlane.store.relations import EntityType, RelationStatement, RelationStore, normalized_name
from memlane.store.text.trivial import is_trivial

logger = logging.getLogger(__name__)


async def known_links(store: RelationStore, user_id: str) -> dict[tuple[str, str], str]:
    """The user's current links as (subject name, predicate) → object name, the newest winning."""
    names = {entity.id: entity.name for entity in await store.list_entities(user_id)}
    known: dict[tuple[str, str], str] = {}
    for relation in await store.list_relations(user_id):  # oldest first: a newer one overwrites
        if relation.subject in names and relation.object in names:
            known[(names[relation.subject], relation.predicate)] = names[relation.object]
    return known


def _statements_worth_asking(messages: Sequence[Message], unread: Sequence[str]) -> list[Message]:
    """The owner's lines the rules read nothing in that may state something: not a question, not
    only a greeting or thanks."""
    wanted = set(unread)
    return [
        message
        for message in messages
        if message.id in wanted
        and not is_trivial(message.content)
        and not message.content.rstrip().endswith(("?", "？"))
    ]


async def _remember(
    store: RelationStore, user_id: str, names: Sequence[tuple[str, list[str], EntityType]], notes: list[str]
) -> None:
    for name, aliases, kind in names:
        try:
            await store.remember_entity(user_id, name, aliases=aliases, type=kind, merge=True)  # the chat says so
        except InvalidInput as error:
            notes.append(f"relations: the names of {name[:60]!r} not stored: {error}")


async def _record(store: RelationStore, user_id: str, statements: list[RelationStatement], notes: list[str]) -> None:
    """Store `statements` in one write; when the store refuses the batch, each on its own, so that
    one refused link (a thing linked to itself once its names are one) costs only itself."""
    statements = [s for s in statements if normalized_name(s.subject) != normalized_name(s.object)]
    if not statements:
        return
    try:
        written = await store.record_relations(user_id, statements)
        logger.debug("run of %r: %d relations written", user_id, len(written))
        return
    except InvalidInput as error:  # a statement the store refuses: the run's other writes stand
        logger.warning("relations of a run of %r refused as a batch, stored one by one: %s", user_id, error)
    for statement in statements:
        try:
            await store.record_relations(user_id, [statement])
        except InvalidInput as error:
            notes.append(f"relations not stored: {error}")


async def record_window_relations(
    store: RelationStore, user_id: str, messages: Sequence[Message], caller: ModelCaller | None = None
) -> list[str]:
    """Store the links the window's owner messages state (the rules', then the model's when
    `caller` is given); returns a note for each thing left out."""
    known = await known_links(store, user_id)
    read = statements_from_messages(messages, known=known)
    for note in read.notes:  # a sentence whose subject nothing names yet: common, not the run's news
        logger.debug("run of %r: %s", user_id, note)
    notes: list[str] = []
    aliases: list[tuple[str, list[str], EntityType]] = [(name, others, "other") for name, others in read.aliases]
    by_model: list[RelationStatement] = []
    asked = _statements_worth_asking(messages, read.unread) if caller is not None else []
    if caller is not None and asked:
        names = {name for link in known.items() for name in (link[0][0], link[1])}
        names |= {name for s in read.statements for name in (s.subject, s.object)}
        try:
            answer = await relations_by_model(asked, sorted(names), caller)
        except (ModelCallFailed, ParseFailed) as failure:
            logger.warning("relations: the model's links of a run of %r left out: %s", user_id, failure)
            notes.append(f"relations: the model's links left out: {failure}")
        else:
            notes += answer.notes
            aliases += answer.aliases
            said = {(normalized_name(s.subject), s.predicate, normalized_name(s.object)) for s in read.statements}
            by_model = [
                s
                for s in answer.statements
                if (normalized_name(s.subject), s.predicate, normalized_name(s.object)) not in said
            ]
    await _remember(store, user_id, aliases, notes)  # first: "贝亚" then names the entity "Bea" is
    await _record(store, user_id, read.statements, notes)
    await _record(store, user_id, by_model, notes)
    return notes
