"""The fourteenth set of raw-turn cases (issue 48, item 1), written on 2026-11-29 after the rule was
frozen at 53176cc, by someone who had not read the rule (nor memlane/, nor the earlier sets' cases,
only their docstrings), to be run once with it for the first-try figure: the "14th freeze" rows of
`bench/changing_facts.py --only fourteenth`.

States no earlier set named (allergist, window cleaner, home Wi-Fi network's name, building gate
code, resting heart rate, bench press, golf handicap, standup time, butcher, motorcycle, crypto
exchange, monthly savings, audiobooks, facial hair, winter coat, jeans, bowling league night, son's
best friend, next-door neighbours, financial advisor, parking app, where my brother lives, bed
sheets, cups of coffee a day, morning puzzle, dietitian; 儿子的同桌, 儿子的近视度数, 体脂率,
大小周/双休, 年终奖, 王者段位, 六级分数, 女儿的班级排名, 猫的驱虫药, 卫生巾, 洗衣液, 电车充电,
吃面去哪家, 小区团购跟谁团, 油烟机, 阳台种的菜, 上班喝的饮料, 我爸的退休金, 同事结婚随礼, 限行日,
卖二手的平台, 叫代驾, 宿舍楼, 毕业论文选题, 剪视频的软件, 宝宝奶瓶), each change said as people
type it: with a change word ("switching", "moved", "renamed", "cancelled", 换了, 改成, 改用, 调),
with "now" or "these days" (现在, 最近, 这阵子), as a plain restatement with no word of change
("Vinny's Meats over on Elm is where I get our meat", "hit 205 on bench today!!", "转转回收上门
省事多了"), some not repeating the topic word ("Down to a 14 after the summer league", "Watch says
57 bpm resting these days", "上星耀啦", "可么多么的防胀气奶瓶"), some lowercase or slangy with typos
("sold the rebel last wknd", "its OrangeBoat now lol", "最近都再那充", "真香"), some long with a
reason or other news (a knee after PT, 妹妹下个月订婚), a few naming the old thing beside the new
("Cancelled Audible", "Theo moved to Ohio", "芳姐不干团长了"), some with numbers, prices or times
("4471" → "9028", "68" → "57 bpm", "185" → "205", "9:15" → "10:00", "$300" → "$550", "four cups" →
"two cups", "两百度" → "两百七十五度", "28%" → "22%", "四千二" → "四千五", "五百" → "八百",
"周二" → "周四").

- **changes**: the newer statement replaces the older one. The current one first, the stale one
  never shown as current.
- **additions**: the newer statement adds to what the older one said (another backyard hen, another
  newsletter I write, another service club, another degree, another tree in the yard, another team I
  coach, another wedding I'm best man at, another summit, another creator I back on Patreon; 定投的
  基金, 给我妈买的保险, 女儿的班干部职务, 驾照, 儿子的大学社团, 在领的补贴, 负责的销售区域, 家里装
  摄像头的地方, 宝宝长的牙), said with "second", "also", "too", "as well", or a further one stated
  plainly ("Summited Aconcagua last month!!!", "Finally finished my MBA"), 又, 也, 还. Both still
  hold: neither may be shown as earlier.

First try (raw turns, no memory run, the rule at 53176cc; not tuned on): current first en 88 % / zh
100 %, stale shown as current 4 + 2, additions marked earlier 2 / 0 of 9 (the rule at ea4df14, before
the session: the same changes, additions 2 / 1). The misses: newer statements the query does not
bring near or that name neither the thing nor a word of the older one ("Down to a 14 after the
summer league", "im hooked on Connections now, gave up on the other one"), "What jeans do I wear?"
read as asking for several, and, shown after the current line but not marked earlier, the older
statement of "今年…年终奖就发了一个月" and "马记关门了，现在想吃面就去张妈刀削面".
"""

from __future__ import annotations

from raw_changes import state_case as _case

