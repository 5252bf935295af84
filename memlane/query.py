"""Follow-up questions made searchable: "他哪天出发？" says nothing a search can find.

`rewrite_followup(question, recent, llm=...)` turns a question that leans on the
conversation into one that stands alone, before recall searches with it:

- with a memory model: the model rewrites it from the session's last turns (the seed's
  BrainMemory `rewrite`), answer parsed leniently, within a fixed budget
  (`recall_rewrite_timeout_seconds`, 0.3 s: the reply waits for it); past the budget or on
  any failure it falls back to (running out of the budget is not counted as a failure on the
  memory model's circuit breaker: a model slower than that still serves the memory graph)
- the cheap rewrite: the previous user turn's words are carried into the query
  ("他哪天出发？ 还记得我同事张伟吗"), so its names and nouns reach both the vector and
  the text search. The original question keeps its own words; nothing is removed.

A question that already stands alone is left as it is (see `is_followup`: "What is my job?"
stands alone, "Why?" does not), and so is any question without an earlier turn.
"""

from __future__ import annotations

import asyncio
import logging
import re
import statistics
import time
import weakref
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import ModelSettings, RecallSettings
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE, ModelCaller, ModelCallFailed, Step, render_chat
from memlane.store.models.breaker import CircuitBreaker
from memlane.store.records import Message
from memlane.store.text.terms import query_terms
from memlane.store.text.trivial import is_trivial

logger = logging.getLogger(__name__)

# words that point back at something said before: a third person, a demonstrative
_ZH_REFERENCES = re.compile(r"[他她它]|那[个里儿些次天时]?|这[个里儿些次天时]|其|对方|上面|刚才|之前说")
_EN_REFERENCES = re.compile(
    r"\b(he|she|it|they|him|her|them|his|hers|its|their|that|this|those|these|there|then|one)\b", re.I
)
# phrases with such a word that point at nothing said before: "is there", "this week", "这个月"
_NOT_REFERENCES = re.compile(
    r"\b(is|are|was|were|isn't|aren't)\s+there\b|\bthere\s+(is|are|was|were|'s)\b"
    r"|\b(this|that)\s+(morning|afternoon|evening|night|week|weekend|month|year)\b"
    r"|这个?(月|星期|礼拜|周末|周)",
    re.I,
)
# an opening that carries the last question over to something new: "And the second one?", "What about Paris?",
# "还有呢？"
_CARRY_OVER = re.compile(r"^\s*(and|or|but|also|what about|how about)\b|^\s*(还有|然后|而且)", re.I)
# the user naming themselves: "my job", "I drink", "我住在哪"
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|mine|myself)\b|我", re.I)
# Han characters that ask or bind, not name: "为什么", "怎么样", "多少", "是谁"
_ZH_QUESTION_CHARS = set("为什么怎样哪谁几吗呢吧啊呀么是的了在有个多少呢嘛")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_MAX_CONTEXT_CHARS = 300
# what the memory model is shown of each earlier turn when it rewrites a follow-up: enough to
# name what "he" or "that city" is, not a pasted document (the reply waits on this call)
_MAX_REWRITE_TURN_CHARS = 2000
_FRAGMENT_TERMS = 1  # a question naming at most one thing ("why?", "where?", "多少钱？") leans on what came before

REWRITE_PROMPT = f"""You rewrite the user's last question so that it can be understood without the conversation.
Replace pronouns and references ("he", "that place", "他", "那个") with what they refer to in the chat, and
keep everything else the question asks. If the question already stands alone, repeat it unchanged.
Answer with the rewritten question only: no explanation, no quotes.
{LANGUAGE_RULE}
{DATA_RULE}"""


