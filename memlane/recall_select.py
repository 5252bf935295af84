"""Which search hits recall keeps, in which order, and what comes with each: search's ranking,
kept (issue 35). Pure functions over plain data, tested without Redis.

Recall's second stage, after the store's `fuse()`; each stage is a setting with its ablation
row in bench/model_sees.py:

1. **Order** (`recall_weight_*`): search's order value (`MemoryHit.score`, the measured chance
   that a hit holds what was asked, with the rankings' votes: store/fusion.py
   `calibrated_relevance`, which also orders search; every door shows `MemoryHit.relevance`, of
   the pair alone) times the layer's weight. The weights only order kinds against
   each other (a profile entry before the raw turn it came from).
2. **Floor** (`recall_min_relevance`, 0.02): a hit less likely than that to hold the answer
   leaves. One low floor, never relaxed and never weighted: evidence and the best hits of an
   off-topic request still overlap (bench/relevance_calibration.py: at 0.02, 90-97 % of the
   evidence hits and 24-36 % of the everyday requests' hits stay on the tuning halves), so the
   floor only keeps clearly unrelated hits out, and the depth is the item budget. The thresholds
   it replaced (0.5, 0.4, 0.3 on an uncalibrated relevance, the first that let any hit through)
   left 2 items of 8 on MemoryBank, 5 on LoCoMo, and cut relevant hits on every dataset.
2b. **Not about the user** (`recall_impersonal_min_relevance`, memlane/request_subject.py
   `refers_to_the_user`, `names_a_speaker`, `names_held`): a message that names neither the user nor their own
   ("Write a poem about the sea", "量子色动力学的渐近自由"; a request's framing, "help me", "帮我", does
   not count) nor anyone who speaks in their memories asks for no memory of theirs, so a hit
   needs that higher floor, unless it holds every word of the message that names something
   ("ramen" for "tell me about ramen", "Alice" and "live" for "Where does Alice live?":
   store/text/terms.py `holds_what_it_names`). Issue 48, item 3: such requests recalled two
   unrelated turns at 0.022-0.026. A message about the user or their world keeps the one low floor.
   A message about the world that names something a memory names too (`names_held`: capitalized
   words in a row, held whole, a quoted title's words its own) keeps only the hits holding that
   name (`holding_names`: "Who painted The Starry Night?" recalls where the user saw it, not their
   turns about painting), and an acronym it names must be held in capitals (`holds_acronyms`).
3. **Statement before echo** (`recall_echo_weight`, `recall_echo_similarity`; search orders its
   hits by the same rule, store/text/questions.py `echo_weight_of`): a question, the user's or
   the assistant's, that asks what the query asks, in its words (at most half of its
   terms new) or in others (its rescaled similarity to the query at least 0.6: "我在哪家公司上班？"
   for "我在哪里工作？"), is ordered at that weight: "what coffee does she drink again?" asked last
   week, or the assistant's "你是说你对什么过敏吗？", come after "I only drink black coffee." /
   "我对花生过敏。" A question that brings its own words ("I'm going to Kyoto, what should I pack?") keeps its place: on
   MemoryBank such questions are the evidence, and demoting every question cost its first item
   0.62 -> 0.57. An assistant's statement keeps its place too: "She drinks black coffee" and
   "I'm not sure what coffee she drinks" bring as many new words, and the pair of neighbours
   shows the user's turn beside it anyway.
   A message that holds no statement (`recall_unanswered_weight`, `unanswered`): a question
   whose reply only asks back or says it does not know, or such a reply, whatever its words
   ("我在哪家公司上班？" answered by "你在哪家公司上班？"), comes after the statements; an answered
   question keeps its place.
3b. **Newer first** (`recall_newer_first`, memlane/recall_changes.py): a newer statement that
   says a change of what a passing one stated takes that one's place, whatever its relevance.
4. **Exact term** (short entity queries, "张伟", "Marco Morelli"): a memory that holds the name
   verbatim stays whatever its relevance: a bare name's embedding carries little meaning.
5. **Fallback before nothing** (`recall_exact_fallback`): when no hit passes the floor, a
   candidate holding one of the query's exact terms (a code, a name, a quoted title, a Latin
   word inside Chinese: `exact_terms`) verbatim (a Latin word whole, a name as written, an acronym
   in capitals: `_verbatim`) gets one more chance, as cortex-mem's layered
   retrieval falls back to keywords; an everyday request names none, so it brings no noise back.
5b. **Depth** (`recall_max_memories`, in recall): the first items in that order, a message that
   an earlier item already shows as its neighbour merged into it.
6. **Neighbours** (`recall_neighbour_messages`, `recall_neighbour_mode`): a recalled message
   comes with its other half, "pair": a user's message with the assistant's answer after it, an
   assistant's answer with the user's message it answers, and a short turn between people
   (`search_embed_context_max_tokens`, the length under which the index embeds a turn with the
   one before it too) with the turn it replies to. "around": every message within the count on
   both sides, as before: each item then spends three turns of the reader's attention on one hit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from memlane.request_words import without_quotations
from memlane.store.hits import MemoryHit
from memlane.store.records import Memory, Message
from memlane.store.text.questions import echo_weight_of, holds_no_answer, is_asking
from memlane.store.text.terms import name_candidates
from memlane.store.text.tokens import count_tokens

NeighbourMode = Literal["pair", "around"]


def unanswered(memory: Memory, reply: Message | None) -> bool:
    """A message that holds no statement: an assistant's reply that only asks or does not know,
    or a question whose reply (`reply`: the assistant's next message) is one."""
    if memory.kind != "message":
        return False
    if memory.speaker_role == "assistant":
        return holds_no_answer(memory.text)
    return is_asking(memory.text) and reply is not None and reply.role == "assistant" and holds_no_answer(reply.content)


def ranked_hits(
    hits: Sequence[MemoryHit],
    weights: Mapping[str, float],
    floor: float,
    entity: str | None = None,
    query: str = "",
    echo_weight: float = 1.0,
    similarity_floor: float = 0.0,
    same_meaning: float = 1.0,
    no_answer_ids: frozenset[str] = frozenset(),
    no_answer_weight: float = 1.0,
    unnamed_floor: float | None = None,
    naming_ids: frozenset[str] = frozenset(),
    statements_first_floor: float = 1.0,
) -> list[MemoryHit]:
    """Stages 1-4: the hits above the relevance `floor` (or holding `entity`, a short entity
    query, verbatim), ordered by rank fusion times their kind's weight (`weights`, by kind;
    1 for a kind it lacks), times `echo_weight` for one that repeats `query` (`same_meaning`:
    see `repeats_the_query`; `similarity_floor`: the provider's cosine of unrelated texts), or
    `no_answer_weight` for one of `no_answer_ids` (`unanswered`: a question nobody answered, or
    a reply that only asks back). `unnamed_floor`: the floor instead of `floor` for a hit not
    among `naming_ids` (stage 2b: a message not about the user, and a hit that does not hold all
    it names). A statement scored at least `statements_first_floor` comes before every hit ordered
    at `no_answer_weight` whatever its score (search's rule: store/redis/search.py). Stable: equal
    ranks keep search's order."""

    def rescaled(hit: MemoryHit) -> float:
        return (hit.vector_similarity - similarity_floor) / (1.0 - similarity_floor) if similarity_floor < 1.0 else 0.0

    def holds_entity(hit: MemoryHit) -> bool:
        if not entity:
            return False
        return entity.casefold() in " ".join(hit.memory.text.split()).casefold()

    def order(hit: MemoryHit) -> tuple[bool, float]:
        silent = hit.memory.id in no_answer_ids
        echo = (
            no_answer_weight
            if silent
            else echo_weight_of(
                hit.memory,
                query,
                rescaled(hit),
                echo_weight=echo_weight,
                same_meaning=same_meaning,
                no_answer_weight=no_answer_weight,
            )
        )
        silent = silent or (
            no_answer_weight < 1.0 and hit.memory.speaker_role == "assistant" and holds_no_answer(hit.memory.text)
        )
        return not silent and hit.score >= statements_first_floor, hit.score * weights.get(hit.memory.kind, 1.0) * echo

    def passes(hit: MemoryHit) -> bool:
        needed = unnamed_floor if unnamed_floor is not None and hit.memory.id not in naming_ids else floor
        return hit.score >= needed or holds_entity(hit)

    kept = [hit for hit in hits if passes(hit)]
    return sorted(kept, key=order, reverse=True)


def newer_first(
    passing: Sequence[MemoryHit], candidates: Sequence[MemoryHit], changes: Mapping[str, Sequence[str]]
) -> list[MemoryHit]:
    """Stage 3b (`recall_newer_first`, memlane/recall_changes.py): each newer statement of
    `changes` (its id -> the ids of the older ones it changes) takes the place of the first of
    those older ones that passed, whatever its own relevance; `passing` keeps its order. A newer
    statement whose older ones did not pass is shown only if it passed itself: appended, it put
    an item in the section for 45 % of the requests about nothing the user said (bench/off_topic.py,
    MemoryBank en), where the pair the rule finds is two everyday turns."""
    if not changes:
        return list(passing)
    by_id = {hit.memory.id: hit for hit in [*candidates, *passing]}
    before: dict[str, MemoryHit] = {}  # an older statement's id -> the newer hit shown before it
    for newer_id, older_ids in changes.items():
        older = set(older_ids)
        first = next((hit.memory.id for hit in passing if hit.memory.id in older), None)
        if newer_id in by_id and first is not None:
            before.setdefault(first, by_id[newer_id])
    moved = {hit.memory.id for hit in before.values()}
    ordered: list[MemoryHit] = []
    for hit in passing:
        if hit.memory.id in before:
            ordered.append(before[hit.memory.id])
        if hit.memory.id not in moved:
            ordered.append(hit)
    return ordered


# what an exact-term fallback looks for: a code or a word with digits ("A320", "KX-88", "2024"),
# a capitalized word inside the sentence (a name: "Caroline", "Pixel"), a quoted or titled
# phrase ("《星际穿越》", "“龙井”"), or a Latin word inside Chinese ("iPhone"). A code or a word
# before Chinese is at most 40 characters: each place it may start is tried over those 40, not to
# the end of the run of letters (200,000 letters took minutes, and held the event loop)
_CODE = re.compile(r"\b(?=[\w-]{0,39}\d)[A-Za-z0-9][\w-]{2,39}\b")
_NAME = re.compile(r"(?<=[\w,;:] )[A-Z][a-z]{2,}(?:\s[A-Z][a-z]+)*|\b[A-Z]{2,}\b")
_QUOTED = re.compile(r"[《“\"「『']([^》”\"」』']{1,20})[》”\"」』']")
_TITLED = re.compile(r"《([^》]{1,20})》")
_LATIN_IN_HAN = re.compile(
    r"(?<=[\u3400-\u9fff])\s*([A-Za-z][A-Za-z0-9-]{1,})|(?<![A-Za-z])([A-Za-z][A-Za-z0-9-]{1,39})\s*(?=[\u3400-\u9fff])"
)


def names_a_speaker(message: str, hits: Sequence[MemoryHit]) -> bool:
    """Whether the message names someone who speaks in the hits ("What did Caroline research?")."""
    speakers = {hit.memory.speaker.casefold() for hit in hits if hit.memory.speaker}
    return bool(speakers) and any(candidate in speakers for candidate in name_candidates(message))


def names_held(message: str, hits: Sequence[MemoryHit]) -> frozenset[tuple[str, ...]]:
    """The names of the message (`_name_runs`, outside quotation marks) that some hit holds as a
    name too (`_same_name`): ("alice",) for "Where does Alice live?" beside "my sister Alice"."""
    names = [name for name, _ in _name_runs(without_quotations(message))]
    if not names:
        return frozenset()
    held = [run for hit in hits if hit.memory.text for run in _name_runs(hit.memory.text)]
    return frozenset(name for name in names if any(_same_name(name, run) for run in held))


# an acronym: capitals only, two or more ("WHO", "NASA", "US"), in a message not written in capitals
_ACRONYM = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2,}(?![A-Za-z0-9])")


