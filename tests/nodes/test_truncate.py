"""Truncation of the unprocessed chat."""

from __future__ import annotations

import pytest
from memory_graph_helpers import add_chat, scripted
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.truncate import NothingToProcess, truncate_chat
from memlane.store.base import Message
from memlane.store.tokens import count_tokens


def message(index: int, content: str) -> Message:
    return Message(id=f"m{index}", user_id="u", session_id="s", role="user", content=content, seq=index)


def test_keeps_the_newest_messages_that_fit():
    messages = [message(index, f"message number {index} " * 5) for index in range(20)]
    kept = truncate_chat(messages, 100)
    assert kept[-1].id == "m19" and kept == messages[-len(kept) :]
    assert (
        sum(count_tokens(item.content) for item in kept)
        <= 100
        < sum(count_tokens(item.content) for item in messages)
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


async def test_a_run_reads_the_newest_messages_and_consumes_the_whole_buffer(store, make_context):
    lines = [("user", None, f"message {index}: " + "filler words " * 20) for index in range(10)]
    stored = await add_chat(store, "u", lines)
    model = scripted(facts=[])
    budget = sum(count_tokens(message.content) for message in stored[-3:])
    result = await run_memory_graph("u", make_context(model, memory_max_input_tokens=budget))

    [event] = await store.list_events("u")
    assert event.source_message_ids == [message.id for message in stored[-3:]]
    assert "message 9" in model.prompts[0] and "message 6:" not in model.prompts[0]
    assert result.processed_through_seq == stored[-1].seq == await store.get_cursor("u")
