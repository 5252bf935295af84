"""The grammar of a change (issue 48, item 1), read from closed-class words and tense, never a topic:
whether a statement says that a state ended, began or was added to ("switched", "no longer", "also",
"换", "不再", "也"), whether a question asks about the past ("Where did I live before?", "以前"), and
whether it asks for one value or several ("Which VPN do I use?", "What plants do I have?").
memlane/recall_changes.py pairs a user's statements by their vectors and asks these readings
whether the newer one changes the older."""

from __future__ import annotations

import re
from functools import lru_cache

from memlane.store.text.terms import has_cjk, query_terms

# a date in English ("May 2nd", "June 2023")
_DATE_EN = r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? (?:\d{1,2}(?:st|nd|rd|th)?|\d{4})\b"
# the query asks about the past: the older statement is what it asks for (a tense, not a topic)
_PAST = re.compile(
    # "before" as an adverb ("What did I drive before?", "before that"), not before what it times ("before
    # lights-out", "before work")
    r"\b(before(?=\s*(?:[?.!,;]|$|that\b|then\b|this\b|now\b))|used to|previously|originally|formerly|did|was"
    r"|were|when|ago|last (?:year|month|week|time))\b"
    rf"|{_DATE_EN}"
    r"|以前|原来|之前|当时|曾经|过去|那时|原本|上次|那天|那次|(?<!\d)\d{1,2}\s*月\s*\d{1,2}\s*[日号]"
    # "when" in Chinese asks a past in the 是…的 of what happened ("京杭大运河是什么时候开凿的？"), not of
    # what is set or done ("我的婚礼定在什么时候？", "我什么时候睡觉？"); 了 and 过 say a past themselves
    r"|什么时候[^，,。？?]*的\s*[？?]?\s*$"
)
# a question's auxiliary in the present, and in the past (`asks_about_the_past`)
# ("when we're away"; "what's", "where's": a question word's "'s" is its "is")
_WH_IS = r"\b(?:what|where|who|how|which|when)['’]s\b"
_PRESENT_AUXILIARY = re.compile(rf"\b(?:do|does|is|am|are)\b|'(?:re|m)\b|{_WH_IS}")
# a clause before the question saying who asked or said it ("Roomies asked where my containers go, which
# spot is mine?"): its tense is the asking's, not the question's
_REPORTED_BY = re.compile(
    r"^(?:(?!\b(?:what|which|who|whom|where|when|how|why|is|are|do|does|did)\b)[^,，:：?？])*"
    r"\b(?:asked|said|told|wondered|mentioned)\b[^,，:：?？]*[,，:：](?=[^,，:：]*[?？]\s*$)",
    re.I,
)
_PAST_AUXILIARY = re.compile(r"\b(?:did|was|were|had|used to)\b")
# past forms of `_PAST_TENSE` that are also the base form ("get my hair cut", "where do I put")
_BASE_ALIKE = frozenset({"cut", "put", "set", "let", "shut"})
# a participle of a state in a present question: after "is"/"am"/"are" and its subject ("What meal kit
# are we subscribed to?", "Is Deborah married?") or after "get" and its object ("Where do I get my
# photos printed?"), not a past
# ("What's our home Wi-Fi network called?": a subject of up to four words, no clause of its own inside
# it: "What is a skill that Audrey learned…" asks a past)
_STATE_BEFORE = re.compile(
    rf"(?:\b(?:is|am|are|get|gets)\b|{_WH_IS})"
    r"\s+(?:[a-z'-]+\s+(?:(?!(?:i|we|you|he|she|they|that|who|which)\b)[a-z'-]+\s+){0,3})?$"
)
# the 了 of a condition in a Chinese question: a clause follows it, after a comma, a habitual
# adverb or a new subject ("我肩颈酸了一般去哪按摩？", "空调坏了我找谁修？"), not a past; a pronoun
# before what is asked is an object ("你给了我什么建议？")
_CONDITION_LE = re.compile(
    r"了(?=[，,]|一般|通常|平时|平常|常常|经常|常|总是|总|老是|往往|一向|就|该|应该|都|要|想|(?:我们|咱们|你们|他们|我|你|他|她)(?!什么|哪|一|些|的|个|几|们)"
    # or a verb that asks ("加班饿了吃什么？", "病了去哪看？"), not a measure of what was done ("买了件什么")
    r"|(?![一二两三几些个件本只条张种次位家点我你他她它])[\u4e00-\u9fff](?:什么|啥|哪|谁|怎么|多少))"
)
# the experiential 过 of Chinese ("你给我推荐过哪些…"): an event asked about, not a state
_EXPERIENCED = re.compile(r"(?<![不超经难通度])过(?![敏去来])")


