"""The scheduler of background runs (graph/scheduler.py): the policy, per-user serialization,
follow-ups, failures."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from memory_graph_helpers import (  # noqa: F401  (pytest fixtures)
    CHINESE_CHAT,
    SlowScriptedChatModel,
    add_chat,
    calls_for,
    make_context,
    memory_rules,
    profile_config,
)
from redis.exceptions import ConnectionError as RedisConnectionError

from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryRunResult, MemoryScheduler
from memlane.nodes.llm import ModelCallFailed
from memlane.nodes.parsing import ParseFailed
from memlane.store.redis.store import STORE_PARTS
from memlane.store.text.tokens import count_tokens


@pytest.fixture
def outcomes():
    return []


@pytest.fixture
def scheduler_for(make_context, outcomes):
    def make(model, **setting_overrides) -> MemoryScheduler:
        async def on_result(user_id, outcome):
            outcomes.append((user_id, outcome, time.perf_counter()))

        return MemoryScheduler(make_context(model, **setting_overrides), on_result=on_result)

    return make


def slow_model(delay: float = 0.05, **answers) -> SlowScriptedChatModel:
    return SlowScriptedChatModel(rules=memory_rules(**answers), delay=delay)


async def test_below_threshold_nothing_is_queued(store, scheduler_for):
    model = slow_model()
    async with scheduler_for(model, memory_buffer_tokens=10_000) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u") is False
        assert scheduler.last_decision("u").reason == "below_threshold"
        await scheduler.wait_idle(5)
    assert model.calls == [] and await store.get_cursor("u") == 0


async def test_threshold_session_end_and_flush_queue_a_run(store, scheduler_for, outcomes):
    threshold = count_tokens(CHINESE_CHAT[0][2]) + 1
    async with scheduler_for(slow_model(delay=0), memory_buffer_tokens=threshold) as scheduler:
        stored = await add_chat(store, "u", CHINESE_CHAT[:1])
        assert await scheduler.notify("u") is False  # one token short
        stored += await add_chat(store, "u", CHINESE_CHAT[1:], start=1)
        assert await scheduler.notify("u") is True
        assert scheduler.last_decision("u").reason == "threshold"
        await scheduler.wait_idle(10)
        result = scheduler.last_result("u")
        assert isinstance(result, MemoryRunResult) and len(result.added) == 3
        assert [user for user, _, _ in outcomes] == ["u"]

        await add_chat(store, "u", [("user", None, "bye")], start=10)
        assert await scheduler.notify("u", session_ended=True) is True
        await scheduler.wait_idle(10)
        await add_chat(store, "u", [("user", None, "one more")], start=11)
        assert await scheduler.notify("u", flush=True) is True
        await scheduler.wait_idle(10)
    assert await store.unprocessed_messages("u") == []
    assert len(outcomes) == 3


async def test_notifying_twice_about_one_buffer_queues_one_run(store, scheduler_for, outcomes):
    model = slow_model()
    async with scheduler_for(model) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True) is True
        assert await scheduler.notify("u", flush=True) is True  # folded into the queued run
        await scheduler.wait_idle(10)
    assert calls_for(model, "summarize") == 1 and len(outcomes) == 1


async def test_two_runs_for_one_user_are_serialized(store, scheduler_for, outcomes):
    model = slow_model()
    async with scheduler_for(model) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.enqueue("u") and await scheduler.enqueue("u")
        await scheduler.wait_idle(10)

    first, second = (outcome for _, outcome, _ in outcomes)
    # had they overlapped, both would have read the same buffer and asked the model twice
    assert calls_for(model, "summarize") == 1
    assert first.event_id and second.skipped_reason == "no unprocessed messages"
    assert len(await store.list_events("u")) == 1 and len(await store.get_profile("u")) == 3


async def test_runs_for_different_users_go_in_parallel(store, scheduler_for, outcomes):
    summarize_started: list[float] = []

    def summarize(messages) -> str:
        summarize_started.append(time.perf_counter())
        return '{"summary": "用户最近熬夜加班，喜欢黑咖啡。"}'

    model = slow_model(delay=0.3)
    model.rules[0] = ("summarize", summarize)
    async with scheduler_for(model) as scheduler:
        for user in ("a", "b"):
            await add_chat(store, user, CHINESE_CHAT, session_id=f"s-{user}")
        assert await scheduler.notify("a", flush=True) and await scheduler.notify("b", flush=True)
        await scheduler.wait_idle(30)

    assert {user for user, _, _ in outcomes} == {"a", "b"}
    # the second user's run started before the first one's ended
    assert len(summarize_started) == 2 and max(summarize_started) < min(done for _, _, done in outcomes)
    for user in ("a", "b"):
        assert len(await store.get_profile(user)) == 3


async def test_messages_arriving_during_a_run_get_a_follow_up_run(store, scheduler_for, outcomes):
    model = slow_model(delay=0.1)
    async with scheduler_for(model) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True)
        while not model.calls:  # the first run has started
            await asyncio.sleep(0.01)
        late = await add_chat(store, "u", [("user", None, "我还喜欢跑步。")], start=10)
        assert await scheduler.notify("u", flush=True) is True
        await scheduler.wait_idle(20)

    assert len(outcomes) == 2 and all(isinstance(outcome, MemoryRunResult) for _, outcome, _ in outcomes)
    assert await store.get_cursor("u") == late[-1].seq
    assert len(await store.list_events("u")) == 2


async def test_a_failed_run_is_reported_and_its_buffer_waits(store, scheduler_for, outcomes):
    model = slow_model(delay=0, summary="")
    model.rules[0] = ("summarize", "")  # an empty answer: summarize fails
    async with scheduler_for(model) as scheduler:
        stored = await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True)
        await scheduler.wait_idle(10)
        assert isinstance(scheduler.last_result("u"), ParseFailed)
        assert isinstance(outcomes[-1][1], ParseFailed)
        assert await store.get_cursor("u") == 0

        model.rules[0] = ("summarize", '{"summary": "用户喜欢黑咖啡。"}')
        assert await scheduler.notify("u", flush=True) is True  # the same buffer can be queued again
        await scheduler.wait_idle(10)
    assert isinstance(scheduler.last_result("u"), MemoryRunResult)
    assert await store.get_cursor("u") == stored[-1].seq


async def test_session_summary_hook(store, scheduler_for):
    model = slow_model(delay=0)
    model.rules.insert(0, ("session_summary", '{"summary": "用户最近熬夜、加班，喜欢黑咖啡。"}'))
    async with scheduler_for(model) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.update_session_summary("u", "s1")
        await scheduler.wait_idle(10)
    assert (await store.get_session_summary("u", "s1")).summary == "用户最近熬夜、加班，喜欢黑咖啡。"


async def test_notify_before_start_says_what_to_do(make_context):
    scheduler = MemoryScheduler(make_context(slow_model()))
    with pytest.raises(RuntimeError, match="async with MemoryScheduler"):
        await scheduler.notify("u")


def fail_next_add(scheduler: MemoryScheduler, monkeypatch) -> list[str]:
    """Make the scheduler's queue fail its next add the way a Redis that went away would;
    returns what it failed to queue ("run" or "session summary")."""
    queue = scheduler.queue
    failed: list[str] = []

    def failing_once(add, what):
        async def call(*args, **kwargs):
            if not failed:
                failed.append(what)
                raise RedisConnectionError("Connection reset by peer")
            return await add(*args, **kwargs)

        return call

    monkeypatch.setattr(queue, "add_run", failing_once(queue.add_run, "run"))
    monkeypatch.setattr(queue, "add_session_summary", failing_once(queue.add_session_summary, "session summary"))
    return failed


async def test_a_failed_queueing_call_leaves_the_user_free_for_the_next_run(
    store, scheduler_for, outcomes, monkeypatch
):
    async with scheduler_for(slow_model(delay=0)) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        failed = fail_next_add(scheduler, monkeypatch)
        with pytest.raises(RedisConnectionError):
            await scheduler.notify("u", flush=True)
        assert failed == ["run"]
        assert not scheduler.is_busy("u")
        await scheduler.wait_idle(5)  # nothing is queued: idle at once

        # the next notify queues the same buffer, and the run learns from it
        assert await scheduler.notify("u", flush=True) is True
        await scheduler.wait_idle(10)
        assert not scheduler.is_busy("u")
    assert [type(outcome) for _, outcome, _ in outcomes] == [MemoryRunResult]
    assert len(await store.get_profile("u")) == 3


async def test_a_failed_session_summary_call_leaves_the_scheduler_idle(store, scheduler_for, monkeypatch):
    model = slow_model(delay=0)
    model.rules.insert(0, ("session_summary", '{"summary": "用户喜欢黑咖啡。"}'))
    async with scheduler_for(model) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        failed = fail_next_add(scheduler, monkeypatch)
        with pytest.raises(RedisConnectionError):
            await scheduler.update_session_summary("u", "s1")
        assert failed == ["session summary"]
        await scheduler.wait_idle(5)
        assert await scheduler.update_session_summary("u", "s1") is True
        await scheduler.wait_idle(10)
    assert (await store.get_session_summary("u", "s1")).summary == "用户喜欢黑咖啡。"


CRASHING_WORKER = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from scripted import ScriptedChatModel
from memlane.config import Settings
from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler
from memlane.store.redis.store import open_store


class HangingModel(ScriptedChatModel):
    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        print("run started", flush=True)
        await asyncio.sleep(3600)


async def main():
    settings = Settings(
        redis_url={url!r}, key_prefix={prefix!r}, llm_timeout_seconds=3600, llm_max_retries=0,
        memory_run_expected_seconds={expected!r},
    )
    store = await open_store(settings)
    async with MemoryScheduler(MemoryContext(store=store, llm=HangingModel(), **settings.parts(*CONTEXT_PARTS))) as scheduler:
        await scheduler.notify("u", flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_a_run_whose_worker_crashed_is_delivered_again_after_the_expected_run_length(
    store, settings, scheduler_for, outcomes
):
    await add_chat(store, "u", CHINESE_CHAT)
    script = CRASHING_WORKER.format(
        tests=str(Path(__file__).parents[1]), url=settings.redis_url, prefix=settings.key_prefix, expected=1.0
    )
    crashing = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        async with asyncio.timeout(60):
            line = await crashing.stdout.readline()
        assert line.strip() == b"run started", (await crashing.stderr.read()).decode()[-2000:]
    finally:
        crashing.kill()  # SIGKILL: the worker dies holding the run and its per-user slot
        await crashing.wait()

    # a worker of the same deployment takes the run over once the dead one's lease is older
    # than memory_run_expected_seconds (pydocket's default would make it wait 5 minutes)
    async with scheduler_for(slow_model(delay=0), memory_run_expected_seconds=1.0):
        async with asyncio.timeout(60):
            while not outcomes:
                await asyncio.sleep(0.1)
    assert isinstance(outcomes[0][1], MemoryRunResult) and outcomes[0][1].event_id
    assert len(await store.get_profile("u")) == 3 and await store.unprocessed_messages("u") == []


# -- retried, then parked -----------------------------------------------------------------


def failing_summarize(model: SlowScriptedChatModel, started: list[float]) -> None:
    """Make the model's summarize fail (a provider error), noting when each call came."""

    def summarize(messages):
        started.append(time.perf_counter())
        return ConnectionError("the model endpoint refused the connection")

    model.rules[0] = ("summarize", summarize)


