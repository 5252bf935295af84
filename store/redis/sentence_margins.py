"""How near a forget request each of the user's sentences is, by the embedder.

When `forget` weighs a request by meaning (store/redis/forgetting.py), it reads the clauses of the
user's memories nearest the request and their margins: how much nearer the request each is than
everyday sentences of its language are (`EVERYDAY_SENTENCES`, embedded once per store). Which of
them the request means is the text logic of `store/text/forget_by_meaning.py`; rewriting and
deleting what states them is `Forgetting`'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memlane.store.models.embeddings import cosine_similarities
from memlane.store.records import PAST_VALUE_MARKERS, Memory
from memlane.store.redis.core import StorePart
from memlane.store.redis.search import Search
from memlane.store.text.fact_sentences import split_clauses, split_sentences, unsaid
from memlane.store.text.forget_by_meaning import EVERYDAY_NEAREST, EVERYDAY_SENTENCES, MeaningCandidate
from memlane.store.text.terms import has_cjk

_MEANING_MEMORIES = 20  # memories nearest a request whose sentences forget weighs by meaning
_MEANING_SENTENCES = 80  # of their clauses, those embedded (the first ones of the nearest memories)
# a word or two ("car") carry less of a meaning than a whole request: the words a sentence lacks
# must be meant by it at this share of forget_meaning_margin
_LACKING_SHARE = 0.5
_PROFILE_SLOT = re.compile(r"^[^:：\n]{1,200}[:：]\s*")  # "topic / subtopic: " before a profile memory's content


@dataclass(eq=False, repr=False)
class SentenceMargins(StorePart):
    """The clauses of the user's memories nearest a forget request, and how much nearer the
    request each sentence is than everyday sentences are."""

    search: Search  # finds the memories nearest the request
    # the vectors of EVERYDAY_SENTENCES per language, embedded once
    _everyday: dict[str, np.ndarray] = field(default_factory=dict, init=False)

    async def means_what_it_lacks(self, subject: str, sentence: str) -> bool:
        """Whether a sentence sharing some of the subject's words means the rest too: "I drive a
        blue Subaru" means "car" of "what car I drive", "I'm allergic to peanuts" does not mean
        "shellfish" of "my allergy to shellfish". True for a sentence sharing none of them."""
        lacking = unsaid(subject, sentence)
        if not lacking:
            return True
        (margin,) = await self.margins(lacking, [sentence])
        return margin >= _LACKING_SHARE * self.core.privacy.forget_meaning_margin

    async def nearest_clauses(self, user_id: str, request: str) -> tuple[list[MeaningCandidate], list[list[str]]]:
        """The sentences of the memories nearest `request`, nearest first by margin (see
        `store/text/forget_by_meaning.py`), and for each the messages it was read from."""
        request_vector = await self.core.embed_query(request)
        sources: dict[str, list[str]] = {}
        sentence_of: dict[str, str] = {}
        for memory, _ in await self.search.nearest_memories(user_id, request_vector, limit=_MEANING_MEMORIES):
            for clause, sentence in self._clauses(memory):
                if clause not in sources and len(sources) < _MEANING_SENTENCES:
                    sources[clause] = []
                    sentence_of[clause] = sentence
                if clause in sources and memory.kind == "message":
                    sources[clause].extend(memory.source_message_ids[:1])
        if not sources:
            return [], []
        sentences = list(sources)
        margins = await self.margins(request, sentences, request_vector)
        order = sorted(range(len(sentences)), key=lambda index: margins[index], reverse=True)
        return (
            [MeaningCandidate(sentences[index], margins[index], sentence_of[sentences[index]]) for index in order],
            [list(dict.fromkeys(sources[sentences[index]])) for index in order],
        )

    async def margins(
        self, request: str, sentences: list[str], request_vector: Sequence[float] | None = None
    ) -> list[float]:
        """How much nearer `request` each sentence is than everyday sentences of its language
        are, in relevance units (cosine similarity over what separates unrelated texts, 1 -
        `similarity_floor`)."""
        query = np.asarray(
            request_vector if request_vector is not None else await self.core.embed_query(request), dtype=np.float32
        )
        similarity = cosine_similarities(
            query, np.asarray(await self.core.embed_documents(sentences), dtype=np.float32)
        )
        everyday = {
            language: float(np.sort(cosine_similarities(query, vectors))[-EVERYDAY_NEAREST:].mean())
            for language, vectors in (await self._everyday_vectors()).items()
        }
        scale = max(1e-6, 1.0 - self.core.similarity_floor)
        return [
            (float(value) - everyday["zh" if has_cjk(sentence) else "en"]) / scale
            for sentence, value in zip(sentences, similarity)
        ]

    @staticmethod
    def _clauses(memory: Memory) -> list[tuple[str, str]]:
        """A memory's clauses, each with its sentence, as forget weighs them (a profile memory
        without its slot): what a forget cuts is the clause holding the fact, never the
        sentence it shares with another fact."""
        text = memory.text
        if memory.kind == "profile":  # "topic / subtopic: [earlier: ]content"
            text = _PROFILE_SLOT.sub("", text, count=1)
            text = next((text[len(marker) :] for marker in PAST_VALUE_MARKERS if text.startswith(marker)), text)
        return [
            (clause, sentence.strip())
            for sentence in split_sentences(text)
            for clause in split_clauses(sentence)
            if any(char.isalnum() for char in clause)
        ]

    async def _everyday_vectors(self) -> dict[str, np.ndarray]:
        if not self._everyday:
            embedded = {
                language: np.asarray(await self.core.embed_documents(list(sentences)), dtype=np.float32)
                for language, sentences in EVERYDAY_SENTENCES.items()
            }
            self._everyday.update(embedded)  # all languages or none
        return self._everyday
