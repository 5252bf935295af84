"""Current before stale with no memory run (issue 35, item 3; issue 48, item 1): a newer
statement of the user's that says a change of what an older one stated comes first, and the
older one is shown as earlier, dated until the newer one was said.

Pure functions over plain data, tested without Redis; `memlane/recall.py` applies them to the
search hits and their stored vectors. A memory run does this with a model (the merge step's
UPDATE marks the replaced entry and its turns); between runs only raw turns exist. No list of
states says what changes (a person's life has no list: home, job, phone, car, pet, doctor,
language…). General signs say it instead:

- **the query asks how things stand**: not about something that happened (a past tense, "before",
  "used to", a date; "以前", "曾经", the aspects 了 and 过 in the query): then the older statement
  may be what it asks for, and it is answered as it is. In a question in the present ("do",
  "is"…, no "did", "was") "when" asks when something is ("When does my book club meet?"), and a
  past form that is also the base is the base ("Where does my son get his hair cut?");
- **the query selects** the older statement: of a speaker's statements (turns that are not
  questions, event cards and profile lines, none already replaced, none the assistant's), the one
  the query is nearest and those within `SELECT_BAND` of it, at most `SELECTED`;
- **the newer one says that something happened or changed**, in the grammar any change is said
  with, whatever changed: words that end or replace a state ("moved", "switched", "no longer",
  "instead"; "换", "改", "不再"); or, unless it only adds to a state ("also", "too"; "也"),
  words that begin one ("now", "started"; "现在", "开始"), a verb in the past tense ("Treated
  myself to a Pixel"), the aspect 了 ("入手了一台"), or the present as a time ("at the moment",
  "this year"; "最近", "这段时间"); or it denies a word only the two share ("no tomatoes"); or,
  beside a word only the two share, it gives a number the older one did not ("I weigh about 92
  kilos." then "Down to 84 kilos after three months of cutting sugar!"): the same thing, another
  value. "too" and "as well" add only where they close a clause ("Joined a yoga class too."), not
  before what they qualify ("Greenway got too pricey");
- **what the question asks for** (its grammar, not its topic: `asks_for`) weighs those signs. A
  question that asks for one value ("Which ride app do I use?", "Who walks our dog?", "我在哪家药店
  买药？") takes a plain restatement of another value as a change, with no word of change ("Lyft is
  cheaper around here so that's my go-to for rides." after "I use Uber whenever I need a ride.")
  when the older statement is the newer one's nearest earlier one, the newer one does not say it
  adds, and it names no word of the older one outside the question (that is the same value again:
  "Boston is lovely in the autumn."). A question that asks for several ("What plants do I have?",
  "我们家有哪些会员卡？") takes only an end or a replacement, or a change beside the old value named
  again ("I see Dr. Morgan for my teeth now, Patel retired."): what begins beside the others adds
  to them ("Picked up two snake plants for the bedroom.");
- **the two are about one thing**: the newer one is the older one's nearest statement, vector to
  vector (restatements of the same turn aside), and the query selects it too (within
  `ANSWER_BAND`); or they share a word no other turn of the speaker's holds (a name: "St Mary's",
  "京东") and are nearer each other than the older one is to its average statement;
- a newer statement changes one older statement: the one it is nearest (a shared word first);
  one clearly nearer (`ANOTHER_NEARER`) another earlier statement than the one the query selected
  changes that one ("The goldfish are gone; we have a turtle now." leaves "We adopted a cat named
  Milo." current); that statement's event card and profile line are earlier with it;
- **the query selects the newer one** (it is the speaker's best statement, or within
  `SELECT_BAND`), and the older one is the next of the `SELECTED` the query ranks first, within
  `ANSWER_BAND`: the newer one changes it when it is the newer one's nearest earlier statement,
  they share a word no other turn holds, and the newer one says a change as above ("Firefox is my
  browser now, Chrome was eating all my RAM." then "I use Chrome for everything.", 0.04 apart for
  "Which browser do I use?"); or, where the question asks for one value and the newer one plainly
  restates another, the two are each the other's nearest statement ("My therapist is Linda Chen"
  then "I see Dr. Okafor for therapy", 0.036 apart for "Who am I seeing for therapy?"). Only the
  query's first two: from any statement the query selects to its nearest earlier one sharing a
  word, MemoryBank's long everyday turns paired ("Hi, friend!", "time") and its recall memory
  section R@10 fell 0.978 -> 0.973 (en).

Tried and taken out (issue 48, seventh session): pairing two statements that are each other's
nearest across time whatever the query selects, and reading 了 before a question word
("我们家养了哪些宠物？") as asking how things stand. On the fifth set they took the stale statements
shown as current from 5 to 4 (en) and 1 to 0 (zh), and cost MemoryBank's recall memory section
R@10 0.989 -> 0.974 (zh) and 0.978 -> 0.973 (en), and more additions marked earlier. Tried and
taken out (eighth session): reading a form in -ed after a present auxiliary as a participle ("Where
do I get my car serviced?" asks how things stand): two fifth-set questions right, but the rule then
ran on LoCoMo questions such as "What is she interested in?" and its section's R@1 fell 0.340 -> 0.336.

The newer statement need not pass the relevance floor itself ("What is my job?" is far from "I
quit the hospital and started as a teacher"): it takes the place of an older one that passed,
and the older one follows it marked earlier (memlane/recall.py `earlier_last`), so a wrong guess
costs it no place. When no older one passed, nothing is added (memlane/recall_select.py
`newer_first`): the rule pairs everyday turns for a request about nothing the user said.

The question's number (tenth session, 7b36b8e): on the six sets run before it (250 changes, 64
additions, all spent), current first 230 -> 231, stale shown as current 27 -> 25, additions marked
earlier 30 -> 16; on the sixth set alone (its first try 75 % en, 90 % zh), 95 % and 100 %. The
seventh set, written after it, first try 75 % / 79 % (67 % / 79 % before). With the present-tense
"when", 哪 and the nearest pair (7209527): 232, 24, 17 on those six; the eighth set, written after
it, first try 85 % / 81 % (77 % / 81 % with the rule before the session).

Eleventh session: the ninth set first try 81 % / 88 % (now 92 % / 92 %), the tenth 92 % / 88 %
(now 100 % / 88 %); the query's own pair (`_query_pair`) and the readings of memlane/change_grammar.py,
where the grammar of a change lives (what says an end, a beginning, an addition; what a question asks for).

Bench: bench/raw_changes.py and bench/raw_changes_third.py to raw_changes_tenth.py (run by
bench/changing_facts.py): sets written after the rule was frozen, first try printed, and additions
(both statements hold).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memlane.change_grammar import (
    adds_to,
    asks_about_the_past,
    asks_for,
    change_said,
    content_terms,
    gives_another_number,
    negates,
    restates_another_value,
)
from memlane.store.hits import MemoryHit
from memlane.store.records import Memory
from memlane.store.text.questions import is_asking

SELECTED = 2  # at most this many of a speaker's statements the query selects are looked at
SELECT_BAND = 0.03  # cosine below the speaker's best statement that the query still selects
NEAREST = 1  # the newer statement is among this many nearest of the older one's
ANSWER_BAND = 0.08  # ... and the query selects it too: its cosine at most this below the speaker's best
SHARED_NEARER = 0.0  # a shared word counts when the two are this many deviations nearer than the average
SHARED_WORD = 0.1  # what a shared content word adds to the nearness of two statements
ANOTHER_NEARER = 0.05  # a newer statement this much nearer another earlier statement changes that one, not the selected
MIN_GAP = 3_600.0  # seconds between the two: a sentence and the next one of the same turn pair no change
PAIR_GAP = 0.05  # the query's first two statements are its pair when the third is this far below the second


def states_something(memory: Memory) -> bool:
    """A memory that states something and still holds: a turn whose last sentence does not ask, an event
    card or a profile line that no newer fact replaced."""
    if memory.valid_until is not None or memory.kind not in ("message", "event", "profile"):
        return False
    if memory.speaker_role == "assistant":  # what the assistant said is no state of anyone's
        return False
    return memory.kind != "message" or not is_asking(_last_sentence(memory.text))


_ENDS = ".!?。！？"


def _last_sentence(text: str) -> str:
    """A turn's last sentence: a question before it is a surprise or an aside, what follows states
    ("got a letter that our loan was sold to Mr. Cooper?? had to set up autopay all over again")."""
    text = text.strip()
    body = text.rstrip(_ENDS + " \t\n")
    start = max(body.rfind(end) for end in _ENDS) + 1
    return text[start:]


def _who(memory: Memory) -> tuple[str, str]:
    """Whose statement: a turn its speaker's; an event card or a profile line the user's."""
    if memory.kind != "message":
        return "owner", ""
    return memory.speaker_role, (memory.speaker or "").casefold()


@dataclass(frozen=True)
class Change:
    """A newer statement, and the older ones of the same speaker it says something else about."""

    memory: Memory
    stale_memory_ids: tuple[str, ...]  # searched messages and event cards
    stale_profile_ids: tuple[str, ...]  # profile entries (their ids)

    @property
    def at(self) -> float:
        return self.memory.created_at


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _nearest_earlier(group: Sequence[MemoryHit], pairs: np.ndarray, column: int) -> int:
    """The statement said at least `MIN_GAP` before `column`'s that is nearest it (-1: none)."""
    at = group[column].memory.created_at
    earlier = [
        index
        for index, hit in enumerate(group)
        if at - hit.memory.created_at >= MIN_GAP and np.isfinite(pairs[column, index])
    ]
    return max(earlier, key=lambda index: float(pairs[column, index]), default=-1)


