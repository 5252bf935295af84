"""memlane/query.py: which questions lean on earlier turns, and the rewrite's time budget."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)
from scripted import TIMEOUT, ScriptedChatModel

from memlane.config import RecallSettings
from memlane.query import cheap_rewrite, is_followup, rewrite_beside, rewrite_followup
from memlane.request_subject import refers_to_the_user
from memlane.store.records import Message
from memlane.store.text.tokens import count_tokens

STANDALONE = [
    "What do I drink?",
    "What is my job?",
    "Where do I live?",
    "How old am I?",
    "Remind me what I drink",
    "Is there a café near my home?",
    "What did I eat this week?",
    "How far is Paris from Berlin?",
    "我住在哪？",
    "我喝什么？",
    "我的工作是什么？",
    "我叫什么名字？",
    "这个月我有什么安排？",
    "张伟住在哪？",
]
FOLLOWUPS = [
    "Why?",
    "Where?",
    "What about her?",
    "And the second one?",
    "When does he leave?",
    "Tell me more",
    "What about me?",
    "为什么？",
    "那个城市怎么样？",
    "他哪天出发？",
    "多少钱？",
    "还有呢？",
    "我呢？",
    "怎么样？",
]


@pytest.mark.parametrize("question", STANDALONE)
def test_a_question_naming_what_it_asks_about_stands_alone(question):
    assert not is_followup(question)


@pytest.mark.parametrize("question", FOLLOWUPS)
def test_a_question_leaning_on_earlier_turns_is_a_follow_up(question):
    assert is_followup(question)


def test_the_default_rewrite_budget_is_at_most_300_ms(settings):

    assert RecallSettings.model_fields["rewrite_timeout_seconds"].default <= 0.3


async def test_a_memory_model_slower_than_the_budget_gives_the_cheap_rewrite_in_time(settings):
    previous = [
        Message(id="p1", user_id="u", session_id="s", role="user", content="还记得我同事张伟吗？"),
        Message(id="p2", user_id="u", session_id="s", role="assistant", content="记得，他是你的同事。"),
    ]
    budget = RecallSettings.model_fields["rewrite_timeout_seconds"].default
    slow = ScriptedChatModel(script=[TIMEOUT], timeout_sleep=2.0)
    count_tokens("the token encoding, loaded once a process (~0.2 s), before the clock starts")
    started = time.perf_counter()
    query = await rewrite_followup("他哪天出发？", previous, recall=settings.recall, models=settings.models, llm=slow)
    waited = time.perf_counter() - started
    assert slow.prompts, "the memory model was asked"
    assert query == cheap_rewrite("他哪天出发？", previous) == "他哪天出发？ 还记得我同事张伟吗？"
    assert waited < budget + 0.2, f"the rewrite took {waited:.2f} s"


async def test_the_memory_model_sees_the_start_of_a_long_earlier_turn_not_all_of_it(settings):
    """A follow-up after a pasted text of 200,000 characters: the rewrite's prompt holds each
    earlier turn's first 2,000 characters (the reply waits on that call), not the whole text."""
    pasted = "Zhang Wei flies to Shanghai next week. " + "filler " * 30_000
    previous = [Message(id="p1", user_id="u", session_id="s", role="user", content=pasted)]
    model = ScriptedChatModel(script=["When does Zhang Wei fly to Shanghai?"])
    query = await rewrite_followup(
        "When does he leave?", previous, recall=settings.recall, models=settings.models, llm=model
    )
    assert query == "When does Zhang Wei fly to Shanghai?"
    prompt = model.prompts[0]
    assert "Zhang Wei flies to Shanghai" in prompt and len(prompt) < 10_000


async def test_a_rewrite_past_its_budget_does_not_open_the_memory_models_breaker(store, make_context):
    """A real model often takes longer than the rewrite's 0.3 s: giving up on it is the reply's
    budget, not the model failing, so the memory graph sharing the breaker still runs."""
    from memory_graph_helpers import CHINESE_CHAT, add_chat

    from memlane.graph import run_memory_graph
    from memlane.testing import memory_rules

    previous = [Message(id="p1", user_id="u", session_id="s", role="user", content="还记得我同事张伟吗？")]
    slow_rewrite = ScriptedChatModel(rules=[("rewrite", TIMEOUT), *memory_rules()], timeout_sleep=1.0)
    context = make_context(slow_rewrite, circuit_failure_threshold=2)
    recall = RecallSettings(rewrite_timeout_seconds=0.1)
    breaker = context.model_breaker
    for _ in range(breaker.failure_threshold + 1):
        query = await rewrite_followup(
            "他哪天出发？", previous, recall=recall, models=context.models, llm=slow_rewrite, breaker=breaker
        )
        assert query == cheap_rewrite("他哪天出发？", previous)
    assert len(slow_rewrite.prompts) == breaker.failure_threshold + 1, "every rewrite asked the model"
    assert breaker.state == "closed" and breaker.consecutive_failures == 0

    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", context)
    assert result.added and breaker.state == "closed"


