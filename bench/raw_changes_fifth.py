"""The fifth set of raw-turn cases (issue 48, item 1), written after 7385386 froze the rule
("the user's statements compared with each other": two statements each the other's nearest
across time pair when the query selects either and the newer one says the change in words; a
newer statement clearly nearer another earlier statement changes that one; 了 before a question
word asks what holds now) and run once with it: the "5th freeze" rows of
`bench/changing_facts.py --only fifth`, first try.

States no earlier set named (insurer, choir, browser, password manager, mailbox, notes app, vet,
mechanic, energy supplier, airline, weight, rent, lunch, headphones, fitness tracker, tutor,
dance class, photo backup, church, credit card; 输入法, 网盘, 物业, 车位, 理财…), phrased as
people talk, some asked as sets ("What apps do I keep notes in?", "我平时用哪些信用卡？").

- **changes**: the newer statement replaces the older one. The current one first, the stale one
  never shown as current.
- **additions**: the newer statement adds to what the older one said. Both still hold: neither
  may be shown as earlier.
"""

from __future__ import annotations

from raw_changes import RawCase


def _case(language: str, old: str, new: str, old_value: str, new_value: str, ask: str) -> RawCase:
    return RawCase(language, "state", "value", old, new, old_value, new_value, ask)


FIFTH_FREEZE_CASES = [
    _case(
        "en",
        "My health insurance is through Aetna.",
        "Work switched our health plan to Cigna in January.",
        "Aetna",
        "Cigna",
        "Who is my health insurer?",
    ),
    _case(
        "en",
        "I sing alto in the St. Luke's church choir.",
        "Left the church choir, I'm in a community gospel group on Wednesdays now.",
        "St. Luke",
        "gospel",
        "What choir do I sing in?",
    ),
    _case(
        "en",
        "I use Chrome for everything.",
        "Firefox is my browser now, Chrome was eating all my RAM.",
        "Chrome",
        "Firefox",
        "Which browser do I use?",
    ),
    _case(
        "en",
        "All my passwords live in LastPass.",
        "After the breach I moved my passwords to 1Password.",
        "LastPass",
        "1Password",
        "What password manager do I use?",
    ),
    _case(
        "en",
        "My personal email is on Yahoo.",
        "I set up a Proton Mail address and that's the one I give out now.",
        "Yahoo",
        "Proton",
        "What email address do I use?",
    ),
    _case(
        "en",
        "I keep all my notes in Evernote.",
        "Migrated my notes to Notion over the holidays.",
        "Evernote",
        "Notion",
        "What apps do I keep notes in?",
    ),
    _case(
        "en",
        "Our vet is Dr. Hollis at Greenway Animal Clinic.",
        "We take Milo to PetCare Plus these days, Greenway got too pricey.",
        "Hollis",
        "PetCare Plus",
        "Who is our vet?",
    ),
    _case(
        "en",
        "Joe's Garage on 3rd does all my car repairs.",
        "I take the car to a Firestone now, Joe closed his shop.",
        "Joe's Garage",
        "Firestone",
        "Where do I get my car serviced?",
    ),
    _case(
        "en",
        "Our electricity comes from British Gas.",
        "We switched energy supplier to Octopus last month.",
        "British Gas",
        "Octopus",
        "Which companies supply our energy?",
    ),
    _case(
        "en",
        "I always fly Delta, I'm a Gold Medallion.",
        "I've moved my loyalty to United since they have the direct route from here.",
        "Delta",
        "United",
        "Which airline do I fly with?",
    ),
    _case(
        "en",
        "I weigh about 92 kilos.",
        "Down to 84 kilos after three months of cutting sugar!",
        "92 kilos",
        "84 kilos",
        "How much do I weigh?",
    ),
    _case(
        "en",
        "Our rent is $1,800 a month.",
        "The landlord raised the rent to $2,100 starting this month.",
        "1,800",
        "2,100",
        "How much rent do we pay?",
    ),
    _case(
        "en",
        "I bring a packed lunch to work every day.",
        "These days I just grab lunch at the office canteen.",
        "packed lunch",
        "canteen",
        "What do I do for lunch at work?",
    ),
    _case(
        "en",
        "I use AirPods Pro for calls.",
        "Swapped the AirPods for a Sony WH-1000XM5, the noise cancelling is unreal.",
        "AirPods Pro",
        "Sony",
        "What headphones do I have?",
    ),
    _case(
        "en",
        "I wear a Fitbit Charge to track my steps.",
        "My wife gave me an Apple Watch for my birthday, so the Fitbit's in a drawer.",
        "Fitbit Charge",
        "Apple Watch",
        "What fitness tracker do I wear?",
    ),
    _case(
        "en",
        "My son's maths tutor is a student called Ben.",
        "Ben went back to uni, so Mrs. Clarke tutors him in maths now.",
        "called Ben",
        "Clarke",
        "Who tutors my son?",
    ),
    _case(
        "en",
        "I do salsa classes on Tuesday nights.",
        "Salsa wasn't for me, I'm doing swing dance on Tuesdays instead.",
        "salsa classes",
        "swing",
        "What dance class do I take?",
    ),
    _case(
        "en",
        "My photos back up to Google Photos.",
        "I cancelled Google One and the photos go to iCloud now.",
        "Google Photos",
        "iCloud",
        "Where do my photos get backed up?",
    ),
    _case(
        "en",
        "We go to Grace Baptist on Sundays.",
        "We've been attending a small Methodist church near the new house.",
        "Grace Baptist",
        "Methodist",
        "Which church do we attend?",
    ),
    _case(
        "en",
        "I put everything on my Amex.",
        "Paying with a Chase Sapphire card now for the travel points.",
        "Amex",
        "Sapphire",
        "What cards do I pay with?",
    ),
    _case(
        "zh",
        "我买的是平安的重疾险。",
        "平安那份退保了，换成了众安的百万医疗。",
        "平安的重疾险",
        "众安",
        "我买的是哪家的保险？",
    ),
    _case(
        "zh",
        "我在单位合唱团唱女高音。",
        "单位合唱团不办了，我现在去社区的合唱团唱。",
        "单位合唱团唱女高音",
        "社区",
        "我在哪个合唱团唱歌？",
    ),
    _case("zh", "我一直用360浏览器。", "现在用Edge了，360广告太多。", "360浏览器", "Edge", "我用什么浏览器？"),
    _case(
        "zh",
        "我的照片都存在百度网盘。",
        "百度网盘限速太狠，照片全搬到阿里云盘了。",
        "存在百度网盘",
        "阿里云盘",
        "我的照片存在哪？",
    ),
    _case("zh", "我用搜狗输入法打字。", "最近换了微信输入法，感觉挺好用。", "搜狗", "微信输入法", "我用什么输入法？"),
    _case(
        "zh",
        "我们家猫看病都去瑞鹏宠物医院。",
        "瑞鹏太远了，现在带咪咪去小区门口的新瑞宠物诊所。",
        "瑞鹏宠物医院",
        "新瑞",
        "我们家猫在哪看病？",
    ),
    _case("zh", "我的车一直在4S店保养。", "过了保修期，我改去途虎养车做保养了。", "4S店", "途虎", "我的车在哪保养？"),
    _case("zh", "我体重140斤左右。", "坚持跑了三个月，瘦到128斤了！", "140斤", "128斤", "我多重？"),
    _case("zh", "我每个月房租3500。", "房东涨租了，从这个月开始交4000。", "3500", "4000", "我每个月房租多少？"),
    _case("zh", "我中午都是自己带饭。", "这阵子中午都在公司食堂吃。", "自己带饭", "食堂", "我中午怎么吃饭？"),
    _case(
        "zh",
        "我用的是AirPods Pro。",
        "AirPods丢了，新买了一副索尼的降噪耳机。",
        "AirPods Pro",
        "索尼",
        "我用什么耳机？",
    ),
    _case(
        "zh",
        "我戴小米手环记步数。",
        "老婆送了我一块华为手表，小米手环就不戴了。",
        "戴小米手环记",
        "华为手表",
        "我用什么记步数？",
    ),
    _case(
        "zh",
        "儿子的数学家教是个大学生小周。",
        "小周毕业回老家了，现在是退休的孙老师给儿子补数学。",
        "大学生小周",
        "孙老师",
        "谁给我儿子补数学？",
    ),
    _case(
        "zh", "我每周二晚上去跳拉丁舞。", "拉丁舞跳不动了，周二改成跳广场舞。", "去跳拉丁舞", "广场舞", "我跳什么舞？"
    ),
    _case(
        "zh", "我平时刷招行的信用卡。", "现在主要刷浦发的卡，积分换里程划算。", "招行", "浦发", "我平时用哪些信用卡？"
    ),
    _case(
        "zh",
        "我们小区的物业是万科的。",
        "业委会换了物业，现在是碧桂园服务。",
        "万科",
        "碧桂园",
        "我们小区的物业是哪家？",
    ),
    _case(
        "zh",
        "我出差一般坐国航，攒里程。",
        "这两年出差都改坐东航了，航班多。",
        "坐国航",
        "东航",
        "我出差坐哪家航空公司？",
    ),
    _case("zh", "我记笔记用印象笔记。", "笔记都迁移到飞书文档了。", "印象笔记", "飞书", "我用哪些软件记笔记？"),
    _case("zh", "我的闲钱都放在余额宝。", "余额宝收益太低，最近都买了国债。", "放在余额宝", "国债", "我的闲钱放在哪？"),
    _case(
        "zh",
        "我在小区租了一个地下车位。",
        "地下车位到期没续，现在把车停在公司停车场。",
        "租了一个地下车位",
        "公司停车场",
        "我的车停在哪？",
    ),
]

