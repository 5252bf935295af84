"""Questions, echoes and replies that say nothing: what a message that holds no statement looks
like, so that the statement that answers is ranked before it (issue 35, item 3; issue 48, item 2:
in search itself, so every door shows one order).

Pure rules over plain text; search (store/redis/search.py) orders its hits with `echo_weight_of`,
and recall (memlane/recall_select.py) orders its items with the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memlane.store.hits import MemoryHit
from memlane.store.records import Memory
from memlane.store.text.terms import query_terms

# a question mark, or 吗, 呢, 呀 at the end; 着呢 tells ("电话存着呢", "多着呢"), it asks nothing
_QUESTION = re.compile(r"[?？]|(?:吗|(?<!着)呢|呀)[。！!]?$")


def is_asking(text: str) -> bool:
    """The text asks: "?", "？", or it ends in 吗, 呢 (not 着呢: "电话存着呢"), 呀."""
    return bool(_QUESTION.search(text.strip()))


def is_question(memory: Memory) -> bool:
    """A message that asks (`is_asking`)."""
    return memory.kind == "message" and is_asking(memory.text)


def repeats_the_query(memory: Memory, query: str, similarity: float = 0.0, same_meaning: float = 1.0) -> bool:
    """A question (anyone's message that asks one: "?", "？", or ending in 吗, 呢, 呀) that
    asks what the query asks: at most half of its terms are not the query's, or its
    `similarity` to the query (cosine rescaled from the provider's floor, 0..1) is at least
    `same_meaning` (a reworded question: "我在哪家公司上班？" for "我在哪里工作？")."""
    if not is_question(memory):
        return False
    if similarity >= same_meaning:
        return True
    terms = set(query_terms(memory.text))
    return bool(terms) and len(terms - set(query_terms(query))) <= len(terms) / 2


# a sentence that says the answer is not known: "You haven't told me yet.", "我还不知道呢。"
_NO_ANSWER = re.compile(
    r"\b(?:you (?:haven't|have not|never|didn't|did not) (?:told|tell|said|say|mentioned|mention)|you never said"
    r"|i (?:don't|do not|didn't|did not) know|i'm not sure|i am not sure|not sure|no idea|i (?:can't|don't) remember)\b"
    r"|还没告诉|没告诉过|没说过|没提过|没有提到|不知道|不清楚|不确定|记不得|不记得|还没说"
)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_CLAUSE = re.compile(
    r"[,，;；]|\bbut\b|\bthough\b|但是|不过"
)  # "I'm not sure what she drinks, but she loved …" answers


def holds_no_answer(text: str) -> bool:
    """Every sentence asks, or says the answer is not known: "What coffee do you drink? You never
    said." / "你的车是什么牌子的？你还没告诉过我。" A reply like that states nothing."""
    sentences = [sentence.strip() for sentence in _SENTENCE.findall(text) if sentence.strip()]
    return bool(sentences) and all(
        _QUESTION.search(sentence)
        or all(_NO_ANSWER.search(clause) for clause in _CLAUSE.split(sentence.lower()) if clause.strip(" .。!！"))
        for sentence in sentences
    )


def echo_weight_of(
    memory: Memory, query: str, similarity: float, *, echo_weight: float, same_meaning: float, no_answer_weight: float
) -> float:
    """The order weight search and recall give a memory against `query`: `no_answer_weight` for an
    assistant's reply that holds no answer (`holds_no_answer`: it only asks back or does not
    know), `echo_weight` for a question that asks what the query asks (`repeats_the_query`;
    `similarity`: its cosine to the query rescaled from the provider's floor, 0..1), else 1."""
    if memory.kind != "message":
        return 1.0
    if no_answer_weight != 1.0 and memory.speaker_role == "assistant" and holds_no_answer(memory.text):
        return no_answer_weight
    if echo_weight != 1.0 and query and repeats_the_query(memory, query, similarity, same_meaning):
        return echo_weight
    return 1.0


def statements_first(
    hits: Sequence[MemoryHit],
    query: str,
    rescaled: Callable[[float], float],
    *,
    echo_weight: float,
    same_meaning: float,
    no_answer_weight: float,
    floor: float,
    unanswered: frozenset[str] = frozenset(),
) -> list[MemoryHit]:
    """Search's order: by score, a question that asks what the query asks (or a reply that says
    nothing) after the statement that answers it (equal ones in the fusion's order). A question is
    weighed as one nobody answered: whatever answer it got is a memory of its own (the reply, found
    through its context), and the question itself states nothing; recall, which reads the replies,
    gives an answered one `echo_weight` (memlane/recall_select.py). A statement scored at least
    `floor` comes before every such message whatever their scores: they hold every word of the
    query, so a weight alone left "How many kids do I have?" (0.60) before "We have three kids"
    (0.02). The ids in `unanswered` (questions marked when their reply was stored,
    store/redis/replies.py) are such messages in whatever words they ask. `rescaled`: a cosine
    rescaled from the provider's floor, 0..1."""

    def order(hit: MemoryHit) -> tuple[bool, float]:
        weight = (
            no_answer_weight
            if hit.memory.id in unanswered
            else echo_weight_of(
                hit.memory,
                query,
                rescaled(hit.vector_similarity),
                echo_weight=echo_weight,
                same_meaning=same_meaning,
                no_answer_weight=no_answer_weight,
            )
        )
        return weight == 1.0 and hit.score >= floor, hit.score * weight

    return sorted(hits, key=order, reverse=True)