async def test_a_rewrite_that_fails_still_counts_against_the_breaker(settings):
    from memlane.store.models.breaker import CircuitBreaker

    breaker = CircuitBreaker("the memory model", failure_threshold=2, reset_seconds=60)
    down = ScriptedChatModel(default=ConnectionError("connection refused"))
    previous = [Message(id="p1", user_id="u", session_id="s", role="user", content="还记得我同事张伟吗？")]
    for _ in range(2):
        assert await rewrite_followup(
            "他哪天出发？", previous, recall=settings.recall, models=settings.models, llm=down, breaker=breaker
        ) == cheap_rewrite("他哪天出发？", previous)
    assert breaker.state == "open"


class TimedModel(BaseChatModel):
    """A memory model that answers every rewrite after `seconds` (changed by the test)."""

    seconds: float
    answer: str = "张伟哪天出发？"
    asked: int = 0

    @property
    def _llm_type(self) -> str:
        return "timed"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("asked asynchronously only")

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        self.asked += 1
        await asyncio.sleep(self.seconds)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.answer))])


async def _follow_up(model: TimedModel, recall: RecallSettings, settings) -> tuple[str | None, float]:
    previous = [Message(id="p1", user_id="u", session_id="s", role="user", content="还记得我同事张伟吗？")]

    async def search() -> str:
        return "hits"

    started = time.perf_counter()
    rewritten, found = await rewrite_beside(
        "他哪天出发？", previous, search(), recall=recall, models=settings.models, llm=model
    )
    assert found == "hits"
    return rewritten, time.perf_counter() - started


async def test_a_model_whose_rewrites_miss_the_budget_is_not_waited_for_until_it_is_fast_again(settings):
    """Issue 48, item 4: a memory model answering after the budget made every follow-up wait the
    whole budget for nothing. After a few rewrites that took longer, the reply stops waiting; one
    rewrite at a time still runs in the background, timed, and once the model answers in time
    again the reply waits for it again."""
    recall = RecallSettings(rewrite_timeout_seconds=0.1)
    model = TimedModel(seconds=0.25)
    for _ in range(3):  # nothing says yet that it cannot land: each waits the budget
        rewritten, waited = await _follow_up(model, recall, settings)
        assert rewritten is None and 0.09 < waited < 0.2
    await asyncio.sleep(0.3)  # the three finish in the background, timed at 0.25 s
    asked = model.asked
    for _ in range(4):  # now the reply does not wait at all, and one rewrite at a time is timed
        rewritten, waited = await _follow_up(model, recall, settings)
        assert rewritten is None and waited < 0.05
    await asyncio.sleep(0.15)  # the background rewrite has started (0.1 s after its search: query.py)
    assert model.asked == asked + 1, "one rewrite timed in the background, not one per follow-up"

    model.seconds = 0.01  # the model got faster: the background timings show it
    landed = None
    for _ in range(20):
        await asyncio.sleep(0.05)
        landed, waited = await _follow_up(model, recall, settings)
        if landed:
            break
    assert landed == "张伟哪天出发？"


@pytest.mark.parametrize(
    "message",
    [
        "What is my job?",
        "Where do I live now?",
        "Can I have a pet kitten?",
        "Remind me what we ordered last time",
        "Our dog keeps barking, any tips?",
        "我现在的饮食习惯是什么？",
        "我们上次去哪儿吃的？",
        "帮我看看我的日程",
    ],
)
def test_a_message_naming_the_user_or_their_own_is_about_them(message):
    assert refers_to_the_user(message)