def holds_acronyms(message: str, text: str) -> bool:
    """Whether `text` holds, in capitals, every acronym of the message outside quotation marks: a
    request not about the user that names "the WHO" asks about it, whatever other words of it a
    memory holds (issue 48, item 3: "What does the WHO do, and when was it founded?" recalled
    turns holding "found", its only other word that names something, on 8 of 8 locomo-dev users)."""
    return all(pattern.search(text) for pattern in _acronyms_of(message))


@functools.lru_cache(maxsize=64)
def _acronyms_of(message: str) -> tuple[re.Pattern[str], ...]:
    """The message's acronyms as patterns (none for a message in capitals), read once per message,
    not once per hit recall weighs."""
    if message.isupper():
        return ()
    found = dict.fromkeys(_ACRONYM.findall(without_quotations(message)))
    return tuple(re.compile(rf"(?<![A-Za-z0-9]){acronym}(?![A-Za-z0-9])") for acronym in found)


def holding_names(hits: Sequence[MemoryHit], names: frozenset[tuple[str, ...]]) -> list[MemoryHit]:
    """The hits that hold one of `names` as a name (`names_held`), in their order. A message about
    neither the user nor anyone who speaks in their memories, naming something a memory names too
    ("Who painted The Starry Night?", "What is the capital of New Zealand?"), asks about that thing:
    what is said of it may come along, not the memories its other words are near (issue 48, item 3:
    the sixth and seventh sets' requests naming a painting, the Earth or New Zealand recalled
    turns about painting and the weather)."""
    return [
        hit
        for hit in hits
        if hit.memory.text and any(_same_name(name, run) for run in _name_runs(hit.memory.text) for name in names)
    ]