# words that say a state ended or was replaced, whatever it was (English whole words, any ending listed)
_ENDED_EN = re.compile(
    # not a participle before a noun, after its article or owner ("a retired teacher", "my dropped call")
    r"(?<!\ba )(?<!\ban )(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\bhis )(?<!\bher )"
    r"\b(no longer|anymore|any more|instead|switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)(?! in\b| into\b)|"
    r"stop(?:ped|ping)?|quit|left|leaving|gave up|giving up|replac(?:ed|ing)|sold|swapped|traded|cancel(?:l?ed|ling)|"
    r"called off|dropped|ended|broke up|split up|not .{1,20} anymore|gave (?:[\w'-]+ ){0,2}away|got rid of|retired|"
    r"passed away|died)\b"
)
# words that say something happened or began (weaker: "I also adopted a kitten" adds, changes nothing)
_BEGAN_EN = re.compile(
    r"\b(now|new|newly|start(?:ed|ing)?|took up|taking up|turned|became|become|joined|got|bought|adopted|lost|"
    r"finally|just|since|recently|these days)\b"
)
# the present as a time (deixis, not a topic): a statement anchored in it says how things stand now
_NOW_EN = re.compile(
    r"\b(at the moment|currently|nowadays|lately|for now|at present|these past|"
    r"this (?:year|month|week|season|semester|term|spring|summer|autumn|fall|winter))\b"
)
# a verb in the past tense tells that something happened ("Treated myself to a Pixel", "gave me
# a MacBook"): English regular pasts and the common irregular ones
_PAST_TENSE = re.compile(
    r"\b(?:[a-z]{2,}(?<!e)ed|[a-z]+[^e\W]ed|got|gave|took|bought|sold|left|went|made|put|had|began|brought|came|"
    r"found|fell|kept|lost|met|paid|ran|sent|spent|told|won|drove|broke|chose|grew|threw|wore|shut|"
    r"let|cut|set|sat|stood|swapped)\b"
)
# a past question about what was set, put or chosen asks what stands now, unless it names a time ("which
# photo did I set as the lock screen?", "Which desk chair did I end up with?"; not "What did I set it to
# last year?"); "left" after an owner or article is a side ("my left eye")
_RESULT = re.compile(
    r"\bdid (?:i|we) (?:\w+ )?"
    r"(?:set|put|end up|choose|pick|name|settle on|switch to|change (?:it )?to|go with|decide on)\b"
)
_PAST_TIME = re.compile(
    r"\b(?:before|used to|previously|originally|formerly|ago|first|last (?:year|month|week|time|night)|yesterday"
    r"|in (?:19|20)\d\d|when (?:i|we) (?:was|were))\b"
    rf"|{_DATE_EN}"
)
# the present named in a question ("now", "at the moment", "these days")
_NOW_ASKED = re.compile(r"\b(?:now|right now|currently|at the moment|these days|nowadays)\b")
_SIDE = re.compile(r"\b(?:my|your|his|her|our|their|the|a)\s+$")
# the aspect 了 of Chinese says that something happened or a state changed ("我辞职了", "入手了一台")
# (not the 了 that ends a question: how things stand now, "我打到第几关了？", "孩子几岁了？")
_CHANGE_OF_STATE = re.compile(r"(?<![为除])了(?![解不])(?!\s*[?？]?\s*$)")
# the present named before 了 ("我驾照现在一共扣了几分？"): 了 says how things stand now, not what happened
_NOW_BEFORE = re.compile(r"现在|目前|如今")
_ENDED_ZH = tuple("不再 改 换 戒 放弃 取消 离开 再也 转 变成 解散 分手 停".split())
# a move away ("搬走", "搬去上海"), not one toward the speaker, which begins something ("我妈也搬过来住了"),
# as "moved in" does
_MOVED_AWAY_ZH = re.compile(r"搬(?!(?:过|进|回)?来)")
# 不 + verb + 了: no longer ("不做了", "晚上也不出去跳了"); not 不错/不少/不过/不太/不用/不是
_NO_LONGER_ZH = re.compile(r"(?<!不)不(?![错少过太用是])[\u4e00-\u9fff]{1,4}?了")
_BEGAN_ZH = tuple("现在 如今 目前 已经 开始 以后 从此 新 刚 终于 成了".split())
# the present as a time in Chinese ("最近", "这段时间", "今年")
_NOW_ZH = tuple("最近 近来 这段时间 这阵子 这些天 这几天 今年 这个月 这学期 眼下 当前 现阶段".split())
# what adds to a state says no change by itself ("also", "too"; "也", "又", "另外"); "too" and "as
# well" add where they close a clause ("I run too."), not before what they qualify ("too pricey")
_ADDING_EN = re.compile(
    r"\b(also|another|in addition|added|on top of|besides|as well as)\b"
    r"|\b(?:too|as well)\b(?=\s*(?:now\b\s*)?(?:[.!?,;:)]|$))"  # closing a clause ("his power of attorney as well now")
    # a count grown: "so I've got two godkids now", "now I have two pen friends"
    r"|\b(?:two|three|four|five)\s+(?:of us|(?:[a-z]+\s+)?[a-z]+s)\s+now\b|\bnow i have (?:two|three|four|five)\b"
)
_ADDING_ZH = tuple("也 又 另外 同时".split())
# a reason given after a statement: what it adds is the reason's, not the statement's
_REASON = re.compile(r"(?<=\w)\s+(?:since|because|cause|cuz|coz)\b")
# what names the state it adds to, or says it is one more, adds in any clause ("…, on top of the shelter
# Tuesdays", "Launched a second show"); "also" and "too" only where their speaker is (`adds_to`)
_ADDING_ANYWHERE_EN = re.compile(
    r"\b(?:in addition to|on top of|besides|as well as|a (?:second|third|fourth|fifth))\b"
    # a word for the two together says both hold ("so both faucets are pouring", "两个楼的群都归我管", "俩一起坚持")
    r"|\bboth\b|\b(?:two|all) of them\b|(?:俩|两[个边样种家门份处条])[^，。！？,.!?]{0,12}?(?:都|一起|同时)"
)
# a capitalized word inside a sentence (not its first): a name ("Dr. Patel", "Happy Tails")
_INNER_NAME = re.compile(r"(?<![.!?]\s)(?<!^)(?<=\s)([A-Z][\w'-]+)")
# a clause of a statement; what adds counts in the first or in one the speaker is the subject of
# ("风景也好" in "最近周末都去凤凰岭徒步，人少，风景也好" says the scenery is good too, adds no place)
_CLAUSE = re.compile(r"[^,，.。;；!！?？]+")
# the subject, not "my mom"; or a clause that says something is there ("now there's a 6-month-old… too")
_SPEAKER = re.compile(r"\b(?:i|i'm|i've|i'll|we|we're|we've|there's|there is|there are)\b|我|咱")
# a number ("92", "1,800", "128"): beside a word only two statements share, another one is another value
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# a negation: a newer statement that denies a word of the older one says something else about it
_NEGATION_EN = re.compile(r"\b(no|not|never|none|nothing|without)\b|n't\b")
_NEGATION_ZH = tuple("不 没 别 无 未".split())
# characters that make a Chinese word pair grammar, not a name or a thing
_FUNCTION_HAN = frozenset(
    "我你他她它们的了是在有个都去也和与就不很要会这那一上下从到对把被给让着过吧呢吗啊呀每后前里家"
)
_TIME_TERMS = frozenset(
    query_terms(
        "last month week year day today yesterday tomorrow now ago recently new just next monday tuesday "
        "wednesday thursday friday saturday sunday weekend morning night 上个月 上周 下周 去年 今年 现在 "
        "最近 昨天 今天 已经 开始 刚刚 每天 周末 周一 周二 周三 周四 周五 周六 周日 周天 星期"
    )
)