@pytest.mark.parametrize(
    "message",
    [
        "Write me a poem about the sea",
        "Can you explain how vaccines work?",
        "Tell me a joke about cats",
        "量子色动力学的渐近自由",
        "帮我写一首关于大海的诗",
        "给我讲讲丝绸之路的历史",
        "Who wrote Pride and Prejudice?",
        "Can you walk us through how the Doppler effect works?",  # any verb with "me" or "us" at the start
        "Please explain to us how tides work",
    ],
)
def test_a_request_framed_with_me_but_about_something_else_is_not(message):
    assert not refers_to_the_user(message)


@pytest.mark.parametrize(
    "message", ["Remind me about the dentist", "Remember me?", "Walk me through my budget", "Show us our photos"]
)
def test_a_framing_verb_leaves_the_rest_of_the_message_and_reminding_is_about_the_user(message):
    assert refers_to_the_user(message)


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("Why do we get goosebumps when we're cold or scared?", False),
        ("How can we tell a real diamond from a fake?", False),
        ("我们吃辣的时候为什么会出汗？", False),
        ("为什么我们会做梦？", False),
        ("咱们常说的“二十四节气”是怎么来的？", False),
        ("I'd love to know how the locks on the Panama Canal lift ships.", False),
        ("Why did we break up?", True),  # a past tense: something that happened to them
        ("我们为什么吵架了？", True),
        ("Why do we have to visit my mom every Sunday?", True),  # "my" beside it
        ("我们下周去哪儿玩？", True),
        ("What did we talk about last time?", True),
        ("I'd love to see my sister again", True),
    ],
)
def test_the_we_of_a_question_about_people_in_general_is_anyone(message, about):
    """Issue 48, item 3: the ninth set's first try ("Why do we get goosebumps…", "我们吃辣的时候为什么
    会出汗？", "咱们常说的…") recalled two everyday turns for every MemoryBank user."""
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("帮我看看这句话有没有语病：“通过这次活动，使我明白了很多道理。”", False),
        ('What does "I miss you" mean in French?', False),
        ("把「我爱你」翻译成日语。", False),
        ('Where did I put "the blue folder"?', True),
        ("我妈说的“早点睡”是几点？", True),
        ("How does a bill become law in the US?", False),  # the country, not "us"
        ("What did the teacher tell us about the exam?", True),
    ],
)
def test_words_in_quotation_marks_are_mentioned_not_the_users(message, about):
    """Issue 48, item 3: the "我" of a sentence to check or a phrase to translate is the quote's."""
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("What's the difference between 'its' and 'it's'?", False),  # single quotes, an apostrophe inside
        ("How do you say 'I miss you' in Spanish?", False),
        ("I'm going to my friends' house, what should I bring?", True),  # apostrophes, no quotation
        ("Rock 'n' roll is what I like", True),
    ],
)
def test_single_quotes_mention_too_and_apostrophes_do_not(message, about):
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("I keep hearing about CRISPR. What is it, exactly?", False),
        ("I've always wondered why the sky is blue", False),
        ("I was reading about black holes. How do they form?", False),
        ("I'm curious how vaccines work", False),
        ("我一直听说量子计算很厉害，是真的吗？", False),
        ("I saw a documentary about octopuses last night — how do they change color so fast?", False),
        ("苏轼的《水调歌头》全文发我一下", False),  # a Chinese request's framing at its end
        ("I saw a friend yesterday", True),
        ("I was wondering if my flight is on time", True),  # what follows names them
        ("I read a lot of books", True),  # a statement of theirs, not a framing
        ("I hear you", True),
    ],
)
def test_hearing_reading_or_wondering_about_something_frames_a_request(message, about):
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("What happens if I swallow a piece of chewing gum?", False),
        ("Is it bad if I crack my knuckles?", False),
        ("如果我吞了口香糖会怎样？", False),
        ("If I put a metal spoon in the microwave, will it actually spark?", False),
        ("If I move to Denver, will my rent go up?", True),  # what is theirs
        ("What happened when I called the bank?", True),  # something that happened to them
        ("What if I move to Denver?", True),  # their own plan
    ],
)
def test_the_i_of_a_condition_in_a_question_about_anyone_is_anyone(message, about):
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("whats the capital of australia, i always think sydney", False),
        ("Why does the Monty Hall problem work? Switching doors still feels like 50/50 to me", False),
        ("“的地得”到底怎么区分，我每次写东西都搞混", False),
        ("Can you explain recursion, I never understood it", False),
        ("Summarize the causes of World War I in about 150 words.", False),  # a numeral, not the user
        ("My daughter loves dinosaurs. Any book suggestions?", True),  # context before the request
        ("What should I cook tonight? I am vegetarian", True),  # the request names them
        ("What is the best gift, my daughter turns 5?", True),  # what follows asks too
        ("送她什么礼物好，我女儿下周生日", True),  # the request speaks of a person
        ("How are you, I had a rough day", True),  # it asks after the assistant
        ("Yesterday I went to the park", True),
        ("Hey Sam I got the job", True),  # a verb after it: the pronoun
        # the "I" of a comparison; a how-to after a place or tool
        ("Explain the Monty Hall problem like I'm 10.", False),
        ("Explain my diagnosis like I'm 10", True),
        ("I feel like I'm a failure", True),
        ("in excel how do i do a VLOOKUP from another sheet", False),
        ("in my code how do i fix this", True),
    ],
)
def test_a_comment_after_a_question_about_something_else_is_an_aside(message, about):
    assert refers_to_the_user(message) is about