# the user or their own circle, as the message's subject or owner: "I", "my", "we", "我", "我们"
_SELF = re.compile(r"\b(?-i:(?!US\b))(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b|我|咱", re.I)
# ("US" in capitals is the country, not "us")
# a request's own framing at its start, which names the user only as the one asking: a verb with "me"
# or "us" ("Help me write…", "Tell me…", "Can you walk us through…"), "帮我写", "给我讲" ("Remind me…",
# "Remember me?", "你给我推荐过…" name them as themselves), or at a Chinese request's end ("…全文发我
# 一下"). A how-to question and a request said as a need name them the same way: "How do I read a
# file in Go?", "I need a regex for…", "我怎么用Python读文件？", "我想了解二分查找"; and so does hearing,
# reading, seeing or wondering about something: "I keep hearing about CRISPR. What is it?", "I've
# always wondered why…", "I saw a documentary about octopuses…", "我一直听说…", "我很好奇…"
# (a how-to framing may follow a place or tool: "in excel how do i…")
_FRAMING = re.compile(
    r"^\s*(?:(?:in|on|for|with|using) (?!(?:my|our|me|us)\b)[\w.+#-]+(?: (?!(?:my|our|me|us)\b)[\w.+#-]+)?,?\s+"
    r"(?=how (?:do|can|should|would|could|will) (?:i|we)\b))?"
    r"(?:please\s+|can you\s+|could you\s+|would you\s+)*"
    r"(?:(?!remind\b|remember\b)[a-z]+\s+(?:to\s+)?(?:me|us)\b"
    r"|how (?:do|can|should|would|could|will) (?:i|we)\b"
    r"|(?:for (?:my|our) (?:[a-z'-]+ ){1,3}?)?"  # a purpose before it: "for my essay I need a…"
    r"(?:i (?:need|want)|i(?:'d|’d| would) (?:like|love)) (?:a|an|some|to \w+)\b"
    r"|i(?:'m|’m| am) looking for (?:a|an|some)\b"
    r"|i (?:keep|kept) hearing (?:about|of)\b"
    r"|i(?:'ve|’ve| have)? (?:always |often )?heard (?:a lot |so much )?(?:about|of)\b"
    r"|i(?:'ve|’ve| have)? (?:been )?read(?:ing)? (?:a lot |so much )?about\b"
    r"|i (?:was|am|'m|’m) (?:reading|hearing) about\b"
    r"|i(?:'ve|’ve| have)? (?:always |often )?wondered\b|i (?:was |am |'m |’m )?wonder(?:ing)?\b"
    r"|i(?:'m|’m| am) (?:just |really |so )?curious\b"
    r"|i (?:just )?(?:saw|watched|read|heard|came across) (?:a|an|this|that|some) (?:[a-z-]+ ){1,2}?(?:about|on)\b)?"
    r"|^\s*(?:请|麻烦)?(?:帮|给|替|为|教|请|告诉|跟)我(?:们)?(?=[\u4e00-\u9fff])"
    r"|^\s*我(?:一直|最近|老是?|总是?|经常|常常?)?(?:听说|听人说|听别人说|很好奇|挺好奇|好奇|在想)(?=[\u4e00-\u9fff\w])"
    r"|(?:发|给|告诉|帮|讲给)我(?:们)?(?:一下|看看|听听|讲讲)?\s*[。.!！?？~～]*\s*$"
    r"|^\s*我(?:们)?(?:该|要|应该|可以)?(?:怎么|怎样|如何)(?=[\u4e00-\u9fff])"
    r"|^\s*我(?:想|需要|要|想要)(?:一个|一份|一篇|一首|一段|了解|知道|学习|学)(?=[\u4e00-\u9fff\w])",
    re.I,
)


def without_framing(message: str) -> str:
    """The message without a request's framing at its start ("Tell me about ramen" -> "about ramen")."""
    return _FRAMING.sub(" ", message)


# words in quotation marks are mentioned, not used: the "我" of 这句话有没有语病：“…使我明白了…”
# is the sentence's, not the user's
# English's single quotes too ("between 'its' and 'it's'"): one opens before a letter where no letter
# stands before it, and closes where none follows it, an apostrophe before a letter inside ("it's")
_QUOTATION = re.compile(
    r"“[^”]{0,400}”|\"[^\"]{0,400}\"|「[^」]{0,400}」|『[^』]{0,400}』"
    r"|(?<![\w'’])'(?=\w)(?:[^'\n]|'(?=\w)){1,60}'(?!\w)"
)


