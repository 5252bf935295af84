"""The memory model's fallback chain (issue 54; graph/run.py, MemoryContext.fallback_llms,
MEMLANE_MEMORY_MODELS): a run whose model fails or whose breaker is open runs on the next, each model
with its own breaker, and says which ran; when every one fails the run parks as before, naming each."""

from __future__ import annotations

import dataclasses

import pytest
from memory_graph_helpers import CHINESE_CHAT, add_chat, calls_for, make_context, profile_config, scripted  # noqa: F401

from memlane.config import ModelSettings, Settings
from memlane.doors import memory_context
from memlane.graph import MemoryScheduler, run_memory_graph
from memlane.memory import AsyncMemory
from memlane.models import memory_fallbacks_from_settings, memory_model_from_settings
from memlane.nodes.llm import ModelChainFailed, ModelPaused
from memlane.store.models.breaker import CircuitBreaker
from memlane.testing import ScriptedChatModel

DOWN = ConnectionError("the model endpoint refused the connection")


def down() -> ScriptedChatModel:
    """A memory model whose every step fails (a provider that is away)."""
    return scripted(summary=DOWN, facts=DOWN, tags=DOWN)


async def test_a_run_whose_model_fails_runs_on_the_next_and_says_so(store, make_context, caplog):
    first, second = down(), scripted()
    context = dataclasses.replace(make_context(first, llm_max_retries=0), fallback_llms=[second])
    await add_chat(store, "u", CHINESE_CHAT)
    with caplog.at_level("INFO", logger="memlane.graph.run"):
        result = await run_memory_graph("u", context)
    assert result.model_index == 1 and result.model == "ScriptedChatModel" and result.event_id
    assert any("failed, the next was tried: summarize: the model call failed" in note for note in result.notes)
    assert calls_for(first, "summarize") == 1 and calls_for(second, "summarize") == 1
    assert len(await store.get_profile("u")) == 3 and await store.get_cursor("u") > 0
    assert "trying ScriptedChatModel" in caplog.text and "model=ScriptedChatModel" in caplog.text
    # each model its own breaker: the first's counted its failure, the fallback's its success
    assert context.model_breaker.consecutive_failures == 1
    assert context.fallback_breakers[0].consecutive_failures == 0


async def test_a_model_whose_breaker_is_open_is_not_called(store, make_context):
    first, second = scripted(summary=AssertionError("a paused model is never called")), scripted()
    paused = CircuitBreaker("the memory model", failure_threshold=1, reset_seconds=60)
    paused.record_failure(DOWN)
    context = dataclasses.replace(make_context(first), model_breaker=paused, fallback_llms=[second])
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", context)
    assert result.model_index == 1 and first.prompts == [] and calls_for(second, "summarize") == 1
    assert any("paused" in note for note in result.notes)


async def test_when_every_model_fails_the_run_parks_naming_each(store, make_context):
    outcomes: list[object] = []

    async def on_result(user_id, outcome):
        outcomes.append((user_id, outcome, None))

    context = dataclasses.replace(make_context(down(), llm_max_retries=0, memory_run_retries=0), fallback_llms=[down()])
    async with MemoryScheduler(context, on_result=on_result) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True)
        await scheduler.wait_idle(20)
    [(_, error, _)] = outcomes
    assert isinstance(error, ModelChainFailed) and str(error).count("ConnectionError") == 2
    [parked] = await store.parked_runs("u")
    assert parked.error.startswith("ModelChainFailed: every memory model failed: ScriptedChatModel: summarize:")
    assert await store.get_cursor("u") == 0  # the buffer waits, as with one model


async def test_every_model_paused_waits_for_the_first_breaker_to_let_a_trial_through(store, make_context):
    breakers = [CircuitBreaker(name, failure_threshold=1, reset_seconds=reset) for name, reset in (("a", 30), ("b", 9))]
    for breaker in breakers:
        breaker.record_failure(DOWN)
    context = dataclasses.replace(
        make_context(scripted()), model_breaker=breakers[0], fallback_llms=[scripted()], fallback_breakers=breakers[1:]
    )
    await add_chat(store, "u", CHINESE_CHAT)
    with pytest.raises(ModelChainFailed) as raised:
        await run_memory_graph("u", context)
    assert 0 < raised.value.retry_in <= 9
    one = dataclasses.replace(context, fallback_llms=(), fallback_breakers=())
    with pytest.raises(ModelPaused):  # no chain: the model's own error, as before
        await run_memory_graph("u", one)


def test_memory_models_is_the_chain_in_order_from_the_environment(monkeypatch):
    monkeypatch.setenv("MEMLANE_MEMORY_MODELS", '["qwen2.5:14b", "llama3.1", "gpt-4o-mini"]')
    models = Settings().models
    assert models.memory_models == ["qwen2.5:14b", "llama3.1", "gpt-4o-mini"]
    assert models.memory_model_name == "qwen2.5:14b"
    assert ModelSettings(memory_model="m").memory_model_name == "m"  # no chain: as before
    local = ModelSettings(openai_base_url="http://localhost:1/v1", memory_models=["a", "b", "c"])
    assert getattr(memory_model_from_settings(local), "model_name", None) == "a"
    assert [getattr(model, "model_name", None) for model in memory_fallbacks_from_settings(local)] == ["b", "c"]


async def test_the_doors_take_the_chain_from_the_settings_and_the_facade_from_a_list(store, settings):
    local = settings.models.model_copy(update={"openai_base_url": "http://localhost:1/v1", "memory_models": ["a", "b"]})
    context = memory_context(settings.model_copy(update={"models": local}), store, scripted())
    assert [name for name, _ in context.model_chain()] == ["ScriptedChatModel", "b"]
    first, second = down(), scripted()
    memory = AsyncMemory(store, model=[first, second], settings=settings.model_copy(update={"llm_max_retries": 0}))
    added = await memory.add([{"role": "user", "content": text} for _, _, text in CHINESE_CHAT], user_id="f")
    assert (
        added["event_id"]
        and added["model"] == "ScriptedChatModel"
        and calls_for(first, "summarize") == 1
        and calls_for(second, "summarize") == 1
    )
    assert len(await store.get_profile("f")) == 3
