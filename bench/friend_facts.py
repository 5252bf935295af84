"""Friend-attributed facts for bench/changing_facts.py: group chats where only a named friend
states a fact about themselves, run through the real memory graph with a scripted model.

Each case is a chat (the friend's turn, the user's reaction) and, for half of them, a second
chat a month later where the friend changes that fact. Two scripted memory models answer
every step: `good` files the friend's fact under people / <name>, phrased with the name;
`careless` files it as the user's own (the slot a fact about the user would take, "about":
"user"). The merge step answers UPDATE with the new fact for the changed ones, as it is asked
through the real merge node.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal

from memlane.graph import CONTEXT_PARTS, MemoryContext, run_memory_graph
from memlane.nodes.profile_config import PEOPLE_TOPIC, default_profile_config
from memlane.store.records import Message
from memlane.testing import ScriptedChatModel, answer_from, memory_rules

DAY = 86_400.0
Model = Literal["good", "careless"]


@dataclass(frozen=True)
class FriendCase:
    language: str
    person: str
    said: str  # the friend's turn
    reply: str  # the user's reaction, which states nothing about the user
    topic: str  # the user's slot a careless model files the fact in
    subtopic: str
    fact: str  # the fact as a careless model words it, without the name
    value: str  # what identifies the fact in a stored entry
    later_said: str = ""  # the friend's change, a month later ("" when the fact holds)
    later_fact: str = ""
    later_value: str = ""

    @property
    def changes(self) -> bool:
        return bool(self.later_said)


def _case(
    language: str,
    person: str,
    said: str,
    reply: str,
    slot: str,
    fact: str,
    value: str,
    later: tuple[str, str, str] = ("", "", ""),
) -> FriendCase:
    topic, subtopic = slot.split("/")
    return FriendCase(language, person, said, reply, topic, subtopic, fact, value, *later)


FRIEND_CASES = [
    _case(
        "zh",
        "朋友A",
        "我最喜欢的电影是《星际穿越》",
        "真的吗？我还没看过",
        "interests/media",
        "最喜欢的电影是《星际穿越》",
        "星际穿越",
    ),
    _case(
        "zh",
        "朋友B",
        "我在华为做工程师",
        "厉害",
        "work/company",
        "在华为做工程师",
        "华为",
        ("我从华为辞职了，现在去了小米", "从华为辞职，现在在小米", "小米"),
    ),
    _case(
        "zh",
        "小王",
        "我住在成都",
        "成都好吃的多",
        "basic_info/location",
        "住在成都",
        "成都",
        ("我上个月搬到杭州了", "上个月搬到杭州", "杭州"),
    ),
    _case("zh", "朋友A", "我对花生过敏", "那聚餐要小心", "health/conditions", "对花生过敏", "花生"),
    _case(
        "zh",
        "阿杰",
        "我每天早上都喝豆浆",
        "挺健康的",
        "lifestyle/diet",
        "每天早上喝豆浆",
        "豆浆",
        ("我不喝豆浆了，改喝燕麦奶", "不喝豆浆了，改喝燕麦奶", "燕麦奶"),
    ),
    _case(
        "zh",
        "小美",
        "我在学日语，准备考N2",
        "加油！",
        "interests/hobbies",
        "在学日语，准备考N2",
        "日语",
        ("日语我放弃了，现在改学西班牙语", "放弃日语，改学西班牙语", "西班牙语"),
    ),
    _case("zh", "朋友C", "我每周六都去打羽毛球", "有空一起", "interests/sports", "每周六打羽毛球", "羽毛球"),
    _case("zh", "老李", "我养了一只橘猫，叫豆豆", "好可爱", "relationships/family", "养了一只叫豆豆的橘猫", "豆豆"),
    _case(
        "en",
        "Maria",
        "I'm a nurse at the city hospital.",
        "Oh nice!",
        "work/occupation",
        "nurse at the city hospital",
        "nurse",
        ("I quit nursing, I fly planes now as a pilot.", "works as a pilot", "pilot"),
    ),
    _case(
        "en",
        "Priya",
        "I live in Denver.",
        "Cool",
        "basic_info/location",
        "lives in Denver",
        "Denver",
        ("I moved to Lisbon last month.", "moved to Lisbon", "Lisbon"),
    ),
    _case(
        "en",
        "Tom",
        "My favourite band is Radiohead.",
        "Good taste",
        "interests/media",
        "favourite band is Radiohead",
        "Radiohead",
    ),
    _case(
        "en",
        "Jake",
        "I'm allergic to shellfish.",
        "Noted for dinner",
        "health/conditions",
        "allergic to shellfish",
        "shellfish",
    ),
    _case(
        "en",
        "Sofia",
        "I go climbing every Sunday.",
        "Fun!",
        "interests/sports",
        "goes climbing every Sunday",
        "climbing",
        ("I stopped climbing, I play squash now.", "plays squash instead of climbing", "squash"),
    ),
    _case("en", "Liam", "I'm vegetarian.", "Good to know", "lifestyle/diet", "vegetarian", "vegetarian"),
    _case("en", "Noah", "I'm learning the cello.", "Wow", "interests/hobbies", "learning the cello", "cello"),
    _case(
        "en",
        "Emma",
        "I'm planning a trip to Peru in May.",
        "Amazing",
        "goals/short_term",
        "planning a trip to Peru in May",
        "Peru",
        ("The Peru trip is off; I'm going to Norway instead.", "going to Norway instead of Peru", "Norway"),
    ),
]


def _named(case: FriendCase, fact: str) -> str:
    return f"{case.person}{fact}" if case.language == "zh" else f"{case.person} {fact}"


def _model(case: FriendCase, model: Model, fact: str) -> ScriptedChatModel:
    """What a memory model answers on one chat of the case: the summary names the friend (a
    careless model's does not), extract files the fact, merge replaces the slot's content."""
    if model == "good":
        summary = _named(case, fact)
        extracted = {"about": case.person, "topic": PEOPLE_TOPIC, "subtopic": case.person, "content": summary}
    else:
        summary = ("用户" if case.language == "zh" else "The user ") + fact
        extracted = {"about": "user", "topic": case.topic, "subtopic": case.subtopic, "content": fact}
    extracted |= {"confidence": 0.9, "messages": [1]}

    def merge(prompt: str) -> str:
        # UPDATE: the new fact, named, replaces what the slot held
        new = prompt.rsplit("New fact: ", 1)[-1].split("\n", 1)[0].strip()
        return json.dumps({"action": "UPDATE", "content": new}, ensure_ascii=False)

    return ScriptedChatModel(rules=memory_rules(summary=summary, facts=[extracted], merge=answer_from(merge), tags=[]))


def _context(store, model: ScriptedChatModel, settings) -> MemoryContext:
    return MemoryContext(
        store=store, llm=model, **settings.parts(*CONTEXT_PARTS), profile_config=default_profile_config()
    )


async def _chat(store, user_id: str, case: FriendCase, said: str, at: float, session: str) -> list[Message]:
    messages = [
        Message(
            id=f"{user_id}-{session}-1",
            user_id=user_id,
            session_id=session,
            role="user",
            name=case.person,
            content=said,
            created_at=at,
        ),
        Message(
            id=f"{user_id}-{session}-2",
            user_id=user_id,
            session_id=session,
            role="user",
            content=case.reply,
            created_at=at + 30,
        ),
    ]
    return await store.add_messages(messages)


@dataclass(frozen=True)
class FriendOutcome:
    stored_as_users: int  # entries outside people that hold the friend's fact
    kept_under_friend: bool  # people / <name> holds the friend's current fact
    changed_current: bool | None  # for a change: the slot holds the new fact in place of the old
    changed_past: bool | None  # for a change: the old value is the slot's past value


async def run_friend_case(store, settings, case: FriendCase, model: Model, user_id: str) -> FriendOutcome:
    said = time.time() - 60 * DAY
    await _chat(store, user_id, case, case.said, said, "s1")
    await run_memory_graph(user_id, _context(store, _model(case, model, case.fact), settings))
    if case.changes:
        await _chat(store, user_id, case, case.later_said, said + 30 * DAY, "s2")
        await run_memory_graph(user_id, _context(store, _model(case, model, case.later_fact), settings))
    profile = await store.get_profile(user_id)
    values = [case.value] + ([case.later_value] if case.changes else [])
    users = [entry for entry in profile if entry.topic != PEOPLE_TOPIC and any(v in entry.content for v in values)]
    friend = next((e for e in profile if e.topic == PEOPLE_TOPIC and e.subtopic == case.person), None)
    current = case.later_value if case.changes else case.value
    kept = friend is not None and current in friend.content
    if not case.changes:
        return FriendOutcome(len(users), kept, None, None)
    past = await store.past_values(user_id, friend.id) if friend else []
    return FriendOutcome(
        len(users),
        kept,
        kept and case.fact not in friend.content,  # replaced (UPDATE), not added to (APPEND)
        any(case.value in value.content for value in past),
    )