def without_quotations(message: str) -> str:
    """The message without what it quotes ('Is "使我明白了" correct?' -> 'Is   correct?'); marks
    around the whole message only delimit it ('"What music do I like?"' is the question itself)."""
    whole = _QUOTATION.fullmatch(message.strip())
    if whole is not None:
        message = message.strip()[1:-1]
    return _QUOTATION.sub(" ", message)


# a question about people in general, asked with "we" ("Why do we dream?", "How can we tell…",
# "我们吃辣的时候为什么会出汗？", "咱们常说的“亚健康”是什么意思？"): its "we" is anyone, not the user and theirs
# (a past tense asks about them: "Why did we break up?"; so does a singular "I" or "my" beside it)
_GENERIC_WE = re.compile(
    r"^\s*(?:why|how) (?:do|does|can|could|should|would|will|are|is it that) we\b"
    r"|^\s*(?:我们|咱们)[^，。？?！!]{0,12}(?:为什么|为啥|怎么会)(?![^，。？?！!]*了)"
    r"|^\s*为什么(?:我们|咱们)(?![^，。？?！!]*了)"
    r"|^\s*(?:我们|咱们)(?:平时|平常|通常|常常|经常|常)?(?:说|讲|叫)的",
    re.I,
)
_PLURAL_SELF = re.compile(r"\b(?:we|we're|we've|we'd|we'll|us|our|ours|ourselves)\b|我们|咱们", re.I)
# a question about what would happen to anyone, its "I" in a condition ("What happens if I swallow
# chewing gum?", "Is it bad if I crack my knuckles?", "If I put a metal spoon in the microwave, will it
# spark?", "如果我吞了口香糖会怎样？"): anyone, not the user (a condition that names what is theirs
# stays theirs: "If I move to Denver, will my rent go up?")
_HYPOTHETICAL_SELF = re.compile(
    r"^\s*(?:what (?:happens|would happen|will happen|could happen)|is it (?:bad|ok|okay|safe|normal|dangerous|"
    r"healthy|true)) (?:if|when) (?:i|we)\b"
    r"|^\s*(?:if|when) (?:i|we) [^,?]{1,80}, (?:will|would|does|do|is|can|could|should) (?:it|that|this|there|the)\b"
    r"|^\s*如果(?:我|我们)[^，。？?！!]{0,24}(?:会怎样|会怎么样|会发生什么|会有什么后果)",
    re.I,
)


# the "I" of a comparison in a request ("Explain the Monty Hall problem like I'm 10", "as if I were a
# beginner"): how to answer, not who it is about ("I feel like I'm always tired" is theirs)
_SIMILE_SELF = re.compile(
    r"(?<!\bfeel )(?<!\bfeels )(?<!\bfelt )(?<!\blook )(?<!\bseem )(?<!\bsound )"
    r"\b(?:like|as if|as though) (?:i'm|i’m|i am|i were|i was|we're|we are|we were) (?:\d+|a|an|five|ten|twelve)\b",
    re.I,
)


# a capital "I" after a capitalized word inside a sentence, before the sentence's end or a
# preposition, is a numeral of a name ("World War I in 150 words", "Part I of"), not the user: the
# capitalized word does not open the sentence ("Yesterday I…"), and a verb follows the pronoun
# ("Hey Sam I got the job")
_NUMERAL_I = re.compile(
    r"(?<=[A-Za-z0-9,;:'’)] )([A-Z][a-z]+ )I(?=\s*(?:[.,;:!?)]|$)|\s+(?:in|of|and|or|to|for|on|at|by|from|with)\b)"
)
# a request's first clause, and what follows it (`_aside_after_request`)
_FIRST_CLAUSE = re.compile(r"^\s*([^,，.。!！?？;；\n]+[?？]?)(.*)$", re.S)
_ASKS_EN = re.compile(
    r"^\s*(?:what|whats|what's|why|how|when|where|who|whom|which|is|are|can|could|does|do|should|would|will)\b"
    r"|[?？]\s*$",
    re.I,
)
_ASKS_ZH = re.compile(r"什么|怎么|为什么|为啥|哪|谁|多少|几[个种点]|吗|呢|有没有|是不是|能不能|可不可以")
_YOU = re.compile(r"\b(?:you|your|yours)\b|你|您", re.I)
# a person the clause speaks of, whom an aside may have named ("送她什么好？"): the clause may be theirs
_PERSON = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|theirs)\b|他|她", re.I)


