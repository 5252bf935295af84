"""The part of a long text that answers a query, inside a token cap.

Recall gives each memory a share of its budget. A memory longer than its share is cut to a
window around the passage that matches the query, found with the search's own text analysis
(`store/text/terms.py`: stems in English, character bigrams in Chinese, which needs no spaces), so
"龙井" at the end of a long message survives the cut. Each cut is marked with "…". Without a
matching term the window is the text's beginning, as a reader would skim it.

Scoring a window: each distinct query term it holds counts 1/sqrt(times the term occurs in the
whole text), so a word the text repeats everywhere does not pull the window, and a rare one
does; a run of matches inside a question counts half. The best window is then placed around
its tightest run of matches, with more room after the run than before it.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter

from memlane.store.text.terms import query_terms, term_spans
from memlane.store.text.tokens import count_tokens, get_encoding

CUT_MARK = "…"

# Question words are query terms but no sign of the answer: they leave the query first
# (English ones are stop words already), and a run of matches inside a question counts half.
_QUESTION_WORDS = re.compile(
    "什么|哪里|哪儿|哪个|哪些|哪天|怎么|怎样|为什么|多少|几个|几点|几次|是不是|是否|有没有|吗|呢"
)
_SENTENCE_END = re.compile(r"[。！？!?\n]|\.(?:\s|$)")
# how far past a run of matches its sentence's end is looked for (a run whose sentence goes on
# longer is not taken for a question), and how many windows are weighed at most: a pasted text of
# 200,000 characters and no sentence end held 48,000 matches, each looking to the text's end, and
# held the event loop for a minute and a half
_SENTENCE_REACH = 1_000
_MOST_WINDOWS = 2_000


def answering_passage(text: str, query: str, max_tokens: int, encoding: str = "cl100k_base") -> str:
    """`text` itself when it fits `max_tokens`; otherwise the window of it that best matches
    `query`, with "…" where it was cut (the marks count towards `max_tokens`)."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text, encoding) <= max_tokens:  # most do: a short text's count is kept
        return text
    tokenizer = get_encoding(encoding)
    tokens = tokenizer.encode(text, disallowed_special=())
    _, offsets = tokenizer.decode_with_offsets(tokens)
    room = max(1, max_tokens - 2 * count_tokens(CUT_MARK, encoding))
    matches = _matches(text, query)
    first, centre = _best_window(text, matches, offsets, room) if matches else (0, 0.0)
    return _cut(text, offsets, first, room, max_tokens, centre, encoding)


def _matches(text: str, query: str) -> list[tuple[str, int, int]]:
    """The text's terms that the query asks for, with their characters, in order."""
    wanted = set(query_terms(_QUESTION_WORDS.sub(" ", query)))
    return [span for span in term_spans(text) if span[0] in wanted]


def _best_window(text: str, matches: list[tuple[str, int, int]], offsets: list[int], room: int) -> tuple[int, float]:
    """The first token of the `room`-token window holding the most (rarity-weighted) query terms,
    the tightest such run of matches when several hold as much, with the window shifted so
    that the run sits a third of the way in; and the run's centre (a character position)."""
    occurrences = Counter(term for term, _, _ in matches)
    weight = {term: 1 / math.sqrt(count) for term, count in occurrences.items()}
    last_start = max(0, len(offsets) - room)

    def token_at(char: int) -> int:
        return max(0, bisect_right(offsets, char) - 1)

    best: tuple[float, int] | None = None
    run = (matches[0][1], matches[0][2])
    step = -(-len(matches) // _MOST_WINDOWS)  # a window at every match, or every step-th of very many
    for index in range(0, len(matches), step):  # the best window starts at one of the matches
        match_start = matches[index][1]
        start = min(token_at(match_start), last_start)
        end = offsets[start + room] if start + room < len(offsets) else len(text)
        held: set[str] = set()
        run_end = match_start
        for term, first, last in matches[index:]:
            if last > end:
                break
            if first >= offsets[start] and term not in held:
                held.add(term)
                run_end = last
        asked = _SENTENCE_END.search(text, run_end, run_end + _SENTENCE_REACH)
        in_question = asked is not None and asked.group(0) in "?？"
        # more terms, outside a question, then a tighter run
        rank = (sum(weight[term] for term in held) * (0.5 if in_question else 1.0), match_start - run_end)
        if best is None or rank > best:
            best, run = rank, (match_start, run_end)
    span_first, span_last = token_at(run[0]), token_at(run[1] - 1)
    slack = room - (span_last - span_first + 1)
    # a third of the slack before the run, two after: what answers tends to follow the words that name it
    return min(max(0, span_first - slack // 3), last_start), (run[0] + run[1]) / 2


def _cut(
    text: str,
    offsets: list[int],
    first: int,
    room: int,
    max_tokens: int,
    centre: float,
    encoding: str,
) -> str:
    """The window's characters, marked where cut; trimmed a character at a time on the side away
    from the passage's centre while re-encoding the piece costs more than `max_tokens` (token and
    character boundaries need not agree in Chinese)."""
    start = offsets[first]
    end = offsets[first + room] if first + room < len(offsets) else len(text)

    def render(start: int, end: int) -> str:
        piece = text[start:end].strip()
        return (CUT_MARK if start > 0 else "") + piece + (CUT_MARK if end < len(text) else "")

    piece = render(start, end)
    while end > start and count_tokens(piece, encoding) > max_tokens:
        if start > 0 and centre - start > end - centre:
            start += 1
        else:
            end -= 1
        piece = render(start, end)
    return piece
