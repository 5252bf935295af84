"""The summarize step and the conditional stop after it."""

from __future__ import annotations

import pytest
from memory_graph_helpers import CHINESE_CHAT, add_chat, calls_for, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.parsing import ParseFailed
from memlane.store.text.tokens import count_tokens


@pytest.mark.parametrize(
    ("said", "summarize_calls"),
    [
        ("今天天气真不错，随便聊聊。", 1),  # the model finds nothing to keep
        ("哈哈，早上好！", 0),  # greetings only (store/text/trivial.py): no model asked (issue 54)
        ("ok, thanks a lot 👍", 0),
    ],
)
async def test_empty_summary_stops_the_graph_and_consumes_the_buffer(store, make_context, said, summarize_calls):
    model = scripted(summary="")
    stored = await add_chat(store, "u", [("user", None, said), ("assistant", None, "早上好！")])

    result = await run_memory_graph("u", make_context(model))

    assert [calls_for(model, task) for task in ("summarize", "extract", "merge", "tag")] == [summarize_calls, 0, 0, 0]
    assert result.event_id is None and not result.changed and result.skipped_reason
    assert await store.list_events("u") == [] and await store.get_profile("u") == []
    # small talk is consumed: it is not re-read by the next run
    assert await store.get_cursor("u") == stored[-1].seq


async def test_prose_answer_is_taken_as_the_summary(store, make_context):
    model = scripted(summary="用户最近总是熬夜。", facts=[], tags=[])
    model.rules[0] = ("summarize", "用户最近总是熬夜。")
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(model))
    assert result.summary == "用户最近总是熬夜。"
    assert (await store.list_events("u"))[0].summary == "用户最近总是熬夜。"


@pytest.mark.parametrize("answer", ["", '{"summary": ', '{"not_summary": 1} {'])
async def test_unusable_summary_fails_the_run_and_keeps_the_buffer(store, make_context, answer):
    model = scripted()
    model.rules[0] = ("summarize", answer)
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


FRIEND_ONLY = {
    "zh": (
        [("user", "朋友A", "我下个月要搬去深圳了，新工作在腾讯。"), ("user", None, "哇，恭喜！")],
        "朋友A下个月搬去深圳，新工作在腾讯。",
        {
            "about": "朋友A",
            "topic": "people",
            "subtopic": "朋友A",
            "content": "朋友A下个月搬去深圳，在腾讯工作",
            "messages": [1],
        },
    ),
    "en": (
        [("user", "Maria", "I just started a new job as a pilot."), ("user", None, "No way, congrats!")],
        "Maria started a new job as a pilot.",
        {
            "about": "Maria",
            "topic": "people",
            "subtopic": "Maria",
            "content": "Maria works as a pilot",
            "messages": [1],
        },
    ),
}


@pytest.mark.parametrize("language", ["zh", "en"])
async def test_a_chat_where_only_a_friend_says_something_is_kept_under_the_friend(store, make_context, language):
    chat, summary, fact = FRIEND_ONLY[language]
    model = scripted(summary=summary, facts=[fact], tags=[])
    await add_chat(store, "u", chat)

    result = await run_memory_graph("u", make_context(model))

    # the prompt asks for a named speaker's own facts, attributed by name, in both languages
    [prompt] = [prompt for prompt in model.prompts if "TASK: summarize" in prompt]
    assert "A named other\nspeaker" in prompt and "names them" in prompt and "never as the\nuser's" in prompt
    assert "朋友A最喜欢的电影是《星际穿越》" in prompt and "Maria started climbing" in prompt
    assert "Skip greetings, small talk and chatter, whoever says it." in prompt
    # the summary is not empty, so the graph goes on: the friend's fact is theirs, the user has none
    assert result.event_id and calls_for(model, "extract") == 1
    [entry] = await store.get_profile("u")
    assert (entry.topic, entry.subtopic, entry.content) == ("people", fact["subtopic"], fact["content"])


async def test_small_talk_with_a_friend_still_stops_the_graph(store, make_context):
    model = scripted(summary="")
    await add_chat(
        store, "u", [("user", "朋友A", "哈哈哈，早啊"), ("user", "Maria", "lol good morning"), ("user", None, "早！")]
    )
    result = await run_memory_graph("u", make_context(model))
    assert calls_for(model, "extract") == 0 and result.event_id is None
    assert await store.get_profile("u") == []
