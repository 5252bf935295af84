"""Which sentences a forget request means when it shares no word with them ("forget what car I
drive" for "I drive a blue Subaru to work"): what `MemoryStore.forget` weighs after the words.

The store finds the user's sentences nearest the request by the embedder (`meaning_query`: the
request without its forget verb). How near is measured against everyday sentences
(`EVERYDAY_SENTENCES`, in the sentence's language): a sentence's `margin` is how much nearer the
request it is than they are, in the relevance units of search (cosine similarity rescaled from
the provider's floor of unrelated texts). That takes out what raw similarity mixes in: short
requests are near everything, and Chinese sentences are nearer each other than English ones.

The candidates are clauses (`store/text/fact_sentences.py` `split_clauses`), so that what goes is the clause
holding the fact, never the sentence it shares with another ("我住在成都，我周末喜欢打羽毛球。").
With a memory model, the model is shown the sentences of the nearest clauses, clause by clause,
and says which clauses state what the request asks to forget (`ForgetConfirm`). Without one,
`clearly_meant` takes at most one clause, the nearest, and only when it is clearly about the
request: the request asks a question ("what car I drive", "我开什么车"; one naming its subject,
"Kyoto", "宠物", that matched no word is left to a model), the sentence is `forget_meaning_margin`
nearer it than everyday sentences, and, for a request about the user ("what I'm afraid of",
"我吃什么药"), not about someone else ("My son is scared of the dark", "我的猫每天要吃药"): the
embedder cannot tell whose fact a sentence states. A sentence sharing some of the request's words
must mean the rest too (`store/redis/forgetting.py`): "I'm allergic to peanuts" shares "allergy"
with "my allergy to shellfish" and does not mean "shellfish".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memlane.store.text.fact_sentences import forget_subject

# what an unrelated sentence scores against a request, per language; our own everyday
# sentences, none of them a fact worth forgetting
EVERYDAY_SENTENCES: dict[str, tuple[str, ...]] = {
    "en": (
        "I had a sandwich for lunch.",
        "The weather was nice yesterday.",
        "I watched a documentary last night.",
        "My phone battery dies quickly.",
        "I usually wake up at seven.",
        "We painted the kitchen white.",
        "I am reading a novel about sailors.",
        "The train was late this morning.",
        "I bought new shoes on Saturday.",
        "My friend called me after dinner.",
        "I forgot my umbrella at the office.",
        "We went to the beach in August.",
        "I listen to podcasts while cooking.",
        "The meeting ran over by an hour.",
        "I need to renew my library card.",
        "My laptop is getting slow.",
        "I tried a new recipe for soup.",
        "The garden needs watering.",
        "I am planning a trip to the mountains.",
        "We ordered pizza on Friday.",
    ),
    "zh": (
        "我中午吃了一个三明治。",
        "昨天天气很好。",
        "我昨晚看了一部纪录片。",
        "我的手机电池掉电很快。",
        "我一般七点起床。",
        "我们把厨房刷成了白色。",
        "我在读一本关于水手的小说。",
        "今天早上火车晚点了。",
        "我周六买了新鞋。",
        "朋友晚饭后给我打了电话。",
        "我把伞忘在办公室了。",
        "我们八月去了海边。",
        "我做饭的时候听播客。",
        "会议拖了一个小时。",
        "我得去续借书证了。",
        "我的笔记本电脑越来越慢。",
        "我试了一个新的汤的做法。",
        "花园需要浇水了。",
        "我在计划去山里旅行。",
        "我们周五点了披萨。",
    ),
}
EVERYDAY_NEAREST = 3  # a request's baseline: the mean similarity of the everyday sentences nearest it

# what says the subject belongs to the user, kept before it ("我开什么车" reads as a question about
# the user; "开什么车" as one about anyone)
_OWNER_BEFORE = re.compile(r"(?:我的|我)$")

# people and animals a sentence may be about instead of the user
_OTHERS_EN = (
    r"(?:son|daughter|kids?|child(?:ren)?|bab(?:y|ies)|father|dad|mother|mom|mum|parents?|brothers?|sisters?|siblings?"
    r"|wife|husband|partner|boyfriend|girlfriend|fianc[ée]e?|friends?|neighbou?rs?|uncle|aunt|cousins?|nephew|niece"
    r"|grand(?:father|mother|ma|pa|parents?|son|daughter|kids?|children)|boss|colleagues?|co-?workers?|room-?mates?|flatmates?"
    r"|cats?|dogs?|pets?)"
)
_OTHERS_ZH = (
    r"(?:儿子|女儿|孩子|宝宝|爸爸|父亲|妈妈|母亲|父母|哥哥|姐姐|弟弟|妹妹|老公|老婆|丈夫|妻子|男朋友|女朋友|朋友|邻居"
    r"|叔叔|阿姨|舅舅|姑姑|爷爷|奶奶|外公|外婆|孙子|孙女|老板|同事|室友|猫|狗|宠物)"
)
_ABOUT_SOMEONE_ELSE = re.compile(
    rf"^(?:(?:my|our)\s+(?:[a-z'-]+\s+)?{_OTHERS_EN}\b|(?:he|she|they|his|her|their)\b)|^(?:我们|我)?的?家?{_OTHERS_ZH}|^(?:他|她|它)",
    re.IGNORECASE,
)
_NAMES_SOMEONE_ELSE = re.compile(
    rf"\b{_OTHERS_EN}\b|{_OTHERS_ZH}|\b(?:he|she|they|his|her|their)\b|他|她", re.IGNORECASE
)
_QUESTION = re.compile(
    r"\b(?:what|where|who|whom|whose|which|when|how)\b|什么|哪|谁|多大|多少|多久|几|怎么|怎样|为什么", re.IGNORECASE
)
_NAMES_THE_USER = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself)\b|我", re.IGNORECASE)


def meaning_query(query: str) -> str:
    """A forget request as the embedder should read it: its subject (`forget_subject`), with the
    "我" / "我的" said before it ("forget what car I drive" → "what car I drive", "忘掉我开什么车"
    → "我开什么车", "忘掉关于花生的事" → "花生")."""
    subject = forget_subject(query)
    text = " ".join(query.split())
    at = text.find(subject)
    owner = _OWNER_BEFORE.search(text[:at]) if at > 0 else None
    return (owner.group() if owner else "") + subject


def asks_about_the_user(request: str) -> bool:
    """Whether a request is about the user alone: it names them ("I", "我") and no one else."""
    return bool(_NAMES_THE_USER.search(request)) and not _NAMES_SOMEONE_ELSE.search(request)


def about_someone_else(sentence: str) -> bool:
    """Whether a sentence is about someone other than the user ("My son is scared of the dark",
    "我爸爸很讨厌烟味", "She moved to Oslo"): its subject is another person or an animal."""
    return bool(_ABOUT_SOMEONE_ELSE.match(sentence.strip(" \"'“”-–—*")))


@dataclass(frozen=True)
class MeaningCandidate:
    """One clause of the user's sentences near a forget request."""

    text: str  # a clause
    margin: float  # how much nearer the request than everyday sentences are (relevance units)
    sentence: str = ""  # the sentence it is a clause of


