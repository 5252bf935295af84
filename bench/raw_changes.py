"""Facts that change between memory runs: is the current fact recalled first from raw turns?
Run by `python bench/changing_facts.py` (its raw-turn table).

24 cases, half Chinese, half English: a move, a job change, a new partner, a diet change (and
a sport, a trip), each phrased in its own words (none are bench/changing_facts.py's templates).
Every user also has four everyday turns, one of which states a change of something else ("I
quit video games"). Two ways, each case a user of its own:
- **raw**: the older statement, 40 days later the newer one, no memory run;
- **run, then raw**: a memory run learns the older statement (profile entry and event card, as
  a good model writes them: nodes/persist.build_update), then the newer one is only said.
Then "now" is asked. Counted on recall's block:
- **current first**: the first line that names either value, not marked earlier, names the new one;
- **stale as current**: a line names the old value alone without being marked earlier (target 0);
- **new recalled**: the new value is in the block at all.
Even-numbered cases tune, odd-numbered ones check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from memlane import Settings
from memlane.nodes.persist import build_update
from memlane.recall import RecallParts, recall
from memlane.store.records import Message, ProfileEntry

DAY = 86_400.0


@dataclass(frozen=True)
class RawCase:
    language: str
    topic: str
    subtopic: str
    old_turn: str
    new_turn: str
    old_value: str
    new_value: str
    ask_now: str


RAW_CASES = [
    RawCase(
        "en",
        "home",
        "city",
        "I live in Boston, close to the office.",
        "I moved to Denver last month, new place downtown.",
        "Boston",
        "Denver",
        "Where do I live now?",
    ),
    RawCase(
        "en",
        "home",
        "city",
        "Our apartment in Leeds is tiny but cosy, I've lived there for years.",
        "We finally relocated to Glasgow, the new flat is twice the size.",
        "Leeds",
        "Glasgow",
        "Which city do I live in?",
    ),
    RawCase(
        "en",
        "work",
        "employer",
        "I'm a nurse at St Mary's hospital, night shifts mostly.",
        "I resigned from St Mary's and started at a dental clinic on Monday.",
        "St Mary",
        "dental clinic",
        "Where do I work these days?",
    ),
    RawCase(
        "en",
        "work",
        "employer",
        "I work for Shopify on the payments team.",
        "Big news: I joined Stripe, same kind of payments work.",
        "Shopify",
        "Stripe",
        "What company do I work for?",
    ),
    RawCase(
        "en",
        "partner",
        "partner",
        "My boyfriend Tom is taking me to Rome for my birthday.",
        "Tom and I split up in the spring. I've been seeing Daniel since June.",
        "Rome",
        "Daniel",
        "Who is my partner?",
    ),
    RawCase(
        "en",
        "partner",
        "partner",
        "I'm dating a woman called Priya, she's a architect.",
        "Priya and I broke up, and now I'm with Hannah.",
        "Priya",
        "Hannah",
        "Who am I dating?",
    ),
    RawCase(
        "en",
        "diet",
        "drink",
        "I can't start the day without two espressos.",
        "I quit caffeine entirely, mornings are rooibos tea now.",
        "espresso",
        "rooibos",
        "What do I drink in the morning?",
    ),
    RawCase(
        "en",
        "diet",
        "food",
        "Steak night every Friday, I eat a lot of red meat.",
        "I went vegetarian after the documentary, no meat at all now.",
        "Steak",
        "vegetarian",
        "What do I eat now?",
    ),
    RawCase(
        "en",
        "sport",
        "sport",
        "Tennis twice a week at the club is my main sport.",
        "I gave up tennis because of my elbow and took up rowing.",
        "club",
        "rowing",
        "What sport do I do now?",
    ),
    RawCase(
        "en",
        "trip",
        "trip",
        "Booked flights to Lisbon for our summer trip!",
        "We cancelled Lisbon, the trip is going to Crete instead.",
        "flights to Lisbon",
        "Crete",
        "Where is our summer trip?",
    ),
    RawCase(
        "en",
        "home",
        "city",
        "Living in Austin has been great for my running.",
        "Moving to Chicago was the right call, I love the lake.",
        "Austin",
        "Chicago",
        "Where do I live at the moment?",
    ),
    RawCase(
        "en",
        "work",
        "job",
        "I teach maths at a secondary school.",
        "I left teaching and got hired as a data analyst at an insurer.",
        "maths",
        "data analyst",
        "What is my job now?",
    ),
    RawCase("zh", "居住", "城市", "我住在北京。", "我上个月搬到上海了。", "北京", "上海", "我现在住在哪里？"),
    RawCase(
        "zh",
        "居住",
        "城市",
        "我家住在杭州西湖边上，每天去湖边跑步。",
        "我们搬家了，现在在苏州园区，离公司近多了。",
        "杭州",
        "苏州",
        "我住在哪个城市？",
    ),
    RawCase(
        "zh",
        "工作",
        "公司",
        "我在一家银行做柜员，每天朝九晚五。",
        "我辞职了，下周入职一家游戏公司做策划。",
        "银行",
        "游戏公司",
        "我现在在哪里上班？",
    ),
    RawCase(
        "zh", "工作", "公司", "我在华为做硬件测试。", "跳槽到小米了，还是做测试。", "华为", "小米", "我在哪家公司工作？"
    ),
    RawCase(
        "zh",
        "感情",
        "对象",
        "我男朋友阿杰下个月要来看我。",
        "我和阿杰分手了，现在的男朋友叫小周。",
        "阿杰要来",
        "小周",
        "我现在的男朋友是谁？",
    ),
    RawCase(
        "zh",
        "感情",
        "对象",
        "我在和一个叫林琳的女孩谈恋爱。",
        "我跟林琳分手了，最近和陈雪在一起。",
        "林琳的女孩",
        "陈雪",
        "我的女朋友是谁？",
    ),
    RawCase(
        "zh",
        "饮食",
        "饮料",
        "我每天下午都要喝一杯奶茶。",
        "我戒奶茶了，现在下午只喝柠檬水。",
        "一杯奶茶",
        "柠檬水",
        "我下午喝什么？",
    ),
    RawCase(
        "zh",
        "饮食",
        "习惯",
        "我特别爱吃红烧肉，几乎天天吃。",
        "体检后我开始吃素了，肉一口不碰。",
        "红烧肉",
        "吃素",
        "我现在吃什么？",
    ),
    RawCase(
        "zh",
        "爱好",
        "运动",
        "我每个周末都去踢足球。",
        "膝盖受伤后我不踢球了，改成游泳。",
        "踢足球",
        "游泳",
        "我现在做什么运动？",
    ),
    RawCase(
        "zh",
        "计划",
        "旅行",
        "国庆我们打算去成都旅游。",
        "成都那趟取消了，国庆改去厦门。",
        "去成都",
        "厦门",
        "我们国庆旅行去哪？",
    ),
    RawCase("zh", "居住", "城市", "我住在深圳南山区。", "公司调动，我已经搬去武汉了。", "深圳", "武汉", "我现在住哪？"),
    RawCase(
        "zh",
        "工作",
        "职业",
        "我在医院当护士。",
        "我离职了，现在在一家药企做医学顾问。",
        "护士",
        "医学顾问",
        "我现在做什么工作？",
    ),
]

# Written after the stage was built and its rules fixed on the cases above (two of them, 20 and
# 23, looked at): run once, unseen, as the fresh check ("fresh" rows).
FRESH_CASES = [
    RawCase(
        "en",
        "home",
        "city",
        "My place in Manchester has a tiny garden I adore.",
        "Packed the last boxes, we've moved to Bristol for good.",
        "Manchester",
        "Bristol",
        "Where am I living?",
    ),
    RawCase(
        "en",
        "work",
        "employer",
        "I'm an accountant at Deloitte.",
        "Handed in my notice at Deloitte, I start at a small bakery next week.",
        "accountant",
        "bakery",
        "Where do I work?",
    ),
    RawCase(
        "en",
        "partner",
        "partner",
        "Me and my girlfriend Chloe just adopted a puppy.",
        "Chloe and I broke up last month, I'm single for now but seeing someone named Zoe.",
        "puppy",
        "Zoe",
        "Who is my girlfriend?",
    ),
    RawCase(
        "en",
        "diet",
        "drink",
        "I drink a glass of red wine with dinner every night.",
        "I stopped drinking alcohol, it's sparkling water with dinner now.",
        "red wine",
        "sparkling water",
        "What do I drink with dinner?",
    ),
    RawCase(
        "zh",
        "居住",
        "城市",
        "我在广州天河住了五年了。",
        "上周刚搬到厦门，海边的房子太舒服了。",
        "广州",
        "厦门",
        "我现在住在什么地方？",
    ),
    RawCase(
        "zh",
        "工作",
        "公司",
        "我在京东做产品经理。",
        "我已经从京东离职，加入了一家做新能源的创业公司。",
        "京东做产品",
        "新能源",
        "我现在在哪上班？",
    ),
    RawCase(
        "zh",
        "感情",
        "对象",
        "我老公是中学老师，我们结婚三年了。",
        "我们离婚了，我现在和一个叫王磊的人在一起。",
        "中学老师",
        "王磊",
        "我现在的伴侣是谁？",
    ),
    RawCase(
        "zh",
        "饮食",
        "饮料",
        "我每天早上必喝一大杯拿铁。",
        "我不喝咖啡了，早上改喝豆浆。",
        "拿铁",
        "豆浆",
        "我早上喝什么？",
    ),
]

EVERYDAY = {
    "en": [
        "My sister's name is Anna, she lives abroad.",
        "I quit video games last year, too much time.",
        "I love Thai food, especially green curry.",
        "We adopted a cat named Milo.",
    ],
    "zh": [
        "我妹妹叫小雨，在国外读书。",
        "我去年戒了游戏，太浪费时间。",
        "我很喜欢吃川菜，尤其是水煮鱼。",
        "我们家养了一只猫叫咪咪。",
    ],
}


def _earlier(line: str) -> bool:
    return "earlier:" in line or "之前：" in line


def judged(text: str, case: RawCase) -> tuple[bool, bool, bool]:
    """(current first, stale shown as current, new value recalled) on the block's lines."""
    lines = [line for line in text.splitlines() if case.new_value in line or case.old_value in line]
    current = [line for line in lines if not _earlier(line)]
    first = bool(current) and case.new_value in current[0]
    stale = any(case.old_value in line and case.new_value not in line for line in current)
    return first, stale, any(case.new_value in line for line in lines)