def _nearer_than_average(row: np.ndarray, column: int) -> bool:
    """Whether `column` is nearer than the row's average statement (of at least two others)."""
    finite = row[np.isfinite(row)]
    return len(finite) > 1 and bool(row[column] > finite.mean() + SHARED_NEARER * finite.std())


def _nearer_another(
    group: Sequence[MemoryHit], pairs: np.ndarray, sources: Sequence[set[str]], column: int, index: int
) -> bool:
    """Whether `column`'s statement is clearly nearer (by `ANOTHER_NEARER`) an earlier statement
    other than `index`'s and its restatements: then that one is what it changes ("The goldfish
    are gone; we have a turtle now." changes "We keep two goldfish.", not "We adopted a cat")."""
    other = _nearest_earlier(group, pairs, column)
    if other < 0 or sources[other] & sources[index]:
        return False
    return bool(pairs[column, other] - pairs[column, index] > ANOTHER_NEARER)


def _query_pair(
    query: str,
    group: Sequence[MemoryHit],
    pairs: np.ndarray,
    sources: Sequence[set[str]],
    paired: dict[str, tuple[Memory, float]],
    newest: dict[str, Memory],
) -> None:
    """The query's own pair: where it ranks two statements of a speaker first, both within
    `ANSWER_BAND` of each other and the third `PAIR_GAP` below the second, the query says the two
    are about one thing, where they are near each other at all: short statements of one speaker
    sit about as near an unrelated one ("cancelled that and got Max instead" to "I pay for
    Netflix…" as to "I quit video games"), so neither need be the other's nearest. The newer one
    changes the older where it says a change, or plainly restates another value."""
    if len(group) < 3 or group[0].vector_similarity - group[1].vector_similarity > ANSWER_BAND:
        return
    if group[1].vector_similarity - group[2].vector_similarity < PAIR_GAP or sources[0] & sources[1]:
        return
    older_index, newer_index = sorted((0, 1), key=lambda index: group[index].memory.created_at)
    older, newer = group[older_index].memory, group[newer_index].memory
    if newer.kind != "message" or newer.id in paired or newer.created_at - older.created_at < MIN_GAP:
        return
    # still near: the newer one nearer the older than its average statement, and the older one not
    # clearly nearer (by `ANOTHER_NEARER`) another statement than the newer one
    if not _nearer_than_average(pairs[newer_index], older_index):
        return
    if float(np.max(pairs[older_index])) - float(pairs[older_index, newer_index]) > ANOTHER_NEARER:
        return
    if change_said(query, older.text, newer.text) or restates_another_value(query, older.text, newer.text):
        paired[newer.id] = (older, float(pairs[newer_index, older_index]))
        newest[newer.id] = newer