async def test_a_failing_run_is_retried_with_backoff_then_parked_and_retrying_it_processes_the_buffer(
    store, scheduler_for, outcomes
):
    started: list[float] = []
    model = slow_model(delay=0)
    failing_summarize(model, started)
    async with scheduler_for(model, memory_run_retries=2, memory_run_retry_delay_seconds=0.1) as scheduler:
        stored = await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True)
        await scheduler.wait_idle(20)  # not idle while a retry waits

        assert len(started) == 3  # the run and two retries
        first_gap, second_gap = started[1] - started[0], started[2] - started[1]
        assert first_gap >= 0.1 and second_gap >= 0.2  # the delay doubles
        assert len(outcomes) == 1 and isinstance(outcomes[0][1], ModelCallFailed)  # reported once, at the end
        assert isinstance(scheduler.last_result("u"), ModelCallFailed) and not scheduler.is_busy("u")
        [parked] = await store.parked_runs("u")
        assert parked.user_id == "u" and parked.attempts == 3
        assert parked.error.startswith("ModelCallFailed: summarize: the model call failed (ConnectionError")
        assert parked.first_failed_at <= parked.last_failed_at
        assert await store.get_cursor("u") == 0  # the buffer waits

        model.rules[0] = ("summarize", '{"summary": "用户喜欢黑咖啡。"}')  # the model is back
        assert [run.id for run in await scheduler.retry_parked()] == [parked.id]
        assert await store.parked_runs() == []
        await scheduler.wait_idle(10)
    assert isinstance(outcomes[-1][1], MemoryRunResult) and outcomes[-1][1].event_id
    assert await store.get_cursor("u") == stored[-1].seq and len(await store.get_profile("u")) == 3


