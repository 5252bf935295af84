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


# Issue 48, item 2, written after search took recall's statement-before-echo rule (store/text/
# questions.py, frozen before these were written), in the issue's order: the statement first, a
# month ago, then the question asked twice, a week apart, each answered by an echo; then asked
# once more. Run once for the first-try figure ("after freeze" rows).
AFTER_FREEZE_ECHO_CASES = [
    EchoCase(
        "en",
        "What coffee do I drink?",
        "What coffee do you drink?",
        "I only drink black coffee, no sugar.",
        "What coffee do I drink?",
    ),
    EchoCase(
        "en",
        "Which gym do I go to?",
        "Which gym do you go to? You haven't said.",
        "I train at the Iron Temple gym on Fifth Street.",
        "What gym do I go to?",
    ),
    EchoCase(
        "en",
        "What's my dog's name?",
        "What is your dog's name?",
        "Our beagle is called Biscuit.",
        "What is my dog called?",
    ),
    EchoCase(
        "en",
        "When is my wife's birthday?",
        "When is your wife's birthday? I'm not sure.",
        "My wife Laura was born on the 3rd of March.",
        "When is my wife's birthday?",
    ),
    EchoCase(
        "en",
        "What car do I drive?",
        "What car do you drive?",
        "I drive a grey 2018 Honda Civic.",
        "Which car do I drive?",
    ),
    EchoCase(
        "en",
        "Which team do I support?",
        "Which team do you support?",
        "I've supported Liverpool since I was a kid.",
        "What football team do I support?",
    ),
    EchoCase(
        "en",
        "What instrument do I play?",
        "Which instrument do you play? You never mentioned it.",
        "I play the cello in a community orchestra.",
        "What instrument do I play?",
    ),
    EchoCase(
        "en",
        "Where did I study?",
        "Where did you study?",
        "I did my degree in chemistry at Leeds.",
        "Which university did I go to?",
    ),
    EchoCase(
        "en",
        "What am I allergic to?",
        "What are you allergic to?",
        "I'm allergic to shellfish and penicillin.",
        "What are my allergies?",
    ),
    EchoCase(
        "en",
        "What's my favourite book?",
        "What is your favourite book?",
        "My favourite book is One Hundred Years of Solitude.",
        "Which book do I like most?",
    ),
    EchoCase("zh", "我喝什么咖啡？", "你喝什么咖啡呢？", "我只喝黑咖啡，不加糖。", "我喝什么咖啡？"),
    EchoCase(
        "zh", "我去哪个健身房？", "你去哪个健身房？你还没说过。", "我在五道口的乐刻健身房练。", "我在哪个健身房锻炼？"
    ),
    EchoCase("zh", "我家猫叫什么？", "你家猫叫什么名字？", "我家的猫叫年糕，是只橘猫。", "我的猫叫什么名字？"),
    EchoCase(
        "zh", "我老婆生日是哪天？", "你老婆的生日是哪天？我不确定。", "我老婆小敏是三月三号生日。", "我老婆哪天过生日？"
    ),
    EchoCase("zh", "我开什么车？", "你开什么车呀？", "我开一辆黑色的比亚迪汉。", "我的车是什么？"),
    EchoCase("zh", "我支持哪个球队？", "你支持哪个球队？", "我从小就是国安的球迷。", "我是哪个队的球迷？"),
    EchoCase("zh", "我会什么乐器？", "你会什么乐器？你没提过。", "我会弹古筝，学了十年。", "我会弹什么乐器？"),
    EchoCase("zh", "我在哪读的大学？", "你在哪读的大学？", "我本科在武汉大学读的化学。", "我是哪个大学毕业的？"),
    EchoCase("zh", "我对什么过敏？", "你对什么过敏？", "我对海鲜和青霉素过敏。", "我有什么过敏？"),
    EchoCase("zh", "我最喜欢哪本书？", "你最喜欢哪本书？", "我最喜欢的书是《百年孤独》。", "我最爱看的书是哪本？"),
]