# a name: capitalized words in a row, the first not starting a sentence ("Alice", "New Zealand",
# "Starry Night" of "Who painted The Starry Night?"); a leading article is grammar, not the name
_NAME_RUN = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z][\w'’-]*(?:[ \t]+[A-Z][a-z][\w'’-]*)*")
_ARTICLES = frozenset(("the", "a", "an"))
# what a text quotes: a name inside is a title ("The Wandering Earth", "You Shook Me All Night Long")
_QUOTED_SPAN = re.compile(r"“[^”]{0,400}”|\"[^\"]{0,400}\"|「[^」]{0,400}」|『[^』]{0,400}』|《[^》]{0,400}》")


def _name_runs(text: str) -> list[tuple[tuple[str, ...], bool]]:
    """The names of `text` (`_NAME_RUN`), each its words casefolded, a possessive and a leading
    article aside, with whether it stands inside quotation marks (a title: "The Wandering Earth"
    and "You Shook Me All Night Long" name a film and a song, not the Earth or a night)."""
    text = text.strip()
    spans = [match.span() for match in _QUOTED_SPAN.finditer(text)]
    runs = []
    for match in _NAME_RUN.finditer(text):
        words = [word.casefold().removesuffix("'s").removesuffix("’s") for word in match.group().split()]
        while len(words) > 1 and words[0] in _ARTICLES:
            words.pop(0)
        runs.append((tuple(words), any(first <= match.start() < last for first, last in spans)))
    return runs