# what a question asks for, one value or several, read from its grammar (issue 48, item 1; tenth
# session): a plural after "what"/"which" ("What plants do I have?"), "who are", "哪些", "些什么"
# ask for several; "who", "where", a singular after "what"/"which" ("Which ride app do I use?"),
# "what is my", "how much", "哪家", "谁", "几点", "是什么" ask for one. The auxiliary that follows
# the noun marks where it ends ("Which app do I keep my to-dos in?": "app").
_AUXILIARY_EN = r"(?:do|does|is|am|are|have|has|can|should|will|would|did|was|were)"
# "which" before an owner asks which one owns ("Which roaster's beans do I buy?": which roaster)
_WHICH_OWNER_EN = re.compile(r"\b(?:what|which)\s+(?:[a-z-]+\s+)?[a-z-]+['’]s\b")
_WHAT_NOUN_EN = re.compile(rf"\b(?:what|which)\s+(?:[\w'&.-]+\s+){{0,2}}?([a-z'-]+)\s+{_AUXILIARY_EN}\b")
_SEVERAL_EN = re.compile(
    r"\b(?:who|what|which|where) (?:are|were)\b|\b(?:what|which) (?:kinds?|sorts?|types?) of\b|\bany\b|\ball\b"
)
_ONE_EN = re.compile(
    r"^(?:who|whom|whose|where)\b|\b(?:what|which)(?: is|'s) (?:my|our|the)\b|\bhow (?:much|many|often|far|long)\b"
    r"|\bwhat time\b"
)
_SEVERAL_ZH = re.compile(r"哪些|些什么|都有什么|都有哪|都是什么|哪几")
_ONE_ZH = re.compile(r"谁|哪(?![些几])|几点|多少|是什么")
# a plural English noun: -s, not the -ss, -us, -is, -ics of singular ones ("glass", "bus", "physics")
_PLURAL_EN = re.compile(r"(?<=[a-z]{2})(?<![su'])s$|(?<=[a-z])es$")
_SINGULAR_ENDS = re.compile(r"(?:ss|us|is|ics|news)$")