FOURTEENTH_FREEZE_CASES = [
    # English changes
    _case(
        "en",
        "My allergist is Dr. Lindqvist over at Bayview Clinic, she's been great with my hay fever shots.",
        "Ended up switching allergists, Lindqvist kept double-booking me. I see Dr. Okonkwo at the Ridgeway practice now.",
        "Dr. Lindqvist",
        "Dr. Okonkwo",
        "Which allergist do I see?",
    ),
    _case(
        "en",
        "Shine Bros come out every April to do our windows, inside and out.",
        "Found a new window guy, Pete from ClearView. Way more careful around the screens and he's $40 cheaper.",
        "Shine Bros",
        "ClearView",
        "Who cleans our windows?",
    ),
    _case(
        "en",
        "Writing a note for the house sitter: wifi is Fernhill_5G, password's on the fridge.",
        "finally renamed the router network, its OrangeBoat now lol. same password",
        "Fernhill_5G",
        "OrangeBoat",
        "What's our home Wi-Fi network called?",
    ),
    _case(
        "en",
        "The gate code for our building is 4471, in case I forget again.",
        "Management reset the gate code after the break-in. 9028 from now on.",
        "4471",
        "9028",
        "What's the code for the building gate?",
    ),
    _case(
        "en",
        "My resting heart rate is usually around 68.",
        "Watch says 57 bpm resting these days, all that rowing is paying off.",
        "68",
        "57 bpm",
        "What's my resting heart rate?",
    ),
    _case(
        "en",
        "I can bench 185, been stuck there since spring.",
        "hit 205 on bench today!! new PR and it felt light",
        "185",
        "205",
        "How much can I bench?",
    ),
    _case(
        "en",
        "My golf handicap is 18, nothing to brag about.",
        "Down to a 14 after the summer league, finally!",
        "18",
        "14",
        "What's my golf handicap now?",
    ),
    _case(
        "en",
        "Our team standup is at 9:15 every morning.",
        "Standup got pushed to 10:00 because of the two new hires on Pacific time.",
        "9:15",
        "10:00",
        "What time is our standup?",
    ),
    _case(
        "en",
        "I buy all our meat at Halloran's on Fifth Street.",
        "Vinny's Meats over on Elm is where I get our meat, their short ribs are unreal.",
        "Halloran's",
        "Vinny's Meats",
        "Where do I buy meat?",
    ),
    _case(
        "en",
        "I ride a Honda Rebel 500 to work when the weather's nice.",
        "sold the rebel last wknd and picked up a used triumph bonneville, its a dream to ride",
        "Honda Rebel",
        "triumph bonneville",
        "What motorcycle do I have?",
    ),
    _case(
        "en",
        "The little crypto I have sits on Coinbase.",
        "Moved all my coins over to Kraken, the fees on the other one were killing me.",
        "Coinbase",
        "Kraken",
        "Which exchange is my crypto on?",
    ),
    _case(
        "en",
        "I'm putting $300 a month into savings.",
        "Bumped the auto-transfer to savings up to $550 a month now that the car's paid off.",
        "$300",
        "$550",
        "How much do I put into savings each month?",
    ),
    _case(
        "en",
        "I get my audiobooks through Audible.",
        "Cancelled Audible. Libby is free with my library card and has basically everything I want.",
        "Audible",
        "Libby",
        "Where do I get my audiobooks from these days?",
    ),
    _case(
        "en",
        "I've had a full beard since college.",
        "Shaved down to a goatee for the summer, my wife says I look ten years younger.",
        "full beard",
        "goatee",
        "What facial hair do I have?",
    ),
    _case(
        "en",
        "My winter coat is a Canada Goose parka I got on sale.",
        "Zipper on my parka broke for the third time so I bought a Patagonia down jacket instead, way lighter.",
        "Canada Goose",
        "Patagonia",
        "What's my winter coat?",
    ),
    _case(
        "en",
        "I only wear Levi's 501s, nothing else fits right.",
        "uniqlo selvedge jeans are where its at, half the price and they actually fit my legs",
        "Levi's 501s",
        "uniqlo",
        "What jeans do I wear?",
    ),
    _case(
        "en",
        "Bowling league is Tuesday nights at Starlite Lanes.",
        "League moved to Thursdays this season, which works better with my kid's practice schedule.",
        "Tuesday",
        "Thursdays",
        "Which night is my bowling league?",
    ),
    _case(
        "en",
        "Eli's best buddy is Theo from next door, they're together every day after school.",
        "Theo moved to Ohio in October and now Eli is inseparable from a kid named Mateo from his class.",
        "Theo",
        "Mateo",
        "Who is Eli's best friend?",
    ),
    _case(
        "en",
        "Our next-door neighbours are the Halvorsens, lovely older couple.",
        "House next door finally sold. A young couple, the Mirandas, moved in on Saturday and brought us cookies.",
        "Halvorsens",
        "Mirandas",
        "Who lives next door to us?",
    ),
    _case(
        "en",
        "My financial advisor is Karen Whitfield at Edward Jones.",
        "Moved my accounts to Vanguard, so Marcus Bell handles my planning now.",
        "Karen Whitfield",
        "Marcus Bell",
        "Who is my financial advisor?",
    ),
    _case(
        "en",
        "I pay for street parking downtown with ParkMobile.",
        "city changed vendors so its all PayByPhone now, ugh yet another app on my phone",
        "ParkMobile",
        "PayByPhone",
        "What app do I pay for parking with?",
    ),
    _case(
        "en",
        "My brother Sam lives in Tucson with his wife and the twins.",
        "Big week: Sam and his family are officially moved into their new place in Boise, he starts the new job Monday. "
        "Also my knee is finally better after PT, back to walking the dog every morning.",
        "Tucson",
        "Boise",
        "Where does my brother live now?",
    ),
    _case(
        "en",
        "We sleep on percale sheets, I run hot at night.",
        "Grabbed linen sheets on Black Friday and I'm never going back.",
        "percale",
        "linen",
        "What kind of sheets are on our bed?",
    ),
    _case(
        "en",
        "I drink like four cups of coffee a day, it's a problem.",
        "Down to two cups a day, doctor's orders after the palpitations.",
        "four cups",
        "two cups",
        "How many cups of coffee do I have a day?",
    ),
    _case(
        "en",
        "Every morning I do the Wordle with my first coffee.",
        "im hooked on Connections now, gave up on the other one, it got too easy",
        "Wordle",
        "Connections",
        "Which daily puzzle do I play in the morning?",
    ),
    _case(
        "en",
        "I see a dietitian, Priya Raman, once a month for my cholesterol.",
        "Insurance stopped covering Priya's practice, so I've been seeing Hannah Cole for the cholesterol stuff since September.",
        "Priya Raman",
        "Hannah Cole",
        "Who is my dietitian?",
    ),
    # Chinese changes
    _case(
        "zh",
        "我儿子的同桌叫王浩然，俩人天天一起打闹",
        "学校调座位了，现在跟李思琪坐一起，老师说让女生管管他哈哈",
        "王浩然",
        "李思琪",
        "我儿子同桌是谁？",
    ),
    _case(
        "zh",
        "儿子近视两百度了，愁死",
        "带儿子去复查，两只眼睛都涨到两百七十五度了，得少让他玩平板",
        "两百度",
        "两百七十五度",
        "我儿子现在近视多少度？",
    ),
    _case("zh", "测了下体脂率，28%，有点高", "坚持练了一个多月，体脂降到22%了！", "28%", "22%", "我体脂率多少？"),
    _case(
        "zh",
        "我们公司是大小周，小周只能休一天",
        "公司终于改双休了！！周末可以回家看爸妈了",
        "大小周",
        "双休",
        "我们公司周末怎么休？",
    ),
    _case(
        "zh",
        "我们年终奖一般发三个月工资",
        "今年行情不好，年终奖就发了一个月，心凉了半截",
        "三个月",
        "一个月",
        "我今年年终奖发了几个月的？",
    ),
    _case("zh", "王者打到钻石了，死活上不去", "上星耀啦 熬了三个通宵 嘿嘿", "钻石", "星耀", "我王者现在什么段位？"),
    _case("zh", "六级考了480，刚过线", "六级又刷了一次，这次536，终于敢写简历上了", "480", "536", "我六级多少分？"),
    _case(
        "zh",
        "闺女这次月考班里排第十五",
        "期中考试闺女冲到班里第六名了，奖励她吃了顿海底捞",
        "第十五",
        "第六",
        "我女儿在班上排第几？",
    ),
    _case(
        "zh",
        "家里猫每个月用大宠爱驱虫",
        "宠物医院推荐了博来恩，体内外一起驱，就换了",
        "大宠爱",
        "博来恩",
        "我家猫用什么驱虫药？",
    ),
    _case(
        "zh",
        "卫生巾一直用的苏菲，习惯了",
        "最近改用ABC了，夜用的长一点不容易侧漏",
        "苏菲",
        "ABC",
        "我用啥牌子的卫生巾？",
    ),
    _case(
        "zh", "家里洗衣液用的蓝月亮", "超市立白搞活动，买了一大桶，以后就用这个了", "蓝月亮", "立白", "我家用什么洗衣液"
    ),
    _case(
        "zh",
        "电车平时在特来电的桩上充",
        "星星充电离小区近还便宜 最近都再那充",
        "特来电",
        "星星充电",
        "我的车一般在哪家充电？",
    ),
    _case(
        "zh",
        "周末最爱去老城那家马记牛肉面，一碗十八",
        "马记关门了，现在想吃面就去张妈刀削面，分量足",
        "马记牛肉面",
        "张妈刀削面",
        "我想吃面了常去哪家？",
    ),
    _case(
        "zh",
        "小区团购一直跟3号楼的芳姐团",
        "芳姐不干团长了，现在跟楼下小胖的群买",
        "芳姐",
        "小胖",
        "我在小区跟谁团购？",
    ),
    _case(
        "zh",
        "厨房油烟机是方太的，用了八年了",
        "旧的那台实在吸不动了，换了台华帝的侧吸，安静多了",
        "方太",
        "华帝",
        "我家油烟机什么牌子？",
    ),
    _case("zh", "今年阳台上种的是小番茄", "阳台改种辣椒了，番茄老生虫", "小番茄", "辣椒", "我阳台种的啥？"),
    _case(
        "zh",
        "上班天天一瓶元气森林",
        "气泡水喝腻了 现在天天东方树叶 真香",
        "元气森林",
        "东方树叶",
        "我上班常喝什么饮料？",
    ),
    _case(
        "zh",
        "我爸退休金一个月四千二",
        "今年调待遇，老爷子每月能拿四千五了，乐呵呵的。对了我妹下个月订婚，得请假回去一趟",
        "四千二",
        "四千五",
        "我爸退休金多少？",
    ),
    _case("zh", "我们这边同事结婚一般随五百", "现在物价涨了，同事结婚我都随八百", "五百", "八百", "同事结婚我随多少？"),
    _case("zh", "我车尾号是3，每周二限行", "限行又轮换了，这阵子改成周四", "周二", "周四", "我的车哪天限行？"),
    _case(
        "zh",
        "闲置的东西我都挂闲鱼上卖",
        "转转回收上门 省事多了 旧手机旧衣服都在上面出",
        "闲鱼",
        "转转",
        "我卖二手东西用哪个平台？",
    ),
    _case("zh", "喝了酒我一般叫e代驾", "现在叫代驾都用滴滴了，司机来得快", "e代驾", "滴滴", "我叫代驾用什么？"),
    _case(
        "zh",
        "我住12号楼305，离食堂特别近",
        "换宿舍了，搬到8号楼去了，离实验室近",
        "12号楼",
        "8号楼",
        "我宿舍在哪栋楼？",
    ),
    _case(
        "zh",
        "毕业论文选题定了，写农村电商",
        "导师让我改方向，改成直播带货的消费者行为了，又得重新找文献",
        "农村电商",
        "直播带货",
        "我毕业论文写什么？",
    ),
    _case(
        "zh", "vlog都是用剪映剪的", "现在剪vlog都换成Final Cut了，质感好太多", "剪映", "Final Cut", "我用什么剪视频？"
    ),
    _case(
        "zh",
        "宝宝奶瓶用的贝亲",
        "宝宝老胀气，换了个可么多么的防胀气奶瓶，好像好点了",
        "贝亲",
        "可么多么",
        "宝宝用啥奶瓶",
    ),
]

