"""The summarize step and the conditional stop after it."""

from __future__ import annotations

import pytest
from memory_graph_helpers import CHINESE_CHAT, add_chat, calls_for, scripted
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.parsing import ParseFailed
from memlane.store.tokens import count_tokens


async def test_empty_summary_stops_the_graph_and_consumes_the_buffer(store, make_context):
    model = scripted(summary="")
    stored = await add_chat(store, "u", [("user", None, "哈哈，早上好！"), ("assistant", None, "早上好！")])

    result = await run_memory_graph("u", make_context(model))

    assert [calls_for(model, task) for task in ("summarize", "extract", "merge", "tag")] == [1, 0, 0, 0]
    assert result.event_id is None and not result.changed and result.skipped_reason
    assert await store.list_events("u") == [] and await store.get_profile("u") == []
    # small talk is consumed: it is not re-read by the next run
    assert await store.get_cursor("u") == stored[-1].seq


async def test_prose_answer_is_taken_as_the_summary(store, make_context):
    model = scripted(summary="用户最近总是熬夜。", facts=[], tags=[])
    model.rules[0] = ("TASK: summarize", "用户最近总是熬夜。")
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert result.summary == "用户最近总是熬夜。"
    assert (await store.list_events("u"))[0].summary == "用户最近总是熬夜。"


@pytest.mark.parametrize("answer", ["", '{"summary": ', '{"not_summary": 1} {'])
async def test_unusable_summary_fails_the_run_and_keeps_the_buffer(store, make_context, answer):
    model = scripted()
    model.rules[0] = ("TASK: summarize", answer)
    stored = await add_chat(store, "u", CHINESE_CHAT)

    with pytest.raises(ParseFailed, match="summarize"):
        await run_memory_graph("u", make_context(model))

    assert await store.get_cursor("u") == 0
    assert len(await store.unprocessed_messages("u")) == len(stored)
    assert await store.list_events("u") == []


async def test_summary_prompt_sees_the_known_profile_and_slots(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    await run_memory_graph("u", make_context(scripted()))
    await add_chat(store, "u", [("user", None, "今天又加班了")], start=10)
    model = scripted(summary="")
    await run_memory_graph("u", make_context(model))
    prompt = model.prompts[0]
    assert "lifestyle / diet: 喜欢黑咖啡，不加糖" in prompt
    assert "sleep_schedule: when and how well they sleep / 作息与睡眠" in prompt


async def test_a_runaway_summary_is_cut_to_the_limit(store, make_context, settings):
    runaway = "用户喜欢黑咖啡。" * 6000  # ~50 KB
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(scripted(summary=runaway)))
    [event] = await store.list_events("u")
    assert count_tokens(event.summary) <= settings.memory_summary_max_tokens
    assert event.summary.startswith("用户喜欢黑咖啡。") and result.summary == event.summary
