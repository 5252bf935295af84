"""Question and echo: does the statement that answers come first in recall's memory section?
Run by `python bench/changing_facts.py` (its last table).

16 cases, half Chinese, half English. Each is a timed conversation, raw turns only (no memory
run): the user once asked the question (a day apart, in sessions of their own), the assistant
answered with an echo (a question back, or the user's words repeated without the fact), and
later the user stated the fact. Then the question is asked again, a little reworded. Counted:
the share of cases whose first memory item holds the statement (target >= 90 %), and whether
the statement is recalled at all. Even-numbered cases tune, odd-numbered ones check (nothing
was fitted to either).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from memlane import Settings
from memlane.recall import RecallParts, recall
from memlane.store.records import Message

DAY = 86_400.0


@dataclass(frozen=True)
class EchoCase:
    language: str
    asked: str  # the user's question, once
    echo: str  # the assistant's reply, without the fact
    statement: str  # the user's fact, later
    ask: str  # the question now


ECHO_CASES = [
    EchoCase("zh", "我对什么过敏来着？", "你是说你对什么过敏吗？", "我对花生过敏，吃了会起疹子。", "我对什么过敏？"),
    EchoCase(
        "zh",
        "我妹妹住在哪个城市？",
        "你妹妹住在哪个城市？我还不知道呢。",
        "我妹妹去年搬到成都了。",
        "我妹妹现在住在哪里？",
    ),
    EchoCase("zh", "我喜欢喝什么咖啡？", "你喜欢喝什么咖啡呢？", "我只喝美式，不加糖。", "我平时喝什么咖啡？"),
    EchoCase(
        "zh",
        "我的车是什么牌子的？",
        "你的车是什么牌子的？你还没告诉过我。",
        "我开的是一辆白色的丰田卡罗拉。",
        "我开什么车？",
    ),
    EchoCase("zh", "我家的狗叫什么名字？", "你家的狗叫什么名字呀？", "我家的狗叫旺财，是只柴犬。", "我的狗叫什么？"),
    EchoCase(
        "zh", "我在哪家公司上班？", "你在哪家公司上班？", "我在一家做物流软件的创业公司当后端工程师。", "我在哪里工作？"
    ),
    EchoCase(
        "zh",
        "我最喜欢的电影是哪部？",
        "你最喜欢的电影是哪部呢？",
        "我最喜欢的电影是《星际穿越》。",
        "我最喜欢什么电影？",
    ),
    EchoCase("zh", "我每周几去游泳？", "你每周几去游泳？", "我每周二和周四晚上去游泳。", "我哪天去游泳？"),
    EchoCase(
        "en",
        "What am I allergic to again?",
        "What are you allergic to?",
        "I'm allergic to peanuts, they give me hives.",
        "What am I allergic to?",
    ),
    EchoCase(
        "en",
        "Which city does my sister live in?",
        "Which city does your sister live in? You haven't told me yet.",
        "My sister moved to Denver last year.",
        "Where does my sister live now?",
    ),
    EchoCase(
        "en",
        "What coffee do I drink?",
        "What coffee do you drink?",
        "I only drink black coffee, no sugar.",
        "What coffee do I usually drink?",
    ),
    EchoCase(
        "en",
        "What car do I drive?",
        "What car do you drive? You never said.",
        "I drive a white Toyota Corolla.",
        "Which car do I drive?",
    ),
    EchoCase(
        "en",
        "What's my dog's name?",
        "What is your dog's name?",
        "My dog is called Biscuit, he's a beagle.",
        "What is my dog called?",
    ),
    EchoCase(
        "en",
        "Where do I work?",
        "Where do you work?",
        "I work as a backend engineer at a logistics start-up.",
        "Which company do I work for?",
    ),
    EchoCase(
        "en",
        "What's my favourite film?",
        "What is your favourite film?",
        "My favourite film is Interstellar.",
        "Which film do I like best?",
    ),
    EchoCase(
        "en",
        "Which days do I go swimming?",
        "Which days do you go swimming?",
        "I go swimming on Tuesday and Thursday evenings.",
        "When do I go swimming?",
    ),
]

# Written after the unanswered-question rule was fixed on the cases above (two of them, 5 and 14,
# looked at): run once, unseen, as the fresh check ("fresh" rows).
FRESH_ECHO_CASES = [
    EchoCase(
        "zh",
        "我老家是哪里的来着？",
        "你老家是哪里的？这个我还不清楚。",
        "我老家在湖南岳阳，洞庭湖边上。",
        "我是哪里人？",
    ),
    EchoCase("zh", "我女儿几岁了？", "你女儿今年几岁了呀？", "我女儿今年六岁，刚上一年级。", "我女儿多大了？"),
    EchoCase("zh", "我血型是什么？", "你的血型是什么呢？你没说过。", "我是O型血。", "我是什么血型？"),
    EchoCase("zh", "我用的是什么手机？", "你用的是什么手机？", "我用的是一台绿色的iPhone 13。", "我的手机是什么牌子？"),
    EchoCase(
        "en",
        "What's my blood type?",
        "What is your blood type? I don't know that yet.",
        "My blood type is O negative.",
        "Which blood type do I have?",
    ),
    EchoCase(
        "en",
        "How old is my daughter?",
        "How old is your daughter?",
        "My daughter turned six in May.",
        "What age is my daughter?",
    ),
    EchoCase(
        "en",
        "Where did I grow up?",
        "Where did you grow up? You haven't mentioned it.",
        "I grew up in a small town near Cork, in Ireland.",
        "Which town am I from?",
    ),
    EchoCase(
        "en", "What phone do I use?", "What phone do you use?", "I use a green iPhone 13.", "Which phone do I have?"
    ),
]


async def run_echo_case(store, settings: Settings, case: EchoCase, user_id: str) -> tuple[bool, bool]:
    """(the statement's item is first, the statement is recalled at all)"""
    start = time.time() - 30 * DAY
    turns = [
        ("q", "user", case.asked, start),
        ("e", "assistant", case.echo, start + 60),
        ("s", "user", case.statement, start + 10 * DAY),
    ]
    await store.add_messages(
        [
            Message(
                id=f"{user_id}-{key}",
                user_id=user_id,
                session_id=f"{user_id}-{key}-session" if key == "s" else f"{user_id}-asked",
                role=role,
                content=text,
                created_at=at,
            )
            for key, role, text, at in turns
        ]
    )
    recalled = await recall(store, user_id, None, case.ask, parts=RecallParts.of(settings))
    statement = f"{user_id}-s"
    holds = [statement in item.source_message_ids for item in recalled.memories]
    return bool(holds) and holds[0], any(holds)


def print_echo_rows(results: dict[tuple[str, bool], list[tuple[bool, bool]]]) -> None:
    print("\nquestion and echo (bench/question_echo.py), raw turns")
    print(f"  {'language':10} {'half':8} {'cases':>5}  {'statement first':>15}  {'statement recalled':>18}")
    for (language, tuning), outcomes in sorted(results.items()):
        first = sum(first for first, _ in outcomes) / len(outcomes)
        found = sum(found for _, found in outcomes) / len(outcomes)
        print(f"  {language:10} {'tune' if tuning else 'check':8} {len(outcomes):5}  {first:15.0%}  {found:18.0%}")
