"""The third set of raw-turn changes (issue 48, item 1), written after commit f24a6f2 froze the
change rule of memlane/recall_changes.py, for states none of the earlier sets named, and run
once: the "3rd freeze" rows of bench/changing_facts.py, first try in the issue's note.

Beside the changes, **additions**: a newer statement that adds to what the older one said (a
second pet, a second instrument, another relative's home) and replaces nothing. Both still hold,
so neither may be shown as earlier: a rule that marks too eagerly hides true facts. Counted on
recall's block: both recalled, and the older one marked earlier (target 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from raw_changes import RawCase, recalled_after
from raw_changes import state_case as _case

from memlane import Settings

THIRD_FREEZE_CASES = [
    _case(
        "en",
        "I bank with Chase, have since college.",
        "Closed my Chase account, everything's at a credit union now.",
        "bank with Chase",
        "credit union",
        "Which bank do I use?",
    ),
    _case(
        "en",
        "My gym is the Planet Fitness on 5th.",
        "Signed up at a climbing gym downtown, way more fun than treadmills.",
        "Planet Fitness",
        "climbing gym",
        "Where do I work out?",
    ),
    _case(
        "en",
        "I take the bus to work every day.",
        "Bought an e-bike, so I cycle to the office now.",
        "bus",
        "e-bike",
        "How do I get to work?",
    ),
    _case(
        "en",
        "We watch everything on Netflix.",
        "We dropped Netflix for Disney+ because of the kids.",
        "Netflix",
        "Disney+",
        "Which streaming service do we have?",
    ),
    _case(
        "en",
        "I code in Vim, always have.",
        "Gave in and moved to VS Code for the remote dev stuff.",
        "Vim",
        "VS Code",
        "What editor do I use?",
    ),
    _case(
        "en",
        "My running shoes are Nike Pegasus.",
        "Running in Hokas these days, my knees like them better.",
        "Pegasus",
        "Hokas",
        "What shoes do I run in?",
    ),
    _case(
        "en",
        "I wear glasses for reading.",
        "Got contact lenses last month and I love not fogging up.",
        "glasses for reading",
        "contact lenses",
        "Do I wear glasses or contacts?",
    ),
    _case(
        "en",
        "I'm learning Spanish on Duolingo.",
        "Paused Spanish; I'm doing Japanese with a tutor twice a week.",
        "Spanish on Duolingo",
        "Japanese",
        "What language am I learning?",
    ),
    _case(
        "en",
        "My manager is Priya, she's great.",
        "Priya got promoted, so my new boss is Tom from the London office.",
        "manager is Priya",
        "Tom",
        "Who is my manager?",
    ),
    _case(
        "en",
        "My roommate is Jake, a nurse.",
        "Jake moved out in October, and a grad student named Lena took his room.",
        "roommate is Jake",
        "Lena",
        "Who is my roommate?",
    ),
    _case(
        "en",
        "I listen to the Daily every morning.",
        "My morning podcast is Hard Fork now, I got tired of the news.",
        "the Daily",
        "Hard Fork",
        "What podcast do I listen to in the morning?",
    ),
    _case(
        "en",
        "I'm a Liverpool fan through and through.",
        "Honestly I've switched allegiance to Arsenal since moving to London.",
        "Liverpool",
        "Arsenal",
        "Which football team do I support?",
    ),
    _case(
        "en",
        "My kids go to Lincoln Elementary.",
        "We enrolled the kids at a Montessori school across town.",
        "Lincoln",
        "Montessori",
        "Where do my kids go to school?",
    ),
    _case(
        "en",
        "I read on a Kindle Paperwhite.",
        "My Kindle died, I'm reading on a Kobo Libra now.",
        "Kindle Paperwhite",
        "Kobo",
        "What e-reader do I use?",
    ),
    _case(
        "en",
        "I eat oatmeal for breakfast.",
        "Breakfast is eggs and toast lately, oatmeal got boring.",
        "oatmeal for",
        "eggs",
        "What do I have for breakfast?",
    ),
    _case(
        "en",
        "I'm with Verizon for my phone plan.",
        "Ported my number to Mint Mobile, half the price.",
        "Verizon",
        "Mint",
        "Who is my phone carrier?",
    ),
    _case(
        "en",
        "I volunteer at the animal shelter on Saturdays.",
        "Saturdays I'm at the food bank now instead of the shelter.",
        "animal shelter",
        "food bank",
        "Where do I volunteer?",
    ),
    _case(
        "en",
        "I'm a vegetarian, for about five years.",
        "I eat chicken again after my doctor said I need more protein.",
        "vegetarian, for",
        "chicken",
        "Do I eat meat?",
    ),
    _case(
        "en",
        "Our family doctor is Dr. Alvarez.",
        "We switched to Dr. Kim at the new clinic after Dr. Alvarez retired.",
        "doctor is Dr. Alvarez",
        "Dr. Kim",
        "Who is our family doctor?",
    ),
    _case(
        "en",
        "I drive a 2012 Honda Civic.",
        "The Civic finally died; I'm leasing a Tesla Model 3.",
        "Honda Civic",
        "Tesla",
        "What car do I drive?",
    ),
    _case(
        "zh",
        "我用的是招商银行的卡。",
        "工资卡换成了工商银行，招行那张销户了。",
        "招商银行",
        "工商银行",
        "我用哪家银行？",
    ),
    _case(
        "zh",
        "我在小区门口的健身房练。",
        "最近办了张游泳馆的年卡，基本不去健身房了。",
        "小区门口的健身房",
        "游泳馆",
        "我平时在哪锻炼？",
    ),
    _case("zh", "我每天坐地铁上班。", "公司搬到郊区了，我开车通勤。", "坐地铁", "开车", "我怎么上班？"),
    _case(
        "zh",
        "我们家看的是爱奇艺会员。",
        "爱奇艺没续费，现在用腾讯视频。",
        "爱奇艺会员",
        "腾讯视频",
        "我们家用什么视频会员？",
    ),
    _case(
        "zh",
        "我写代码用的是PyCharm。",
        "公司统一装了VS Code，我也就跟着用了。",
        "PyCharm",
        "VS Code",
        "我用什么写代码？",
    ),
    _case(
        "zh", "我跑步穿亚瑟士的鞋。", "这双新百伦跑起来更舒服，以后就穿它了。", "亚瑟士", "新百伦", "我跑步穿什么鞋？"
    ),
    _case("zh", "我戴框架眼镜。", "上个月做了近视手术，眼镜彻底摘了。", "框架眼镜", "近视手术", "我戴眼镜吗？"),
    _case("zh", "我在学日语，每天背单词。", "日语先放一放，我报了个韩语班。", "在学日语", "韩语", "我在学什么语言？"),
    _case("zh", "我的领导是刘经理。", "刘经理调走了，现在我们组归陈总管。", "领导是刘经理", "陈总", "我的领导是谁？"),
    _case(
        "zh",
        "我和大学同学小林合租。",
        "小林回老家了，我现在一个人住。",
        "和大学同学小林合租",
        "一个人住",
        "我跟谁一起住？",
    ),
    _case(
        "zh", "我每天早上听《得到》的节目。", "早上通勤改听播客《忽左忽右》了。", "得到", "忽左忽右", "我早上听什么？"
    ),
    _case("zh", "我支持国安队。", "搬到上海后我开始看申花的比赛，成了申花球迷。", "国安", "申花", "我支持哪个球队？"),
    _case(
        "zh", "孩子在区实验小学上学。", "孩子转学到了离家近的外国语学校。", "实验小学", "外国语学校", "孩子在哪上学？"
    ),
    _case("zh", "我用Kindle看书。", "Kindle退出中国后，我改用微信读书了。", "用Kindle", "微信读书", "我用什么看书？"),
    _case("zh", "我早饭一般吃包子。", "这阵子早饭都是燕麦加牛奶。", "包子", "燕麦", "我早饭吃什么？"),
    _case("zh", "我的手机号是移动的。", "携号转网到了联通，资费便宜不少。", "移动", "联通", "我用的是哪家运营商？"),
    _case("zh", "我周六去养老院做义工。", "周六我改去图书馆当志愿者了。", "养老院", "图书馆", "我在哪做志愿者？"),
    _case("zh", "我对猫毛过敏，不能养猫。", "脱敏治疗做完了，现在可以养猫了。", "不能养猫", "可以养猫", "我能养猫吗？"),
    _case(
        "zh",
        "我们家的家庭医生是张医生。",
        "张医生退休了，社区给我们换了李医生。",
        "是张医生",
        "李医生",
        "我们家的家庭医生是谁？",
    ),
    _case(
        "zh", "我开的是一辆老款的卡罗拉。", "卡罗拉卖了，提了一台比亚迪海豹。", "老款的卡罗拉", "比亚迪", "我开什么车？"
    ),
]

# a newer statement that adds and replaces nothing: both hold
ADDITIONS = [
    _case(
        "en",
        "We have a golden retriever named Max.",
        "We adopted a kitten last month, Max is surprisingly gentle with her.",
        "golden retriever",
        "kitten",
        "What pets do we have?",
    ),
    _case(
        "en",
        "I play guitar in a cover band.",
        "Started piano lessons in September.",
        "guitar",
        "piano",
        "What instruments do I play?",
    ),
    _case(
        "en",
        "I speak French fluently.",
        "I've been picking up some German for work.",
        "French",
        "German",
        "What languages do I speak?",
    ),
    _case(
        "en",
        "My brother lives in Chicago.",
        "My sister just moved to Austin.",
        "Chicago",
        "Austin",
        "Where does my family live?",
    ),
    _case("en", "I love sushi.", "Discovered a great ramen place near work.", "sushi", "ramen", "What food do I like?"),
    _case(
        "en",
        "I run three times a week.",
        "Joined a yoga class on Sundays too.",
        "run three",
        "yoga",
        "What exercise do I do?",
    ),
    _case(
        "en", "I have a MacBook for work.", "Bought an iPad for drawing.", "MacBook", "iPad", "What devices do I have?"
    ),
    _case(
        "en",
        "I read mostly fantasy novels.",
        "Got into history podcasts on my commute.",
        "fantasy",
        "history podcasts",
        "What do I read or listen to?",
    ),
    _case("zh", "我们家有一只柯基叫豆豆。", "上个月又领养了一只小猫。", "柯基", "小猫", "我们家有什么宠物？"),
    _case("zh", "我会弹吉他。", "九月开始学钢琴了。", "吉他", "钢琴", "我会什么乐器？"),
    _case("zh", "我英语说得很流利。", "为了工作最近在学德语。", "英语", "德语", "我会哪些语言？"),
    _case("zh", "我哥哥住在成都。", "我妹妹刚搬到深圳。", "成都", "深圳", "我的家人都住在哪？"),
    _case("zh", "我爱吃寿司。", "公司附近发现了一家很好吃的拉面店。", "寿司", "拉面", "我喜欢吃什么？"),
    _case("zh", "我每周跑三次步。", "周日还报了瑜伽课。", "跑三次步", "瑜伽", "我平时做什么运动？"),
    _case("zh", "我工作用MacBook。", "买了个iPad画画用。", "MacBook", "iPad", "我有哪些电子设备？"),
    _case("zh", "我平时主要看科幻小说。", "通勤路上开始听历史播客了。", "科幻小说", "历史播客", "我平时看什么听什么？"),
]


@dataclass(frozen=True)
class AdditionOutcome:
    both_recalled: bool
    older_marked_earlier: bool


async def run_addition(store, settings: Settings, case: RawCase, user_id: str, with_run: bool) -> AdditionOutcome:
    """An addition through the same steps as a change (bench/raw_changes.run_raw_case)."""
    lines = (await recalled_after(store, settings, case, user_id, with_run)).splitlines()
    older = [line for line in lines if case.old_value in line]
    newer = [line for line in lines if case.new_value in line]
    marked = any("earlier:" in line or "之前：" in line for line in older)
    return AdditionOutcome(bool(older) and bool(newer), marked)


def print_addition_rows(results: dict[tuple[str, str], list[AdditionOutcome]]) -> None:
    print("\nadditions, raw turns (bench/raw_changes_third.py): both hold, neither is earlier")
    print(f"  {'way':28} {'language':8} {'cases':>5}  {'both recalled':>13}  {'older marked earlier':>20}")
    for (way, language), outcomes in sorted(results.items()):
        count = len(outcomes)
        print(
            f"  {way:28} {language:8} {count:5}  {sum(o.both_recalled for o in outcomes) / count:13.0%}  "
            f"{sum(o.older_marked_earlier for o in outcomes):20d}"
        )
