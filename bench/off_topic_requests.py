"""Requests that concern nothing a user said, and questions whose answer was said in other words.

Written for issue 48, item 3, after recall's floor and relevance were frozen; nothing was tuned on
them (bench/model_sees.py's eight everyday requests per language, `OFF_TOPIC`, were used as
negatives by bench/relevance_calibration.py; none of those is repeated here). Used by
bench/off_topic.py and bench/recall_quality.py.

- `UNRELATED`: 110 requests per language that a chat user asks an assistant and that no memory of
  theirs can help with: code, arithmetic, science, history, geography, language, writing for
  someone else. A recalled item for one of them is noise in the model's prompt.
- `PARAPHRASES`: a statement of the user's and a question about it in other words (no content
  word shared, where the language allows), 20 per language.
"""

from __future__ import annotations

from dataclasses import dataclass

_EN_HAND = [
    "How do I sort a dictionary by value in Python?",
    "What does the HTTP status code 418 mean?",
    "Explain the difference between TCP and UDP.",
    "Write a SQL query that counts rows per month.",
    "What is the derivative of x cubed?",
    "Prove that the square root of two is irrational.",
    "Why is the sky blue?",
    "How does photosynthesis work?",
    "What caused the fall of the Western Roman Empire?",
    "Who painted the ceiling of the Sistine Chapel?",
    "When did the Berlin Wall come down?",
    "What is the boiling point of water at high altitude?",
    "Summarise the plot of Hamlet in three sentences.",
    "Write a limerick about a forgetful robot.",
    "Compose a short poem about the sea.",
    "Give me ten names for a fantasy kingdom.",
    "What is the difference between affect and effect?",
    "How do you conjugate the German verb sein?",
    "Translate 'where is the train station' into Spanish.",
    "What is a monad in functional programming?",
    "How does public key cryptography work?",
    "What is the speed of light in a vacuum?",
    "Explain quantum entanglement simply.",
    "What is the largest desert in the world?",
    "How many bones are in the adult human body?",
    "What is the Pythagorean theorem?",
    "Convert 100 degrees Fahrenheit to Celsius.",
    "What is 15 percent of 240?",
    "How do black holes form?",
    "What is the half-life of carbon 14?",
    "Describe the water cycle for a school project.",
    "Write a cover letter template for a junior accountant.",
    "What are the rules of chess castling?",
    "How does a bill become law in the United States?",
    "What is the GDP of Japan roughly?",
    "Explain the Monty Hall problem.",
    "What is the capital of Mongolia?",
    "Which river flows through Budapest?",
    "How tall is Mount Kilimanjaro?",
    "What language is spoken in Suriname?",
    "Write a regular expression that matches an IPv4 address.",
    "How do I undo the last git commit?",
    "What is the time complexity of quicksort?",
    "Explain recursion with an example.",
    "What does a Fourier transform do?",
    "How do vaccines trigger an immune response?",
    "What is the difference between weather and climate?",
    "Who discovered penicillin?",
    "What were the causes of the First World War?",
    "Explain supply and demand.",
    "What is an index fund?",
    "Write a tweet announcing a library's new opening hours.",
    "Draft a polite email declining a meeting invitation.",
    "What rhymes with orange?",
    "Give me a riddle for kids.",
    "How does a refrigerator keep things cold?",
    "What is the tallest building in the world?",
    "How many players are on a rugby union team?",
    "What is the Krebs cycle?",
    "Explain the theory of plate tectonics.",
]
_EN_COUNTRIES = ["Peru", "Kenya", "Norway", "Vietnam", "Chile", "Egypt", "Finland", "Morocco", "Nepal", "Portugal"]
_EN_LANGUAGES = ["Rust", "Go", "JavaScript", "Haskell", "C", "Kotlin", "Ruby", "Swift", "Java", "Lua"]
_EN_WORDS = [
    "butterfly",
    "library",
    "thunder",
    "bicycle",
    "window",
    "lighthouse",
    "umbrella",
    "mountain",
    "candle",
    "bridge",
]
_EN_LANGS_TO = [
    "Italian",
    "Japanese",
    "Dutch",
    "Portuguese",
    "Korean",
    "Swedish",
    "Greek",
    "Turkish",
    "Polish",
    "Czech",
]
_EN_TOPICS = [
    "volcanoes",
    "the printing press",
    "honeybees",
    "the Silk Road",
    "jazz",
    "tides",
    "glaciers",
    "the Renaissance",
]