async def test_a_run_that_succeeds_resolves_the_users_parked_runs(store, scheduler_for, outcomes):
    started: list[float] = []
    model = slow_model(delay=0)
    failing_summarize(model, started)
    async with scheduler_for(model, memory_run_retries=0) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        await add_chat(store, "other", CHINESE_CHAT, session_id="s-other")
        for user in ("u", "other"):
            assert await scheduler.notify(user, flush=True)
        await scheduler.wait_idle(10)
        assert {run.user_id for run in await store.parked_runs()} == {"u", "other"}

        model.rules[0] = ("summarize", '{"summary": "用户喜欢黑咖啡。"}')
        assert await scheduler.notify("u", flush=True)  # the user's next run ("Remember now", a message)
        await scheduler.wait_idle(10)
    assert [run.user_id for run in await store.parked_runs()] == ["other"]  # the other user's stays


async def test_a_run_the_open_breaker_refuses_waits_for_the_breaker_before_its_retry(store, scheduler_for, outcomes):
    started: list[float] = []
    model = slow_model(delay=0)

    def summarize_once_down(messages):
        started.append(time.perf_counter())
        if len(started) == 1:
            return ConnectionError("down")
        return '{"summary": "用户喜欢黑咖啡。"}'

    model.rules[0] = ("summarize", summarize_once_down)
    settings = dict(circuit_failure_threshold=1, circuit_reset_seconds=0.5, memory_run_retry_delay_seconds=0.01)
    async with scheduler_for(model, **settings) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT)
        assert await scheduler.notify("u", flush=True)
        await scheduler.wait_idle(20)
    # the first failure opened the breaker: the retry came after it half-opened, not after 0.01 s
    assert len(started) == 2 and started[1] - started[0] >= 0.5
    assert [type(outcome) for _, outcome, _ in outcomes] == [MemoryRunResult]
    assert scheduler.context.model_breaker.state == "closed" and await store.parked_runs() == []


