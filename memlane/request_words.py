"""The words a request is read by (memlane/request_subject.py reads who it is about with them): the
user and their circle, a request's framing, what it quotes, a condition's or a comparison's "I", the
numeral "I", the general "we", a comment after a question, and who says, asks or does not know
something ("my teacher said…, is that true?", "我想问一下，为什么…"): closed-class words of both
languages, never a topic (issue 48, item 3)."""

from __future__ import annotations

import re

# the user or their own circle, as the message's subject or owner: "I", "my", "we", "我", "我们"
_SELF_EN = r"\b(?-i:(?!US\b))(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our|ours)\b"
_SELF = re.compile(rf"{_SELF_EN}|我|咱", re.I)
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
    r"|(?:for (?:my|our|a|an|the) (?:[a-z'-]+ ){1,3}?)?"  # a purpose before it: "for my essay I need a…"
    r"(?:i (?:need|want)|i(?:'d|’d| would) (?:like|love)) (?:a|an|some|to \w+)\b"
    r"|i(?:'m|’m| am) looking for (?:a|an|some)\b"
    r"|i (?:keep|kept) hearing (?:about|of)\b"
    r"|i(?:'ve|’ve| have)? (?:always |often )?heard (?:a lot |so much )?(?:about|of)\b"
    r"|i(?:'ve|’ve| have)? (?:been )?read(?:ing)? (?:a lot |so much )?about\b"
    r"|i (?:was|am|'m|’m) (?:reading|hearing) about\b"
    r"|i(?:'ve|’ve| have)? (?:always |often )?wondered\b|i (?:was |am |'m |’m )?wonder(?:ing)?\b"
    r"|i(?:'m|’m| am) (?:just |really |so )?curious\b"
    r"|i (?:just )?(?:saw|watched|read|heard|came across) (?:a|an|this|that|some) (?:[a-z-]+ ){1,2}?(?:about|on)\b)?"
    r"|^\s*(?:能不能|可不可以|能|可以|可否)?(?:请|麻烦)?(?:帮|给|替|为|教|请|告诉|跟)我(?:们)?+(?![家的])(?=[\u4e00-\u9fff])"
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
# where a quotation stood: what a clause pointing back may point at (`_standalone_request`)
MENTIONED = "\u2063"
_QUOTATION = re.compile(
    r"“[^”]{0,400}”|\"[^\"]{0,400}\"|「[^」]{0,400}」|『[^』]{0,400}』|`[^`\n]{1,400}`"
    r"|(?<![\w'’])'(?=\w)(?:[^'\n]|'(?=\w)){1,60}'(?!\w)"
)


