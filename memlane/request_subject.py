"""Who a request is about: the user and their own ("my sister", "我住在哪", "we"), or the world,
read from the message's closed-class words, never its topic (issue 48, item 3). Recall
(memlane/recall_gate.py) keeps a weak hit for a request about the world only where it holds what the
request names; a request about the user keeps its intent's floor.

What names the user only as the one asking does not count: a request's framing ("help me write
a poem", "how do I…", "我想了解…"), what it quotes, the general "we" ("Why do we dream?"), the "I"
of a condition or a comparison ("What happens if I…", "like I'm 10"), a comment after a question
about something else, the numeral "I" of a name, and who says, asks or does not know something
("my teacher said…, is that true?", "我想问一下，为什么…"). And what a request tells of the user beside
a question that stands alone is context it brings itself ("I'm learning SQL and keep getting lost.
What's a window function?": `_standalone_request`)."""

from __future__ import annotations

import re

from memlane.change_grammar import asks_about_the_past
from memlane.request_words import (  # the words it reads by, and who says or asks what
    _ASKS_EN,
    _ASKS_ZH,
    _CLAUSE_BREAK,
    _GENERIC_WE,
    _HYPOTHETICAL_SELF,
    _NUMERAL_I,
    _PERSON,
    _PLURAL_SELF,
    _REPORTING,
    _REQUEST,
    _SELF,
    _SELF_EN,
    _SIMILE_SELF,
    _YOU,
    MENTIONED,
    _aside_after_request,
    _asks,
    _reported_request,
    _reports_only,
    _who_says,
    without_framing,
    without_quotations,
)
from memlane.store.text.terms import detect_language, query_terms

# words that point back into the message ("can u explain it", "which one lands first", "what was the
# date of that day", "这是什么原理", "里面有多少人"), and a tag question ("我不喜欢健身，对吗？", "right?"): a
# clause holding one asks about what another clause says
_ANAPHOR = re.compile(
    r"\b(?:it|its|this|these|those|them|they|one|such|that (?=[a-z]+\b(?!\s+(?:is|are|was|were)\b))"
    r"|(?:that|which|so)[^\w]*$|right|correct|isn't it|don't i|didn't i|wasn't it"
    r"|(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )there(?! (?:is|are|was|were)\b))\b"  # not "is there a…"
    r"|它|这|那|此|其|里面|里头|其中|对吗|对不对|是吗|是不是|没错吧|吧\s*[?？]?\s*$",
    re.I,
)
# a request for counsel or a judgement ("Any tips?", "any book suggestions?", "what should…", "a good
# recipe for dinner", "咋办", "哪个好"): what suits the asker depends on who they are, whatever the clause names
_COUNSEL = re.compile(
    r"\b(?:suggest\w*|recommend\w*|advice|advise|tips?|ideas?|should|ought|help|good|best|better|worth)\b"
    r"|推荐|建议|该|咋办|怎么办|好不好|行不行|合适|适合|最好|比较好|哪个好|值得",
    re.I,
)
# the one a request is for, at its end ("…into spanish for me"): the asker, as in a request's framing
_FOR_THE_ASKER = re.compile(r"\s+for (?:me|us)\s*[.!?]*\s*$", re.I)
# what asks, not what it asks about: the question words of both languages and a Chinese question's particles
_ASKING_WORDS = re.compile(
    r"\b(?:what|whats|what's|why|how|when|where|who|whom|which|is|are|was|were|can|could|does|do|did|should|would"
    r"|will|the|a|an|of|to|in|on|and|or|s)\b|什么|啥|怎么|咋|为什么|为啥|哪|谁|多少|几|吗|呢|是|的|了|有|吧",
    re.I,
)


# a condition whose subject is the user ("if I drop a ball from…", "假如我们在地球上挖一个洞"): anyone,
# unless it names what is theirs (`_OWN`: "if I sell my car…"); an adverb may come before it ("honestly if I…")
_CONDITION_SELF = re.compile(
    r"^\s*(?:[a-z]+ly\s+)?(?:if|when|whenever|suppose|say)\s+(?:i|we)\b|^\s*(?:如果|假如|要是|假设|假若)(?:我们|咱们|我)",
    re.I,
)
_OWN = re.compile(r"\b(?:my|mine|our|ours)\b|我的|我们的|咱们的|我家", re.I)