def _same_name(name: tuple[str, ...], held: tuple[tuple[str, ...], bool]) -> bool:
    """Whether a memory's name `held` (with whether it is quoted) is the message's `name`: the same
    words, or one of them a single word of the other ("Alice" of "Alice Chen"), where the memory's
    is not a quoted title (whose words are its own: "Earth" is not "The Wandering Earth")."""
    words, quoted = held
    if words == name:
        return True
    if quoted:
        return False
    return (len(name) == 1 and name[0] in words) or (len(words) == 1 and words[0] in name)


def exact_terms(query: str, *, mentions: bool = True) -> list[str]:
    """The terms of `query` an exact-term fallback searches for verbatim (see the patterns above);
    [] for a query with none (most everyday requests). `mentions` False: a word in quotation marks
    is not one (a request not about the user mentions it: 'three synonyms for "happy"', '“早上好”用
    德语怎么说'), a title in 《》 and a code or a name still are."""
    quoted = _QUOTED.findall(query) if mentions else _TITLED.findall(query)
    found = [*_CODE.findall(query), *_NAME.findall(query), *quoted]
    found += [left or right for left, right in _LATIN_IN_HAN.findall(query)]
    terms = list(dict.fromkeys(term.strip() for term in found if len(term.strip()) >= 2))
    return [term for term in terms if not any(term != other and term in other for other in terms)]  # "KX" of "KX-88"


