"""Truncation of the unprocessed chat."""

from __future__ import annotations

import pytest
from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)
from scripted import prompt_text

from memlane.graph import run_memory_graph
from memlane.nodes.truncate import NothingToProcess, input_windows, truncate_chat
from memlane.store.records import Message
from memlane.store.text.tokens import count_tokens


def message(index: int, content: str) -> Message:
    return Message(id=f"m{index}", user_id="u", session_id="s", role="user", content=content, seq=index)


def test_keeps_the_newest_messages_that_fit():
    messages = [message(index, f"message number {index} " * 5) for index in range(20)]
    kept = truncate_chat(messages, 100)
    assert kept[-1].id == "m19" and kept == messages[-len(kept) :]
    assert (
        sum(count_tokens(item.content) for item in kept) <= 100 < sum(count_tokens(item.content) for item in messages)
    )


def test_everything_fits():
    messages = [message(1, "你好"), message(2, "hello")]
    assert truncate_chat(messages, 1000) == messages


def test_a_single_huge_message_is_cut_not_dropped():
    kept = truncate_chat([message(1, "word " * 500)], 50)
    assert len(kept) == 1 and count_tokens(kept[0].content) <= 50


@pytest.mark.parametrize("messages", [[], [message(1, "   "), message(2, "")]])
def test_nothing_left_fails_clearly(messages):
    with pytest.raises(NothingToProcess, match="no messages to process after truncating"):
        truncate_chat(messages, 100)


def test_a_backlog_is_cut_into_windows_oldest_first_that_lose_nothing():
    messages = [message(index, f"message number {index} " * 5) for index in range(20)]
    per_message = count_tokens(messages[0].content)
    windows = input_windows(messages, per_message * 3)
    assert [m for window in windows for m in window] == messages  # every message, in order, once
    assert [len(window) for window in windows] == [3, 3, 3, 3, 3, 3, 2]
    assert all(truncate_chat(window, per_message * 3) == window for window in windows)  # a run drops nothing
    huge = [message(1, "hi"), message(2, "word " * 500), message(3, "bye")]
    assert [[m.id for m in window] for window in input_windows(huge, 50)] == [["m1"], ["m2"], ["m3"]]
    both = [message(1, "你好"), message(2, "hello")]
    assert input_windows(both, 1000) == [both]


async def test_a_run_remembers_a_backlog_larger_than_its_input_in_windows(store, make_context):
    lines = [("user", None, f"message {index}: " + "filler words " * 20) for index in range(10)]
    stored = await add_chat(store, "u", lines)
    model = scripted(facts=[])
    budget = sum(count_tokens(message.content) for message in stored[-3:])
    result = await run_memory_graph("u", make_context(model, memory_max_input_tokens=budget))

    events = sorted(
        await store.list_events("u"),
        key=lambda event: stored.index(next(m for m in stored if m.id == event.source_message_ids[0])),
    )
    assert [event.source_message_ids for event in events] == [
        [m.id for m in stored[0:3]],
        [m.id for m in stored[3:6]],
        [m.id for m in stored[6:9]],
        [stored[9].id],
    ]  # every message was read by a run, oldest window first
    assert "message 0:" in model.prompts[0] and "message 9" not in model.prompts[0]
    assert result.windows == 4 and result.message_count == 10 and len(result.event_ids) == 4
    assert result.processed_through_seq == stored[-1].seq == await store.get_cursor("u")
    assert await store.unprocessed_messages("u") == []


async def test_a_window_that_fails_leaves_the_cursor_after_the_windows_remembered(store, make_context):
    lines = [("user", None, f"message {index}: " + "filler words " * 20) for index in range(6)]
    stored = await add_chat(store, "u", lines)
    budget = sum(count_tokens(message.content) for message in stored[:3])
    model = scripted(facts=[])
    step, summary = model.rules[0]  # the second window's summary (its chat holds message 3) fails
    model.rules[0] = (
        step,
        lambda messages: RuntimeError("the model went away") if "message 3:" in prompt_text(messages) else summary,
    )
    with pytest.raises(RuntimeError, match="went away"):
        await run_memory_graph("u", make_context(model, memory_max_input_tokens=budget))
    assert await store.get_cursor("u") == stored[2].seq  # the first window is remembered, the second is not
    assert [m.id for m in await store.unprocessed_messages("u")] == [m.id for m in stored[3:]]
