"""Issue 50, item 8: take what the model did answer. Every node that parses the memory model's
answer reads the field it asked for from the answers real models give around it: extra keys (some
of them Chinese), prose before and after, code fences, a list holding the one object it asked
for, the one object where it asked for a list, in English and in Chinese. Each node's ugly
answer is read as its clean answer is (the clean answer's reading is checked too)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from memlane.config import Settings
from memlane.nodes.confirm_forget import parse_confirmation
from memlane.nodes.extract import ProfileFact, extract_facts
from memlane.nodes.llm import ModelCaller
from memlane.nodes.merge import merge_facts
from memlane.nodes.organize import organize_profile
from memlane.nodes.profile_config import default_profile_config
from memlane.nodes.resummarize import resummarize_entries
from memlane.nodes.session_summary import _answer_text
from memlane.nodes.session_title import clean_title
from memlane.nodes.summarize import summarize_chat
from memlane.nodes.tag import tag_event
from memlane.nodes.topic_shift import parse_related
from memlane.store.records import Message, ProfileEntry
from memlane.testing import ScriptedChatModel

MODELS = Settings(openai_api_key=None, openai_base_url=None, llm_max_retries=0).models


def caller(answer: str) -> ModelCaller:
    return ModelCaller(ScriptedChatModel(default=answer), MODELS, "step")


def said(content: str, number: int = 1) -> Message:
    return Message(id=f"m{number}", user_id="u", session_id="s", role="user", content=content)


# --- what each node is asked, and reads, per language ---------------------------------------------
WORDS = {
    "en": {
        "chat": "I drink black coffee, no sugar.",
        "fact": "drinks black coffee without sugar",
        "summary": "The user drinks black coffee without sugar.",
        "title": "Black coffee habits",
        "tags": ["coffee", "diet"],
        "held": "drinks tea",
        "sentences": ["I drink black coffee.", "My sister lives in Porto."],
        "before": "Sure! Here is the JSON you asked for:",
        "after": "Let me know if you need anything else.",
    },
    "zh": {
        "chat": "我喜欢黑咖啡，不加糖。",
        "fact": "喜欢黑咖啡，不加糖",
        "summary": "用户喜欢黑咖啡，不加糖。",
        "title": "黑咖啡习惯",
        "tags": ["咖啡", "饮食"],
        "held": "喝茶",
        "sentences": ["我喜欢黑咖啡。", "我姐姐住在波尔图。"],
        "before": "好的，以下是结果：",
        "after": "如有需要请告诉我。",
    },
}


async def run_summarize(answer: str, lang: str) -> Any:
    return await summarize_chat([said(WORDS[lang]["chat"])], [], default_profile_config(), caller(answer))


async def run_session_summary(answer: str, lang: str) -> Any:
    return _answer_text(answer, "session_summary")


async def run_resummarize(answer: str, lang: str) -> Any:
    long_entry = ProfileEntry(user_id="u", topic="lifestyle", subtopic="diet", content=WORDS[lang]["chat"] * 30)
    profile, _ = await resummarize_entries([long_entry], 40, caller(answer))
    return [entry.content for entry in profile]


async def run_session_title(answer: str, lang: str) -> Any:
    return clean_title(answer, lang)


async def run_tag(answer: str, lang: str) -> Any:
    tags, _ = await tag_event(WORDS[lang]["summary"], 3, 20, caller(answer))
    return tags


async def run_topic_shift(answer: str, lang: str) -> Any:
    return parse_related(answer)


async def run_confirm_forget(answer: str, lang: str) -> Any:
    return parse_confirmation(answer, WORDS[lang]["sentences"])


async def run_extract(answer: str, lang: str) -> Any:
    facts, _ = await extract_facts(
        [said(WORDS[lang]["chat"])], WORDS[lang]["summary"], [], default_profile_config(), caller(answer)
    )
    return [(fact.topic, fact.subtopic, fact.content) for fact in facts]


async def run_merge(answer: str, lang: str) -> Any:
    held = ProfileEntry(user_id="u", topic="lifestyle", subtopic="diet", content=WORDS[lang]["held"])
    fact = ProfileFact(
        topic="lifestyle", subtopic="diet", content=WORDS[lang]["fact"], confidence=0.9, source_message_ids=["m1"]
    )
    profile, _ = await merge_facts([fact], [held], "u", default_profile_config(), caller(answer))
    return [entry.content for entry in profile]


async def run_organize(answer: str, lang: str) -> Any:
    profile = [
        ProfileEntry(user_id="u", topic="lifestyle", subtopic="coffee", content=WORDS[lang]["fact"]),
        ProfileEntry(user_id="u", topic="lifestyle", subtopic="tea", content=WORDS[lang]["held"]),
    ]
    organized, _ = await organize_profile(profile, 1, caller(answer))
    return sorted((entry.subtopic, entry.content) for entry in organized)


Runner = Callable[[str, str], Awaitable[Any]]


def clean_answers(lang: str) -> dict[str, tuple[Runner, Any, str | None, Any]]:
    """node: (runner, its clean answer's value, the key of the list it asks for or None, what it reads)."""
    words = WORDS[lang]
    fact = {"topic": "lifestyle", "subtopic": "diet", "content": words["fact"], "confidence": 0.9}
    both = f"{words['fact']}; {words['held']}"
    return {
        "summarize": (run_summarize, {"summary": words["summary"]}, None, words["summary"]),
        "session_summary": (run_session_summary, {"summary": words["summary"]}, None, words["summary"]),
        "resummarize": (run_resummarize, {"content": words["fact"]}, None, [words["fact"]]),
        "session_title": (run_session_title, {"title": words["title"]}, None, words["title"]),
        "tag": (run_tag, {"tags": words["tags"]}, "tags", words["tags"]),
        "topic_shift": (run_topic_shift, {"related": False}, None, False),
        "confirm_forget": (run_confirm_forget, {"sentences": [1]}, "sentences", [0]),
        "extract": (run_extract, {"facts": [fact]}, "facts", [("lifestyle", "diet", words["fact"])]),
        "merge": (run_merge, {"action": "UPDATE", "content": both}, None, [both]),
        "organize": (
            run_organize,
            {"subtopics": [{"subtopic": "drinks", "content": both, "merged_from": ["coffee", "tea"]}]},
            "subtopics",
            [("drinks", both)],
        ),
    }


def ugly_answers(value: dict[str, Any], list_key: str | None, lang: str) -> dict[str, str]:
    """The ways models wrap the clean answer `value`."""
    words = WORDS[lang]
    text = json.dumps(value, ensure_ascii=False)
    extra = {"reasoning": "see the chat", "说明": "根据对话", **value, "备注": {"来源": "m1"}, "confidence_note": 0.5}
    answers = {
        "extra keys": json.dumps(extra, ensure_ascii=False),
        "wrapping text": f"{words['before']}\n{text}\n{words['after']}",
        "code fence": f"```json\n{text}\n```",
        "fence in prose": f"{words['before']}\n\n```json\n{text}\n```\n\n{words['after']}",
        "indented, fenced without a language": "```\n" + json.dumps(extra, ensure_ascii=False, indent=2) + "\n```",
        "a list where one object was asked": json.dumps([value], ensure_ascii=False),
        "under an English key": json.dumps({"result": value}, ensure_ascii=False),
        "under a Chinese key": json.dumps({"结果": value}, ensure_ascii=False),
    }
    if list_key is not None:
        items = value[list_key]
        answers["the bare list"] = json.dumps(items, ensure_ascii=False)
        if not all(isinstance(item, int) for item in items):  # numbers in prose are citations ("sentence [2]")
            answers["the bare list, wrapped"] = f"{words['before']} {json.dumps(items, ensure_ascii=False)}"
        if len(items) == 1 and isinstance(items[0], dict):
            answers["one object where a list was asked"] = json.dumps(items[0], ensure_ascii=False)
    return answers


CASES = [
    pytest.param(node, lang, how, id=f"{node}-{lang}-{how}")
    for lang in WORDS
    for node, (_, value, list_key, _) in clean_answers(lang).items()
    for how in ["clean", *ugly_answers(value, list_key, lang)]
]


@pytest.mark.parametrize("node, lang, how", CASES)
async def test_every_node_reads_what_the_model_answered(node: str, lang: str, how: str):
    run, value, list_key, expected = clean_answers(lang)[node]
    answer = json.dumps(value, ensure_ascii=False) if how == "clean" else ugly_answers(value, list_key, lang)[how]
    assert await run(answer, lang) == expected, answer