# a message mostly in Chinese names its speaker 我: an English "I" inside it is a word mentioned
# ("英语虚拟语气里 if I were 为什么不用was")
_ENGLISH_SELF = re.compile(_SELF_EN, re.I)


# 那 opening a clause before "why" or "how" is "then", not "that" ("…纬度差不多，那为什么冬天北京冷那么多？")
_THEN_ZH = re.compile(r"(?<![\u4e00-\u9fff])那(?=为什么|为啥|怎么|咋)")
# what a user's work or talk is on ("a pub quiz round on flags", "一个关于北京城的分享", "以唐朝为背景的小说"):
# the topic it names is the world's, the request may ask about it
_TOPIC = re.compile(
    r"\b(?:on|about|regarding)\s+(?!(?:my|our|me|us|mine)\b)(?:(?!(?:my|our|me|us)\b)[\w'’-]+\s*){1,4}"
    r"|关于(?![^，。,]{0,12}?(?:我|咱))[^，。,]{1,12}?的|以(?![^，。,]{0,8}?(?:我|咱))[^，。,]{1,8}?为",
    re.I,
)
# a title (《三体》): a work of the world's, mentioned as a quotation is
_TITLE = re.compile(r"《[^》]{0,60}》")
# a demonstrative before the name of what it shows ("这篇《岳阳楼记》", "this Fermat guy") names it there
_DEMONSTRATIVES = frozenset({"this", "these", "those", "这", "那"})
_NAMED_AFTER = re.compile(r"[\u4e00-\u9fff]?《|\s+(?-i:[A-Z])")


def _points_back(clause: str) -> bool:
    """Whether the clause points back into the message (`_ANAPHOR`), apart from words that only look
    as if they did: a "one", an "its" or a "them" after a word the clause names stands for what it named
    itself ("…at the same time as one just dropped", "why does Hangul stack its letters…", "why ice cubes
    crack when you drop them"), a demonstrative
    before a name or title shows that (`_NAMED_AFTER`), 那 before "why" is "then" (`_THEN_ZH`), and
    吧 after a request softens it."""
    return any(
        (found.group(0).casefold() not in ("one", "its", "them") or not _content(clause[: found.start()]))
        and not (found.group(0).casefold() in _DEMONSTRATIVES and _NAMED_AFTER.match(clause, found.end()))
        and not (found.group(0) == "那" and _THEN_ZH.match(clause, found.start()))
        and not (found.group(0).startswith("吧") and _REQUEST.search(clause))  # softens a request: "帮忙写…吧"
        for found in _ANAPHOR.finditer(clause)
    )


def _content(clause: str) -> set[str]:
    """What a clause names (store/text/terms.py `query_terms`), without what only asks; what it
    quotes counts as one more ("what does 'EBITDA' stand for")."""
    return set(query_terms(_ASKING_WORDS.sub(" ", clause))) | ({MENTIONED} if MENTIONED in clause else set())


_QUESTION_WORD_EN = re.compile(r"\b(?:what|whats|what's|why|how|when|where|who|whom|which|whether)\b", re.I)


def _asks_in_words(clause: str) -> bool:
    """A clause that asks with a question word or a request's verb, not by its question mark alone
    ("最感兴趣的展品是？", "my daughter turns 5?" lean on what the message said before them)."""
    return bool(
        _ASKS_EN.search(clause.rstrip(" ?？")) or _QUESTION_WORD_EN.search(clause) or _ASKS_ZH.search(clause)
    ) or bool(_REQUEST.search(clause) or _WHO_SAID_IS_RIGHT.search(clause))  # "he's wrong right?"


def _what_it_asks(clause: str) -> str | None:
    """What an asking clause asks, where it names the user only in a framing, as the one it is for
    ("…for me") or as the one someone asked ("my daughter asked me [why the moon changes shape]",
    "女朋友问我[DNA 和 RNA 有什么区别]"); None where it names the user or a person otherwise."""
    asked = _FOR_THE_ASKER.sub("", without_framing(clause))
    if not (_SELF.search(asked) or _PERSON.search(asked)):
        return asked
    reported, verb = _reports_only(clause), _REPORTING.search(clause)
    # "they" inside what was asked may be the things it names ("asked me why ice cubes crack when you drop them…")
    if reported is None or verb is None or _PERSON.search(_PLURAL_PERSON.sub(" ", reported)):
        return None
    if not _asks_in_words(reported):  # (what was said, not asked)
        return None
    # the question is what was asked, not who said what ("What did I say about 《星际穿越》?")
    return None if _asks_in_words(clause[: verb.start()]) else reported


