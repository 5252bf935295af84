"""The rolling session summary and the windowed summarization under it."""

from __future__ import annotations

import json

from memory_graph_helpers import add_chat
from scripted import ScriptedChatModel, prompt_text

from memlane.nodes.llm import ModelCaller
from memlane.nodes.session_summary import condense, split_windows, update_session_summary
from memlane.store.text.tokens import count_tokens, count_tokens_many

WINDOW = 256


def lines_of(count: int) -> list[str]:
    return [f"user: 第{index}条消息，我们讨论了项目进度和周末的计划。" for index in range(count)]


def test_windows_fit_overlap_and_cover_every_line():
    lines = lines_of(200)
    windows = split_windows(lines, WINDOW, 40, "cl100k_base")
    assert len(windows) > 1
    assert all(sum(count_tokens_many(window)) <= WINDOW for window in windows)
    for previous, following in zip(windows, windows[1:]):
        shared = [line for line in following if line in previous]
        assert shared and sum(count_tokens_many(shared)) <= 40 and following[len(shared)] not in previous
    assert [line for line in lines if not any(line in window for window in windows)] == []


def test_a_line_longer_than_the_window_is_split_not_looped_on():
    windows = split_windows(["word " * 5000], WINDOW, 40, "cl100k_base")
    assert all(sum(count_tokens_many(window)) <= WINDOW for window in windows)
    assert sum(len(window) for window in windows) >= 5000 // WINDOW


def echo(messages) -> str:
    """The worst summarizer: it answers with everything it was given."""
    return json.dumps({"summary": prompt_text(messages)}, ensure_ascii=False)


async def test_windowed_summaries_terminate_even_with_a_model_that_never_shortens(settings):
    tuned = settings.model_copy(
        update={"summary_window_tokens": WINDOW, "summary_window_overlap_tokens": 40, "summary_max_depth": 6}
    )
    model = ScriptedChatModel(default=echo)
    caller = ModelCaller(model, tuned.models, "session summary", graph=tuned.graph)
    lines = lines_of(400)
    total = sum(count_tokens_many(lines))

    text = await condense(lines, tuned.graph, caller)

    assert count_tokens(text) <= WINDOW
    # each level at least halves the text: the calls are bounded by a geometric series
    assert len(model.calls) <= 2 * (2 * total / WINDOW + 1)


async def test_depth_cap_keeps_the_newest_text(settings):
    tuned = settings.model_copy(update={"summary_window_tokens": WINDOW, "summary_max_depth": 1})
    model = ScriptedChatModel(default=echo)
    text = await condense(lines_of(400), tuned.graph, ModelCaller(model, tuned.models, "session summary"))
    assert count_tokens(text) <= WINDOW


async def test_rolling_summary_folds_only_new_messages_and_keeps_the_language(store, settings):
    model = ScriptedChatModel(
        script=[
            '{"summary": "用户说最近总是熬夜。"}',
            '{"summary": "用户说最近总是熬夜，并且连续两周加班。"}',
        ]
    )
    caller = ModelCaller(model, settings.models, "session summary", graph=settings.graph)
    await add_chat(store, "u", [("user", None, "我最近总是凌晨 2 点才睡。"), ("assistant", None, "要注意休息。")])

    first = await update_session_summary(store, caller, "u", "s1")
    assert first is not None and first.summary == "用户说最近总是熬夜。"
    assert "language of the conversation" in model.prompts[0] and "凌晨 2 点" in model.prompts[0]

    await add_chat(store, "u", [("user", None, "是的，连续两周都在加班。")], start=5)
    second = await update_session_summary(store, caller, "u", "s1")
    assert second.summary == "用户说最近总是熬夜，并且连续两周加班。"
    assert "Previous summary: 用户说最近总是熬夜。" in model.prompts[1]
    assert "加班" in model.prompts[1] and "凌晨 2 点" not in model.prompts[1]
    assert (await store.get_session_summary("u", "s1")).summary == second.summary

    assert await update_session_summary(store, caller, "u", "s1") == second  # nothing new: no call
    assert len(model.calls) == 2


async def test_a_summary_over_the_limit_is_resummarized(store, settings):
    tuned = settings.model_copy(update={"session_summary_max_tokens": 40})
    long_answer = json.dumps({"summary": "用户说了很多很多事情。" * 30}, ensure_ascii=False)
    model = ScriptedChatModel(script=[long_answer, '{"summary": "用户说了很多事情。"}'])
    await add_chat(store, "u", [("user", None, "今天聊了很多。")])
    summary = await update_session_summary(
        store, ModelCaller(model, tuned.models, "session summary", graph=tuned.graph), "u", "s1"
    )
    assert summary.summary == "用户说了很多事情。" and len(model.calls) == 2
