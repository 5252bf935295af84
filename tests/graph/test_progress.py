"""A run's progress (each step as it starts and finishes) and a run bounded to the turns before a topic shift."""

from __future__ import annotations

import asyncio

from memory_graph_helpers import (  # noqa: F401  (pytest fixtures)
    CHINESE_CHAT,
    SlowScriptedChatModel,
    add_chat,
    make_context,
    memory_rules,
    profile_config,
    scripted,
)

from memlane.graph import MemoryScheduler, MemoryStep, build_memory_graph, run_memory_graph


async def test_each_step_is_reported_as_it_starts_and_finishes(store, make_context):
    await add_chat(store, "alice", CHINESE_CHAT)
    steps: list[MemoryStep] = []

    async def on_step(step: MemoryStep) -> None:
        steps.append(step)

    result = await run_memory_graph("alice", make_context(scripted()), on_step=on_step)

    assert result.event_id and len(result.added) == 3  # the same run as without progress
    started = [step.step for step in steps if not step.finished]
    assert started[:2] == ["truncate", "summarize"] and started[-1] == "persist"
    assert set(started) == set(build_memory_graph().nodes)  # every step of the graph, each reported
    # extract and tag run side by side: both in progress at once
    assert any({"extract", "tag"} <= set(step.running) for step in steps)
    assert steps[-1].finished and steps[-1].running == () and steps[-1].done[-1] == "persist"
    assert set(steps[-1].done) == set(started)


async def test_a_failing_progress_callback_does_not_fail_the_run(store, make_context):
    await add_chat(store, "alice", CHINESE_CHAT)

    async def broken(step: MemoryStep) -> None:
        raise RuntimeError("the screen fell off")

    result = await run_memory_graph("alice", make_context(scripted()), on_step=broken)
    assert len(result.added) == 3 and await store.unprocessed_messages("alice") == []


async def test_a_bounded_run_remembers_the_turns_before_and_leaves_the_rest(store, make_context):
    earlier = await add_chat(store, "alice", CHINESE_CHAT[:3])
    later = await add_chat(store, "alice", CHINESE_CHAT[3:], start=3)
    model = scripted()

    result = await run_memory_graph("alice", make_context(model), through_seq=earlier[-1].seq)

    assert result.processed_through_seq == earlier[-1].seq == await store.get_cursor("alice")
    assert [message.id for message in await store.unprocessed_messages("alice")] == [message.id for message in later]
    (event,) = await store.list_events("alice")
    assert event.source_message_ids == [message.id for message in earlier]
    assert all(CHINESE_CHAT[3][2] not in prompt for prompt in model.prompts)  # never shown to the model


async def test_the_scheduler_runs_a_bounded_flush_and_reports_its_steps(store, make_context):
    earlier = await add_chat(store, "alice", CHINESE_CHAT[:3])
    later = await add_chat(store, "alice", CHINESE_CHAT[3:], start=3)
    steps: list[MemoryStep] = []

    async def on_step(step: MemoryStep) -> None:
        steps.append(step)

    context = make_context(scripted(), memory_buffer_tokens=100_000)
    async with MemoryScheduler(context, on_step=on_step) as scheduler:
        assert await scheduler.notify("alice", flush=True, through_seq=earlier[-1].seq) is True
        await scheduler.wait_idle(10)
    assert await store.get_cursor("alice") == earlier[-1].seq
    assert [message.id for message in await store.unprocessed_messages("alice")] == [later[0].id]
    assert steps and steps[-1].done[-1] == "persist"


async def test_a_bound_asked_while_a_run_works_is_kept_for_its_follow_up(store, make_context):
    model = SlowScriptedChatModel(rules=memory_rules(), delay=0.2)
    context = make_context(model, memory_buffer_tokens=100_000)
    async with MemoryScheduler(context) as scheduler:
        await add_chat(store, "alice", CHINESE_CHAT[:1])
        assert await scheduler.notify("alice", flush=True) is True
        for _ in range(100):  # the run has read its buffer and waits on the model
            if model.active:
                break
            await asyncio.sleep(0.02)
        second = await add_chat(store, "alice", CHINESE_CHAT[1:3], start=1)
        third = await add_chat(store, "alice", CHINESE_CHAT[3:], start=3)
        assert await scheduler.notify("alice", flush=True, through_seq=second[-1].seq) is True  # a follow-up
        await scheduler.wait_idle(20)  # the follow-up is queued before the first run counts as ended
    assert [len(event.source_message_ids) for event in reversed(await store.list_events("alice"))] == [1, 2]
    assert await store.get_cursor("alice") == second[-1].seq
    assert [message.id for message in await store.unprocessed_messages("alice")] == [third[0].id]