# a clause that speaks to the assistant of the user, or of what it said or remembers ("You recommended me
# a lot of books", "I once shared with you…", "do you remember…", "你给我分享过…", "我和你聊过"): what it
# asks is theirs ("when you'd pick one over the other" is anyone's "you")
_TO_THE_ASSISTANT = re.compile(
    rf"(?:{_YOU.pattern})[^,，.。?？!！]{{0,40}}?(?:{_SELF.pattern})|(?:{_SELF.pattern})[^,，.。?？!！]{{0,40}}?(?:{_YOU.pattern})"
    r"|\b(?:you|u)\b[^,.?!]{0,12}?\b(?:remember|recall|said|told|mentioned|shared|recommended|gave|suggested)\b",
    re.I,
)


# what goes on as the user speaks: a progressive, "keep" doing, the present as a time ("I'm writing an
# essay on…", "…I keep seeing online", "reading Dune rn", "我在看…", "正在"); a past question about a
# name the user does this with asks its past, about one they did something with, theirs ("I read a
# book by Murakami, what was it called?")
_GOING_ON = re.compile(
    r"\b(?:i'm|i am|we're|we are)\s+(?:\w+\s+)?\w+ing\b|\bkeeps?\s+\w+ing\b|\b(?:now|currently|rn|right now)\b"
    r"|(?:我|我们|咱们)(?:正)?在|正在",
    re.I,
)
# a name inside a clause: a capitalized word after its first, not "I" ("…an essay on the Meiji Restoration")
_ONE_NAMED = re.compile(r"(?<=\s)(?!I\b|I['’])(?-i:[A-Z])[\w'’-]+")
_PLURAL_PERSON = re.compile(r"\b(?:they|them|their|theirs)\b", re.I)


# whether who said something is right asks whether what they said is true ("My friend insists…. Is she right?")
_WHO_SAID_IS_RIGHT = re.compile(
    r"\b(?:(?:is|are|was|were)\s+(?:he|she|they)|(?:he|she|they)(?:['’]s|['’]re|\s+is|\s+are))\s+(?:right|correct|wrong)\b"
    r"|(?:他|她)(?:说得?)?(?:对|没错)",
    re.I,
)


def _they_of_things(clause: str) -> str | None:
    """An asking clause whose only person is "they" ("Why do they need that many?"): "they" may stand
    for things another clause named, so the clause is read as pointing back at them (`_ANAPHOR`),
    which only a clause that tells of them as what someone said or knows lets stand alone; and one
    asking whether who said something is right ("Is she right?"), which asks about what they said."""
    if _WHO_SAID_IS_RIGHT.search(clause) and not _SELF.search(clause):
        return _WHO_SAID_IS_RIGHT.sub(" right ", clause)
    asked = without_framing(clause)
    if _SELF.search(asked) or _PERSON.search(_PLURAL_PERSON.sub(" ", asked)) or not _PLURAL_PERSON.search(asked):
        return None
    return asked


