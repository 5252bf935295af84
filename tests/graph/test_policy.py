"""When a run starts."""

from __future__ import annotations

from memlane.graph.policy import decide_run
from memlane.store.records import Message


def buffer(*contents: str) -> list[Message]:
    return [
        Message(id=str(index), user_id="u", session_id="s", role="user", content=text, seq=index)
        for index, text in enumerate(contents, 1)
    ]


def test_below_threshold_waits():
    decision = decide_run(buffer("hi", "how are you"), threshold_tokens=100)
    assert not decision.due and decision.reason == "below_threshold" and decision.buffer_messages == 2
    assert decision.threshold_tokens == 100  # what the status line shows the buffer against


def test_threshold_passed_runs():
    decision = decide_run(buffer("word " * 60, "word " * 60), threshold_tokens=100)
    assert decision.due and decision.reason == "threshold" and decision.buffer_tokens >= 100


def test_session_end_and_flush_run_a_small_buffer():
    assert decide_run(buffer("hi"), threshold_tokens=100, session_ended=True).reason == "session_end"
    assert decide_run(buffer("hi"), threshold_tokens=100, flush=True).reason == "flush"


def test_empty_buffer_never_runs():
    decision = decide_run([], threshold_tokens=1, flush=True, session_ended=True)
    assert not decision.due and decision.reason == "empty"


async def test_a_new_users_first_run_starts_at_the_lower_first_threshold(store, settings):
    """Memory starts sooner: nothing of the user remembered yet, memory_first_run_tokens applies;
    after the first run, memory_buffer_tokens."""
    from memory_graph_helpers import add_chat, scripted

    from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler

    settings = settings.model_copy(update={"memory_first_run_tokens": 25, "memory_buffer_tokens": 1000})
    async with MemoryScheduler(
        MemoryContext(store=store, llm=scripted(), **settings.parts(*CONTEXT_PARTS))
    ) as scheduler:
        await add_chat(
            store, "new", [("user", None, "I run trails on Sundays, mostly in the hills near Lyon, with my sister.")]
        )
        assert not await scheduler.notify("new")  # below the first threshold
        await add_chat(
            store, "new", [("user", None, "She also climbs, and we go to the Alps every summer together.")], start=1
        )
        assert await scheduler.notify("new")  # the first run starts sooner
        await scheduler.wait_idle(10)
        assert await store.get_cursor("new") > 0
        await add_chat(
            store,
            "new",
            [("user", None, "Next week I start a new job as a nurse at the hospital in town.")] * 2,
            start=2,
        )
        assert not await scheduler.notify("new")  # remembered before: the usual threshold