def newest_changes(query: str, hits: Sequence[MemoryHit], vectors: Mapping[str, np.ndarray]) -> list[Change]:
    """The newer statements among `hits` (the search's candidates, with the query's cosine
    similarity each) that say something else about a statement the query selects, with the
    statements they make earlier; [] for a query about the past. `vectors`: the hits' stored
    vectors by memory id (a hit without one takes no part)."""
    if asks_about_the_past(query):
        return []
    groups: dict[tuple[str, str], list[MemoryHit]] = {}
    for hit in hits:
        if states_something(hit.memory) and hit.memory.id in vectors:
            groups.setdefault(_who(hit.memory), []).append(hit)
    # another number beside the others, where the question asks for several ("plot 31 too"), adds; for
    # one value another number is another value ("儿子又蹿了一截，昨天量了125")
    several = asks_for(query) == "several"
    paired: dict[str, tuple[Memory, float]] = {}  # newer statement id -> the older one it changes, how near
    newest: dict[str, Memory] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        group = sorted(group, key=lambda hit: -hit.vector_similarity)
        best = group[0].vector_similarity
        units = np.stack([_unit(np.asarray(vectors[hit.memory.id], dtype=np.float32)) for hit in group])
        pairs = units @ units.T
        sources = [set(hit.memory.source_message_ids) or {hit.memory.id} for hit in group]
        for row, mine in enumerate(sources):  # itself, and what restates the same turn (its card, its entry)
            pairs[row, [column for column, theirs in enumerate(sources) if mine & theirs]] = -np.inf
        terms = [content_terms(hit.memory.text) for hit in group]
        said = Counter(  # in how many turns (a turn's card and profile line restate it: counted once)
            term
            for source in {min(mine): index for index, mine in enumerate(sources)}.values()
            for term in terms[source]
        )
        terms = [{term for term in mine if said[term] <= 2} for mine in terms]  # a word only the two share
        selected = [index for index, hit in enumerate(group[:SELECTED]) if hit.vector_similarity >= best - SELECT_BAND]
        for index in selected:
            older = group[index].memory
            near = set(np.argsort(-pairs[index])[:NEAREST].tolist())
            row = pairs[index][np.isfinite(pairs[index])]
            nearer = (  # nearer than its average statement (of one other: that one)
                pairs[index] > row.mean() + SHARED_NEARER * row.std() if len(row) > 1 else np.isfinite(pairs[index])
            )
            for column, other in enumerate(group):
                shared = bool(terms[index] & terms[column])
                if (
                    nearer[column]
                    and other.memory.kind == "message"
                    and other.memory.created_at - older.created_at >= MIN_GAP
                    and pairs[index, column] > -np.inf
                    and (shared or (column in near and other.vector_similarity >= best - ANSWER_BAND))
                    and (
                        change_said(query, older.text, other.memory.text)
                        or (  # a plain restatement: the older one the newer one's nearest earlier statement
                            restates_another_value(query, older.text, other.memory.text)
                            and _nearest_earlier(group, pairs, column) == index
                        )
                        or (shared and negates(other.memory.text) and not adds_to(other.memory.text))
                        or (
                            shared
                            and gives_another_number(older.text, other.memory.text)
                            and not (several and adds_to(other.memory.text))
                        )
                    )
                    and (shared or not _nearer_another(group, pairs, sources, column, index))
                ):
                    strength = float(pairs[index, column]) + (SHARED_WORD if shared else 0.0)
                    if strength > paired.get(other.memory.id, (None, -np.inf))[1]:
                        paired[other.memory.id] = (older, strength)
                        newest[other.memory.id] = other.memory
        for column in selected:  # the query selects the newer one: the next of its first ones it changes
            newer = group[column].memory
            index = _nearest_earlier(group, pairs, column)
            if not (
                newer.kind == "message"
                and newer.id not in paired
                and 0 <= index < SELECTED
                and group[index].vector_similarity >= best - ANSWER_BAND
            ):
                continue
            older_text = group[index].memory.text
            plain = restates_another_value(query, older_text, newer.text)
            if (
                terms[index] & terms[column]
                and _nearer_than_average(pairs[column], index)
                and (
                    change_said(query, older_text, newer.text)
                    or plain
                    or (negates(newer.text) and not adds_to(newer.text))
                    or (gives_another_number(older_text, newer.text) and not (several and adds_to(newer.text)))
                )
            ) or (  # or, plainly restated, each the other's nearest
                plain and int(np.argmax(pairs[index])) == column and _nearer_than_average(pairs[column], index)
            ):
                shared = bool(terms[index] & terms[column])
                paired[newer.id] = (group[index].memory, float(pairs[column, index]) + (SHARED_WORD if shared else 0.0))
                newest[newer.id] = newer
        _query_pair(query, group, pairs, sources, paired, newest)
    # a newer statement changes one older statement: the one it is nearest (a shared word first)
    later: dict[str, tuple[Memory, list[Memory]]] = {
        newer_id: (newest[newer_id], [older]) for newer_id, (older, _) in paired.items()
    }
    # a turn's id -> the statements of it (the turn, its event card, its profile line)
    restating: dict[str, list[Memory]] = {}
    for hit in hits:
        for source in hit.memory.source_message_ids or [hit.memory.id]:
            restating.setdefault(source, []).append(hit.memory)
    for newer, olders in later.values():  # what restates an earlier statement is earlier too
        olders.extend(
            memory
            for older in list(olders)
            for source in older.source_message_ids or [older.id]
            for memory in restating.get(source, [])
            if memory.id != newer.id and memory not in olders and memory.created_at < newer.created_at
        )
    stale_ids = {older.id for _, olders in later.values() for older in olders}
    return [
        Change(
            newer,
            tuple(older.id for older in olders if older.kind != "profile"),
            tuple(older.ref_id for older in olders if older.kind == "profile" and older.ref_id),
        )
        for newer, olders in sorted(later.values(), key=lambda pair: -pair[0].created_at)
        if newer.id not in stale_ids  # a statement a still newer one changed is no current word
    ]
