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
from memlane.store.text.terms import detect_language, query_terms

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