# -- idle flush ---------------------------------------------------------------------------


async def test_one_short_fact_below_the_threshold_is_processed_after_the_idle_time(store, scheduler_for, outcomes):
    model = slow_model(delay=0)
    async with scheduler_for(model, memory_buffer_tokens=10_000, memory_idle_flush_seconds=0.6) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT[3:])
        assert await scheduler.notify("u") is False  # below the threshold
        await asyncio.sleep(0.3)
        late = await add_chat(store, "u", [("user", None, "我还喜欢跑步。")], start=10)
        assert await scheduler.notify("u") is False  # the idle clock starts again
        last_message_at = time.perf_counter()
        async with asyncio.timeout(20):
            while not outcomes:
                await asyncio.sleep(0.05)
        await scheduler.wait_idle(10)
        await asyncio.sleep(1.0)  # the first message's flush was replaced: no second run comes
    assert len(outcomes) == 1 and isinstance(outcomes[0][1], MemoryRunResult)
    assert outcomes[0][2] - last_message_at >= 0.6  # counted from the last message, not the first
    assert await store.get_cursor("u") == late[-1].seq and await store.get_profile("u")


async def test_no_idle_flush_when_it_is_switched_off(store, scheduler_for, outcomes):
    async with scheduler_for(
        slow_model(delay=0), memory_buffer_tokens=10_000, memory_idle_flush_seconds=0
    ) as scheduler:
        await add_chat(store, "u", CHINESE_CHAT[3:])
        assert await scheduler.notify("u") is False
        await asyncio.sleep(0.5)
    assert outcomes == [] and await store.get_cursor("u") == 0


