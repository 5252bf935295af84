"""How memory text becomes full-text terms, the same way at index time and at query time.

One analyzer for every language, so mixed conversations need no per-document switch:

- Latin (and other alphabetic) words: lower-cased, English stop words dropped, Snowball
  English stems ("hiking", "hiked" → "hike"), digits kept ("10km").
- Chinese / Japanese / Korean runs: overlapping character bigrams ("黑咖啡" → "黑咖 咖啡"),
  a lone character kept as itself. This is Elasticsearch's `cjk` analyzer: it needs no
  dictionary, so a word the segmenter does not know ("星际穿越") is still found, and the
  query side makes the very same terms.

The index stores these terms in its own field (`MemoryField.SEARCH_TEXT`, no server-side
stemming); RediSearch scores them with BM25. Each memory also carries the language it is
written in (`detect_language`) for filters and display.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import snowballstemmer

Language = Literal["zh", "en"]

CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_TOKEN = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"[{CJK_RANGES}]")

ENGLISH_STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)
# Bigrams made only of function characters: they match nearly every Chinese sentence.
_CJK_FUNCTION_CHARS = frozenset("的了是在我你他她它们吗呢吧啊么和与也都就还这那个一有过着把被给对")
CJK_FUNCTION_CHARS = _CJK_FUNCTION_CHARS  # public: store/text/fact_sentences.py weighs terms by them too

MAX_QUERY_TERMS = 48
# what a search reads of its query, at most: the embedder reads its first 500 tokens (at most 2,000
# characters, store/models/embeddings.py) and the text ranking its first 48 terms. A 900,000-character
# chat message searched whole held the event loop 1.6 s (its time expressions and names looked for
# in all of it): other users' requests waited that long
MAX_QUERY_CHARS = 4000

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    stem: str = _stemmer.stemWord(word)  # snowballstemmer ships no types
    return stem


def detect_language(*texts: str) -> Language:
    """Chinese when the first text with letters has more Han characters than Latin words."""
    for text in texts:
        han = len(_HAN.findall(text or ""))
        latin = len(_LATIN_WORD.findall(text or ""))
        if han or latin:
            return "zh" if han > latin else "en"
    return "en"


def has_cjk(text: str) -> bool:
    return bool(_CJK_RUN.search(text))


def _terms(text: str, *, drop_function_bigrams: bool) -> list[str]:
    terms: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if _CJK_RUN.match(token):
            if len(token) == 1:
                terms.append(token)
                continue
            for start in range(len(token) - 1):
                bigram = token[start : start + 2]
                if drop_function_bigrams and set(bigram) <= _CJK_FUNCTION_CHARS:
                    continue
                terms.append(bigram)
        elif token not in ENGLISH_STOPWORDS:
            terms.append(_stem(token))
    return terms


def term_spans(text: str) -> list[tuple[str, int, int]]:
    """Each full-text term of `text` with the characters it comes from: (term, start, end).
    The same terms as `index_terms`, in order (but for the rare letter that lower-cases to two,
    as "İ"), with offsets into `text` itself; a Chinese bigram spans its two characters."""
    spans: list[tuple[str, int, int]] = []
    for match in _TOKEN.finditer(text):
        token, start = match.group(0).lower(), match.start()
        if _CJK_RUN.match(token):
            if len(token) == 1:
                spans.append((token, start, start + 1))
            spans.extend(
                (token[index : index + 2], start + index, start + index + 2) for index in range(len(token) - 1)
            )
        elif token not in ENGLISH_STOPWORDS:
            spans.append((_stem(token), start, match.end()))
    return spans


def index_terms(text: str) -> str:
    """The full-text terms of a stored memory, space-separated (what the index holds)."""
    return " ".join(_terms(text, drop_function_bigrams=False))


def query_terms(text: str) -> list[str]:
    """Distinct full-text terms of a query, in order, at most `MAX_QUERY_TERMS`."""
    unique = list(dict.fromkeys(_terms(text, drop_function_bigrams=True)))
    return unique[:MAX_QUERY_TERMS]


def term_coverage(query: str, text: str) -> float:
    """Share of the query's terms that the text contains (0..1)."""
    return term_coverage_of(query_terms(query), text)