UNRELATED_EN = [
    *_EN_HAND,
    *(f"What is the population of {country}?" for country in _EN_COUNTRIES),
    *(f"How do I read a file line by line in {language}?" for language in _EN_LANGUAGES),
    *(f"How do you say '{word}' in {to}?" for word, to in zip(_EN_WORDS, _EN_LANGS_TO)),
    *(f"Write a short paragraph about the history of {topic}." for topic in _EN_TOPICS),
    *(f"What is {a} multiplied by {b}?" for a, b in [(37, 12), (108, 9), (64, 25), (19, 47), (250, 14), (73, 6)]),
    *(
        f"Explain how {thing} works."
        for thing in ["a jet engine", "GPS", "a transistor", "blockchain", "an MRI scanner", "a nuclear reactor"]
    ),
]

_ZH_HAND = [
    "Python里怎么按值给字典排序？",
    "HTTP状态码418是什么意思？",
    "解释一下TCP和UDP的区别。",
    "写一个按月统计行数的SQL语句。",
    "x的三次方求导是多少？",
    "证明根号二是无理数。",
    "天空为什么是蓝色的？",
    "光合作用是怎么进行的？",
    "西罗马帝国为什么会灭亡？",
    "西斯廷教堂的天顶画是谁画的？",
    "柏林墙是哪一年倒塌的？",
    "高海拔地区水的沸点是多少？",
    "用三句话概括《哈姆雷特》的情节。",
    "写一首关于健忘机器人的打油诗。",
    "帮我写一首关于大海的诗。",
    "给一个奇幻王国起十个名字。",
    "“的”“地”“得”怎么区分？",
    "德语动词sein怎么变位？",
    "把“火车站在哪里”翻译成西班牙语。",
    "函数式编程里的单子是什么？",
    "公钥加密的原理是什么？",
    "真空中的光速是多少？",
    "简单解释一下量子纠缠。",
    "世界上最大的沙漠是哪个？",
    "成年人身上有多少块骨头？",
    "勾股定理是什么？",
    "华氏100度等于多少摄氏度？",
    "240的百分之十五是多少？",
    "黑洞是怎么形成的？",
    "碳14的半衰期是多久？",
    "为学校作业描述一下水循环。",
    "写一份初级会计的求职信模板。",
    "国际象棋的王车易位规则是什么？",
    "美国的法案是怎么变成法律的？",
    "日本的国内生产总值大概是多少？",
    "解释一下三门问题。",
    "蒙古的首都是哪里？",
    "哪条河流经布达佩斯？",
    "乞力马扎罗山有多高？",
    "苏里南说什么语言？",
    "写一个匹配IPv4地址的正则表达式。",
    "怎么撤销上一次git提交？",
    "快速排序的时间复杂度是多少？",
    "举例解释一下递归。",
    "傅里叶变换是干什么的？",
    "疫苗是怎么引起免疫反应的？",
    "天气和气候有什么区别？",
    "青霉素是谁发现的？",
    "第一次世界大战的起因是什么？",
    "解释一下供求关系。",
    "什么是指数基金？",
    "写一条图书馆新开放时间的公告。",
    "起草一封礼貌拒绝会议邀请的邮件。",
    "量子色动力学的渐近自由是什么？",
    "给小朋友出一个谜语。",
    "冰箱是怎么制冷的？",
    "世界上最高的建筑是哪座？",
    "英式橄榄球一队有几个人？",
    "三羧酸循环是什么？",
    "解释一下板块构造理论。",
]
_ZH_COUNTRIES = ["秘鲁", "肯尼亚", "挪威", "越南", "智利", "埃及", "芬兰", "摩洛哥", "尼泊尔", "葡萄牙"]
_ZH_LANGUAGES = ["Rust", "Go", "JavaScript", "Haskell", "C语言", "Kotlin", "Ruby", "Swift", "Java", "Lua"]
_ZH_WORDS = ["蝴蝶", "图书馆", "雷声", "自行车", "窗户", "灯塔", "雨伞", "高山", "蜡烛", "桥"]
_ZH_LANGS_TO = ["意大利语", "日语", "荷兰语", "葡萄牙语", "韩语", "瑞典语", "希腊语", "土耳其语", "波兰语", "捷克语"]
_ZH_TOPICS = ["火山", "印刷术", "蜜蜂", "丝绸之路", "爵士乐", "潮汐", "冰川", "文艺复兴"]