# -- where runs queue ---------------------------------------------------------------------


async def test_runs_queue_in_the_stores_redis_by_default(settings, embeddings):
    from memlane.store.redis.store import open_store

    store = await open_store(settings, embeddings=embeddings)
    try:
        embedded_defaults = settings.model_copy(update={"redis_url": None, "memory_docket_url": None})
        context = MemoryContext(
            store=store,
            llm=slow_model(),
            **embedded_defaults.parts(*CONTEXT_PARTS),
            store_settings=embedded_defaults.store,
        )
        assert store.url == settings.redis_url
        assert MemoryScheduler(context).docket_url == store.url
        assert MemoryScheduler(context, docket_url="memory://mine").docket_url == "memory://mine"
        asked = embedded_defaults.model_copy(update={"memory_docket_url": "memory://asked"})
        assert (
            MemoryScheduler(
                MemoryContext(store=store, llm=slow_model(), **asked.parts(*CONTEXT_PARTS), store_settings=asked.store)
            ).docket_url
            == "memory://asked"
        )
        store.url = None  # a store built on a client, not by open_store: no Redis URL to share
        assert MemoryScheduler(context).docket_url == f"memory://{settings.key_prefix}-memory-graph"
    finally:
        await store.aclose()


async def test_a_failed_runs_model_key_is_nowhere_in_redis_whatever_its_shape(store, make_context, settings):
    """Issue 34, item 8: the model's error echoes its key ("memkey_…", not "sk-…"); neither the
    queue's run records nor its stored results nor the parked run keep it, retried or parked."""
    import uuid

    from conftest import redis_contents
    from fake_upstream import FakeUpstream
    from langchain_openai import ChatOpenAI

    key = "memkey_" + uuid.uuid4().hex  # a model given as it is: no setting and no api_key_env names it
    with FakeUpstream(status=500) as upstream:  # its error names the key it got, as real servers do
        model = ChatOpenAI(model="m", base_url=upstream.url, api_key=key, max_retries=0, timeout=5)
        context = make_context(model, memory_run_retries=1, memory_run_retry_delay_seconds=0.1)
        async with MemoryScheduler(context) as scheduler:
            await add_chat(store, "u", CHINESE_CHAT)
            assert await scheduler.notify("u", flush=True)
            await scheduler.wait_idle(20)
        assert any(key in str(headers) for headers in upstream.headers)
    [parked] = await store.parked_runs("u")
    assert "told to fail" in parked.error and key not in parked.error and parked.attempts == 2
    contents = redis_contents(settings.redis_url)
    runs = [name for name, value in contents.items() if ":runs:" in name and "told to fail" in value]
    assert runs and all("****" in contents[name] for name in runs), runs  # the queue's record, masked
    assert [name for name, value in contents.items() if key in value] == []


