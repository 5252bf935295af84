"""Texts that say nothing to remember (store/text/trivial.py, issue 54): no model is asked about
them, at the memory graph (tests/nodes/test_summarize.py), the chat app's topic check and recall's
follow-up rewrite."""

from __future__ import annotations

import pytest

from memlane.config import ModelSettings, RecallSettings
from memlane.nodes.topic_shift import is_related
from memlane.query import needs_rewrite
from memlane.store.records import Message
from memlane.store.text.trivial import is_trivial
from memlane.testing import ScriptedChatModel


@pytest.mark.parametrize(
    "text",
    [
        "hi!",
        "Thanks a lot 🙏",
        "ok 👍",
        "OK, got it, thanks!",
        "Good morning :)",
        "…",
        "好的",
        "谢谢你！",
        "哈哈哈",
        "嗯嗯，好的",
        "早上好呀",
    ],
)
def test_greetings_thanks_and_acknowledgements_are_trivial(text):
    assert is_trivial(text)


@pytest.mark.parametrize(
    "text",
    ["Lyon", "两个", "no", "yes", "是的", "可以", "123", "hi, I live in Lyon", "我住在成都", "hello there", "Привет"],
)
def test_an_answer_a_number_or_anything_else_is_not(text):
    # a short answer may be what a question waited for: the rule is a word list, not a length
    assert not is_trivial(text)


def turn(content: str, role: str = "user") -> Message:
    return Message(id=content, user_id="u", session_id="s", role=role, content=content)


async def test_the_topic_check_asks_no_model_about_a_trivial_message():
    model = ScriptedChatModel(rules=[("topic_shift", '{"related": false}')])
    context = "user: I'm planning a trip to Kyoto / assistant: Lovely, when?"
    assert await is_related(model, context, turn("谢谢！"), ModelSettings()) is True
    assert model.prompts == []
    assert await is_related(model, context, turn("What should I cook tonight?"), ModelSettings()) is False
    assert len(model.prompts) == 1


def test_recall_rewrites_no_trivial_message():
    previous = [turn("He leaves on Monday.", "assistant")]
    recall = RecallSettings()
    assert needs_rewrite("他哪天出发？", previous, recall)
    assert not needs_rewrite("好的，谢谢", previous, recall) and not needs_rewrite("ok thanks", previous, recall)