UNRELATED_ZH = [
    *_ZH_HAND,
    *(f"{country}有多少人口？" for country in _ZH_COUNTRIES),
    *(f"用{language}怎么逐行读取文件？" for language in _ZH_LANGUAGES),
    *(f"“{word}”用{to}怎么说？" for word, to in zip(_ZH_WORDS, _ZH_LANGS_TO)),
    *(f"写一段关于{topic}历史的短文。" for topic in _ZH_TOPICS),
    *(f"{a}乘以{b}等于多少？" for a, b in [(37, 12), (108, 9), (64, 25), (19, 47), (250, 14), (73, 6)]),
    *(f"解释一下{thing}的工作原理。" for thing in ["喷气发动机", "GPS", "晶体管", "区块链", "核磁共振仪", "核反应堆"]),
]

UNRELATED = {"en": UNRELATED_EN, "zh": UNRELATED_ZH}


@dataclass(frozen=True)
class Paraphrase:
    statement: str  # what the user said once
    question: str  # asked later, in other words


PARAPHRASES = {
    "en": [
        Paraphrase("I'm allergic to cats.", "Can I have a pet kitten?"),
        Paraphrase("We have three kids, two boys and a girl.", "How many children do I have?"),
        Paraphrase("I've been learning Portuguese on Duolingo for a year.", "What language am I studying?"),
        Paraphrase("Nothing beats my mum's lamb tagine.", "What is my favourite food?"),
        Paraphrase("I get up at 5:30 every weekday for my run.", "When do I usually wake up?"),
        Paraphrase("I can't eat gluten, it makes me really sick.", "Should I order the pasta or the salad?"),
        Paraphrase("My husband Dave fixes aircraft engines for a living.", "What does my spouse do for work?"),
        Paraphrase("I sold my car last year and cycle everywhere now.", "How do I get to the office?"),
        Paraphrase("I'm terrified of heights.", "Would I enjoy a hot-air balloon ride?"),
        Paraphrase("Our flat is on the fourth floor with no lift.", "How many stairs do I climb to get home?"),
        Paraphrase("I play bass in a punk band on weekends.", "What instrument do I play?"),
        Paraphrase("I'm six months pregnant with twins.", "Am I expecting a baby?"),
        Paraphrase("I grew up on a sheep farm in Wales.", "Where did I spend my childhood?"),
        Paraphrase("I've been sober for three years now.", "Do I drink alcohol?"),
        Paraphrase("My daughter starts university in Edinburgh in the autumn.", "Where will my child study?"),
        Paraphrase("I have type 1 diabetes and check my sugar four times a day.", "Do I have any medical condition?"),
        Paraphrase("I'm vegan, no animal products at all.", "Can I eat cheese?"),
        Paraphrase("I work night shifts at the airport.", "When do I sleep?"),
        Paraphrase("My laptop is a ten-year-old ThinkPad.", "What computer do I use?"),
        Paraphrase("I run a small bakery in the old town.", "What is my business?"),
    ],
    "zh": [
        Paraphrase("我对猫过敏。", "我能养一只小猫吗？"),
        Paraphrase("我们有三个孩子，两个儿子一个女儿。", "我家有几个小孩？"),
        Paraphrase("我在用多邻国学葡萄牙语，学了一年了。", "我在学哪门外语？"),
        Paraphrase("我最爱吃我妈做的红烧排骨。", "我最喜欢什么菜？"),
        Paraphrase("我工作日每天五点半起来跑步。", "我一般几点醒？"),
        Paraphrase("我不能吃麸质，吃了会很难受。", "我点意大利面还是沙拉好？"),
        Paraphrase("我老公是修飞机发动机的。", "我爱人是做什么工作的？"),
        Paraphrase("我去年把车卖了，现在到哪都骑自行车。", "我怎么去上班？"),
        Paraphrase("我特别恐高。", "我会喜欢坐热气球吗？"),
        Paraphrase("我们家住五楼，没有电梯。", "我回家要爬几层楼？"),
        Paraphrase("我周末在一个朋克乐队弹贝斯。", "我会玩什么乐器？"),
        Paraphrase("我怀孕六个月了，是双胞胎。", "我是不是快当妈妈了？"),
        Paraphrase("我是在内蒙古的牧场长大的。", "我小时候在哪生活？"),
        Paraphrase("我已经戒酒三年了。", "我喝酒吗？"),
        Paraphrase("我女儿秋天要去厦门上大学。", "我孩子要去哪里读书？"),
        Paraphrase("我有一型糖尿病，每天测四次血糖。", "我有什么慢性病吗？"),
        Paraphrase("我吃纯素，任何动物制品都不碰。", "我能吃奶酪吗？"),
        Paraphrase("我在机场上夜班。", "我什么时候睡觉？"),
        Paraphrase("我的笔记本是一台用了十年的ThinkPad。", "我用的是什么电脑？"),
        Paraphrase("我在老城区开了一家小面包店。", "我是做什么生意的？"),
    ],
}