async def run_raw_case(
    store, settings: Settings, case: RawCase, user_id: str, with_run: bool
) -> tuple[bool, bool, bool]:
    start = time.time() - 80 * DAY
    everyday = [
        Message(
            id=f"{user_id}-d{number}",
            user_id=user_id,
            session_id=f"{user_id}-d{number}",
            role="user",
            content=text,
            created_at=start + number * 9 * DAY,
        )
        for number, text in enumerate(EVERYDAY[case.language])
    ]
    old = Message(
        id=f"{user_id}-old",
        user_id=user_id,
        session_id=f"{user_id}-s1",
        role="user",
        content=case.old_turn,
        created_at=start + 20 * DAY,
    )
    new = Message(
        id=f"{user_id}-new",
        user_id=user_id,
        session_id=f"{user_id}-s2",
        role="user",
        content=case.new_turn,
        created_at=start + 60 * DAY,
    )
    await store.add_messages([*everyday, old])
    if with_run:  # a good model learns the older statement: the profile entry and an event card
        entry = ProfileEntry(
            user_id=user_id,
            topic=case.topic,
            subtopic=case.subtopic,
            content=case.old_turn,
            source_message_ids=[old.id],
            valid_from=old.created_at,
        )
        update, _ = build_update(user_id, [old], [old], case.old_turn, [], [], [entry])
        await store.apply_update(update)
    await store.add_messages([new])
    recalled = await recall(store, user_id, None, case.ask_now, parts=RecallParts.of(settings))
    return judged(recalled.text, case)


def print_raw_rows(results: dict[tuple[str, str, bool], list[tuple[bool, bool, bool]]]) -> None:
    print("\nfacts that change, raw turns (bench/raw_changes.py)")
    print(
        f"  {'way':14} {'language':8} {'half':6} {'cases':>5}  {'current first':>13}  {'stale as current':>16}  {'new recalled':>12}"
    )
    for (way, language, tuning), outcomes in sorted(results.items()):
        count = len(outcomes)
        print(
            f"  {way:14} {language:8} {'tune' if tuning else 'check':6} {count:5}  "
            f"{sum(o[0] for o in outcomes) / count:13.0%}  {sum(o[1] for o in outcomes):16d}  {sum(o[2] for o in outcomes) / count:12.0%}"
        )
