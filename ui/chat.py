"""The chat as Gradio holds it: which of its messages are the app's own notes, the text of a
message whatever the shape of its content, the earlier turns a reply is sent with, and who said
a line typed as "Name: text" (`spoken_by`, `spoken_lines`)."""

from __future__ import annotations

import os
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

# the metadata id of a chat message that reports a failed reply: shown, never sent to the model
REPLY_FAILED_ID = "memlane-reply-failed"
# the metadata ids of the folded "memories used" blocks start so ("memlane-recall:3"); shown only
RECALL_ID_PREFIX = "memlane-recall"


def shown_only(item: Any) -> bool:
    """Whether a chat message is the app's note (a failed reply, the memories a reply used),
    never part of the conversation sent to the model."""
    metadata = (item.get("metadata") if isinstance(item, dict) else None) or {}
    message_id = str(metadata.get("id") or "")
    return message_id == REPLY_FAILED_ID or message_id.startswith(RECALL_ID_PREFIX)


def content_text(content: Any) -> str:
    """The text of a chat message's content in any shape Gradio gives it.

    Gradio 6 hands content back as a list of blocks (`{"type": "text", "text": ...}`, files,
    components); older shapes are a plain string or one block. A file or component is not sent
    to the model: a note in its place says it was there.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(text for text in (content_text(block) for block in content) if text)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if content.get("type") == "file" or "file" in content or "path" in content:
            file = content["file"] if isinstance(content.get("file"), dict) else content
            name = file.get("orig_name") or os.path.basename(str(file.get("path") or "")) or "a file"
            return f"[{name} was attached here; its contents are not sent to the model]"
        if content.get("type") == "component":
            return f"[a {content.get('component', 'component')} was shown here; it is not sent to the model]"
        return ""
    return str(content)


def shown_line(text: str, speaker: str | None) -> str:
    """A user line as the chat shows it: "**朋友A**: …" (the name in bold) when someone other than
    the user said it (the reply's drawing and the stored chat's both, so a redraw from the store
    keeps the speaker); the user's own line as typed."""
    return f"**{speaker}**: {text}" if speaker else text


_SHOWN_SPEAKER = re.compile(r"^\*\*([^*\n]{1,40})\*\*: ")  # the speaker as `shown_line` draws it