@lru_cache(maxsize=256)
def asks_for(query: str) -> str | None:
    """What a question asks for: "one" value ("Which VPN do I use?", "我在哪家药店买药？"),
    "several" ("What plants do I have?", "我们家有哪些会员卡？"), or None where its grammar does
    not say ("What do I collect?", "我收藏什么？")."""
    lowered = " ".join(query.lower().split())
    if _SEVERAL_ZH.search(query) or _SEVERAL_EN.search(lowered):
        return "several"
    if _WHICH_OWNER_EN.search(lowered):
        return "one"
    found = _WHAT_NOUN_EN.search(lowered)
    if found is not None and found.group(1) not in ("i", "we", "you", "he", "she", "they", "it"):
        noun = found.group(1)
        return "several" if _PLURAL_EN.search(noun) and not _SINGULAR_ENDS.search(noun) else "one"
    if _ONE_EN.search(lowered) or _ONE_ZH.search(query):
        return "one"
    return None


def says_an_end(text: str) -> bool:
    """Whether a statement says that a state ended or was replaced ("switched", "no longer", "换",
    "不再", "不做了"): for a question that asks for several, what begins beside a state adds to it."""
    return bool(
        _ENDED_EN.search(" ".join(text.lower().split()))
        or any(word in text for word in _ENDED_ZH)
        or _NO_LONGER_ZH.search(text)
        or _MOVED_AWAY_ZH.search(text)
    )


