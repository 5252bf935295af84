"""The fourth set of raw-turn cases (issue 48, item 1), written after a rule was frozen and
before it was run: "a question for a set (what/which + a plural noun, 'all'; 哪些, 都, 几 + a
measure word) needs a newer statement that ends or replaces something before an older one is
marked earlier". Run once with it, then once without it (the rule as committed), in
bench/changing_facts.py's "4th freeze" rows. The rule halved the additions marked earlier
(4-6 -> 2-3 of 8 per language) but cost the changes asked as sets (current first 62-75 % ->
38-62 %, stale shown as current 1-2 -> 2-4 of 8), so it was not kept; the set stays, spent.

- **additions**: a newer statement that adds to what the older one said; the question is asked
  as a user would ask it, a set or not. Both still hold: neither may be shown as earlier.
- **changes asked as sets**: the newer statement replaces the older one, and the question often
  asks for a set ("Which doctors do I see?"). The current one first, the stale one never shown
  as current.
"""

from __future__ import annotations

from raw_changes import state_case as _case

FOURTH_ADDITIONS = [
    _case(
        "en",
        "I have a cat called Miso.",
        "We brought home a rescue rabbit on Saturday.",
        "Miso",
        "rabbit",
        "What animals live with me?",
    ),
    _case(
        "en",
        "I volunteer at the food bank on Mondays.",
        "Signed up to coach my son's soccer team this spring.",
        "food bank",
        "soccer",
        "What do I do in my free time?",
    ),
    _case(
        "en",
        "I drive a Honda Civic.",
        "We bought a minivan for the family trips.",
        "Civic",
        "minivan",
        "What cars do we own?",
    ),
    _case(
        "en",
        "My daughter goes to Lincoln Elementary.",
        "Our youngest started preschool at Little Acorns.",
        "Lincoln",
        "Little Acorns",
        "Where do my kids go to school?",
    ),
    _case(
        "en",
        "I'm allergic to peanuts.",
        "The doctor found I'm allergic to shellfish.",
        "peanuts",
        "shellfish",
        "What am I allergic to?",
    ),
    _case(
        "en",
        "I subscribe to Netflix.",
        "Got a Disney+ subscription for the kids.",
        "Netflix",
        "Disney+",
        "Which streaming services do I pay for?",
    ),
    _case(
        "en",
        "I take vitamin D every morning.",
        "My doctor put me on iron supplements.",
        "vitamin D",
        "iron",
        "What supplements do I take?",
    ),
    _case(
        "en",
        "I'm in a book club that meets on Thursdays.",
        "Joined a hiking group that goes out on weekends.",
        "book club",
        "hiking group",
        "What groups am I part of?",
    ),
    _case("zh", "我养了一只猫叫年糕。", "周六我们从救助站领回了一只兔子。", "年糕", "兔子", "我家里养了什么动物？"),
    _case(
        "zh",
        "我每周一在食物银行做义工。",
        "今年春天我报名当儿子足球队的教练。",
        "食物银行",
        "足球队",
        "我业余时间都做些什么？",
    ),
    _case("zh", "我开一辆本田思域。", "为了全家出游我们买了一辆商务车。", "思域", "商务车", "我们家有几辆车？"),
    _case("zh", "我女儿在实验小学上学。", "小儿子去了小橡树幼儿园。", "实验小学", "小橡树", "我的孩子们在哪里上学？"),
    _case("zh", "我对花生过敏。", "检查发现我对虾过敏。", "花生", "虾", "我对什么过敏？"),
    _case("zh", "我订了奈飞会员。", "给孩子们开了迪士尼会员。", "奈飞", "迪士尼", "我订了哪些视频会员？"),
    _case("zh", "我每天早上吃维生素D。", "医生让我开始补铁。", "维生素D", "补铁", "我在吃什么保健品？"),
    _case(
        "zh", "我参加了一个周四聚会的读书会。", "加入了一个周末爬山的徒步群。", "读书会", "徒步", "我参加了哪些团体？"
    ),
]

FOURTH_FREEZE_CASES = [  # changes, asked as sets (or not) the way a user would
    _case(
        "en",
        "I have an iPhone 12.",
        "My iPhone died so I switched to a Galaxy S23.",
        "iPhone 12",
        "Galaxy",
        "What devices do I use?",
    ),
    _case(
        "en",
        "I use Spotify for music.",
        "Went with Apple Music after the family plan deal.",
        "Spotify",
        "Apple Music",
        "Which music apps do I pay for?",
    ),
    _case(
        "en",
        "My dentist is Dr. Patel.",
        "I see Dr. Morgan for my teeth now, Patel retired.",
        "Dr. Patel",
        "Dr. Morgan",
        "Which doctors do I see?",
    ),
    _case(
        "en",
        "I'm on the night shift at the warehouse.",
        "Got moved to days at the warehouse last week.",
        "night shift",
        "days",
        "What hours do I work?",
    ),
    _case(
        "en",
        "We keep two goldfish.",
        "The goldfish are gone; we have a turtle now.",
        "two goldfish",
        "turtle",
        "What pets do we have?",
    ),
    _case(
        "en",
        "My main language at work is Java.",
        "The team moved everything to Go, so I write Go all day.",
        "Java",
        "write Go",
        "What programming languages do I use at work?",
    ),
    _case(
        "en",
        "I take the 42 bus to work.",
        "Started cycling to work in March.",
        "42 bus",
        "cycling",
        "How do I get to work?",
    ),
    _case(
        "en",
        "I'm studying biology.",
        "Changed my major to chemistry this term.",
        "biology",
        "chemistry",
        "What subjects am I studying?",
    ),
    _case("zh", "我用的是苹果手机。", "苹果手机坏了，换成了华为。", "苹果手机。", "华为", "我在用哪些电子产品？"),
    _case("zh", "我听歌用QQ音乐。", "后来改用网易云音乐了。", "QQ音乐", "网易云", "我都用什么听歌？"),
    _case("zh", "我的牙医是李医生。", "现在看牙去找陈医生。", "李医生", "陈医生", "我都看哪些医生？"),
    _case("zh", "我上夜班。", "上周调到白班了。", "夜班", "白班", "我的上班时间是几点到几点？"),
    _case("zh", "我们家养了两条金鱼。", "金鱼都没了，现在养了一只乌龟。", "两条金鱼", "乌龟", "我们家养了哪些宠物？"),
    _case(
        "zh", "我工作主要写Java。", "团队全部转到Go了，现在天天写Go。", "Java", "天天写Go", "我工作中用哪些编程语言？"
    ),
    _case("zh", "我坐42路公交上班。", "三月开始骑车上班了。", "42路", "骑车", "我怎么去上班？"),
    _case("zh", "我的专业是生物。", "这学期转专业到化学了。", "生物", "化学", "我在学哪些科目？"),
]
