"""Forgetting, store side: what states a fact leaves every copy recall reads.

`forget` (a subject the user names) and the deletes that forget what the deleted record
stated (`delete_profile_entry`, `delete_event`, `delete_message`) find the statements in
profile entries and their history, messages, LangGraph items, event summaries and profile
deltas, and session summaries, and have each part rewrite or delete its own records. What
"states a fact" means (words, clauses, coverage) is the text logic of `store/text/fact_sentences.py`;
which sentences a request means when it shares no word with them, `store/text/forget_by_meaning.py`:
`forget` weighs the user's sentences nearest the request by the embedder (their margins are
`store/redis/sentence_margins.py`'s), and what it takes is then forgotten by its own words,
like a deleted record's statement.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from memlane.store.errors import EmbeddingsUnavailable
from memlane.store.forget_report import ForgetReport
from memlane.store.ids import ITEM_MEMORY_PREFIX, clean_text, past_value_memory_id
from memlane.store.protocols import ForgetConfirm
from memlane.store.records import (
    Message,
    ProfileEntry,
    SessionSummary,
)
from memlane.store.redis.core import StorePart
from memlane.store.redis.events import Events
from memlane.store.redis.items import Items
from memlane.store.redis.messages import Messages
from memlane.store.redis.profile import Profile
from memlane.store.redis.search import Search
from memlane.store.redis.sentence_margins import SentenceMargins
from memlane.store.schema import item_key
from memlane.store.text.fact_sentences import (
    Fact,
    facts_of,
    forget_subject,
    removed_clauses,
    split_sentences,
    states_any,
    strip_statements,
    text_terms,
)
from memlane.store.text.forget_by_meaning import (
    MeaningCandidate,
    asks_a_question,
    clearly_meant,
    meaning_query,
    shown_clauses,
)
from memlane.store.text.terms import is_short_entity_query

logger = logging.getLogger(__name__)

_FORGET_SEARCH_LIMIT = 1000  # memories one round of forgetting checks
_ANY_WORD = 1e-9  # a coverage any shared word reaches
_FORGET_QUERY_CHARS = 2000  # of a long fact (an event summary), what its search reads


@dataclass(eq=False, repr=False)
class Forgetting(StorePart):
    """`forget`, and the deletes that forget what the deleted record stated."""

    search: Search  # finds the messages and items that state a fact
    # the parts whose records it rewrites or deletes
    messages: Messages
    profile: Profile
    events: Events
    items: Items
    # weighs a request by meaning: the user's clauses nearest it (store/redis/sentence_margins.py)
    meaning: SentenceMargins = field(init=False)

    def __post_init__(self) -> None:
        self.meaning = SentenceMargins(self.core, self.search)

    async def forget(
        self,
        user_id: str,
        query: str,
        *,
        actor: str = "forget",
        confirm: ForgetConfirm | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        subject = forget_subject(clean_text(query))
        report = ForgetReport(user_id=user_id, query=query, subject=subject, dry_run=dry_run)
        self.layout.user_tag(user_id)  # a bad user id is refused before anything else
        fact = Fact.of(subject, self.core.privacy.forget_min_term_coverage)
        if fact.terms:  # words first
            touched, restated = await self._forget_in_profile(user_id, [fact], report, actor=actor)
            deleted = [r.id for r in report.records if r.kind == "profile" and r.action == "deleted"]
            # what the entries said goes from the turns and summaries too, in their words:
            # "which car I have" took vehicle / car whole, and "drives a red Honda Civic" with it
            facts = [
                fact,
                *facts_of(restated, self.core.privacy.forget_min_term_coverage, in_shorter_clauses=False),
            ]
            # a bare name ("Miso", "张伟") is forgotten wherever it is written, as recall finds it
            relevance = 0.0 if is_short_entity_query(subject) else self.core.privacy.forget_min_relevance
            await self._forget_statements(
                user_id, facts, report, search_query=subject, min_relevance=relevance, removed_entry_ids=deleted
            )
            for content in restated:  # the turns saying it in the entry's words, which search finds by them
                await self._forget_statements(user_id, facts, report, search_query=content, in_summaries=False)
            await self._forget_in_profile_history(user_id, touched, facts, report)
        # then meaning: with a model always (it confirms), without one when the words found nothing
        if confirm is not None or not report.forgot_anything:
            await self._forget_by_meaning(user_id, clean_text(query), report, confirm=confirm, actor=actor)
        logger.info("forget %r for %r: %s", subject, user_id, report.describe())
        return report

    async def _forget_by_meaning(
        self, user_id: str, query: str, report: ForgetReport, *, confirm: ForgetConfirm | None, actor: str
    ) -> None:
        """Forget the clauses nearest the request that state it: those `confirm` confirms, or,
        without a model (or with an answer that says nothing usable) and when the words found
        nothing, the one `clearly_meant` takes. Each is then forgotten by its own words (the
        words of the whole clause: another clause sharing two of them is no copy of it)."""
        request = meaning_query(query)
        if not request or (confirm is None and not asks_a_question(request)):  # see clearly_meant
            return
        try:
            candidates, sources = await self.meaning.nearest_clauses(user_id, request)
            chosen = await self._meant(query, request, report, candidates, confirm)
        except EmbeddingsUnavailable as error:  # the words were all this forget could weigh
            logger.warning("forget %r for %r by words only: %s", request, user_id, error)
            return
        sentences = list(dict.fromkeys(candidates[index].text for index in chosen))
        if not sentences:
            return
        facts = facts_of(sentences, self.core.privacy.forget_min_term_coverage, in_shorter_clauses=False)
        touched, _ = await self._forget_in_profile(user_id, facts, report, actor=actor)
        await self._forget_statements(
            user_id,
            facts,
            report,
            search_query=" ".join(sentences),
            cited_message_ids=[message_id for index in chosen for message_id in sources[index]],
        )
        await self._forget_in_profile_history(user_id, touched, facts, report)

    async def _meant(
        self,
        query: str,
        request: str,
        report: ForgetReport,
        candidates: Sequence[MeaningCandidate],
        confirm: ForgetConfirm | None,
    ) -> list[int]:
        """The indexes of the candidates the request means: the model's answer when it gives a
        usable one, else (when the words found nothing) the one clearly meant."""
        shown = shown_clauses(candidates)
        if confirm is not None and shown:
            answer = await confirm(query, [candidates[index].text for index in shown])
            if answer is not None and all(isinstance(index, int) and 0 <= index < len(shown) for index in answer):
                return [shown[index] for index in answer]
            if answer is not None:  # None: the confirmation said why itself
                logger.warning(
                    "forget %r: the confirmation named sentences it was not shown (%r); forget keeps to what is clear",
                    request,
                    answer,
                )
        if report.forgot_anything:
            return []
        chosen = clearly_meant(request, candidates, min_margin=self.core.privacy.forget_meaning_margin)
        if chosen and not await self.meaning.means_what_it_lacks(report.subject, candidates[chosen[0]].text):
            return []
        return chosen

    async def delete_profile_entry(self, user_id: str, entry_id: str, *, actor: str = "user") -> bool:
        entry = await self.profile.delete_entry(user_id, entry_id, actor=actor)
        if entry is None:
            return False
        report = await self._forget_entry_fact(entry)
        logger.info("deleted profile entry %s of %r: %s", entry_id, user_id, report.describe())
        return True

    async def delete_event(self, user_id: str, event_id: str) -> bool:
        event = (await self.events.get_events(user_id, [event_id]))[0]
        removed = await self.events.delete_card(user_id, event_id)
        if removed and event is not None:
            report = ForgetReport(user_id=user_id, query=event.summary)
            facts = facts_of([event.summary], self.core.privacy.forget_min_term_coverage, by_clause=True, min_terms=2)
            await self._forget_statements(
                user_id, facts, report, search_query=event.summary, cited_message_ids=event.source_message_ids
            )
            logger.info("deleted event %s of %r: %s", event_id, user_id, report.describe())
        return removed

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        messages = await self.messages.load_messages(
            user_id, [self.layout.message(user_id, message_id).rsplit(":", 1)[1]]
        )
        if not messages:
            return False
        message = messages[0]
        report = ForgetReport(user_id=user_id, query=message.content)
        await self._drop_messages(user_id, [message], [], report)
        facts = facts_of([message.content], self.core.privacy.forget_min_term_coverage, by_clause=True, min_terms=2)
        await self._forget_statements(user_id, facts, report, search_query="", in_messages=False)
        return True

    async def _forget_entry_fact(self, entry: ProfileEntry) -> ForgetReport:
        """After deleting an entry: its fact out of its source turns (dropped whole when no
        sentence of theirs matches: the extractor read the fact there), other turns, event
        summaries and deltas, and session summaries."""
        report = ForgetReport(user_id=entry.user_id, query=entry.content)
        facts = facts_of([entry.content], self.core.privacy.forget_min_term_coverage)
        await self._forget_statements(
            entry.user_id,
            facts,
            report,
            search_query=entry.content,
            cited_message_ids=entry.source_message_ids,
            drop_cited=True,
            removed_entry_ids=[entry.id],
        )
        return report

    async def _forget_statements(
        self,
        user_id: str,
        facts: Sequence[Fact],
        report: ForgetReport,
        *,
        search_query: str,
        min_relevance: float | None = None,
        cited_message_ids: Sequence[str] = (),
        drop_cited: bool = False,
        removed_entry_ids: Sequence[str] = (),
        in_messages: bool = True,
        in_summaries: bool = True,
    ) -> None:
        """Remove what states `facts` from messages (those search finds for `search_query` at
        `min_relevance` or more, and the cited ones), items, every event summary and profile
        delta, and every session summary. `drop_cited`: a cited message stating none of the
        facts in words of theirs is dropped whole, and the assistant's reply to it loses every
        clause holding any word of the facts ("Noted, no peanuts for you")."""
        if in_messages and (facts or (drop_cited and cited_message_ids)):
            min_relevance = self.core.privacy.forget_min_relevance if min_relevance is None else min_relevance
            cited = list(cited_message_ids)
            drop_whole = set(cited) if drop_cited else set()
            if drop_cited and cited:
                any_word = [replace(fact, min_coverage=_ANY_WORD) for fact in facts]
                await self._forget_in_messages(
                    user_id, await self.messages.replies_to(user_id, cited), any_word, set(), report
                )
            # each round changes what states the facts, so that it states them no more; a round
            # that changes nothing, or that saw every candidate, ends it
            while True:
                hits = (
                    await self.search.search_memories(
                        user_id,
                        search_query[:_FORGET_QUERY_CHARS],
                        kinds=["message", "event"],
                        limit=_FORGET_SEARCH_LIMIT,
                        understand_time=False,
                    )
                    if search_query.strip()
                    else []
                )
                # a hit's text is its message's content: only those stating a fact are loaded
                relevant = [
                    hit.memory for hit in hits if hit.match >= min_relevance and states_any(hit.memory.text, facts)
                ]
                message_ids = [
                    m.source_message_ids[0] for m in relevant if m.kind == "message" and m.source_message_ids
                ]
                item_ids = [m.id for m in relevant if m.id.startswith(ITEM_MEMORY_PREFIX)]
                changed = await self._forget_in_messages(user_id, [*cited, *message_ids], facts, drop_whole, report)
                changed = await self._forget_in_items(user_id, item_ids, facts, report) or changed
                cited = []
                if not changed or len(hits) < _FORGET_SEARCH_LIMIT or report.dry_run:  # every candidate was seen
                    break
        if in_summaries and (facts or removed_entry_ids):
            await self._forget_in_events(user_id, facts, set(removed_entry_ids), report)
        if in_summaries and facts:
            await self._forget_in_session_summaries(user_id, facts, report)

    async def _forget_in_messages(
        self,
        user_id: str,
        message_ids: Sequence[str],
        facts: Sequence[Fact],
        drop_whole: set[str],
        report: ForgetReport,
    ) -> bool:
        ids = list(dict.fromkeys(message_ids))
        if not ids:
            return False
        messages = await self.messages.load_messages(user_id, [item_key(message_id) for message_id in ids])
        # a dry run changes nothing: what a record would lose is read from what it holds now
        messages = [message for message in messages if not (report.dry_run and report.has("message", message.id))]
        rewritten, dropped = [], []
        for message in messages:
            content = strip_statements(message.content, facts)
            if content == message.content:
                if message.id in drop_whole:
                    dropped.append(message)
            elif content:
                rewritten.append(message.model_copy(update={"content": content}))
            else:
                dropped.append(message)
        if not rewritten and not dropped:
            return False
        before = {message.id: message.content for message in messages}
        await self._drop_messages(user_id, dropped, rewritten, report, before=before)
        return True

    async def _drop_messages(
        self,
        user_id: str,
        dropped: Sequence[Message],
        rewritten: Sequence[Message],
        report: ForgetReport,
        *,
        before: dict[str, str] | None = None,
    ) -> None:
        """Drop and rewrite messages (`Messages.drop_messages`), recording them in the report
        (a dry run only records them). before: the rewritten messages' contents before."""
        if not report.dry_run:
            await self.messages.drop_messages(user_id, dropped, rewritten)
        for message in dropped:
            report.add("message", message.id, "deleted", [message.content])
        for message in rewritten:
            report.add(
                "message", message.id, "rewritten", removed_clauses((before or {}).get(message.id, ""), message.content)
            )

    async def _forget_in_items(
        self, user_id: str, memory_ids: Sequence[str], facts: Sequence[Fact], report: ForgetReport
    ) -> bool:
        items = [
            item for item in await self.items.get_items(user_id, list(dict.fromkeys(memory_ids))) if item is not None
        ]
        stating = [item for item in items if states_any(item.text, facts) and not report.has("item", item.memory_id)]
        if stating and not report.dry_run:
            await self.items.delete_items(user_id, [item.memory_id for item in stating])
        for item in stating:
            report.add("item", item.memory_id, "deleted", [item.text])
        return bool(stating)

    async def _forget_in_events(
        self, user_id: str, facts: Sequence[Fact], removed_entry_ids: set[str], report: ForgetReport
    ) -> None:
        """Every event: summary sentences stating the facts go (an event left with nothing is
        deleted), and so do profile-delta lines stating them or naming a removed entry."""
        for event in await self.events.list_events(user_id, limit=1_000_000):
            summary = strip_statements(event.summary, facts)
            delta = [
                change
                for change in event.profile_delta
                if change.entry_id not in removed_entry_ids
                and not states_any(change.content, facts)
                and not states_any(change.previous_content or "", facts)
            ]
            if summary == event.summary and delta == event.profile_delta:
                continue
            if not summary:
                if not report.dry_run:
                    await self.events.delete_card(user_id, event.id)
                report.add("event", event.id, "deleted", [event.summary])
                continue
            if not report.dry_run:
                await self.events.rewrite(
                    user_id, event.model_copy(update={"summary": summary, "profile_delta": delta})
                )
            lines = [change.content for change in event.profile_delta if change not in delta]
            report.add("event", event.id, "rewritten", [*removed_clauses(event.summary, summary), *lines])

    async def _forget_in_session_summaries(self, user_id: str, facts: Sequence[Fact], report: ForgetReport) -> None:
        sessions = await self.messages.list_sessions(user_id)
        for start in range(0, len(sessions), 500):
            batch = sessions[start : start + 500]
            updated: dict[str, SessionSummary] = {}
            for session_id, summary in zip(batch, await self.messages.session_summaries(user_id, batch)):
                if summary is None:
                    continue
                text = strip_statements(summary.summary, facts)
                if text != summary.summary:
                    updated[session_id] = summary.model_copy(update={"summary": text, "updated_at": time.time()})
                    removed = removed_clauses(summary.summary, text) if text else [summary.summary]
                    report.add("summary", session_id, "rewritten" if text else "deleted", removed)
            if not report.dry_run:
                await self.messages.replace_session_summaries(user_id, updated)

    async def _forget_in_profile(
        self, user_id: str, facts: Sequence[Fact], report: ForgetReport, *, actor: str
    ) -> tuple[list[str], list[str]]:
        """Entries whose slot names the fact, or whose slot and one-sentence content state it
        together ("the wrist injury": health / injury: broke the left wrist), or left with
        nothing, are deleted; others lose the clauses stating it. Returns the ids of the
        entries changed, and what went from them (to be forgotten in their words elsewhere)."""
        touched, restated = [], []
        for entry in await self.profile.get_profile(user_id):
            slot_terms = text_terms(f"{entry.topic} {entry.subtopic}")
            whole = any(fact.stated_by(slot_terms) for fact in facts)
            content = "" if whole else strip_statements(entry.content, facts)
            if content == entry.content and len(split_sentences(entry.content.strip())) == 1:
                together = slot_terms | text_terms(entry.content)
                content = "" if any(fact.stated_by(together) for fact in facts) else content
            if content == entry.content:
                continue
            touched.append(entry.id)
            restated.extend(removed_clauses(entry.content, content) if content else [entry.content])
            if content:
                if not report.dry_run:
                    await self.profile.edit_profile_entry(user_id, entry.id, content=content, actor=actor)
                report.add("profile", entry.id, "rewritten", removed_clauses(entry.content, content))
            else:
                if not report.dry_run:
                    await self.profile.delete_entry(user_id, entry.id, actor=actor)
                report.add("profile", entry.id, "deleted", [entry.content])
        return touched, restated

    async def _forget_in_profile_history(
        self, user_id: str, entry_ids: Sequence[str], facts: Sequence[Fact], report: ForgetReport
    ) -> None:
        """The revisions of the entries `forget` changed lose the fact too (a content left with
        nothing becomes None), and so do their past values ("earlier: …"): a slot forget deleted
        loses every value it held, since its name is the fact. Who changed what slot when is kept."""
        if report.dry_run:  # the entries themselves are in the report
            return
        current = {entry.id for entry in await self.profile.get_profile(user_id)}

        def scrubbed(content: str | None, deleted: bool) -> str | None:
            return None if deleted or not content else strip_statements(content, facts) or None

        for entry_id in entry_ids:
            deleted = entry_id not in current
            revisions = await self.profile.profile_history(user_id, entry_id)
            cleaned = [
                revision.model_copy(
                    update={
                        "before_content": scrubbed(revision.before_content, deleted),
                        "after_content": scrubbed(revision.after_content, deleted),
                    }
                )
                for revision in revisions
            ]
            if cleaned == revisions:
                continue
            past = [value.content for revision in revisions if (value := revision.past_value()) is not None]
            if past:
                await self._run(
                    self.client.delete(
                        *(self.layout.memory(user_id, past_value_memory_id(entry_id, content)) for content in past)
                    )
                )
            await self.profile.replace_history(user_id, entry_id, cleaned)