def term_coverage_of(terms: Sequence[str], text: str) -> float:
    """Share of `terms` (a query's, `query_terms`) that the text contains (0..1)."""
    wanted = set(terms)
    if not wanted:
        return 0.0
    return len(wanted & set(_terms(text, drop_function_bigrams=False))) / len(wanted)


# the interrogatives a Chinese question is built of ("什么", "怎么", "多少", "哪里", "为何"): asking
# words, like the function characters, that two texts share without sharing a subject
CJK_QUESTION_CHARS = frozenset("什怎样哪谁几多少为何")


# light verbs: they carry the grammar of "How do I get to work?", "make a cake", "take the bus", not
# what is asked about (a closed class of the language, like its stop words); and the Han verbs of
# going and doing that open a bigram straddling the next word ("去上" of "去上班")
_LIGHT_VERBS_EN = frozenset(
    _stem(word)
    for word in (
        "get gets got getting go goes going went gone do does did doing done make makes made making take takes "
        "took taking taken have has had having put puts putting keep keeps kept keeping come comes came coming "
        "give gives gave given giving"
    ).split()
)
_LIGHT_HAN = frozenset("去来到做弄搞")


def _names_something(term: str) -> bool:
    """An English term (stop words are not terms) that is no light verb, or a Han bigram with a
    character that is neither a function character nor an interrogative ("动词", not "怎么" or "什么")."""
    if not _CJK_RUN.match(term):
        return term not in _LIGHT_VERBS_EN
    return not set(term) <= _CJK_FUNCTION_CHARS | CJK_QUESTION_CHARS


def holds_what_it_names(terms: Sequence[str], text: str) -> bool:
    """Whether the text holds every term of `terms` (a query's, `query_terms`) that names something
    (`_names_something`): "ramen" for "tell me about ramen", "alice" and "live" for "Where does Alice
    live?", "work" for "How do I get to work?" ("上班" for "我怎么去上班？": "去上" only straddles a
    light verb and the word after it); False when none of them names anything."""
    wanted = {term for term in terms if _names_something(term)}
    wanted -= {
        term
        for term in wanted
        if len(term) == 2 and term[0] in _LIGHT_HAN and any(other[0] == term[1] for other in wanted if other != term)
    }
    return bool(wanted) and wanted <= set(_terms(text, drop_function_bigrams=False))


_ENTITY_WORD = re.compile(r"^[A-Z][\w'’.-]*$")
# what stands around a query's words; (?<!…): the ending is tried once per run of such characters,
# not at each one (a message of one word, 200,000 spaces and another held the event loop for minutes)
_QUERY_EDGES = re.compile(r"^[\s\W_]+|(?<![\s\W_])[\s\W_]+$")


def is_short_entity_query(query: str) -> bool:
    """1–4 Han characters ("狗", "旺财", "张伟"), or one or two capitalized words (a name):
    embeddings of a bare name carry little meaning, so recall and forget judge such queries by
    their own threshold."""
    stripped = _QUERY_EDGES.sub("", query.strip())
    if not stripped:
        return False
    if _HAN.search(stripped):
        return 1 <= len(stripped) <= 4 and all(_HAN.match(char) for char in stripped)
    words = stripped.split()
    return 1 <= len(words) <= 2 and all(_ENTITY_WORD.match(word) for word in words)


_NAME_RUN = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$", re.I)
MAX_NAME_CANDIDATES = 200


def name_candidates(text: str) -> list[str]:
    """Every way the text could name a person, for a lookup against known speakers: each word
    and each pair of words (possessive "'s" dropped), and in Chinese each 2–6 character piece of a
    run ("朋友A", "小明"). Lower-cased, at most MAX_NAME_CANDIDATES; most name nobody."""
    words: list[str] = []
    candidates: dict[str, None] = {}
    for run in _NAME_RUN.findall(text):
        if _CJK_RUN.search(run):
            for length in range(2, 7):
                for start in range(len(run) - length + 1):
                    candidates[run[start : start + length].lower()] = None
            words = []
            continue
        word = _POSSESSIVE.sub("", run).lower()
        if not word:
            continue
        candidates[word] = None
        if words:
            candidates[f"{words[-1]} {word}"] = None
        words.append(word)
    return list(candidates)[:MAX_NAME_CANDIDATES]
