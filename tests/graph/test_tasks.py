"""The memory graph's tasks and their queue (graph/tasks.py): what a failed run waits before its
retry and what it shows once parked."""

from __future__ import annotations


def test_retry_delays_double_up_to_ten_minutes_and_wait_for_an_open_breaker(settings):
    from memlane.graph.executor import retry_delay
    from memlane.nodes.llm import ModelPaused
    from memlane.store.models.breaker import CircuitOpen

    tuned = settings.model_copy(update={"memory_run_retry_delay_seconds": 30})
    assert [retry_delay(attempt, ValueError(), scheduler=tuned.scheduler) for attempt in (1, 2, 3, 10)] == [
        30,
        60,
        120,
        600,
    ]
    assert (
        retry_delay(1, ModelPaused("summarize", CircuitOpen("the memory model", 45)), scheduler=tuned.scheduler) == 45
    )


def test_parked_errors_keep_no_secrets(settings):
    from pydantic import SecretStr

    from memlane.graph.executor import describe_error

    tuned = settings.model_copy(update={"openai_api_key": SecretStr("plain-secret-key")})
    error = RuntimeError("auth failed for plain-secret-key at redis://:hunter2@10.0.0.1:6379 with sk-abcdefghijklmnop")
    text = describe_error(error, [tuned.models])
    assert "plain-secret-key" not in text and "hunter2" not in text and "sk-abcdefghijklmnop" not in text
    assert text.startswith("RuntimeError: auth failed for ****") and "redis://:****@10.0.0.1:6379" in text
    assert len(describe_error(RuntimeError("x" * 10_000), [tuned.models])) <= 2000
