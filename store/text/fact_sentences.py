"""Which sentences state a fact, and a text without them: what `MemoryStore.forget` removes.

The store has no model to ask, so a sentence states a fact when they share its words,
analyzed as search analyzes them (store/text/terms.py: English stems, Chinese bigrams):

- a request's command words are stripped from both ends first (`forget_subject`: "erase",
  "stop remembering", "from your memory", "不要再记住", "以后别提…了", "把…从记忆里删掉",
  "…的名字"), so what is left is what it names;
- the fact's words (`Fact.terms`) leave out what says nothing on its own: English stop
  words, "user"/"用户" (summaries say "the user" where the chat says "I"), and Chinese
  bigrams holding a function character ("我的", "对花") unless nothing else is left; words
  naming a kind of thing ("job", "plans", "名字", "工作") count only when held, beside a word
  of the fact's own ("my job at the bakery" for "I work at the bakery"), and such bigrams
  or words alone never state a fact ("我养了一只猫" is no "我养了一只狗");
- a clause (ending at "，", "、", ", " or before " and ", " but "; an English part of fewer
  than three words stays with the one before: "a brother, Tom, in Denver") states the fact when it
  holds at least `min_coverage` of the fact's words, or when the fact is longer than the
  clause and holds `min_coverage` of the clause's words (an event summary restates a short
  turn: "The user is allergic to peanuts and avoids satay" states "I'm allergic to peanuts");
- English words match by stem, and a stem matches a longer one it begins ("allerg",
  "allergi"); a single Chinese character matches any word holding it.

`strip_statements` removes the clauses that state any of the facts, then, while the rest of
a sentence still states a fact as a whole, the clause holding most of it; what is left keeps
its sentence ending, unless it has fewer than two words of its own ("By the way", "顺便"):
then the sentence goes. Removing only what states
the fact keeps the rest of a summary ("likes black coffee" survives forgetting the peanuts).

What only makes sense with a removed clause goes with it (`continues_removed`): the clause right
after it, and the next sentence when the removed clause ended its sentence, when it begins with a
word that carries the forgotten fact on ("so", "which", "that's why", "therefore", "and so", "and
it"; "it"/"its" inside the sentence only: "It rains a lot here." is no dog's; "所以", "因此",
"于是", "它", "叫"/"名叫", and "很"/"非常" saying how much: "而且很严重"), or, in the same
sentence, when it has fewer than two words of its own ("and badly"; in Chinese, fewer than three
content characters: "住在杭州" after "用户…，" is a predicate of its own). Each clause so removed
carries the rule on to the one after it. A clause or sentence with words of its own and no such
tie stays: a bare "and" lists another fact as often as it continues this one ("The user mentioned
a peanut allergy and a love of hiking", "…对花生过敏，喜欢爬山"), and
"我对花生过敏，别给我推荐沙爹" keeps "别给我推荐沙爹"; without a model, a word that ties it back
is the evidence. So forgetting the peanut allergy takes "so no satay for me" with it, and
forgetting the dog takes "叫旺财" from "我养了一只狗，叫旺财。".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memlane.store.text.terms import CJK_FUNCTION_CHARS, CJK_RANGES, index_terms

# Words that say who or that something was said, not what: summaries call the user "the
# user" / "用户" and report ("mentioned", "提到自己…") where the chat just says it.
_REPORTING_WORDS = frozenset({"user", "mention", "said", "say", "told", "tell", "提到", "表示", "自己", "说过"})
# what is left of "I'm", "it's", "we've", "don't" once the apostrophe splits them: no word of a fact
_CONTRACTION_ENDS = frozenset({"m", "s", "re", "ve", "ll", "d", "t"})
_CJK_USER = re.compile("该用户|用户")
# Bigrams holding one of these mostly straddle two words ("我的", "对花"); "过" is left out of
# search's function characters here: "过敏" is a word
_GLUE_CHARS = CJK_FUNCTION_CHARS - {"过"}
_LEADING_CONJUNCTION = re.compile(r"^(?:(?:and|but|while|whereas|so)\s+|但是|可是|不过|而且|并且|所以)", re.IGNORECASE)
# a clause or sentence beginning so only carries on the one before it (see the module docstring)
_CONTINUATION = re.compile(
    r"^(?:and\s+)?(?:(?:so|which|therefore|hence|thus|it|its|it's)\b|that'?s\s+why\b)"
    r"|^(?:而且|并且)?(?:所以|因此|因而|于是|它|叫|名叫|名字叫|取名|很|非常|特别|挺|比较)",
    re.IGNORECASE,
)
# words a request uses for the kind of thing it names, not for what was said ("erase my job at
# the bakery" for "I work at the bakery"): optional beside a word of the fact's own
_GENERIC_TERMS = frozenset(
    index_terms(
        "job name thing things stuff info information detail details fact facts memory memories place story "
        "part topic subject data record records plan plans lesson lessons class classes habit habits "
        # what a question asks, its answer being elsewhere: "how old my cat is", "how much I sleep"
        "much many old long often kind type"
    ).split()
    + ["工作", "名字", "情况", "计划", "信息", "细节", "东西", "内容", "事情"]
)
_CJK_CHAR = re.compile(rf"[{CJK_RANGES}]")
_LATIN_TERM = re.compile(r"^[a-z]+$")
_SENTENCE_END = re.compile(r"[。！？；\n]+|(?<![.!?;])[.!?;]+(?=\s|$)")  # (?<!…): see _TRAILING_PUNCTUATION
_CLAUSE_END = re.compile(rf"[，、]|,(?=\s|[{CJK_RANGES}])|\s(?=(?:and|but|while|whereas)\s)", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]", re.UNICODE)
# (?<!…): an ending is tried once per run of its characters, from the run's start, not at each
# character of it (on a long run followed by a word, each try ran to the run's end: quadratic)
_TRAILING_PUNCTUATION = re.compile(r"(?<![\s，,、:：;；\-–—])[\s，,、:：;；\-–—]+$")
_LEADING_PUNCTUATION = re.compile(r"^[\s，,、:：;；.。!！?？\-–—]+")
_CLOSING = re.compile(r"(?<![。！？!?.;；\n])[。！？!?.;；\n]++\s*+$")

# the command words of a forget request, stripped from both ends until none is left: what
# remains is what the request names ("erase my job at the bakery" → "my job at the bakery",
# "请抹掉关于成都的记忆" → "成都", "以后别提成都了" → "成都", "把豆豆从记忆里删掉" → "豆豆")
# "… I said", "… you know": what a request says was said, not what it was
_SAID_EN = r"(?:i|you)\s+(?:have\s+|ever\s+)?(?:said|told\s+you|mentioned|wrote|know|remember|stored|have\s+stored)"
_REQUEST_START_EN = re.compile(
    r"^(?:(?:please|pls|kindly|can\s+you|could\s+you|would\s+you|i\s+want\s+you\s+to|i'?d\s+like\s+you\s+to|i\s+need\s+you\s+to|"
    r"just|now|also|and|ok(?:ay)?|hey)\s*,?\s+"
    r"|(?:forget|delete|erase|remove|drop|wipe|clear|scrub|purge|discard|lose)(?:\s+(?:out|away))?\s+"
    r"|(?:(?:don'?t|do\s+not|stop|quit|no\s+longer|never)\s+(?:ever\s+)?(?:again\s+)?"
    r"(?:remember(?:ing)?|keep(?:ing)?|stor(?:e|ing)|mention(?:ing)?|bring(?:ing)?\s+up|talk(?:ing)?\s+about|hold(?:ing)?\s+on\s+to))\s+"
    r"|(?:the\s+fact\s+that|that)\s+"
    rf"|(?:(?:everything|anything|all|the\s+things?|the\s+stuff|the\s+bit|the\s+part|any\s+memor(?:y|ies))(?:\s+(?:that\s+)?{_SAID_EN})?"
    rf"|what(?:ever)?\s+(?:that\s+)?{_SAID_EN})\s+"
    r"|(?:about|regarding|concerning|on|of|related\s+to|to\s+do\s+with)\s+)",
    re.IGNORECASE,
)
_REQUEST_END_EN = re.compile(  # (?<!\s): tried once per run of spaces, not at each space of it
    # the request said after what it names: "…, no need to remember that", "…, stop remembering it"
    r"(?:(?<![\s,]),?\s+(?:(?:there's\s+|there\s+is\s+|you\s+have\s+)?no\s+need\s+to|(?:please\s+)?(?:don't|do\s+not)|"
    r"stop|you\s+(?:don't|do\s+not)\s+(?:need|have)\s+to)\s+"
    r"(?:remember(?:ing)?|keep(?:ing)?|stor(?:e|ing)|mention(?:ing)?|bring(?:ing)?\s+up)(?:\s+(?:that|it|this|those|these|them))?"
    r"(?:\s+(?:up|any\s*more))?)$"
    r"|(?:(?<!\s)\s+(?:from\s+(?:your|the)\s+(?:memory|memories|records?|notes)|from\s+memory|(?:for\s+)?(?:good|ever|now)|any\s*more|again|too|as\s+well|"
    r"please|thanks|thank\s+you|completely|entirely|altogether|for\s+me|i\s+(?:told|gave)\s+you|i\s+(?:said|mentioned))"
    r"|'s\s+name|(?<!\s)\s+(?:is\s+)?called)$",
    re.IGNORECASE,
)
_ZH_VERB = r"(?:忘掉|忘记|忘了|删除|删掉|删了|删去|清除|清掉|抹掉|抹去|抹除|去掉|移除|擦掉|丢掉|扔掉)"
_REQUEST_START_ZH = re.compile(
    r"^(?:请你?|麻烦你?|帮我|你|能不能|可以|以后|今后|从现在起|从今以后|从此|再也|就|也|还有|另外|好吧|好的|嗯)"
    r"|^(?:不要再|不要|别再|别|不用再|不用|不必再|不必|不再|无需|停止)(?:记住|记得|记着|记|保存|存着|存|保留|提起|提到|提|说起|说)(?:了)?"
    rf"|^{_ZH_VERB}(?:掉|了)?"
    r"|^(?:把|将)"
    r"|^(?:我|你)?(?:之前|以前|刚才|曾经)?(?:说过|提到过|提过|讲过|告诉过你|告诉你|跟你说过|说)的?"
    r"|^(?:所有|全部|一切|任何)(?:的)?"
    r"|^(?:关于|有关|对于)"
    rf"|^(?:从|在)?(?:你的)?(?:记忆|记录|脑子|脑海)(?:里|中|里面)?{_ZH_VERB}?(?:掉|了)?"
)
_REQUEST_END_ZH = re.compile(
    r"(?:吧|了|啊|呀|哦|嘛|啦|哈|哟|喔|噢|呢|。|！|!|\.|，|,|~|～)$"  # one a round: "不用记了啦" ends as "不用记"
    # the request said after what it names: "我周末爬山的事不用记了", "我做会计的事情不要再提"
    r"|(?:你就|你|就|请你?|先|也|可以)?(?:不要再|不要|别再|别|不用再|不用|不必再|不必|不再|无需|停止|就别|可以不用)"
    r"(?:记住|记得|记着|记|保存|存着|存|保留|提起|提到|提|说起|说)(?:了|啦|吧)?$"
    rf"|(?:从|在)?(?:你的)?(?:记忆|记录|脑子|脑海)(?:里|中|里面)?{_ZH_VERB}?(?:掉|了)?$"
    rf"|{_ZH_VERB}(?:掉|了)?$"
    r"|(?:的)?(?:记忆|记录|信息|资料|内容|事情|事儿|事|东西|话|一切|那些|部分)$"
    r"|(?:这件事|那件事|这个|那个|这些|那些|这事儿|那事儿|这事|那事|这段|那段)$"
    r"|(?:的)?(?:名字|叫什么名字|叫什么)$"
    r"|有关$|相关$"
)
# a possessive before what the request names: "我家狗" → "狗", "我的车" → "车" (kept when it is all)
_OWNER_ZH = re.compile(r"^(?:我们家的?|我家的?|我的|我)(?=.)")


def forget_subject(query: str) -> str:
    """What a "forget …" request is about: "forget what I said about peanuts" → "peanuts",
    "忘掉我说过的关于花生的事" → "花生", "以后别提成都了" → "成都". A bare subject comes back as it is."""
    text = " ".join(query.split()).strip(" .!?。！？\"'“”")
    subject, previous = text, None
    while subject != previous:  # each round strips a command word or ends the loop: it ends
        previous = subject
        for pattern in (_REQUEST_START_EN, _REQUEST_END_EN, _REQUEST_START_ZH, _REQUEST_END_ZH):
            stripped = pattern.sub("", subject, count=1).strip(" .!?。！？,，:：\"'“”")
            if stripped:
                subject = stripped
    return _OWNER_ZH.sub("", subject, count=1) or text


def _terms(text: str) -> list[str]:
    return [
        term
        for term in index_terms(_CJK_USER.sub(" ", text)).split()
        if term not in _REPORTING_WORDS and term not in _CONTRACTION_ENDS
    ]


def _is_glue_bigram(term: str) -> bool:
    return len(term) == 2 and bool(set(term) & _GLUE_CHARS) and bool(_CJK_CHAR.match(term))


def _meaningful(terms: Iterable[str]) -> frozenset[str]:
    """Terms without the bigrams holding a glue character, unless nothing else is left."""
    terms = frozenset(terms)
    strong = frozenset(term for term in terms if not _is_glue_bigram(term))
    return strong or terms


def _term_matches(wanted: str, held: str) -> bool:
    if wanted == held:
        return True
    if len(wanted) == 1 and _CJK_CHAR.match(wanted):
        return wanted in held
    if min(len(wanted), len(held)) >= 4 and _LATIN_TERM.match(wanted) and _LATIN_TERM.match(held):
        return wanted.startswith(held) or held.startswith(wanted)
    return False


def _found(term: str, held: frozenset[str]) -> bool:
    return term in held or any(_term_matches(term, other) for other in held)


def coverage(wanted: frozenset[str], held: frozenset[str], optional: frozenset[str] = frozenset()) -> float:
    """Share of `wanted` terms that `held` holds (0 when nothing is wanted).

    A Chinese bigram straddling two words ("狗旺" of "狗旺财") counts as held when the other
    bigrams held cover one of its characters and `held` holds the other (a word "狗" before
    the name "旺财"). `optional` terms (bigrams with a glue character: "成都", "京都") count when
    held and cost nothing when not, once a wanted term is held."""
    if not wanted:
        return 0.0
    found_terms = {term for term in wanted if _found(term, held)}
    covered = {char for term in found_terms for char in term}
    held_chars = {char for term in held for char in term if _CJK_CHAR.match(char)}
    for term in wanted - found_terms:
        if len(term) == 2 and _CJK_CHAR.match(term[0]) and _CJK_CHAR.match(term[1]):
            if (term[0] in covered and term[1] in held_chars) or (term[1] in covered and term[0] in held_chars):
                found_terms.add(term)
    if not found_terms:  # glue bigrams alone ("养了", "一只") state nothing: "我养了一只猫" is no "我养了一只狗"
        return 0.0
    bonus = sum(1 for term in optional - wanted if _found(term, held))
    return (len(found_terms) + bonus) / (len(wanted) + bonus)


@dataclass(frozen=True)
class Fact:
    """Something to forget, as the words that state it: `terms` must be held, `optional`
    (Chinese bigrams with a glue character, "成都") count when held."""

    text: str
    terms: frozenset[str]
    min_coverage: float
    optional: frozenset[str] = frozenset()
    # a shorter clause holding `min_coverage` of its own words in the fact states it too (an
    # event summary restating a short turn); off for a sentence found by meaning, whose every
    # clause sharing two words ("every morning") is no restatement of it
    in_shorter_clauses: bool = True

    @classmethod
    def of(cls, text: str, min_coverage: float, *, in_shorter_clauses: bool = True) -> Fact:
        every = frozenset(_terms(text))
        terms = _meaningful(every)
        specific = terms - _GENERIC_TERMS  # "my job at the bakery": the bakery is what was said
        if specific:
            terms = specific
        return cls(text, terms, min_coverage, every - terms, in_shorter_clauses)

    def stated_by(self, terms: frozenset[str]) -> bool:
        """Whether a text with these terms (`text_terms`) states the fact."""
        if not self.terms or not terms:
            return False
        if coverage(self.terms, terms, self.optional) >= self.min_coverage:
            return True
        if not self.in_shorter_clauses:
            return False
        strong = _meaningful(terms)
        return len(self.terms) > len(strong) >= 2 and coverage(strong, self.terms | self.optional) >= self.min_coverage

    def share(self, terms: frozenset[str]) -> float:
        return coverage(self.terms, terms, self.optional)


def facts_of(
    texts: Iterable[str],
    min_coverage: float,
    *,
    by_clause: bool = False,
    min_terms: int = 1,
    in_shorter_clauses: bool = True,
) -> list[Fact]:
    """One fact per sentence of the texts (per clause with `by_clause`: an event summary lists
    several facts in one sentence), those of at least `min_terms` words."""
    facts = []
    for text in texts:
        for sentence in split_sentences(text):
            for part in _split_clauses(sentence) if by_clause else [sentence]:
                fact = Fact.of(part, min_coverage, in_shorter_clauses=in_shorter_clauses)
                if len(fact.terms) >= min_terms:
                    facts.append(fact)
    return facts


def _split_after(text: str, ending: re.Pattern[str]) -> list[str]:
    """`text` cut after each match of `ending`; joined, the parts give `text` back."""
    parts, start = [], 0
    for match in ending.finditer(text):
        parts.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, each with its ending; joined they give `text` back."""
    return _split_after(text, _SENTENCE_END)