def _standalone_request(message: str) -> bool:
    """Whether the message asks about what it names, whatever else it tells of the user: its asking
    clauses name neither the user (apart from a framing) nor a person nor counsel, no clause speaks
    to the assistant of the user or of what it said or remembers, and its last asking clause
    stands alone: it asks in words, names something (two words or more), none of what the clauses
    naming the user name, and points back at nothing ("I'm learning Rust and the borrow checker is
    killing me. What's the rule about mutable references?", "我在辅导表弟做作业，勾股定理怎么证明比较
    直观", "我同事出了个谜语：什么东西越洗越脏"). A question that points back at the question before it,
    or names nothing itself, goes on with that one, which must stand alone ("what's the capital of
    Australia and why isn't it Sydney?", "五度圈到底是什么，有啥用"). A clause that tells of the user is
    then context the request brings itself; a condition whose subject is the user tells nothing of
    them.
    A question in the present pointing back at what the user only says, knows or believes ("I just
    learned octopuses have three hearts! Why do they need that many?", "我小时候一直以为鲸鱼是鱼，它为
    什么属于哺乳动物？") asks about that, and so does one pointing back at words the user quotes.
    Where the question points back ("My knee hurts after running. Any tips?", "…这是什么原理",
    "我不喜欢健身，对吗？"), asks after what another clause tells ("你给我分享过一些游戏，是哪些游戏？") or
    asks counsel, the message stays theirs. What it costs: a question about what a clause says is
    the user's, asked with no word pointing back ("If I sell my car, what happens to the
    insurance?"), reads as the world's."""
    clauses = [clause for clause in _CLAUSE_BREAK.split(message) if clause.strip()]
    asking = [index for index, clause in enumerate(clauses) if _asks(clause)]
    if not asking or any(_TO_THE_ASSISTANT.search(without_framing(_who_says(clause))) for clause in clauses):
        return False
    asked = {index: _what_it_asks(clauses[index]) for index in asking}
    asked.update({index: _they_of_things(clauses[index]) for index, clause in asked.items() if clause is None})
    last = asking[-1]
    while (
        not _asks_in_words(clauses[last])
        and (before := max((index for index in asking if index < last), default=None)) is not None
    ):
        # a tail that asks by its mark alone is part of the question before ("what is 'X', in plain words?")
        if asked[before] is not None and asked[last] is not None:
            asked[before] = f"{asked[before]} {asked[last]}"
        last = before
    if any(clause is None for clause in asked.values()) or not _asks_in_words(clauses[last]):
        return False
    if any(_COUNSEL.search(clause or "") for clause in asked.values()):
        return False
    telling = [clause for index, clause in enumerate(clauses) if index not in asking and _SELF.search(clause)]
    if telling and all(_CONDITION_SELF.match(clause) and not _OWN.search(clause) for clause in telling):
        return True  # the user only as who does something in a condition: anyone ("if I drop a ball…, which one…")
    while (  # a question pointing back at the one before, or naming nothing, goes on with that one
        (_points_back(asked[last] or "") or len(_content(asked[last] or "")) < 2)
        and (before := max((index for index in asked if index < last), default=None)) is not None
        and _asks_in_words(clauses[before])
    ):
        last = before

    def telling_before(index: int) -> bool:
        return any(_SELF.search(clause) for clause in clauses[:index])

    named = _content(asked[last] or "")
    if len(named) < 2 and not any(index < last for index in asking) and not telling_before(last):
        # a question naming nothing after what states the problem ("作业题：长方形周长24厘米…，面积是多少？")
        named |= set().union(*(_content(clause) for clause in clauses[:last] if not _SELF.search(clause)))
    points_back = _points_back(asked[last] or "")
    if points_back or len(named) < 2:
        # what it points back at, or asks about, may be words the user quoted or a title, or what the
        # user only says, knows or believes, not theirs ("我们老板天天把“边际成本”挂在嘴边，这词到底什么意思",
        # "同事坚持说香蕉长在树上，可我记得香蕉是草本植物，谁对？"), or, pointed back at, a name the user
        # does something with ("I was looking at Orion last night. Which of its stars is the reddish one?");
        # asked in the past after a past of the user's ("I have watched "Looking Up", what was the date of
        # that day?") it asks about the user
        return (
            bool(telling)
            and (
                any(MENTIONED in clause or _TITLE.search(clause) for clause in clauses[: asking[-1]])
                or (points_back and last > 0 and not telling_before(last))  # "…，这个数是多少？我绕晕了"
                or (  # at the clause just before, which names no one and points nowhere ("我算了一下，1光年…，对吗？")
                    points_back
                    and last > 0
                    and not _SELF.search(clauses[last - 1])
                    and not _PERSON.search(clauses[last - 1])
                    and not _points_back(clauses[last - 1])
                    and len(_content(clauses[last - 1])) >= 2
                )
                or all(
                    _reports_only(clause) is not None or (points_back and _ONE_NAMED.search(clause.strip()))
                    for clause in telling
                )
            )
            # what is theirs, unless it only says who says something ("my friend insists…")
            and not any(_OWN.search(clause) and _reports_only(clause) is None for clause in telling)
            and not (
                asks_about_the_past(asked[last] or "")
                and any(asks_about_the_past(clause) or not _GOING_ON.search(clause) for clause in telling)
            )
        )
    # a title the user names is a work of the world's, not theirs ("我最近在读《三体》，…三体问题为什么没有通解？")
    told = set().union(*(_content(_TOPIC.sub(" ", _TITLE.sub(" ", clause))) for clause in telling))
    return len(named) >= 2 and not named & told