def _aside_after_request(message: str) -> bool:
    """Whether the message opens with a question about something else, and what follows only
    comments on it ("whats the capital of australia, i always think sydney", "Why does the Monty
    Hall problem work? Switching doors still feels like 50/50 to me", "“的地得”到底怎么区分，我每次写东西都
    搞混"): the first clause asks, names neither the user, the assistant nor a person, and nothing
    after it asks.
    What comes before a request ("My daughter loves dinosaurs. Any book suggestions?") is context
    memory may add to, and is left to the whole message."""
    found = _FIRST_CLAUSE.match(message)
    if found is None or not found.group(2).strip():
        return False
    first, rest = found.group(1), found.group(2)
    asks = bool(_ASKS_EN.search(first) or _ASKS_ZH.search(first))
    if not asks or _PERSON.search(first) or "?" in rest or "？" in rest:
        return False
    request = without_framing(first)  # "How are you, I had a rough day" asks after the assistant: not about the world
    return not _SELF.search(request) and not _YOU.search(request)


# a verb of saying, asking, knowing or learning: who says, asks or knows is named before it (or as
# the object of asking or telling: "asked me"), what is said, asked or known after it; of these, the
# verbs of not knowing or wanting to know ("i keep forgetting how…", "我一直记不住…") frame a question
_NOT_KNOWING = (
    r"\b(?:forget(?:ting)?|forgot|understand(?:ing)?|wonder(?:ing|ed)?|no idea|not sure|confused about|"
    r"never (?:remember|know|get)|can't remember)\b"
    r"|想问|搞不清|搞不懂|弄不清|分不清|记不住|不懂|不明白|不知道|想知道|没听懂|听不懂|没懂|看不懂|说不清|讲不清"
)
_REPORTING = re.compile(
    r"\b(?:said|says|say|told|tells|insist(?:s|ed)?|claim(?:s|ed)?|swear(?:s)?|swore|argue[sd]?|mentioned|"
    r"asked|asks|taught|remember|know)\b"
    r"|\b(?:learn(?:ed|t|ing)?|read|heard|hear)\s+(?:[a-z]+\s+){0,2}?(?:that|about)\b"  # not "I read a book"
    rf"|{_NOT_KNOWING}|听说|(?<!小)说(?!明)|讲到|讲(?!座|究)|告诉|问(?!题|候)|学到|提到",  # not 问题, 小说
    re.I,
)
_NOT_KNOWING_VERB = re.compile(_NOT_KNOWING, re.I)
# the user as who does not know, inside what a clause says ("老师讲了勾股定理的证明[我没听懂]")
_SELF_NOT_KNOWING = re.compile(
    rf"(?:\bi\b|我)[ \t]{{0,3}}(?:[\u4e00-\u9fff]{{0,2}}?|(?:[a-z']{{1,20}}[ \t]{{1,3}}){{0,2}}?)(?:{_NOT_KNOWING})"
    r"|\bi (?:need|want) (?:it|this|that) for\b",  # the asker's purpose: "i need it for a slide at work"
    re.I,
)
# what the assistant said, inside what a clause says ("我没听懂[你上次说的]"): the user's memory
_ASSISTANT_SAID = re.compile(
    r"你|您|\byou (?:said|told|mentioned|explained|recommended|suggested|gave)\b|\byour (?:answer|advice|reply)\b",
    re.I,
)
# a clause that asks for something in the imperative ("explain…", "帮忙讲讲"): a request, as a question is
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:explain|tell|give|write|show|list|describe|summari[sz]e|translate|compare|define)\b"
    r"|^\s*(?:请|麻烦)?(?:帮忙|帮我|讲讲|说说|解释|介绍|讲一下|说一下)",
    re.I,
)
_OBJECT_SELF = re.compile(r"^\s*(?:me|us)\b", re.I)
_TAKES_A_PERSON = re.compile(r"(?:asked|asks|told|tells|taught)$|问$|告诉$", re.I)
# an embedded question after such a verb: "asked me why…", "forgetting how to…"
_EMBEDDED = re.compile(r"^\s*(?:me\s+|us\s+)?(?:why|how|what|when|where|which|who|whether)\b", re.I)
# a request's clauses: punctuation, a dash, or "and" before another question or a new subject
# ("what does 'per se' mean and how do i use it", "…changes shape and i had no idea")
_CLAUSE_BREAK = re.compile(
    r"[,，.。!！?？;；\n]+|(?<!\s)\s+-{1,2}\s+|(?<!\s)\s+and\s+(?=(?:how|what|why|when|where|which|who|i|we)\b)", re.I
)