def test_marks_around_the_whole_message_only_delimit_it():
    """MemoryBank's questions come inside quotation marks: the question itself, not a mention."""
    assert refers_to_the_user('"What type of music do I like to listen to?"')
    assert refers_to_the_user("“我喜欢听什么音乐？”")
    assert not refers_to_the_user('"I love you" in French?')


@pytest.mark.parametrize(
    ("message", "about"),
    [
        # the user only as who says, asks or does not know; what is asked is about the world
        ("my teacher said glass is actually a slow liquid, is that true?", False),
        ("I'm trying to understand recursion, can you give a simple example in javascript", False),
        ("my kid asked me why the moon changes shape and i had no idea what to say lol", False),
        ("i keep forgetting how to reverse a list in python without modifying the original", False),
        ("I read somewhere that coffee dehydrates you, is that true?", False),
        ("我想问一下，为什么海水是咸的", False),
        ("我们老师说闪电不会两次劈同一个地方，这是真的吗", False),
        ("我一直记不住英语的现在完成时什么时候用", False),
        ("老师今天讲了勾股定理的证明我没听懂，有没有简单的证法", False),  # who does not know, inside what is said
        ("同事问我 HTTP 和 HTTPS 的区别，我也说不清，帮忙讲讲", False),  # a request in the imperative asks
        ("difference between affect and effect i never remember", False),  # a request said as a thing
        ("explain the difference between weather and climate, i need it for a slide at work", False),  # a purpose
        ("for my essay I need a short summary of the causes of the french revolution", False),
        # what is said or asked is about them, what the assistant said, or a clause tells of them
        ("我没听懂你上次说的，我该怎么办？", True),
        ("I never remember my PIN", True),
        ("I need it for my appointment tomorrow, what time is it?", True),
        ("我妈说我小时候很胖，是真的吗？", True),
        ("My knee hurts after running. Any tips?", True),
        ("I read a book yesterday, what was it about?", True),
        ("Do you remember what I told you about my trip?", True),
        ("I forgot where I put my keys, any idea?", True),
        ("我上次问你的那个问题你还记得吗？", True),
    ],
)
def test_who_only_says_asks_or_does_not_know_is_not_what_a_request_is_about(message, about):
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        # the last asking clause stands alone: what the other clauses tell of the user is context
        (
            "I'm studying for a chemistry exam and I'm stuck. What is the difference between ionic and covalent bonds?",
            False,
        ),
        ("i'm awful at geography - which river is the longest in africa", False),
        ("我在准备考研，线性代数里的特征值到底是什么意思", False),
        ("我女儿问我彩虹为什么是弯的，我也说不清", False),  # someone asked the user: what they asked
        ("我同事考我一道题：世界上最长的河是哪条", False),  # a colon introduces the question
        ("python: how do i remove duplicates from a list", False),
        ("For a talk I need a short explanation of how vaccines work", False),  # a purpose before the need
        ("can you convert 30 miles into kilometres for me", False),  # who it is for
        ("if we heat one end of a metal rod, why does the other end get hot too", False),  # a condition: anyone
        ("假如我一直往北走，最后会走到哪里", False),
        ("If I sell my car, which form do I fill in?", True),  # the condition names what is theirs
        ("my neighbour keeps saying the moon landing was staged. is that actually true", False),  # saying
        ("my uncle insists bats are blind. true or myth?", False),  # a question mark asks in its clause
        ("we have a quiz tonight, so: which is the largest ocean and why is it called that?", False),  # goes on
        ("I have an exam on this tomorrow: explain mitosis and when you'd see it happen", False),  # anyone's you
        ("in golf what does a bogey mean. watching the open with my dad and nobody explains it", False),
        ("我在学围棋，打劫到底是什么，有啥讲究", False),  # a question naming nothing goes on with the one before
        ("假如我从飞机上跳伞，大概要多久才落地", False),  # 多久 asks
        ("this keeps tripping me up — what does a semicolon actually do in a sentence", False),  # a dash breaks
        ("honestly if I dropped a feather on the moon, how fast would it fall", False),  # an adverb, then the condition
        ("does a heavy ball roll down a ramp faster than a light one? we argued all evening", False),  # its own "one"
        ("法语里 je suis 和 I am 为什么都不规则", False),  # English inside Chinese is mentioned
        ("Which one should I pick? I have two job offers", True),  # "one" pointing out of its clause
        ("我们宿舍在争：企鹅生活在北极还是南极？", False),  # 还是 asks an alternative
        ("my son asked me why leaves change color and I just shrugged, why does that happen?", False),  # the asking one
        ("我上学时学过一点，这篇《出师表》是谁写的", False),  # a demonstrative before the name it shows
        ("my manager keeps saying 'synergy' in standups, what does it even mean", False),  # points at the quoted word
        ('I have watched "Looking Up", what was the specific date of that day?', True),  # of what the user did
        ("learning to sew 🧵 how does a bobbin actually catch the top thread", False),  # an emoji ends a clause
        ("我刚知道金星上一天比一年还长，那为什么会这样？", False),  # coming to know; 那 before "why" is "then"
        ("I just found out koalas sleep 20 hours a day. is that true?", False),
        ("我最近在看《红楼梦》，红楼梦里一共有多少个人物？", False),  # a title is the world's
        ("我刚发现我家猫会开门，那是怎么学会的？", True),  # 那 pointing back; what is found is theirs
        ("珠峰顶上到底有多冷？如果我爬上去会怎样", False),  # 有多 asks a degree
        ("我在看《水浒传》，里面提到“生辰纲”，这个到底是什么东西？", False),  # points back at a quote or title
        ("what does 'YAML' stand for and why do configs use it?", False),  # what it quotes is what it names
        ("How do I undo `git commit --amend`?", False),  # code between backticks is quoted
        ("下周我要去参加婚礼，帮忙写一段祝福语吧", False),  # 吧 softens a request
        ("我儿子现在多高？", True),
        ("You recommended me some films before, do you remember which ones?", True),
        ("I once told you about a stew, do you recall the main spice?", True),
        # the question points back, leans on what was said, asks counsel, or asks about the user
        ("I'm vegetarian. What's a good recipe for dinner?", True),
        ("I started running last month. Which shoes should I get?", True),
        ("我不喜欢健身，对吗？", True),  # a tag question asks about the clause before it
        ("你给我分享过一些好玩的游戏，是哪些游戏？", True),  # it speaks to the assistant
        ("I once had a problem with my printer, what was the problem?", True),  # what the clause before names
        ("我去参观博物馆，最感兴趣的展品是？", True),  # it asks by its question mark alone
        ("我有一个读书小组，里面有多少人呢？", True),  # 里面: inside what the clause before names
        ("My laptop keeps overheating, what causes that?", True),  # that: what the clause before tells
        ("What did I say about 《星际穿越》?", True),  # who said it is what is asked
        ("My sister is visiting Rome next week. What is the weather like there in May?", True),  # a person
    ],
)
def test_a_request_that_stands_alone_is_about_what_it_names(message, about):
    assert refers_to_the_user(message) is about