# Written after recall's stage 2b was changed on UNRELATED's results (any shared content word ->
# half of them, recall_impersonal_min_coverage): the check of that change, run once.
UNRELATED_AFTER = {
    "en": [
        "Give me a recipe for banana bread.",
        "What's a good name for a goldfish?",
        "Summarize the French Revolution.",
        "List five prime numbers above 100.",
        "Why do cats purr?",
        "Write a haiku about snow.",
        "What is the plural of cactus?",
        "Explain inflation to a ten-year-old.",
        "Which planet has the most moons?",
        "How long does it take light to reach Mars?",
        "Who invented the telephone?",
        "Suggest a title for a mystery novel.",
        "What does 'serendipity' mean?",
        "Write a JavaScript function that debounces another function.",
        "Convert 5 miles to kilometres.",
        "What's the difference between a virus and a bacterium?",
        "Tell me a fun fact about octopuses.",
        "How is paper made?",
        "What are the primary colours?",
        "Draft a birthday message for a coworker.",
        "Why does ice float?",
        "What is the capital of Canada?",
        "Explain what an API is.",
        "How many continents are there?",
        "What year did the Titanic sink?",
        "Write a motivational quote about persistence.",
        "What is the square root of 1,764?",
        "Describe the rules of volleyball.",
        "What is a haiku?",
        "Explain the greenhouse effect.",
    ],
    "zh": [
        "给我一个香蕉面包的做法。",
        "金鱼取什么名字好听？",
        "概括一下法国大革命。",
        "列出五个大于100的质数。",
        "猫为什么会发出呼噜声？",
        "写一首关于雪的俳句。",
        "“仙人掌”的英文复数怎么写？",
        "给十岁的孩子解释一下通货膨胀。",
        "哪颗行星的卫星最多？",
        "光到达火星需要多久？",
        "电话是谁发明的？",
        "给一本悬疑小说起个书名。",
        "“机缘巧合”是什么意思？",
        "写一个JavaScript防抖函数。",
        "5英里等于多少公里？",
        "病毒和细菌有什么区别？",
        "讲一个关于章鱼的冷知识。",
        "纸是怎么造出来的？",
        "三原色是哪三种颜色？",
        "给同事写一段生日祝福。",
        "冰为什么会浮在水面上？",
        "加拿大的首都是哪里？",
        "解释一下什么是API。",
        "世界上有几大洲？",
        "泰坦尼克号是哪一年沉没的？",
        "写一句关于坚持的励志名言。",
        "1764的平方根是多少？",
        "排球的规则是什么？",
        "俳句是什么？",
        "解释一下温室效应。",
    ],
}