# Written after search's question weight became the unanswered one (the rule above failed its
# first try on AFTER_FREEZE_ECHO_CASES: statement first in search 0 % en, 20 % zh), to check that
# change on cases it was not made on. Same order as AFTER_FREEZE_ECHO_CASES.
SECOND_FREEZE_ECHO_CASES = [
    EchoCase(
        "en",
        "What's my sister's job?",
        "What does your sister do for work?",
        "My sister Hannah is a pilot for a cargo airline.",
        "What does my sister do?",
    ),
    EchoCase(
        "en",
        "How many kids do I have?",
        "How many children do you have? I don't remember.",
        "We have three kids, two boys and a girl.",
        "How many children do I have?",
    ),
    EchoCase(
        "en",
        "What time do I wake up?",
        "What time do you usually wake up?",
        "I get up at 5:30 every weekday for my run.",
        "When do I usually get up?",
    ),
    EchoCase(
        "en",
        "What's my favourite dish?",
        "What's your favourite dish?",
        "Nothing beats my mum's lamb tagine.",
        "What is my favourite food?",
    ),
    EchoCase(
        "en",
        "Which language am I learning?",
        "Which language are you learning? You haven't told me.",
        "I've been learning Portuguese on Duolingo for a year.",
        "What language am I studying?",
    ),
    EchoCase(
        "zh", "我姐姐做什么工作？", "你姐姐是做什么工作的？", "我姐姐在货运航空公司当飞行员。", "我姐是干什么的？"
    ),
    EchoCase(
        "zh", "我有几个孩子？", "你有几个孩子？我记不得了。", "我们有三个孩子，两个儿子一个女儿。", "我家有几个小孩？"
    ),
    EchoCase("zh", "我几点起床？", "你一般几点起床？", "我工作日每天五点半起来跑步。", "我平时几点起？"),
    EchoCase("zh", "我最喜欢吃什么菜？", "你最喜欢吃什么菜？", "我最爱吃我妈做的红烧排骨。", "我最爱吃的菜是什么？"),
    EchoCase(
        "zh",
        "我在学什么语言？",
        "你在学什么语言？你还没告诉我。",
        "我在用多邻国学葡萄牙语，学了一年了。",
        "我在学哪门外语？",
    ),
]


# Written after search and recall put every statement likely enough to hold the answer
# (search_statements_first_floor) before the messages that hold none (store/redis/search.py,
# memlane/recall_select.py ranked_hits), that rule frozen first; run once for the first-try
# figure. Same order as AFTER_FREEZE_ECHO_CASES.
THIRD_FREEZE_ECHO_CASES = [
    EchoCase(
        "en",
        "What's my dog's name?",
        "What's your dog called? You haven't said.",
        "Our beagle is called Biscuit.",
        "What is my dog called?",
    ),
    EchoCase(
        "en", "Where do I work?", "Where do you work?", "I'm an accountant at a firm in Leeds.", "What's my workplace?"
    ),
    EchoCase(
        "en",
        "What car do I drive?",
        "What car do you drive? You never said.",
        "I drive an old blue Volvo estate.",
        "Which car is mine?",
    ),
    EchoCase(
        "en",
        "When is my anniversary?",
        "When is your anniversary?",
        "Tom and I got married on 14 June 2015.",
        "What date is my wedding anniversary?",
    ),
    EchoCase(
        "en",
        "What's my allergy?",
        "Are you allergic to something? I'm not sure.",
        "I'm allergic to penicillin, it gives me hives.",
        "Which medicine am I allergic to?",
    ),
    EchoCase(
        "en",
        "What instrument do I play?",
        "What instrument do you play?",
        "I've played the cello since I was eight.",
        "Which instrument do I play?",
    ),
    EchoCase(
        "en",
        "What's my shoe size?",
        "What's your shoe size? I don't know.",
        "I take a size 43 in most brands.",
        "What size shoes do I wear?",
    ),
    EchoCase(
        "en",
        "Who's my dentist?",
        "Who is your dentist?",
        "My dentist is Dr. Okafor on Mill Street.",
        "Which dentist do I see?",
    ),
    EchoCase("zh", "我的猫叫什么？", "你的猫叫什么名字？", "我家的橘猫叫团子。", "我家猫的名字是什么？"),
    EchoCase("zh", "我在哪里上班？", "你在哪里上班？你还没说过。", "我在杭州一家银行做柜员。", "我的工作单位是哪？"),
    EchoCase("zh", "我开什么车？", "你开的是什么车？", "我开一辆白色的比亚迪汉。", "我的车是什么牌子的？"),
    EchoCase(
        "zh",
        "我的结婚纪念日是哪天？",
        "你的结婚纪念日是哪天？我不清楚。",
        "我和老公是2016年5月20日结的婚。",
        "我哪天结婚的？",
    ),
    EchoCase("zh", "我对什么药过敏？", "你对什么药过敏吗？", "我对青霉素过敏，会起荨麻疹。", "我不能吃哪种药？"),
    EchoCase("zh", "我会弹什么乐器？", "你会什么乐器？", "我从八岁开始学古筝。", "我学的是什么乐器？"),
    EchoCase("zh", "我穿多大的鞋？", "你穿多大码的鞋？你没告诉过我。", "我平时穿42码的鞋。", "我的鞋码是多少？"),
    EchoCase("zh", "我的牙医是谁？", "你的牙医是谁呀？", "我一直找人民路的李医生看牙。", "我看牙找哪个医生？"),
]