@pytest.mark.parametrize(
    ("message", "about"),
    [
        # believing is a verb of knowing: what follows is what the user thinks, not the user
        ("I think the capital is Canberra but can you confirm: what is the capital of Australia?", False),
        ("我一直以为蝙蝠是鸟，它为什么算哺乳动物？", False),
        ("I think my wife is upset with me, what should I do?", True),
        # an embedded question a few words after the verb
        ("My son asked me last night why leaves change colour in autumn. What's the answer?", False),
        # "they" of things a report named; of the user's own, or with the user in it, theirs
        ("I just read that bees can recognise faces! How do they do it?", False),
        ("My parents just learned to text, why do they keep calling me?", True),
        # a tail that asks by its mark alone is part of the question before it
        ("Before my exam tomorrow: what is 'opportunity cost', in simple terms?", False),
        # a past question about what the user tells in the present is the thing's past
        ("That phrase 'hygge' I keep hearing: is it really Danish or was it invented for marketing?", False),
        ("I read a novel by Ishiguro last year, what was it called?", True),
        # a colon before a number introduces it (not a time's)
        ("我验算了三遍还是不对：2的10次方等于多少？", False),
        ("我们7:30在哪集合？", True),
        # a Chinese alternative asked of the user, who could not answer; remembering is knowing
        ("我外甥问我蝙蝠是鸟还是兽，我答不上来", False),
        ("邻居说鸵鸟会把头埋进沙子，可我记得那是误传，谁说得对？", False),
        # a question naming nothing after the problem it asks about
        ("练习题：一个数的3倍加5等于20，这个数是多少？我绕晕了", False),
        ("I'm seeing Dr. Lee tomorrow. What time?", True),  # after a clause about the user: theirs
        # pointing back at a name the user does something with, asked in its present or past
        ("I'm writing a report on the Hanseatic League: what were its main ports?", False),
        ("I was watching Jupiter last night. How many of its moons can binoculars show?", False),
        ("Just finished Middlemarch and I'm lost, why is it considered so great?", False),
        ("I read a story by Borges once, what was it called?", True),
        ("why does Hangeul write its syllables in blocks?", False),  # "its" of what the clause names
        # 我家 after 给 is the user's family, no request's framing; a noun "guess" reports nothing
        ("给我家闺女买羽绒服该买多大的？", True),
        ("My first guess in the daily puzzle is which word?", True),
        # what a user's work or talk is on is the world's topic; what was asked of the user, its "they" things
        ("I'm making a worksheet on volcanoes, which volcano erupted most recently in Europe?", False),
        ("我在准备一个关于长城的讲座，想问长城最早是哪个朝代修的？", False),
        ("I have a Honda Civic. What oil does a Honda Civic take?", True),
        ("my niece asked me why bubbles pop when you touch them and I had no answer. why do they?", False),
        ("nepal's capital is...? i always blank on it", False),  # dots before the question mark
        # a request framed with 能帮我 in its middle; 几 before any measure asks
        ("我在给学生准备一份关于海洋的讲义，能帮我解释一下“洋流”是怎么形成的吗？", False),
        ("我在写一个唐代背景的故事，唐朝人一天一般洗几次脸？", False),
        ("我看了好几遍还是没懂", True),  # 好几: a few, no question
        # who bet, insisted or claimed something, and whether they are right
        ("my cousin bet me that Canada has more lakes than the rest of the world combined. who wins?", False),
        ("My uncle insists that goldfish have a three-second memory. Is he right?", False),
        # the same hypothetical "I" in what follows, none of theirs named
        ("If I jumped into a pool of mercury, would I sink or float?", False),
        ("If I sell my bike, would I owe any tax?", True),
        # a tag question about the clause before it, which names no one
        ("我验算了一下，地球到太阳大约1.5亿公里，对吗？", False),
        # what a request to rewrite or translate gives after its colon is the text, mentioned
        ("请用文言文翻译：我明天不去上班了。", False),
        ("Translate into German: my car is red", False),
        # a Chinese question naming no one, about the routine of one's family or of a thing of one's own
        ("闺女现在周三去学什么？", True),
        ("晚上那杯奶茶一般在哪家买？", True),
        ("宋朝人一天一般吃几顿饭？", False),
        # going on about something says it; not being able to explain, or being confused by it, is not knowing
        ("my flatmate keeps going on about quantum tunnelling. what is it?", False),
        ("the difference between 'affect' and 'effect' confuses me. what is it?", False),
        ("I've read about it twice and still can't explain how a transistor amplifies. How does it?", False),
        # whether who said it is right, said as a statement with a tag; my understanding is what I believe
        ("my neighbour swears goldfish can live for decades. she's wrong right?", False),
        ("我的理解是：月食只会发生在满月的晚上。这样说对吗？", False),
        ("My mom keeps talking about my weight, is she right?", True),
    ],
)
def test_what_the_user_thinks_or_was_asked_and_what_they_point_back_at(message, about):
    assert refers_to_the_user(message) is about