# Written after stage 2b became one higher floor for a message not about the user (the coverage
# escape of the first two tries let "What's a good name for a goldfish?" through): run once.
UNRELATED_THIRD = {
    "en": [
        "What's the best way to learn touch typing?",
        "Name three famous impressionist painters.",
        "How do solar panels generate electricity?",
        "What is the longest river in Africa?",
        "Write a four-line poem about coffee.",
        "What is the difference between a crocodile and an alligator?",
        "How many minutes are in a week?",
        "Explain what machine learning is in one paragraph.",
        "Who was the first person to walk on the moon?",
        "What does DNA stand for?",
        "Give me a tongue twister.",
        "What is the freezing point of salt water?",
        "How does a bicycle stay upright?",
        "Suggest a name for a coffee shop.",
        "What's the origin of the word 'robot'?",
        "How many strings does a violin have?",
        "Write a thank-you note to a teacher.",
        "What is the chemical symbol for gold?",
        "Explain how an election recount works.",
        "What is the speed of sound?",
    ],
    "zh": [
        "怎样才能学会盲打？",
        "说出三位著名的印象派画家。",
        "太阳能电池板是怎么发电的？",
        "非洲最长的河流是哪条？",
        "写一首关于咖啡的四行诗。",
        "鳄鱼和短吻鳄有什么区别？",
        "一周有多少分钟？",
        "用一段话解释什么是机器学习。",
        "第一个登上月球的人是谁？",
        "DNA是什么的缩写？",
        "来一个绕口令。",
        "盐水的冰点是多少？",
        "自行车为什么不会倒？",
        "给一家咖啡店起个名字。",
        "“机器人”这个词是怎么来的？",
        "小提琴有几根弦？",
        "给老师写一封感谢信。",
        "金的化学符号是什么？",
        "解释一下选举重新计票是怎么进行的。",
        "声音的传播速度是多少？",
    ],
}


# Written before recall_min_relevance was weighed again on PARAPHRASES' figures (en: search found
# the statement first in 14 of 20, the floor cut 15 of 20): the check of whatever that changes.
PARAPHRASES_AFTER = {
    "en": [
        Paraphrase("I've been a nurse on the night ward for twelve years.", "What is my job?"),
        Paraphrase("I can't stand coriander, it tastes like soap to me.", "Should I order the pho with herbs?"),
        Paraphrase("My partner and I got married in June.", "Am I single?"),
        Paraphrase("I broke my ankle skiing and I'm on crutches.", "Can I go for a run this weekend?"),
        Paraphrase("We moved into a flat above a noisy bar.", "Why can't I sleep at night?"),
        Paraphrase("My son is turning seven on Saturday.", "How old will my boy be this weekend?"),
        Paraphrase("I drive an electric Kia.", "Do I need to buy petrol?"),
        Paraphrase("I speak Spanish and a bit of Catalan.", "Which languages do I know?"),
        Paraphrase("I've been saving up for a trip to Patagonia.", "Where do I want to travel?"),
        Paraphrase("My GP is Dr Okafor at the Mill Road practice.", "Who is my doctor?"),
    ],
    "zh": [
        Paraphrase("我在夜班病房当了十二年护士。", "我是做什么的？"),
        Paraphrase("我受不了香菜，吃起来像肥皂。", "我点越南粉要不要加香草？"),
        Paraphrase("我和对象六月份结婚了。", "我还是单身吗？"),
        Paraphrase("我滑雪摔断了脚踝，现在拄着拐。", "我这周末能去跑步吗？"),
        Paraphrase("我们搬进了一家吵闹酒吧楼上的公寓。", "我晚上为什么睡不着？"),
        Paraphrase("我儿子周六满七岁。", "我家孩子这周末几岁？"),
        Paraphrase("我开的是一辆起亚电动车。", "我需要去加油站加油吗？"),
        Paraphrase("我会说西班牙语，还会一点加泰罗尼亚语。", "我懂哪些语言？"),
        Paraphrase("我一直在攒钱去巴塔哥尼亚旅行。", "我想去哪里旅游？"),
        Paraphrase("我的家庭医生是磨坊路诊所的王医生。", "我的医生是谁？"),
    ],
}