def adds_to(text: str) -> bool:
    """Whether a statement says it adds to a state ("also", "another", "too"; "也", "另外"), in its
    first clause or in one its speaker is the subject of, not in a remark about something else; or,
    in any clause, names what it adds to ("on top of…") or says it is one more ("a second…")."""
    for number, clause in enumerate(_CLAUSE.findall(" ".join(text.lower().split()))):
        if _ADDING_ANYWHERE_EN.search(clause):
            return True
        if number and not _SPEAKER.search(clause):
            continue
        clause = _REASON.split(clause, maxsplit=1)[0]  # not in the reason it gives ("…since we cover cakes too")
        if _ADDING_EN.search(clause.strip()) or any(word in clause for word in _ADDING_ZH):
            return True
    return False


def _names_again(query: str, older: str, newer: str, *, names_only: bool = False) -> bool:
    """Whether the newer statement holds a word of the older one that the query does not: the
    older one's value named again ("Patel"), not what the query asks about ("piano").
    names_only: in English only a name counts, capitalized inside the older statement ("Patel
    retired"), not a word of its kind ("godmother", "blood", "kids": a second godchild, a second
    pill)."""
    shared = (content_terms(older) & content_terms(newer)) - _query_words(query)
    if not shared or has_cjk(older):
        return bool(shared)
    if not names_only:
        older_names, newer_names = _name_runs(older), _name_runs(newer)
        # each names its own ("I see Dr. Nguyen…" / "My back guy is Dr. Russo…"): the words they
        # share ("back", "Dr") are not the value
        return not (older_names and newer_names and not older_names & newer_names)
    names = {word.casefold() for word in _INNER_NAME.findall(older)}
    return any(term in names for term in shared)


# a name inside a statement: capitalized words in a row, a title's period kept ("Dr. Nguyen", "Elm
# Street"), not the pronoun ("I'm")
_NAME_RUN = re.compile(
    r"(?<![.!?]\s)(?<!^)(?<=\s)(?!I(?:'|’|\b))[A-Z][\w'-]*\.?(?:[ \t]+(?!I(?:'|’|\b))[A-Z][\w'-]*\.?){0,3}"
)


def _name_runs(text: str) -> frozenset[str]:
    """The names inside a statement, each whole and casefolded, a trailing period dropped."""
    return frozenset(run.rstrip(".").casefold() for run in _NAME_RUN.findall(text))


@lru_cache(maxsize=256)
def _query_words(query: str) -> frozenset[str]:
    """The query's terms, read once per query (the rule weighs up to ~40 pairs of statements)."""
    return frozenset(query_terms(query))


def change_said(query: str, older: str, newer: str) -> bool:
    """Whether the newer statement says a change of what `older` said, for `query`: for a question
    that asks for several values, an end or a replacement, or a change beside the old value named
    again ("I see Dr. Morgan for my teeth now, Patel retired."), since what begins beside the others
    adds to them ("Picked up two snake plants" for "What plants do I have?"); otherwise a change
    said in any grammar (`says_a_change`)."""
    if asks_for(query) == "several":
        return says_an_end(newer) or (_names_again(query, older, newer, names_only=True) and says_a_change(newer))
    return says_a_change(newer)


def restates_another_value(query: str, older: str, newer: str) -> bool:
    """Whether the newer statement, with no word of change, gives another value where the query
    asks for one ("Lyft is cheaper around here so that's my go-to for rides." after "I use Uber
    whenever I need a ride.", for "Which ride app do I use?"): it does not say it adds ("also"),
    and names no word of the older one outside the query (that would be the same value again:
    "Boston is lovely in the autumn." after "I live in Boston.")."""
    return asks_for(query) == "one" and not adds_to(newer) and not _names_again(query, older, newer)