FOURTEENTH_ADDITIONS = [
    # English additions
    _case(
        "en",
        "We got our first backyard hen, her name is Dolly.",
        "Brought home a second hen yesterday, Peaches, so Dolly isn't lonely.",
        "Dolly",
        "Peaches",
        "What are our hens called?",
    ),
    _case(
        "en",
        "I write a Substack about birding called Feather Notes.",
        "Launched a second newsletter this week, Trail Mix, it's all about day hikes.",
        "Feather Notes",
        "Trail Mix",
        "What newsletters do I write?",
    ),
    _case(
        "en",
        "I'm a member of the Rotary club in town.",
        "Joined the Lions Club as well, they run the pancake breakfast I love.",
        "Rotary",
        "Lions Club",
        "Which service clubs do I belong to?",
    ),
    _case(
        "en",
        "I have a BA in history from Ohio State.",
        "Finally finished my MBA, walked at graduation on Saturday!",
        "BA in history",
        "MBA",
        "What degrees do I hold?",
    ),
    _case(
        "en",
        "We planted a Japanese maple in the front yard.",
        "Put a dogwood in by the back fence this weekend too.",
        "Japanese maple",
        "dogwood",
        "What trees have we planted?",
    ),
    _case(
        "en",
        "I coach my son's U10 soccer team on Saturdays.",
        "Also signed up to coach the middle school debate team on Wednesdays, no idea what I'm doing lol",
        "U10 soccer",
        "debate team",
        "What do I coach?",
    ),
    _case(
        "en",
        "I'm best man at Jake's wedding in June.",
        "Luis asked me to be his best man too! His is in September.",
        "Jake",
        "Luis",
        "Whose weddings am I best man at?",
    ),
    _case(
        "en",
        "I climbed Kilimanjaro back in 2019.",
        "Summited Aconcagua last month!!! Hardest thing I've ever done.",
        "Kilimanjaro",
        "Aconcagua",
        "Which big mountains have I climbed?",
    ),
    _case(
        "en",
        "I support ContraPoints on Patreon, $5 a month.",
        "Started backing Tom Scott on Patreon too.",
        "ContraPoints",
        "Tom Scott",
        "Who do I support on Patreon?",
    ),
    # Chinese additions
    _case(
        "zh", "每个月定投沪深300，一千块", "又加了个纳指100的定投，每月五百", "沪深300", "纳指100", "我在定投哪些基金？"
    ),
    _case(
        "zh",
        "给我妈买了份百万医疗险",
        "又给她加了个意外险，老人摔一跤可不得了",
        "百万医疗险",
        "意外险",
        "我给我妈买了哪些保险？",
    ),
    _case(
        "zh",
        "我女儿是班里的语文课代表",
        "这学期她又当上了劳动委员，可把她骄傲坏了",
        "语文课代表",
        "劳动委员",
        "我女儿在班里当什么？",
    ),
    _case("zh", "我有C1驾照，开了十年车了", "摩托车驾照也考下来了，E照到手！", "C1", "E照", "我有哪些驾照？"),
    _case(
        "zh",
        "儿子在大学进了街舞社",
        "他还报了个摄影协会，说要给街舞社拍宣传照",
        "街舞社",
        "摄影协会",
        "我儿子在大学参加了哪些社团？",
    ),
    _case(
        "zh", "我在领人才补贴，每月两千", "租房补贴也批下来了，一个月一千五", "人才补贴", "租房补贴", "我在领哪些补贴？"
    ),
    _case(
        "zh", "我负责华东区的销售", "领导让我把华南也一起管起来，以后出差更多了", "华东区", "华南", "我负责哪些区域？"
    ),
    _case(
        "zh",
        "客厅装了个小米摄像头，上班时候看看猫",
        "门口也装了一个萤石的，快递放门口放心点",
        "客厅",
        "门口",
        "我家哪里装了摄像头？",
    ),
    _case(
        "zh",
        "宝宝长牙了！下面两颗门牙冒出来了",
        "上面两颗门牙也冒头了，难怪这几天口水流个不停",
        "下面两颗门牙",
        "上面两颗门牙",
        "宝宝长了哪几颗牙？",
    ),
]