def asks_a_question(request: str) -> bool:
    """Whether a request asks what something is ("what car I drive", "where I grew up", "我开什么车",
    "我多大了") rather than naming it ("Kyoto", "宠物"): its answer is in words it cannot hold."""
    return bool(_QUESTION.search(request))


def clearly_meant(request: str, candidates: Sequence[MeaningCandidate], *, min_margin: float) -> list[int]:
    """Without a model: the index of the one candidate clearly about `request` ([] when none is).

    Only a question is answered so (`asks_a_question`): a request naming what to forget that
    matched no word was never said in those words, and the nearest sentence is then a guess
    ("What time is it in Tokyo?" for "Kyoto"). The candidate is the nearest (by margin) that may
    be meant (a request about the user alone means no sentence about someone else), if it is at
    least `min_margin` nearer the request than everyday sentences are."""
    if not asks_a_question(request):
        return []
    about_the_user = asks_about_the_user(request)
    eligible = [
        index
        for index, candidate in enumerate(candidates)
        if not (about_the_user and about_someone_else(candidate.text))
    ]
    best = max(eligible, key=lambda index: candidates[index].margin, default=None)
    return [best] if best is not None and candidates[best].margin >= min_margin else []


# sentences a confirming model is shown, clause by clause: those of the nearest clauses
MEANING_SHOWN = 8


def shown_clauses(candidates: Sequence[MeaningCandidate]) -> list[int]:
    """The candidates a confirming model is shown: the sentences of the nearest clauses
    (`MEANING_SHOWN` sentences), each whole, clause by clause in its order, so that the model
    reads a clause with what it continues ("叫旺财" after "我养了一只狗") and names only the
    clauses stating the fact."""
    by_sentence: dict[str, list[int]] = {}
    for index, candidate in enumerate(candidates):
        by_sentence.setdefault(candidate.sentence or candidate.text, []).append(index)
    shown: list[int] = []
    for candidate in candidates:  # the nearest first
        key = candidate.sentence or candidate.text
        if key in by_sentence:  # its clauses in their order in the sentence
            shown.extend(sorted(by_sentence.pop(key), key=lambda index: key.find(candidates[index].text)))
            if len({candidates[i].sentence or candidates[i].text for i in shown}) >= MEANING_SHOWN:
                break
    return shown