async def test_a_follow_up_held_back_by_a_lost_run_is_taken_up(store, scheduler_for, outcomes, monkeypatch):
    """Issue 34, item 13: a run noted in Redis whose queue record was lost (Redis killed between
    the note and the add) made the user look busy, and the follow-up it held back was never
    taken: the user's turns stayed unremembered. A check after the grace period takes it up."""
    from memlane.graph import scheduler as scheduler_module

    monkeypatch.setattr(scheduler_module, "_NOTED_GRACE_SECONDS", 2.0)
    model = slow_model(delay=0)
    async with scheduler_for(model) as scheduler:
        stored = await add_chat(store, "u", CHINESE_CHAT)
        await scheduler.queue.note_run("u", "memlane-run:u:lost", time.time())  # a lost run: noted, never added
        assert await scheduler.notify("u", flush=True) is True  # held back behind the lost run
        assert await store.get_cursor("u") == 0
        deadline = time.monotonic() + 20
        while await store.get_cursor("u") != stored[-1].seq and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        await scheduler.wait_idle(10)
    assert await store.get_cursor("u") == stored[-1].seq and len(await store.list_events("u")) == 1


async def test_a_stored_message_nobody_indexed_becomes_searchable_without_its_user_coming_back(store, scheduler_for):
    """A save that gave up indexing (Redis or the embedder away past its retries) or whose entry
    a Redis crash lost leaves the message recorded as waiting, with no next save or run of its
    user to index it: the worker's sweep does, every `memory_reindex_sweep_seconds`."""
    from memlane.store.records import Message

    turn = [
        Message(id="m1", user_id="gone", session_id="s", role="user", content="I keep bees on the roof of my flat"),
        Message(id="m2", user_id="gone", session_id="s", role="assistant", content="Bees! What do they make?"),
    ]
    await store.add_messages(turn, index_later=True)  # stored and recorded as waiting; its indexing never ran
    assert await store.users_with_unindexed_messages() == ["gone"]
    assert not await store.search_memories("gone", "bees on the roof", kinds=["message"])
    async with scheduler_for(slow_model(delay=0), memory_reindex_sweep_seconds=0.3, memory_idle_flush_seconds=0):
        async with asyncio.timeout(20):
            while len(await store.search_memories("gone", "bees on the roof", kinds=["message"])) < 2:
                await asyncio.sleep(0.1)
    assert await store.users_with_unindexed_messages() == []


async def test_a_worker_sweeps_what_expiry_left_every_gc_sweep_seconds(store, settings):
    """The retention sweep is scheduled as the reindex sweep is: a worker that starts queues one,
    and each schedules the next `retention_gc_sweep_seconds` later."""
    from memlane.graph import MemoryContext
    from memlane.store.records import Message

    swept = settings.model_copy(
        update={
            "retention_message_ttl_days": 1 / 86_400,
            "retention_gc_sweep_seconds": 0.3,
            "memory_reindex_sweep_seconds": 0,
            "memory_idle_flush_seconds": 0,
        }
    )
    short = store.with_settings(**swept.parts(*STORE_PARTS))
    await short.add_messages([Message(id="m1", user_id="gone", session_id="s", role="user", content="I keep bees")])
    await asyncio.sleep(1.2)  # expired: its timeline entry and session are left for the sweep
    assert await short.list_sessions("gone") == ["s"]
    async with MemoryScheduler(MemoryContext(store=short, llm=slow_model(delay=0), **swept.parts(*CONTEXT_PARTS))):
        async with asyncio.timeout(20):
            while await short.list_sessions("gone"):
                await asyncio.sleep(0.1)
    assert await short.client.zcard(short.layout.timeline("gone")) == 0


async def test_a_scheduler_started_in_one_task_stops_in_another(store, scheduler_for, outcomes):
    """A door may start it inside a request's or a UI handler's task and stop it elsewhere:
    pydocket's worker resets on the way out the context variables it set on the way in, which
    failed (ValueError) from another context and left the docket open."""
    threshold = count_tokens(CHINESE_CHAT[0][2]) + 1
    scheduler = scheduler_for(slow_model(delay=0), memory_buffer_tokens=threshold)
    await asyncio.create_task(scheduler.__aenter__())  # started in a task that has ended since
    await add_chat(store, "u", CHINESE_CHAT)
    assert await scheduler.notify("u") is True
    await scheduler.wait_idle(10)
    worker = scheduler.queue._worker_task
    await scheduler.__aexit__(None, None, None)
    assert worker is not None and worker.done() and not worker.cancelled()
    assert [user for user, _, _ in outcomes] == ["u"]