# what a request to translate or rewrite something gives after its colon is the text to work on, mentioned
# ("请用文言文改写：今天下雨，我不想出门。", "translate into French: I lost my keys")
_MATERIAL = re.compile(
    r"^(\s*(?:please\s+|请|麻烦)?(?:translate|rewrite|paraphrase|reword|用[^:：，,]{1,8}?(?:改写|翻译|说)|改写|翻译|翻成|译成)"
    r"[^:：\n]{0,30}[:：])(.+)$",
    re.I | re.S,
)


def _mentioned(found: re.Match[str]) -> str:
    return f"{found.group(1)} {MENTIONED} "


def refers_to_the_user(message: str) -> bool:
    """Whether the message is about the user: it names them or their own ("my sister", "我住在哪",
    "we"), apart from a request's framing ("help me write a poem", "帮我写一首诗"), which names the
    user only as the one asking, from what it quotes (a sentence to check, a word to translate),
    from the "we" of a question about people in general (`_GENERIC_WE`: "Why do we dream?"),
    from the "I" of a condition in a question about anyone (`_HYPOTHETICAL_SELF`: "What happens if I
    swallow chewing gum?") or of a comparison (`_SIMILE_SELF`: "like I'm 10"), from a comment after
    a question about something else
    (`_aside_after_request`: "whats the capital of australia, i always think sydney"), from the
    numeral "I" of a name ("World War I"), from an English "I" inside a Chinese message, from who
    says or asks what a request asks (`_reported_request`), and from what it tells of them beside a
    question that stands alone (`_standalone_request`).
    Closed-class words of the language, not topics: what recall reads to tell a personal question
    from a request that no memory of theirs can help with."""
    unquoted = _SIMILE_SELF.sub(" ", _NUMERAL_I.sub(r"\1", without_quotations(_MATERIAL.sub(_mentioned, message))))
    if detect_language(unquoted) == "zh":  # English words inside a Chinese message are mentioned
        unquoted = _ENGLISH_SELF.sub(" ", unquoted)
    if _speakers_own_zh(unquoted):
        return True
    if (
        _HYPOTHETICAL_SELF.search(unquoted)
        or _aside_after_request(unquoted)
        or _reported_request(unquoted)
        or _standalone_request(unquoted)
    ):
        return False
    if _GENERIC_WE.search(unquoted):
        unquoted = _PLURAL_SELF.sub(" ", unquoted)
    return bool(_SELF.search(without_framing(unquoted)))


# a Chinese question may leave its speaker unsaid: one naming no one, about how things stand in a routine
# (现在, 最近, 一般, 每天, 早上…) of one's family ("闺女现在周六去学什么？") or of a thing shown with 那 and a
# measure ("早上那杯咖啡现在在哪家买？"), is about the speaker
_ROUTINE_ZH = re.compile(r"现在|最近|一般|平时|平常|通常|每天|每周|每晚|早上|晚上|周末")
_FAMILY_ZH = re.compile(
    r"闺女|女儿|儿子|娃|孩子|宝宝|老公|老婆|媳妇|爱人|老爸|老妈|爸爸|妈妈|爷爷|奶奶|外公|外婆|姥姥|姥爷"
)
_THAT_ONE_ZH = re.compile(r"那[顿杯盒桶张个件家只本套辆台瓶]")


def _speakers_own_zh(message: str) -> bool:
    """A Chinese question naming no one, about the routine of one's family or of a thing shown as the
    speaker's own (`_ROUTINE_ZH`): the speaker's, as if it said 我."""
    return (
        detect_language(message) == "zh"
        and not _SELF.search(message)
        and bool(_ASKS_ZH.search(message))
        and bool(_ROUTINE_ZH.search(message))
        and bool(_FAMILY_ZH.search(message) or _THAT_ONE_ZH.search(message))
    )