def exact_term_hits(candidates: Sequence[MemoryHit], terms: Sequence[str]) -> list[MemoryHit]:
    """Stage 7, the fallback before nothing (`recall_exact_fallback`): when no hit passed the floor,
    the candidates that hold one of `terms` verbatim (case and spacing aside), in search's order."""
    patterns = [_verbatim(term) for term in terms]
    return [hit for hit in candidates if any(pattern.search(" ".join(hit.memory.text.split())) for pattern in patterns)]


def _verbatim(term: str) -> re.Pattern[str]:
    """`term` as the fallback finds it: spacing aside; a Latin word whole, not inside another ("Sun"
    is not "sunset", "Moon" not "honeymoon"), though with a plural or a possessive ("Friday" is in
    "closes at 6 pm on Fridays"); a code in any case ("kx-88"); a name as it is
    written, capitalized, since the same word in lower case is the common noun ("the Sun" is not
    "sat in the sun", "Apple" not "an apple"), and an acronym in capitals ("US" is not "us", which
    8 of 10 English turns hold inside "just" or "discuss"); inside Han text as it stands (Chinese
    has no spaces between words)."""
    spaced = r"\s+".join(re.escape(part) for part in term.split())
    edges = r"(?<![A-Za-z0-9])" if term[:1].isascii() and term[:1].isalnum() else ""
    ends = r"(?:e?s|['’]s)?(?![A-Za-z0-9])" if term[-1:].isascii() and term[-1:].isalnum() else ""
    named = term[:1].isascii() and term[:1].isupper() and not any(character.isdigit() for character in term)
    return re.compile(edges + spaced + ends, 0 if named else re.IGNORECASE)


def answer_pair(
    around: Sequence[Message], hit_id: str, short_tokens: int, encoding: str = "cl100k_base"
) -> list[Message]:
    """Stage 6, "pair": the recalled message `hit_id` with its other half, out of the messages
    `around` it (in order, the hit included): the assistant's answer after a user's message, the
    user's message before an assistant's answer, the turn before a turn of at most
    `short_tokens` tokens between people. Just the hit when it has none; [] when it is not there."""
    index = next((index for index, message in enumerate(around) if message.id == hit_id), None)
    if index is None:
        return []
    hit = around[index]
    before = around[index - 1] if index > 0 else None
    after = around[index + 1] if index + 1 < len(around) else None
    if hit.role == "assistant":
        return [before, hit] if before is not None and before.role == "user" else [hit]
    if after is not None and after.role == "assistant":
        return [hit, after]
    if before is not None and short_tokens and count_tokens(hit.content, encoding) <= short_tokens:
        return [before, hit]
    return [hit]


def neighbours_shown(
    around: Sequence[Message], hit_id: str, mode: NeighbourMode, short_tokens: int, encoding: str = "cl100k_base"
) -> list[Message]:
    """The messages an item shows for the recalled message `hit_id`: its pair, or all `around` it."""
    if mode == "around":
        return list(around) if any(message.id == hit_id for message in around) else []
    return answer_pair(around, hit_id, short_tokens, encoding)
