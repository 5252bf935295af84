"""The relations of a run's window: the links its templated statements name (nodes/relation_rules.py),
resolved through the user's stored links and written before the run's one write, so that a run
delivered again writes each link once (`RelationStore.record_relations` is idempotent) and a
link is never lost behind a cursor that moved."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memlane.nodes.relation_rules import statements_from_messages
from memlane.store.errors import InvalidInput
from memlane.store.records import Message
from memlane.store.relations import RelationStore, normalized_name

logger = logging.getLogger(__name__)


async def known_links(store: RelationStore, user_id: str) -> dict[tuple[str, str], str]:
    """The user's current links as (subject name, predicate) → object name, the newest winning."""
    names = {entity.id: entity.name for entity in await store.list_entities(user_id)}
    known: dict[tuple[str, str], str] = {}
    for relation in await store.list_relations(user_id):  # oldest first: a newer one overwrites
        if relation.subject in names and relation.object in names:
            known[(names[relation.subject], relation.predicate)] = names[relation.object]
    return known


async def record_window_relations(store: RelationStore, user_id: str, messages: Sequence[Message]) -> list[str]:
    """Store the links the window's owner messages state; returns a note when the store refused them."""
    read = statements_from_messages(messages, known=await known_links(store, user_id))
    for note in read.notes:  # a sentence whose subject nothing names yet: common, not the run's news
        logger.debug("run of %r: %s", user_id, note)
    statements = [s for s in read.statements if normalized_name(s.subject) != normalized_name(s.object)]
    if not statements:
        return []
    try:
        written = await store.record_relations(user_id, statements)
    except InvalidInput as error:  # a statement the store refuses: the run's other writes stand
        logger.warning("relations of a run of %r not stored: %s", user_id, error)
        return [f"relations not stored: {error}"]
    logger.debug("run of %r: %d relations written", user_id, len(written))
    return []