# Written after a how-to question ("How do I…", "我怎么…") became a request's framing and the
# factual and entity questions' floor became 0.01 (memlane/query_intent.py, issue 54): run once.
# Natural forms on purpose: some name the asker ("I need a regex…", "我想了解…").
UNRELATED_FOURTH = {
    "en": [
        "How do I center a div in CSS?",
        "How can I convert a list of strings to integers in Python?",
        "I need a regular expression that matches email addresses.",
        "What's the capital of Australia?",
        "Can you summarize the plot of Hamlet?",
        "How should I cite a website in APA style?",
        'Give me three synonyms for "happy".',
        "Is a tomato a fruit or a vegetable?",
        "How do we calculate compound interest?",
        "What's the boiling point of water at high altitude?",
        "I want to learn how binary search works, explain it.",
        "How many bones are in the human body?",
        "Write a haiku about autumn leaves.",
        "Why do cats purr?",
        "What is the difference between affect and effect?",
        "How would I set up a cron job that runs every hour?",
        "Recommend a good book about the history of mathematics.",
        'What does "carpe diem" mean?',
        "How do airplanes stay in the air?",
        'Can you check this sentence for grammar: "their going to the store tomorrow"?',
    ],
    "zh": [
        "我怎么在Excel里做数据透视表？",
        "怎么用JavaScript把数组去重？",
        "我需要一个匹配手机号的正则表达式。",
        "澳大利亚的首都是哪里？",
        "帮我总结一下《红楼梦》的主要情节。",
        "论文参考文献的格式怎么写？",
        "给我三个形容“开心”的成语。",
        "西红柿是水果还是蔬菜？",
        "复利是怎么计算的？",
        "为什么高原上水的沸点低？",
        "我想了解二分查找的原理，讲讲吧。",
        "人体有多少块骨头？",
        "写一首关于秋天落叶的五言绝句。",
        "猫为什么会发出呼噜声？",
        "“的”“地”“得”有什么区别？",
        "我该如何设置每小时执行一次的定时任务？",
        "推荐一本讲数学史的好书。",
        "“塞翁失马”是什么意思？",
        "飞机为什么能飞起来？",
        "帮我看看这句话有没有语病：“通过这次活动，使我明白了很多道理。”",
    ],
}


# Written after the fourth set's first try (85.0 % en, 80.7 % zh on MemoryBank: "I need a regular
# expression…", "我需要一个…" read as about the user, and a quoted word's exact-term fallback): a
# request said as a need became a request's framing and a general request lost the fallback. Run once.
UNRELATED_FIFTH = {
    "en": [
        "I'd like a quick recipe for pancakes without eggs.",
        "I need an example of a Python decorator.",
        "What's the fastest land animal?",
        "How do I convert Celsius to Fahrenheit?",
        "Can you explain what inflation is?",
        "I want to understand how vaccines work.",
        "Translate 'good morning' into German.",
        "What is the plural of 'cactus'?",
        "Give me a fun fact about octopuses.",
        "Who wrote 'Pride and Prejudice'?",
        "How can we reduce plastic waste at home?",
        "I'm looking for a synonym for 'important'.",
        "What's 15 percent of 240?",
        "List the planets in order from the sun.",
        "Why do leaves change color in the fall?",
    ],
    "zh": [
        "我想要一个不用鸡蛋的松饼做法。",
        "我需要一个Python装饰器的例子。",
        "陆地上跑得最快的动物是什么？",
        "摄氏度怎么换算成华氏度？",
        "能解释一下什么是通货膨胀吗？",
        "我想知道疫苗是怎么起作用的。",
        "“早上好”用德语怎么说？",
        "“画蛇添足”出自哪里？",
        "讲一个关于章鱼的冷知识。",
        "《傲慢与偏见》的作者是谁？",
        "家里怎么减少塑料垃圾？",
        "帮我找一个“重要”的近义词。",
        "240的百分之十五是多少？",
        "按离太阳的远近列出八大行星。",
        "秋天树叶为什么会变色？",
    ],
}