def _split_clauses(sentence: str) -> list[str]:
    """The clauses of a sentence; joined they give it back. An English part of fewer than three
    words is no clause of its own ("a brother, Tom, in Denver", "Also, I…"): it stays with the
    part before it (the first, with the one after)."""
    parts = _split_after(sentence, _CLAUSE_END)
    clauses: list[str] = []
    pending = ""  # a short first part, waiting for the next
    for part in parts:
        short = not _CJK_CHAR.search(part) and len(_LATIN_WORD.findall(part)) < 3
        if short and clauses:
            clauses[-1] += part
        elif short:
            pending += part
        else:
            clauses.append(pending + part)
            pending = ""
    if pending:
        clauses.append(pending)
    return clauses


def text_terms(text: str) -> frozenset[str]:
    """Every term of a text, glue bigrams included ("成都" is a name): what `Fact.stated_by`
    looks for the fact's words in."""
    return frozenset(_terms(text))


_SUBJECT_WORD = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+(?:['’][^\W_{CJK_RANGES}]+)?", re.UNICODE)


def unsaid(subject: str, text: str) -> str | None:
    """The words of `subject` that `text` does not hold ("my allergy to shellfish" in "I'm
    allergic to peanuts" → "shellfish"; "海鲜过敏" in "我对花生过敏" → "海鲜"), stop words left out;
    None when it holds none of them. What a sentence sharing some words with a request must
    still mean for the request to be about it."""
    held = text_terms(text)
    kept: list[str] = []
    any_held = False
    for word in _SUBJECT_WORD.findall(subject):
        if _CJK_CHAR.match(word):  # the characters no held bigram of the subject covers
            bigrams = [word[i : i + 2] for i in range(len(word) - 1)] or [word]
            covered = {
                i + offset for i, bigram in enumerate(bigrams) if _found(bigram, held) for offset in range(len(bigram))
            }
            any_held = any_held or bool(covered)
            rest = "".join(" " if i in covered else char for i, char in enumerate(word)).split()
            kept.extend(part for part in rest if not set(part) <= _GLUE_CHARS)
            continue
        terms = _terms(word)
        if not terms:  # a stop word says nothing either way
            continue
        if any(_found(term, held) for term in terms):
            any_held = True
        else:
            kept.append(word)
    return " ".join(kept) if any_held else None


def states_any(text: str, facts: Sequence[Fact]) -> bool:
    """Whether any sentence (or clause) of `text` states one of the facts."""
    return strip_statements(text, facts) != text


_LATIN_WORD = re.compile(rf"[^\W_{CJK_RANGES}]+", re.UNICODE)


# what says only that something was heard or comes next: "好的，我记住了" is left of no fact
_FILLER_ZH = re.compile(
    r"好的|好吧|嗯+|哦|收到|明白了?|知道了|没问题|(?:我)?(?:会)?记住了?|记下了?|顺便(?:说一下|提一下)?|对了|另外"
)


def _cjk_content_chars(text: str) -> int:
    """Chinese characters of a text that are neither function characters nor filler: "住在杭州"
    3, "顺便" 0, "好的，我记住了" 0."""
    text = _FILLER_ZH.sub("", _LEADING_CONJUNCTION.sub("", text.strip()))
    return sum(1 for char in text if _CJK_CHAR.match(char) and char not in _GLUE_CHARS)


def _words_of_its_own(clause: str) -> int:
    """How many words a clause says beside its conjunction: its English words, stop words
    included ("and has a wife" says 3: a predicate of its own; "and badly" says 1), or, in
    Chinese, half its content characters ("住在杭州" says a predicate of its own, as an event
    summary writes it after "用户…，")."""
    if _CJK_CHAR.search(clause):
        return _cjk_content_chars(clause) // 2 + (1 if _cjk_content_chars(clause) % 2 else 0)
    return len(_LATIN_WORD.findall(_LEADING_CONJUNCTION.sub("", clause.strip())))


_IT = re.compile(r"^(?:and\s+)?it(?:s|'s)?\b", re.IGNORECASE)


def continues_removed(text: str, *, sentence: bool = False) -> bool:
    """Whether a clause (or, `sentence`, the next sentence) only carries on the one before it
    ("so no satay for me", "叫旺财"): it goes when that one was removed."""
    text = _LEADING_PUNCTUATION.sub("", text)
    if not _WORD.search(text):
        return False
    if not sentence and _words_of_its_own(text) < 2:  # nothing of its own: "and badly"
        return True
    return bool(_CONTINUATION.match(text)) and not (sentence and _IT.match(text))


# a clause whose subject is one of the user's people ("My dad used to smoke", "我爷爷也有痛风", "Her
# daughter had asthma"): what the user asks to forget about themselves is not about them. A bare
# "she" / "他" is not someone else: notes and event cards tell of the user in the third person
# ("Her cat is called Miso", "She moved to Lyon")
_SOMEONE_ELSE_EN = re.compile(
    r"^\W*(?:(?:my|our|his|her|their)\s+)?(sister|brother|mom|mum|dad|mother|father|parents?|"
    r"friend|son|daughter|kids?|child|children|wife|husband|partner|grandma|grandpa|grandmother|grandfather|"
    r"uncle|aunt|cousin|colleague|boss|neighbou?r|roommate)\b",
    re.IGNORECASE,
)
_SOMEONE_ELSE_ZH = re.compile(
    r"^\W*(?:我的?|我们的?|我们家的?|我家的?|他的?|她的?|用户的?)?(妹妹|姐姐|哥哥|弟弟|妈妈|爸爸|父亲|母亲|父母|朋友|同事|"
    r"儿子|女儿|孩子|老公|老婆|丈夫|妻子|爷爷|奶奶|外公|外婆|姥姥|姥爷|叔叔|阿姨|舅舅|表哥|表姐|表妹|表弟|堂哥|堂姐|"
    r"领导|老板|邻居|室友|妈|爸)"
)


def about_someone_else(clause: str, fact: str) -> bool:
    """Whether the clause's subject is someone other than the user whom the fact does not name."""
    match = _SOMEONE_ELSE_EN.match(clause) or _SOMEONE_ELSE_ZH.match(clause)
    return match is not None and match.group(1).casefold() not in fact.casefold()


def _strip_sentence(sentence: str, facts: Sequence[Fact], after_removed: bool = False) -> tuple[str, bool]:
    """The sentence without what states the facts, and whether its end was removed (so the
    next sentence may go with it). after_removed: the sentence before ended in a removed clause."""
    clauses = _split_clauses(sentence)
    terms = [text_terms(clause) for clause in clauses]
    kept = [True] * len(clauses)
    for fact in facts:
        theirs = [about_someone_else(clause, fact.text) for clause in clauses]
        for index, clause_terms in enumerate(terms):
            if kept[index] and not theirs[index] and fact.stated_by(clause_terms):
                kept[index] = False
        # the clauses left may still state it together: drop the one holding most of it, until
        # they do not (each round drops a clause, so this ends)
        while any(keep and not other for keep, other in zip(kept, theirs)):
            mine = [index for index, keep in enumerate(kept) if keep and not theirs[index]]
            together = frozenset().union(*(terms[index] for index in mine))
            if not fact.stated_by(together):
                break
            kept[max(mine, key=lambda index: fact.share(terms[index]))] = False
    previous_removed = after_removed
    for index, clause in enumerate(clauses):  # what only carries a removed clause on goes with it
        if not _WORD.search(clause):  # the space between ", " and " and"
            continue
        if kept[index] and previous_removed and continues_removed(clause, sentence=index == 0):
            kept[index] = False
        previous_removed = not kept[index]
    if all(kept):
        return sentence, False
    rest = "".join(clause for clause, keep in zip(clauses, kept) if keep)
    says = _cjk_content_chars(rest) >= 3 if _CJK_CHAR.search(rest) else len(_meaningful(text_terms(rest))) >= 2
    if not says:  # what is left says nothing on its own ("By the way", "顺便")
        return "", True
    ending = _CLOSING.search(sentence)
    rest = _TRAILING_PUNCTUATION.sub("", _LEADING_CONJUNCTION.sub("", _LEADING_PUNCTUATION.sub("", rest)))
    if sentence.lstrip()[:1].isupper() and rest[:1].islower():
        rest = rest[0].upper() + rest[1:]
    if ending and not _CLOSING.search(rest):
        rest += ending.group().rstrip()
    leading = sentence[: len(sentence) - len(sentence.lstrip())]
    trailing = sentence[len(sentence.rstrip()) :] if ending else ""
    return leading + rest + trailing, not kept[-1]


def strip_statements(text: str, facts: Sequence[Fact]) -> str:
    """`text` without the clauses that state any of `facts` (see the module docstring); ""
    when nothing with words is left. Unchanged when nothing states them."""
    if not facts or not text.strip():
        return text
    words = frozenset(_terms(text))
    if not any(fact.share(words) for fact in facts):  # no word in common: nothing to cut (the common case)
        return text
    parts, after_removed = [], False
    for sentence in split_sentences(text):
        part, after_removed = _strip_sentence(sentence, facts, after_removed and bool(sentence.strip()))
        parts.append(part)
    result = "".join(parts)
    if result == text:
        return text
    result = result.strip()
    return result if _WORD.search(result) else ""


def split_clauses(text: str) -> list[str]:
    """The clauses of `text`, sentence by sentence, each stripped, those with words only: what
    forget cuts ("我住在成都，我周末喜欢打羽毛球。" → "我住在成都，", "我周末喜欢打羽毛球。")."""
    return [
        clause.strip()
        for sentence in split_sentences(text)
        for clause in _split_clauses(sentence)
        if _WORD.search(clause)
    ]


def _bare(clause: str) -> str:
    return (
        _TRAILING_PUNCTUATION.sub("", _LEADING_CONJUNCTION.sub("", _LEADING_PUNCTUATION.sub("", clause.strip())))
        .rstrip("。！？!?.;；")
        .lower()
    )


def removed_clauses(before: str, after: str) -> list[str]:
    """The clauses of `before` that `after` (what `strip_statements` left) no longer holds."""
    kept = _bare(after)
    return [clause for clause in split_clauses(before) if _bare(clause) and _bare(clause) not in kept]