# Written after the question before a reply that holds no answer was marked unanswered in its
# search entry (store/redis/replies.py, frozen first: THIRD_FREEZE_ECHO_CASES' Chinese misses in
# search had shown the need); run once for the first-try figure. Same order as above.
FOURTH_FREEZE_ECHO_CASES = [
    EchoCase(
        "en",
        "What's my cat's breed?",
        "What breed is your cat? I'm not sure you told me.",
        "Miso is a Maine Coon, a huge fluffy one.",
        "What kind of cat do I have?",
    ),
    EchoCase(
        "en",
        "Where did I go on honeymoon?",
        "Where did you go for your honeymoon?",
        "We spent our honeymoon in Crete, in a little village near Chania.",
        "Which island was our honeymoon on?",
    ),
    EchoCase(
        "en",
        "What's my mother's name?",
        "What is your mother's name? I don't think you've mentioned it.",
        "My mum's name is Margaret, everyone calls her Peggy.",
        "What is my mum called?",
    ),
    EchoCase(
        "en",
        "What do I do for exercise?",
        "What kind of exercise do you do?",
        "I swim 2 km at the leisure centre three mornings a week.",
        "How do I stay fit?",
    ),
    EchoCase(
        "en",
        "Which bank am I with?",
        "Which bank do you use? You haven't said.",
        "All my accounts are with Monzo now.",
        "Where do I keep my money?",
    ),
    EchoCase(
        "en",
        "What's my favourite band?",
        "Who is your favourite band?",
        "Nobody beats Radiohead for me.",
        "Which group do I love most?",
    ),
    EchoCase(
        "en",
        "What's my blood pressure medicine?",
        "Which blood pressure medication are you on?",
        "I take 5 mg of amlodipine every morning.",
        "What pills do I take for my blood pressure?",
    ),
    EchoCase(
        "en",
        "What's my neighbour's name?",
        "What's your neighbour called? I don't know.",
        "Our next-door neighbour is Mr. Patel, he waters our plants.",
        "Who lives next door to me?",
    ),
    EchoCase("zh", "我的狗是什么品种？", "你的狗是什么品种的？", "我家豆豆是一只柯基。", "我养的是什么狗？"),
    EchoCase(
        "zh",
        "我蜜月去的哪里？",
        "你们蜜月去了哪里？我不记得了。",
        "我们蜜月去的是云南大理，住在洱海边。",
        "我们度蜜月的地方是哪？",
    ),
    EchoCase("zh", "我妈妈叫什么名字？", "你妈妈叫什么名字呀？", "我妈叫刘秀英，今年六十了。", "我母亲的名字是什么？"),
    EchoCase(
        "zh", "我平时做什么运动？", "你平时做什么运动？你还没说过。", "我每周去游泳馆游三次泳。", "我怎么锻炼身体？"
    ),
    EchoCase("zh", "我用的是哪家银行？", "你用哪家银行的卡？", "我的工资卡是招商银行的。", "我的钱存在哪个银行？"),
    EchoCase("zh", "我最喜欢哪个乐队？", "你最喜欢的乐队是哪个？", "我最爱五月天，听了十几年了。", "我最爱听谁的歌？"),
    EchoCase(
        "zh",
        "我吃的降压药是什么？",
        "你吃的是哪种降压药？我不清楚。",
        "我每天早上吃一片氨氯地平。",
        "我每天吃什么药控制血压？",
    ),
    EchoCase("zh", "我邻居叫什么？", "你邻居叫什么名字？", "隔壁住的是张阿姨，经常帮我们收快递。", "住我隔壁的是谁？"),
]


async def run_echo_case(
    store, settings: Settings, case: EchoCase, user_id: str, stated_first: bool = False
) -> tuple[bool, bool, bool]:
    """(the statement's item is first in recall, the statement is recalled at all, the statement is
    search's first hit). `stated_first`: the statement a month ago, the question and its echo
    twice after it (AFTER_FREEZE_ECHO_CASES); else the question once, the statement 10 days later."""
    start = time.time() - 30 * DAY
    if stated_first:
        turns = [
            ("s", "user", case.statement, start),
            ("q", "user", case.asked, start + 10 * DAY),
            ("e", "assistant", case.echo, start + 10 * DAY + 60),
            ("q2", "user", case.asked, start + 17 * DAY),
            ("e2", "assistant", case.echo, start + 17 * DAY + 60),
        ]
    else:
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
                session_id=f"{user_id}-{key}-session"
                if key == "s"
                else f"{user_id}-asked{key[1:]}",  # a question and its echo: one session
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
    searched = await store.search_memories(user_id, case.ask, limit=10)
    return bool(holds) and holds[0], any(holds), bool(searched) and statement in searched[0].memory.source_message_ids


def print_echo_rows(results: dict[tuple[str, bool], list[tuple[bool, bool, bool]]]) -> None:
    print("\nquestion and echo (bench/question_echo.py), raw turns")
    print(
        f"  {'language':20} {'half':8} {'cases':>5}  {'statement first':>15}  {'statement recalled':>18}"
        f"  {'first in search':>15}"
    )
    for (language, tuning), outcomes in sorted(results.items()):
        first = sum(outcome[0] for outcome in outcomes) / len(outcomes)
        found = sum(outcome[1] for outcome in outcomes) / len(outcomes)
        searched = sum(outcome[2] for outcome in outcomes) / len(outcomes)
        print(
            f"  {language:20} {'tune' if tuning else 'check':8} {len(outcomes):5}  {first:15.0%}  {found:18.0%}"
            f"  {searched:15.0%}"
        )
