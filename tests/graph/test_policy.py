"""When a run starts."""

from __future__ import annotations

from memlane.graph.policy import decide_run
from memlane.store.base import Message


def buffer(*contents: str) -> list[Message]:
    return [
        Message(id=str(index), user_id="u", session_id="s", role="user", content=text, seq=index)
        for index, text in enumerate(contents, 1)
    ]


def test_below_threshold_waits():
    decision = decide_run(buffer("hi", "how are you"), threshold_tokens=100)
    assert not decision.due and decision.reason == "below_threshold" and decision.buffer_messages == 2


def test_threshold_passed_runs():
    decision = decide_run(buffer("word " * 60, "word " * 60), threshold_tokens=100)
    assert decision.due and decision.reason == "threshold" and decision.buffer_tokens >= 100


def test_session_end_and_flush_run_a_small_buffer():
    assert decide_run(buffer("hi"), threshold_tokens=100, session_ended=True).reason == "session_end"
    assert decide_run(buffer("hi"), threshold_tokens=100, flush=True).reason == "flush"


def test_empty_buffer_never_runs():
    decision = decide_run([], threshold_tokens=1, flush=True, session_ended=True)
    assert not decision.due and decision.reason == "empty"
