"""Texts that say nothing to remember: a greeting, thanks, an acknowledgement, a laugh, or only
punctuation and emoji, in English and Chinese ("hi!", "thanks a lot", "ok 👍", "好的", "谢谢你",
"哈哈哈", "嗯嗯"). No model is asked about them (issue 54): a memory run whose speakers said only
these stops before its first model call (graph/build.py), the chat app's topic check does not ask
(nodes/topic_shift.py), and recall does not rewrite them as follow-ups (memlane/query.py).

The rule is a closed word list, not a length: a short answer ("Lyon", "两个", "no", "是的") may
be what a question was waiting for, so a text is trivial only when every word of it is one of
`_WORDS_EN` / `_WORDS_ZH` (answers such as yes, no, 对, 可以 are not), or it has no word at all.
The documented length is zero: nothing but punctuation, spaces and emoji.
"""

from __future__ import annotations

import re

# words of greeting, thanks, acknowledgement, laughter and goodbye (lower case; a Chinese one
# may repeat: "嗯嗯", "哈哈哈")
_WORDS_EN = frozenset(
    "hi hello hey hiya yo howdy thanks thank thx ty you very much a lot so ok okay k kk cool great nice "
    "good morning afternoon evening night bye goodbye cya see later got it "
    "alright fine lol haha hahaha hehe wow oh ah hmm np welcome cheers".split()
)
_WORDS_ZH = (
    "你好",
    "您好",
    "大家好",
    "早上好",
    "晚上好",
    "下午好",
    "晚安",
    "早安",
    "谢谢你",
    "谢谢",
    "多谢",
    "感谢",
    "好的",
    "好吧",
    "好滴",
    "收到",
    "明白",
    "知道了",
    "没问题",
    "好",
    "嗯",
    "哦",
    "噢",
    "哈",
    "嘿",
    "嗨",
    "哈喽",
    "拜拜",
    "再见",
    "早",
    "啊",
    "呀",
    "了",
    "啦",
    "呢",
    "吧",
)
_ZH = re.compile("|".join(sorted(map(re.escape, _WORDS_ZH), key=len, reverse=True)))
_LATIN_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u3400-\u9fff]")


def is_trivial(text: str) -> bool:
    """Whether `text` says nothing to remember: only greeting, thanks, acknowledgement, laughter
    and goodbye words (`_WORDS_EN`, `_WORDS_ZH`), punctuation, spaces and emoji."""
    lowered = text.lower()
    if any(char.isdigit() for char in lowered):
        return False
    rest = _ZH.sub(" ", lowered)
    if _CJK.search(rest):
        return False
    words = _LATIN_WORD.findall(rest)
    if any(word not in _WORDS_EN for word in words):
        return False
    leftover = _LATIN_WORD.sub(" ", rest)
    return not re.search(r"[^\W_]", leftover, re.UNICODE)  # no letter of another script left