def _reports_only(clause: str, verbs: re.Pattern[str] = _REPORTING) -> str | None:
    """What a clause says, asks or knows, where the user is named only as who says, asks or
    knows it ("my teacher said [glass is a liquid]", "我一直搞不清[“的地得”怎么用]", "my kid asked
    me [why the moon changes shape]"); None where the clause has no such verb, names the user in
    what follows it ("我妈说[我小时候很胖]"), or the assistant says it ("You once taught me how to…":
    what they were told is theirs)."""
    found = verbs.search(clause)
    if found is None or _YOU.search(clause[: found.start()]):  # what the assistant said is the user's memory
        return None
    said = clause[found.end() :]
    if _TAKES_A_PERSON.search(found.group(0)):
        said = _OBJECT_SELF.sub("", said, count=1)
        if said.startswith(("我们", "我")) and not said.startswith(("我们的", "我的")):
            said = said[2:] if said.startswith("我们") else said[1:]
    said = _SELF_NOT_KNOWING.sub(" ", said)
    return None if _SELF.search(said) or _ASSISTANT_SAID.search(said) else said


def _asks(clause: str) -> bool:
    """A clause that asks: a question word or mark, a request in the imperative ("帮忙讲讲"), or
    a question embedded after a verb of saying or knowing ("my kid asked me why…")."""
    if _ASKS_EN.search(clause) or _ASKS_ZH.search(clause) or _REQUEST.search(clause):
        return True
    found = _REPORTING.search(clause)
    return found is not None and bool(_EMBEDDED.match(clause[found.end() :]))


def _reported_request(message: str) -> bool:
    """Whether a request asks about what someone said, asked or knows, not about the user: its last
    asking clause names neither the user (apart from a framing or a verb of not knowing) nor a
    person, and every other clause that names the user names them only as who says, asks or knows
    something ("my teacher said glass is a slow liquid, is that true?", "I'm trying to understand
    recursion, can you give an example?", "我想问一下，为什么海水是咸的", "我们老师说闪电不会两次劈同一
    个地方，这是真的吗"). A clause that asks about the user keeps it theirs ("我妈说我小时候很胖，是真的
    吗？"), and so does a clause that tells of them ("My knee hurts after running. Any tips?")."""
    clauses = [clause for clause in _CLAUSE_BREAK.split(message) if clause.strip()]
    asking = [index for index, clause in enumerate(clauses) if _asks(clause)]
    if not asking:  # a request said as a thing with who does not know it ("affect vs effect i never remember")
        spans = _SELF_NOT_KNOWING.search(message)
        return spans is not None and not _SELF.search(_SELF_NOT_KNOWING.sub(" ", message))
    index = asking[-1]
    asked = without_framing(clauses[index])
    if _SELF.search(asked) or _PERSON.search(asked):
        known = _reports_only(asked, _NOT_KNOWING_VERB)  # "我一直记不住[英语的现在完成时什么时候用]"
        if known is None or not known.strip() or _PERSON.search(known):
            reported = _reports_only(clauses[index])  # "my kid asked me [why the moon changes shape]"
            if reported is None or not _EMBEDDED.match(reported) or _PERSON.search(reported):
                return False
    others = [clause for number, clause in enumerate(clauses) if number != index and _SELF.search(clause)]
    if not others and not _SELF.search(clauses[index]):
        return False  # nothing names the user: no report to read
    return all(
        _reports_only(clause) is not None
        or not (_SELF.search(_SELF_NOT_KNOWING.sub(" ", clause)) or _ASSISTANT_SAID.search(clause))
        for clause in others
    )