FIFTH_ADDITIONS = [
    _case(
        "en",
        "I'm insured with State Farm for the car.",
        "Took out renters insurance with Lemonade last week.",
        "State Farm",
        "Lemonade",
        "What insurance do I have?",
    ),
    _case(
        "en",
        "I read Morning Brew every day.",
        "Just subscribed to The Pragmatic Engineer, great for work stuff.",
        "Morning Brew",
        "Pragmatic",
        "Which newsletters do I read?",
    ),
    _case(
        "en",
        "I have a road bike for weekends.",
        "Bought a cheap folding bike for the commute.",
        "road bike",
        "folding bike",
        "What bikes do I own?",
    ),
    _case(
        "en",
        "My son takes swimming lessons on Saturdays.",
        "We signed our daughter up for piano lessons.",
        "swimming",
        "piano",
        "What lessons do my kids take?",
    ),
    _case(
        "en",
        "I have a Visa from my bank.",
        "Got a store card from Target for the discounts.",
        "Visa",
        "Target",
        "What cards do I have?",
    ),
    _case(
        "en",
        "We have a Nespresso machine at home.",
        "My partner bought a French press for weekends.",
        "Nespresso",
        "French press",
        "What do we make coffee with at home?",
    ),
    _case(
        "en",
        "I'm in a running club on Wednesdays.",
        "Joined a pottery class on Sunday mornings.",
        "running club",
        "pottery",
        "What activities do I have each week?",
    ),
    _case(
        "en",
        "I keep my savings in a high-yield account at Ally.",
        "Started putting $200 a month into an index fund.",
        "Ally",
        "index fund",
        "Where do I put my money?",
    ),
    _case("zh", "我给车买了人保的车险。", "上周又给自己买了一份意外险。", "人保", "意外险", "我都买了哪些保险？"),
    _case(
        "zh",
        "我订阅了《三联生活周刊》。",
        "最近订了一份《财新周刊》，看看财经新闻。",
        "三联",
        "财新",
        "我订了哪些杂志？",
    ),
    _case("zh", "我有一辆公路车，周末骑。", "为了通勤买了一辆折叠自行车。", "公路车", "折叠", "我有几辆自行车？"),
    _case("zh", "儿子周六上游泳课。", "女儿报了钢琴课。", "游泳课", "钢琴课", "孩子们都上什么课？"),
    _case(
        "zh", "我有一张工行的借记卡。", "办了一张京东的联名信用卡，买东西有折扣。", "工行", "京东", "我有哪些银行卡？"
    ),
    _case("zh", "家里有一台雀巢胶囊咖啡机。", "老公买了个法压壶，周末用。", "胶囊", "法压壶", "我们家用什么做咖啡？"),
    _case("zh", "我每周三晚上参加跑团。", "周日上午报了个陶艺课。", "跑团", "陶艺", "我每周都有哪些活动？"),
    _case("zh", "我的存款放在建行的定期。", "每个月定投两千块指数基金。", "建行", "指数基金", "我的钱都怎么理财？"),
]