# A line typed as "Name: text" is that person's (a group chat as people type it). The colon is a
# full-width "：", or a ":" with a space or a CJK character after it: "10:30", "http://" and
# "a:b" have none. See `spoken_by` for what a name is; docs/doors/app.md says the rule.
_NAME_COLON = re.compile(
    r"^(?P<name>[^:：\n]{1,24}?)\s*(?:：|:(?=[\s\u3000-\u9fff\uff00-\uffef]))\s*(?P<said>\S[\s\S]*)$"
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_NAME_PUNCTUATION = ".-'’_·"  # Dr. Chen, Mary-Jane, O'Brien, 约翰·史密斯
# a letter or number after a name or label: "Friend B", "朋友A", "Q3", "Step 2"
# each alternative starts where its run of spaces or digits starts: a long run is read once, not once per place
_NAME_SUFFIX = re.compile(r"(?:(?<!\s)\s+[A-Za-z]|(?<=[^\x00-\x7f])[A-Za-z]|(?<![\s\d])\s*\d+)$")
# Chinese says who someone is by its shape, not by capitals: a kinship or role ending (妈妈, 王老师,
# 同事, 李医生, 老板), 小/老/阿 before one character (小王, 老李, 阿强), a letter or number after
# (朋友A, 用户2), a transliterated name's dot (约翰·史密斯), or one of the twenty commonest surnames
# before one or two characters (张伟, 王小明): a word that labels a line (早餐, 体重, 提醒) has none
_CJK_PERSON_ENDINGS = set("友妈爸哥姐弟妹叔姨婆公爷奶舅姑嫂师生总板事学长夫妻儿女人")
_CJK_FAMILIAR_PREFIXES = set("小老阿")
_CJK_COMMON_SURNAMES = set("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗")  # the twenty commonest
# CJK characters no name holds: pronouns and the particles and verbs of a phrase ("我的想法",
# "他说", "今天是"): a closed class of the language, not a list of labels
_NOT_IN_A_CJK_NAME = set("我你您他她它咱的了是在和与也都吗呢吧着过说要")
# English words that open a phrase, never a name: pronouns, determiners, question words (closed classes)
_FUNCTION_WORDS = {
    *"i me my mine myself we us our you your he him his she her they them their it its".split(),
    *"the a an this that these those some any every each no".split(),
    *"what why how when where who which whose".split(),
}
# single words that label a line rather than name who said it (open class: the part of the rule
# that is a list; tests/ui/test_app_speakers.py checks the rule on cases written after it was frozen)
_LABEL_WORDS = {
    *"note notes nb ps pps fyi btw todo reminder update edit edited correction question answer q a re fw fwd".split(),
    *"subject topic summary tldr tip hint warning important idea goal plan task reason result status".split(),
    *"example quote source link step fact context background problem issue solution info details".split(),
    *"address phone email location date time day week today tonight tomorrow yesterday morning".split(),
    *"afternoon evening night weekend monday tuesday wednesday thursday friday saturday sunday also".split(),
    *"提醒 注意 注 备注 笔记 备忘 问题 问 答 回答 答案 总结 小结 更新 待办 任务 计划 目标 原因 结果 结论 说明".split(),
    *"补充 重点 例如 比如 例子 附言 地址 时间 地点 日期 主题 标题 链接 网址 电话 邮箱 想法 感想 心得 状态".split(),
    *"进度 建议 另外 还有 顺便 其实 今天 明天 昨天 今晚 早上 上午 中午 下午 晚上 周末 本人 自己".split(),
    *"周一 周二 周三 周四 周五 周六 周日 周天 星期一 星期二 星期三 星期四 星期五 星期六 星期日 星期天".split(),
}


# the said part speaks of its speaker: what an ambiguous one-word name needs (see `spoken_by`)
_FIRST_PERSON = re.compile(
    r"(?<![\w'’])(?:I|I['’](?:m|ve|d|ll)|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Ww]e['’](?:re|ve|d|ll)|[Oo]ur|[Uu]s)(?![\w'’])"
)


def _is_cjk_name(name: str, cjk: list[str]) -> bool:
    """A Chinese name or way of naming someone (see _CJK_PERSON_ENDINGS)."""
    base = _NAME_SUFFIX.sub("", name)
    if " " in name or _NOT_IN_A_CJK_NAME & set(cjk):
        return False
    if "·" in name:  # 约翰·史密斯: a transliterated name, longer than a Chinese one
        return len(cjk) <= 12
    if len(cjk) > 4:
        return False
    if base != name:  # 朋友A, 用户2
        return True
    return (
        cjk[-1] in _CJK_PERSON_ENDINGS
        or (len(cjk) == 2 and cjk[0] in _CJK_FAMILIAR_PREFIXES)
        or (len(cjk) in (2, 3) and cjk[0] in _CJK_COMMON_SURNAMES)
    )


def _is_name(name: str) -> bool:
    """Whether `name` reads as who said a line: at most three words and 20 characters of letters,
    digits and the marks names hold; a Latin word capitalized (a letter or number may follow a
    name: "Friend 2"); a Chinese one shaped as names are (`_is_cjk_name`); and not a function
    word or a word that labels a line ("Note", "提醒", "Q3")."""
    words = name.split()
    if not words or len(words) > 3 or len(name) > 20 or not words[0][0].isalpha():
        return False
    if any(not (char.isalnum() or char in _NAME_PUNCTUATION) for word in words for char in word):
        return False
    cjk = _CJK.findall(name)
    if cjk and not _is_cjk_name(name, cjk):
        return False
    for position, word in enumerate(words):
        first = word[0]
        suffix = position > 0 and (word.isdigit() or len(word) == 1)  # "Friend 2", "User A"
        if first.isalpha() and first.lower() != first.upper() and not first.isupper() and not suffix:
            return False  # "alice", "Quick note": a Latin name is capitalized
    key = (_NAME_SUFFIX.sub("", name) or name).lower().strip(_NAME_PUNCTUATION + " ")  # 朋友A, Q3, Step 2
    return key not in _LABEL_WORDS and words[0].lower().strip(".") not in _FUNCTION_WORDS


def spoken_by(text: str) -> tuple[str | None, str]:
    """(speaker, what they said) of a line typed as "Name: text" ("朋友A: …", "Alice: I …", "小王：…");
    (None, text) when the line is the user's own ("Note: …", "提醒：…", "Lunch: sushi", "10:30 …", a link).

    The name is as `_is_name` reads one; a single capitalized Latin word, which may as well label
    the line, counts only when what follows speaks in the first person."""
    found = _NAME_COLON.match(text.strip())
    if found is None:
        return None, text
    name, said = found["name"].strip(), found["said"].strip()
    if not _is_name(name):
        return None, text
    if re.fullmatch(r"[A-Z][A-Za-z]*", name) and not _FIRST_PERSON.search(said):
        # one capitalized word is a name ("Alice") or a label ("Lunch: sushi", "Mood: happy"):
        # the line is that person's only when it speaks of its speaker (I, my, we…), where reading
        # it as the user's would give the user their facts
        return None, text
    return name, said


def history_messages(history: list[dict[str, Any]]) -> list[BaseMessage]:
    """The chat's earlier turns as LangChain messages, whatever the shape of their content."""
    messages: list[BaseMessage] = []
    for item in history or []:
        role = item.get("role") if isinstance(item, dict) else None
        if role not in ("user", "assistant") or shown_only(item):
            continue
        text = content_text(item.get("content")).strip()
        if role == "user":
            text = _SHOWN_SPEAKER.sub(r"\1: ", text, count=1)  # "**朋友A**: …" goes as typed: "朋友A: …"
        if text:
            messages.append(HumanMessage(text) if role == "user" else AIMessage(text))
    return messages


def spoken_lines(text: str) -> list[tuple[str | None, str]]:
    """A message as the lines of who said them: a line that starts with a name and a colon
    (`spoken_by`) begins that person's line, the lines after it without one go on with it; a
    group chat pasted whole ("Alice: I love jazz\\nBob: I don't") is Alice's line, then Bob's."""
    lines: list[tuple[str | None, str]] = []
    for line in text.strip().splitlines():
        speaker, said = spoken_by(line)
        if lines and (speaker is None or not line.strip()):
            lines[-1] = (lines[-1][0], f"{lines[-1][1]}\n{line}")
        else:
            lines.append((speaker, said))
    return [(speaker, said.strip()) for speaker, said in lines if said.strip()]