def refers_to_the_user(message: str) -> bool:
    """Whether the message is about the user: it names them or their own ("my sister", "我住在哪",
    "we"), apart from a request's framing ("help me write a poem", "帮我写一首诗"), which names the
    user only as the one asking, from what it quotes (a sentence to check, a word to translate),
    from the "we" of a question about people in general (`_GENERIC_WE`: "Why do we dream?"),
    from the "I" of a condition in a question about anyone (`_HYPOTHETICAL_SELF`: "What happens if I
    swallow chewing gum?") or of a comparison (`_SIMILE_SELF`: "like I'm 10"), from a comment after
    a question about something else
    (`_aside_after_request`: "whats the capital of australia, i always think sydney"), and from the
    numeral "I" of a name ("World War I").
    Closed-class words of the language, not topics: what recall reads to tell a personal question
    from a request that no memory of theirs can help with."""
    unquoted = _SIMILE_SELF.sub(" ", _NUMERAL_I.sub(r"\1", without_quotations(message)))
    if _HYPOTHETICAL_SELF.search(unquoted) or _aside_after_request(unquoted) or _reported_request(unquoted):
        return False
    if _GENERIC_WE.search(unquoted):
        unquoted = _PLURAL_SELF.sub(" ", unquoted)
    return bool(_SELF.search(without_framing(unquoted)))


def content_words(question: str) -> int:
    """How many things the question names: its English search terms, and its Han characters
    that are not question words or particles."""
    english = [term for term in query_terms(question) if not _HAN.search(term)]
    han = [char for char in _HAN.findall(question) if char not in _ZH_QUESTION_CHARS]
    return len(english) + len(han)


def is_followup(question: str) -> bool:
    """True when the question leans on earlier turns, so searching with its own words misses.

    - it points back: a third person or a demonstrative ("他哪天出发？", "那个城市怎么样？",
      "What about her?"), not counting "is there" or "this week";
    - it carries the last question over: "And the second one?", "What about Paris?", "还有呢？";
    - it is a fragment that does not name the user: "Why?", "多少钱？".

    A question that names what it asks about with the user's own first person stands alone,
    however short: "What do I drink?", "What is my job?", "我住在哪？".
    """
    unanchored = _NOT_REFERENCES.sub(" ", question)
    if _ZH_REFERENCES.search(unanchored) or _EN_REFERENCES.search(unanchored) or _CARRY_OVER.search(question):
        return True
    if _FIRST_PERSON.search(question) and content_words(_FIRST_PERSON.sub(" ", question)) >= 1:
        return False  # "my job": the user and the thing asked about, named
    return content_words(question) <= _FRAGMENT_TERMS


def cheap_rewrite(question: str, previous_turns: Sequence[Message]) -> str:
    """The question followed by the previous user turn (the owner's, or a named speaker's)."""
    earlier = [
        message.content.strip()
        for message in previous_turns
        if message.role == "user" and message.content.strip() and message.content.strip() != question.strip()
    ]
    if not earlier:
        return question
    return f"{question} {earlier[-1][:_MAX_CONTEXT_CHARS]}"