def says_a_change(text: str) -> bool:
    """Whether a statement says that something happened or changed, in the grammar any change is
    said with, whatever changed: words that end or replace a state; or, unless it says it adds to
    a state ("also", "too"; "也"), words that begin one, a past tense, the
    aspect 了, or the present as a time ("at the moment", "最近")."""
    lowered = " ".join(text.lower().split())
    if says_an_end(text):
        return True
    if adds_to(text):
        return False
    return bool(
        _BEGAN_EN.search(lowered)
        or _NOW_EN.search(lowered)
        or _PAST_TENSE.search(lowered)
        or _CHANGE_OF_STATE.search(text)
        or any(word in text for word in (*_BEGAN_ZH, *_NOW_ZH))
    )


def gives_another_number(older: str, newer: str) -> bool:
    """Whether both statements give a number and the newer one gives one the older lacks ("92
    kilos", then "84 kilos"): beside a word only the two share, the same thing with another value."""
    old_numbers, new_numbers = set(_NUMBER.findall(older)), set(_NUMBER.findall(newer))
    return bool(old_numbers) and bool(new_numbers - old_numbers)


def negates(text: str) -> bool:
    """Whether a statement denies something ("no tomatoes", "没效果")."""
    return bool(_NEGATION_EN.search(text.lower())) or any(word in text for word in _NEGATION_ZH)


# a verb done again names what it is done to ("They renumbered the lockers" names the number)
_AGAIN = re.compile(r"\bre-?([a-z]{3,}ed)\b", re.I)


def content_terms(text: str) -> set[str]:
    """A statement's words that name something: not time words, not Chinese grammar pairs; a verb
    done again ("renumbered", "renamed", "rescheduled") names what it does too ("number")."""
    again = " ".join(found.group(1) for found in _AGAIN.finditer(text))
    return {
        term
        for term in query_terms(f"{text} {again}" if again else text)
        if term not in _TIME_TERMS and len(term) > 1 and not (_FUNCTION_HAN & set(term))
    }


def asks_about_the_past(query: str) -> bool:
    """A query about something that happened (a past tense, "以前", "推荐过", a date), not about
    how things stand: the older statement may be what it asks for. A question in the present
    (an auxiliary "do", "is"…, none of the past) asks when or how something is: there "when"
    is no past ("When does my book club meet?"), nor a past form that is also the base ("Where
    does my son get his hair cut?")."""
    query = _REPORTED_BY.sub(" ", query, count=1)  # who asked it is no tense of the question
    lowered = " ".join(query.lower().split())
    if _NOW_ASKED.search(lowered) and not _PAST_TIME.search(lowered):
        return False  # asked of now ("which voice section have they got me in now?")
    present = bool(_PRESENT_AUXILIARY.search(lowered)) and not _PAST_AUXILIARY.search(lowered)

    def a_state(word: re.Match[str]) -> bool:
        return word.group(0) in _BASE_ALIKE or (
            word.group(0).endswith("ed")
            and bool(_STATE_BEFORE.search(lowered[max(0, word.start() - 60) : word.start()]))
        )

    if _RESULT.search(lowered) and not _PAST_TIME.search(lowered):
        return False  # what was set or chosen, and no time named: how it stands ("What limit did I put on…?")
    return bool(
        any(not (present and found.group(0) == "when") for found in _PAST.finditer(lowered))
        or any(
            not (present and a_state(found)) and not _SIDE.search(lowered, 0, found.start())
            for found in _PAST_TENSE.finditer(lowered)
        )
        or _EXPERIENCED.search(query)
        or any(
            not _CONDITION_LE.match(query, found.start()) and not _NOW_BEFORE.search(query, 0, found.start())
            for found in _CHANGE_OF_STATE.finditer(query)
        )
    )
