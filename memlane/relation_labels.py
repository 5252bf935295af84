"""How a link's predicate reads to a person, in both languages: "sister · 姐姐", "boss · 上司",
"lives in" (issue 53). The Chinese word is the first of the role words the rules read
(nodes/relation_rules.py `ROLE_PREDICATES`), so the picture and the rules share one table; a
predicate said in Chinese ("上司" kept as itself) reads as it is."""

from __future__ import annotations

from functools import cache

from memlane.nodes.relation_rules import ROLE_PREDICATES

_CJK_RANGE = ("\u3400", "\u9fff")


def _is_chinese(word: str) -> bool:
    return any(_CJK_RANGE[0] <= char <= _CJK_RANGE[1] for char in word)


@cache
def _chinese_words() -> dict[str, str]:
    """predicate -> its first Chinese role word."""
    words: dict[str, str] = {}
    for word, predicate in ROLE_PREDICATES.items():
        if _is_chinese(word):
            words.setdefault(predicate, word)
    return words


def predicate_label(predicate: str) -> str:
    """The predicate as words, with its Chinese role word beside where the rules know one."""
    english = predicate.replace("_", " ")
    if _is_chinese(predicate):
        return english
    chinese = _chinese_words().get(predicate)
    return f"{english} · {chinese}" if chinese else english


# the links the rules make besides roles (nodes/relation_rules.py), in Chinese
_CHINESE_LINKS = {"lives_in": "住在", "works_at": "工作于"}


def predicate_words(predicate: str, language: str) -> str:
    """The predicate as a reader of `language` reads it: "sister", "lives in"; "姐姐", "住在"
    (a predicate with no Chinese word the rules know reads as it is)."""
    if language != "zh" or _is_chinese(predicate):
        return predicate.replace("_", " ")
    return _chinese_words().get(predicate) or _CHINESE_LINKS.get(predicate) or predicate.replace("_", " ")


__all__ = ["predicate_label", "predicate_words"]