def _clean_answer(answer: str, question: str) -> str | None:
    lines = [line.strip().strip("\"'“”「」`") for line in answer.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = re.sub(
        r"^.*?(rewritten question|rewritten|standalone question|question|改写后的问题|改写|问题)\s*[:：]\s*",
        "",
        lines[-1],
        flags=re.I,
    ).strip()
    if not text or len(text) > max(400, 4 * len(question)):
        return None
    return text


def needs_rewrite(question: str, previous_turns: Sequence[Message], recall: RecallSettings) -> bool:
    """Whether recall should search with a rewrite of `question`: it leans on earlier turns."""
    return bool(previous_turns) and may_need_rewrite(question, recall)


def may_need_rewrite(question: str, recall: RecallSettings) -> bool:
    """Whether `question` would be rewritten after some earlier turn (`needs_rewrite`): when not,
    recall searches with its own words before the session's turns are read."""
    return bool(recall.rewrite_followups and not is_trivial(question) and is_followup(question))


async def model_rewrite(
    question: str,
    previous_turns: Sequence[Message],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel,
    breaker: CircuitBreaker | None = None,
    timeout: float | None = None,
    times: RewriteTimes | None = None,
) -> str | None:
    """The memory model's standalone form of `question`, or None when it gave none within
    `timeout` (default `recall_rewrite_timeout_seconds`, 0.3 s: the reply waits on it) or failed.
    `times`: where the call's duration is recorded (a call cut at `timeout` counts as that long)."""
    budget = recall.rewrite_timeout_seconds if timeout is None else timeout
    # the reply waits for this call: a short timeout and no retry
    quick = models.model_copy(update={"llm_timeout_seconds": budget, "llm_max_retries": 0})
    # past the budget the call is given up, not failed: a model slower than 0.3 s still works
    # for the memory graph, and its breaker must not open on the reply path's impatience
    caller = ModelCaller(llm=llm, models=quick, step=Step.REWRITE, breaker=breaker, timeout_is_budget=True, quiet=True)
    turns = previous_turns[-6:]
    chat = render_chat([turn.model_copy(update={"content": turn.content[:_MAX_REWRITE_TURN_CHARS]}) for turn in turns])
    started = time.monotonic()
    try:
        answer = await caller.ask(REWRITE_PROMPT, f"{chat}\n\nLast question: {question}")
    except ModelCallFailed as error:
        if "no answer within" in str(error):
            if times is not None:
                times.record(budget)
            told_about_budget(recall.rewrite_timeout_seconds)
        else:
            logger.warning("follow-up rewrite failed, searching with the previous turn's words: %s", error)
        return None
    if times is not None:
        times.record(time.monotonic() - started)
    rewritten = _clean_answer(answer, question)
    if not rewritten:
        logger.warning("follow-up rewrite gave no usable question (%r); using the previous turn", answer[:200])
    return rewritten


def told_about_budget(budget: float) -> None:
    """Say once a process that a rewrite missed the budget: a slow model misses it on every follow-up."""
    global _told_about_budget
    if not _told_about_budget:
        _told_about_budget = True
        logger.warning(
            "follow-up rewrite: the memory model gave no answer within MEMLANE_RECALL_REWRITE_TIMEOUT_SECONDS "
            "(%gs), so recall searched with the previous turn's words; raise it for a slower model "
            "(the reply waits up to that long on follow-ups, and stops waiting while the model's recent "
            "rewrites took longer). Said once.",
            budget,
        )


# How long the memory model's rewrites take decides whether the reply waits for one (issue 48,
# item 4): with the default 0.3 s budget and a model answering in 0.4 s, every follow-up waited
# the whole budget for a rewrite that never landed.
_RECENT_REWRITES = 5  # the rewrites whose times decide
_TIMED_ENOUGH = 3  # fewer timed than this: the reply waits (nothing says the model cannot make it)
_TIMED_BUDGETS = 10  # a rewrite is timed for up to this many budgets; past that it counts as that long
_TIMING_AFTER_SECONDS = 0.1  # a rewrite only timed starts this long after the search it was not waited for


@dataclass(eq=False)
class RewriteTimes:
    """How long one memory model's recent follow-up rewrites took, to the end (a rewrite the
    reply stopped waiting for is still timed, in the background).

    The reply waits for a rewrite, up to the budget, while the median of the last few is within
    it; otherwise it searches with the previous turn's words at once, and one rewrite at a time
    runs in the background only to time the model, so that a model that got faster is waited
    for again."""

    seconds: deque[float] = field(default_factory=lambda: deque(maxlen=_RECENT_REWRITES))
    background: set[asyncio.Task[Any]] = field(default_factory=set)

    def record(self, seconds: float) -> None:
        self.seconds.append(seconds)

    def worth_waiting(self, budget: float) -> bool:
        """Whether a rewrite is likely to land within `budget`, as the recent ones did."""
        return len(self.seconds) < _TIMED_ENOUGH or statistics.median(self.seconds) <= budget

    @property
    def timing(self) -> bool:
        """A rewrite is still running in the background."""
        return bool(self.background)

    def finish_in_background(self, rewrite: asyncio.Task[Any]) -> None:
        """Let `rewrite` run to its end, timed; its answer is not used."""
        self.background.add(rewrite)
        rewrite.add_done_callback(self._finished)

    def _finished(self, rewrite: asyncio.Task[Any]) -> None:
        self.background.discard(rewrite)
        if not rewrite.cancelled() and rewrite.exception() is not None:
            logger.debug("a follow-up rewrite timed in the background failed: %s", rewrite.exception())

    @staticmethod
    def timed_for(budget: float, models: ModelSettings) -> float:
        """How long a rewrite may run to be timed: `_TIMED_BUDGETS` budgets, at most the models' timeout."""
        return min(models.llm_timeout_seconds, _TIMED_BUDGETS * budget)


_rewrite_times: dict[int, tuple[weakref.ref[BaseChatModel], RewriteTimes]] = {}


def rewrite_times(llm: BaseChatModel) -> RewriteTimes:
    """The recent rewrite times of `llm` (kept while the model object lives)."""
    known = _rewrite_times.get(id(llm))
    if known is not None and known[0]() is llm:
        return known[1]
    for key in [key for key, (model, _) in _rewrite_times.items() if model() is None]:
        del _rewrite_times[key]
    times = RewriteTimes()
    _rewrite_times[id(llm)] = (weakref.ref(llm), times)
    return times


async def rewrite_beside(
    question: str,
    previous_turns: Sequence[Message],
    beside: Coroutine[Any, Any, Any],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel,
    breaker: CircuitBreaker | None = None,
) -> tuple[str | None, Any]:
    """The model's rewrite of `question` if it lands within the budget
    (`recall_rewrite_timeout_seconds`) and what `beside` (the search with the previous turn's
    words) gave, run together. While the model's recent rewrites took longer than the budget
    (`RewriteTimes`), the rewrite is not waited for: None at once beside `beside`'s answer."""
    times = rewrite_times(llm)
    budget = recall.rewrite_timeout_seconds
    timed = RewriteTimes.timed_for(budget, models)

    def rewriting() -> asyncio.Task[str | None]:
        return asyncio.ensure_future(
            model_rewrite(
                question,
                previous_turns,
                recall=recall,
                models=models,
                llm=llm,
                breaker=breaker,
                timeout=timed,
                times=times,
            )
        )

    if not times.worth_waiting(budget):
        found = await beside

        def time_one() -> None:  # one at a time, to see whether the model got faster
            if not times.timing:
                times.finish_in_background(rewriting())

        # after the reply's own request is on its way: a model call's setup holds the event loop
        # for milliseconds, which the search and the upstream request waited behind
        asyncio.get_running_loop().call_later(_TIMING_AFTER_SECONDS, time_one)
        return None, found
    started = time.monotonic()
    rewrite = rewriting()
    try:
        found = await beside
    except BaseException:
        rewrite.cancel()
        raise
    done, _ = await asyncio.wait({rewrite}, timeout=max(0.0, budget - (time.monotonic() - started)))
    if rewrite not in done:
        told_about_budget(budget)
        times.finish_in_background(rewrite)
        return None, found
    return rewrite.result(), found


_told_about_budget = False  # the rewrite budget's warning is said once a process


async def rewrite_followup(
    question: str,
    previous_turns: Sequence[Message],
    *,
    recall: RecallSettings,
    models: ModelSettings,
    llm: BaseChatModel | None = None,
    breaker: CircuitBreaker | None = None,
) -> str:
    """`question` as a standalone search query (see the module docstring). breaker: the memory
    model's circuit breaker when `llm` is that model (while it is open, the cheap rewrite)."""
    if not needs_rewrite(question, previous_turns, recall):
        return question
    if llm is not None:
        rewritten = await model_rewrite(
            question, previous_turns, recall=recall, models=models, llm=llm, breaker=breaker
        )
        if rewritten:
            return rewritten
    return cheap_rewrite(question, previous_turns)
