"""Which search hits recall keeps for a message (memlane/recall.py): the message's intent sets the
floor and the number of items (memlane/query_intent.py); a request about the world, not about the
user or anyone who speaks in their memories, keeps a weak hit only when it holds what the request
names (its words, its acronyms in capitals), and only the hits holding a name it shares with a
memory; with nothing kept, the exact terms get one more chance. The order is search's, weighted by
kind (memlane/recall_select.py documents each stage)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlane.config import RecallSettings, SearchSettings, StoreSettings, similarity_floor
from memlane.query_intent import INTENT_POLICIES, Intent, IntentPolicy, intent_of
from memlane.recall_select import (
    exact_term_hits,
    exact_terms,
    holding_names,
    holds_acronyms,
    names_a_speaker,
    names_held,
    ranked_hits,
)
from memlane.request_subject import refers_to_the_user
from memlane.request_words import without_framing, without_quotations
from memlane.store.hits import MemoryHit
from memlane.store.text.terms import holds_what_it_names, query_terms


def layer_weights(recall: RecallSettings) -> dict[str, float]:
    """Recall's order weight of each kind of memory (see memlane/recall_select.py)."""
    return {
        "profile": recall.weight_profile,
        "event": recall.weight_event,
        "message": recall.weight_message,
    }


@dataclass(frozen=True)
class Gated:
    """The hits recall keeps, in order, and what decided it."""

    passing: list[MemoryHit]
    intent: Intent
    floor: float  # the relevance a hit needs (the intent's share of `recall_min_relevance`)
    max_memories: int  # how many memory items the intent allows


def gated_hits(
    message: str,
    search_query: str,
    fresh: Sequence[MemoryHit],
    entity: str | None,
    no_answer: frozenset[str],
    *,
    recall: RecallSettings,
    search: SearchSettings,
    store: StoreSettings,
) -> Gated:
    """The hits of `fresh` (search's candidates the prompt does not hold) that recall keeps for
    `message` (searched as `search_query`): `entity` a short entity query named verbatim, `no_answer`
    the questions whose reply only asked back."""
    about_the_user = refers_to_the_user(message)
    speaker_named = names_a_speaker(message, fresh)
    held = names_held(message, fresh)
    intent = intent_of(
        message,
        about_the_user=about_the_user,
        names_someone=speaker_named or bool(held),
        names_a_thing=bool(exact_terms(message)),
    )
    policy = INTENT_POLICIES[intent] if recall.intent_policies else IntentPolicy()
    floor = recall.min_relevance * policy.floor
    unnamed_floor, naming = None, frozenset[str]()
    if intent is Intent.GENERAL and recall.intent_policies:
        # about neither the user nor anyone who speaks in their memories: a hit that does not hold
        # all the message names needs a strong match
        unnamed_floor = max(floor, recall.impersonal_min_relevance)
        terms = query_terms(without_framing(search_query))
        unquoted = query_terms(without_quotations(without_framing(search_query)))  # a quoted word is mentioned:
        naming = frozenset(  # a request that names nothing but words it quotes names nothing a memory holds
            hit.memory.id
            for hit in fresh
            if holds_what_it_names(terms, hit.memory.text)
            and holds_what_it_names(unquoted, hit.memory.text)
            and holds_acronyms(search_query, hit.memory.text)
        )
    passing = ranked_hits(
        fresh,
        layer_weights(recall),
        floor,
        entity,
        search_query,
        search.echo_weight,
        similarity_floor(recall=recall, store=store),
        search.echo_similarity,
        no_answer,
        search.unanswered_weight,
        unnamed_floor,
        naming,
        search.statements_first_floor,
    )
    if held and not about_the_user and not speaker_named and recall.intent_policies:
        passing = holding_names(passing, held)  # about a thing a memory names: what is said of it
    if not passing and recall.exact_fallback and policy.exact_fallback:  # one more chance: exact terms
        passing = exact_term_hits(fresh, exact_terms(search_query, mentions=intent is not Intent.GENERAL))
    return Gated(passing, intent, floor, round(recall.max_memories * policy.items))