def without_quotations(message: str) -> str:
    """The message without what it quotes ('Is "使我明白了" correct?' -> 'Is   correct?'); marks
    around the whole message only delimit it ('"What music do I like?"' is the question itself)."""
    whole = _QUOTATION.fullmatch(message.strip())
    if whole is not None:
        message = message.strip()[1:-1]
    return _QUOTATION.sub(f" {MENTIONED} ", message)


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
    # the same one again in what follows ("If I stood on Titan with a warm coat, would I freeze?"), none of theirs named
    r"|^\s*(?:if|when) (?:i|we) (?:(?!\b(?:my|our|mine|ours)\b)[^,?]){1,80}, (?:would|could|will|can) (?:i|we)\b"
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
# (dots before its question mark are the clause's own: "bhutan's capital city is...? my brain keeps…")
_FIRST_CLAUSE = re.compile(r"^\s*([^,，.。!！?？;；\n]+(?:[.。…]*[?？])?)(.*)$", re.S)
# (a question word may follow a place or field: "in cricket what does LBW mean")
_ASKS_EN = re.compile(
    r"^\s*(?:(?:in|on|for|with|at|about) [\w.+#-]+(?: [\w.+#-]+)?,?\s+)?"
    r"(?:what|whats|what's|why|how|when|where|who|whom|which|is|are|can|could|does|do|should|would|will)\b"
    r"|[?？]\s*$",
    re.I,
)
# a question word, a particle, A-not-A ("有没有", "对不对", "要不要") or 多 before a measure ("多高", "多久")
_ASKS_ZH = re.compile(
    r"什么|啥|怎么|咋|为什么|为啥|哪|谁|多少|(?<![好没十])几(?![乎何率十百千万])[\u4e00-\u9fff]|吗|呢|([\u4e00-\u9fff])[不没]\1|可不可以"
    r"|多(?:高|长|远|大|久|重|深|宽|快|厚|贵|少)"
    r"|还是(?=[^，,。!！]*[?？]\s*$)"  # an alternative question ("…是尼罗河还是亚马孙河？"), not "still"
    r"|有多[\u4e00-\u9fff]"  # a degree asked ("地核到底有多热", "有多难")
)
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
    r"never (?:remember|know|get)|can't remember|(?:had|have|got) no (?:answer|clue)|couldn't answer"
    r"|(?:can't|cannot|couldn't|can never) explain|(?:confus|baffl|puzzl)(?:es|ed|ing) me)\b"
    r"|(?<='m )lost\b|(?<=\bam )lost\b"  # "I'm lost"
    r"|想问|搞不清|搞不懂|弄不清|分不清|记不住|不懂|不明白|不知道|想知道|没听懂|听不懂|没懂|看不懂|说不清|讲不清"
    r"|答不上|答不出|回答不了|说不上来"
)
_REPORTING = re.compile(
    r"\b(?:said|say(?:s|ing)?|told|tell(?:s|ing)|insist(?:s|ed|ing)?|claim(?:s|ed|ing)?|swear(?:s|ing)?|swore|"
    r"argu(?:e|es|ed|ing)|mention(?:s|ed|ing)?|ask(?:s|ed|ing)|taught|remember|know|bet (?:me|us) that"
    r"|(?:go|goes|going|went) on about|talk(?:s|ed|ing)? about|rav(?:e|es|ed|ing) about)\b"
    r"|\b(?:learn(?:ed|t|ing)?|read|heard|hear)\s+(?:[a-z]+\s+){0,2}?(?:that|about)\b"  # not "I read a book"
    # coming to know something ("I just learned octopuses have…", "我才知道…", "我刚发现…")
    r"|\bjust (?:learned|learnt|found out|realized|realised|discovered)\b|\bfound out\b"
    # believing something ("i think the answer is 42", "我一直以为鲸鱼是鱼", "我突然想到…")
    r"|\b(?:think|thought|believe[ds]?)\b|以为|觉得|认为|想到|理解是|看法是|想法是"
    # not 问题, 小说, nor 说的, what someone says ("我妈说的“早点睡”是几点？")
    rf"|{_NOT_KNOWING}|听说|(?<!小)说(?!明|的)|讲到|讲(?!座|究)|告诉|问(?!题|候)|学到|提到"
    r"|(?:才|刚|刚刚)(?:知道|发现)|记得",
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
# an embedded question after such a verb, a few words on at most: "asked me why…", "forgetting how
# to…", "asked me at dinner why…"
_EMBEDDED = re.compile(
    r"^\s*(?:me\s+|us\s+)?(?:[^\W\d_]+\s+){0,3}?(?:why|how|what|when|where|which|who|whether)\b", re.I
)
# a request's clauses: punctuation (a question mark kept with its clause, which asks by it: "What is
# the best gift, my daughter turns 5?"), a dash ("-", "—", "——"), "and" before another question or a
# new subject ("what does 'per se' mean and how do i use it", "…changes shape and i had no idea"), or a colon
# before what it introduces ("我同事出了个谜语：什么东西越洗越脏", "sql: how do i…", "对不上：1到100里…";
# not a time's, "7:30")
_CLAUSE_BREAK = re.compile(
    r"(?<=[?？])(?![?？])\s*|[,，.。!！;；\n—–\u2600-\u27bf\U0001f300-\U0001faff]+|(?<!\s)\s+-{1,2}\s+"
    r"|(?<!\s)\s+and\s+(?=(?:how|what|why|when|where|which|who|i|we)\b)|(?<!\d)[:：]|[:：](?!\d)",
    re.I,
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
        if _YOU.match(said.strip()):  # what the user told or asked the assistant is theirs ("I once told you…")
            return None
        said = _OBJECT_SELF.sub("", said, count=1)
        if said.startswith(("我们", "我")) and not said.startswith(("我们的", "我的")):
            said = said[2:] if said.startswith("我们") else said[1:]
    said = _SELF_NOT_KNOWING.sub(" ", said)
    return None if _SELF.search(said) or _ASSISTANT_SAID.search(said) else said


def _who_says(clause: str) -> str:
    """A clause without what it reports someone said or asked ("my nephew asked me [why ice cubes crack
    when you drop them]": its "you" is anyone's), where it reports it."""
    found = _REPORTING.search(clause)
    return clause[: found.end()] if found is not None and _reports_only(clause) is not None else clause


def _asks(clause: str) -> bool:
    """A clause that asks: a question word or mark, a request in the imperative ("帮忙讲讲"), or
    a question embedded after a verb of saying or knowing ("my kid asked me why…")."""
    if _ASKS_EN.search(clause) or _ASKS_ZH.search(clause) or _REQUEST.search(clause):
        return True
    found = _REPORTING.search(clause)
    return found is not None and _embedded_question(clause[found.end() :])


def _embedded_question(said: str) -> bool:
    """What follows a verb of saying or knowing is a question: a question word a few words on
    ("asked me at dinner why…"), or in Chinese an alternative ("问我恐龙是冷血还是温血动物")."""
    return bool(_EMBEDDED.match(said) or _ASKS_ZH.search(said) or "还是" in said)


def _reported_request(message: str) -> bool:
    """Whether a request asks about what someone said, asked or knows, not about the user: its last
    asking clause names neither the user (apart from a framing or a verb of not knowing) nor a
    person, and every other clause that names the user names them only as who says, asks or knows
    something ("my teacher said glass is a slow liquid, is that true?", "I'm trying to understand
    recursion, can you give an example?", "我想问一下，为什么海水是咸的", "我们老师说闪电不会两次劈同一
    个地方，这是真的吗"). A clause that asks about the user keeps it theirs ("我妈说我小时候很胖，是真的
    吗？"), and so does a clause that tells of them ("My knee hurts after running. Any tips?"). A
    request with no asking clause asks about what it names when the user is named only as who does
    not know it ("difference between affect and effect i never remember")."""
    clauses = [clause for clause in _CLAUSE_BREAK.split(message) if clause.strip()]
    asking = [index for index, clause in enumerate(clauses) if _asks(clause)]
    if not asking:  # a request said as a thing with who does not know it ("affect vs effect i never remember")
        return bool(_SELF_NOT_KNOWING.search(message)) and not _SELF.search(_SELF_NOT_KNOWING.sub(" ", message))
    index = asking[-1]
    asked = without_framing(clauses[index])
    if _SELF.search(asked) or _PERSON.search(asked):
        known = _reports_only(asked, _NOT_KNOWING_VERB)  # "我一直记不住[英语的现在完成时什么时候用]"
        if known is None or not known.strip() or _PERSON.search(known):
            reported = _reports_only(clauses[index])  # "my kid asked me [why the moon changes shape]"
            if reported is None or not _embedded_question(reported) or _PERSON.search(reported):
                return False
    others = [clause for number, clause in enumerate(clauses) if number != index and _SELF.search(clause)]
    if not others and not _SELF.search(clauses[index]):
        return False  # nothing names the user: no report to read
    return all(
        _reports_only(clause) is not None
        or not (_SELF.search(_SELF_NOT_KNOWING.sub(" ", clause)) or _ASSISTANT_SAID.search(clause))
        for clause in others
    )
