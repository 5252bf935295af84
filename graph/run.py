"""Running the memory graph over a user's unprocessed buffer."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache

from langgraph.graph.state import CompiledStateGraph

from memlane.graph.build import compile_memory_graph
from memlane.graph.state import MemoryInput, MemoryOutput, MemoryState
from memlane.nodes.context import MemoryContext
from memlane.nodes.llm import ModelCallFailed, ModelChainFailed, model_label
from memlane.nodes.persist import MemoryRunResult
from memlane.nodes.truncate import input_windows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemoryStep:
    """Progress of one run: a step (a graph node) started or finished."""

    user_id: str
    step: str
    finished: bool
    running: tuple[str, ...]  # the steps in progress after this event (extract and tag run side by side)
    done: tuple[str, ...]  # the steps finished so far, in the order they finished


StepCallback = Callable[[MemoryStep], Awaitable[None]]


@lru_cache(maxsize=1)
def _compiled_graph() -> CompiledStateGraph[MemoryState, MemoryContext, MemoryInput, MemoryOutput]:
    return compile_memory_graph()


async def run_memory_graph(
    user_id: str,
    context: MemoryContext,
    *,
    through_seq: int | None = None,
    on_step: StepCallback | None = None,
) -> MemoryRunResult:
    """Consume the user's unprocessed buffer: learn from it, persist, move the cursor, on the memory
    model or, when it fails (an error after its retries, or its breaker open), on each model of its
    fallback chain in turn (`MemoryContext.fallback_llms`, `memory_models`), each through its own
    breaker; the result says which model ran (`model`, `model_index`). What a failed model's windows
    persisted stays: the next model starts after them. When every model fails: `ModelChainFailed`
    naming each (the model's own error when there is no chain)."""
    chain = context.model_chain()
    failures: list[tuple[str, ModelCallFailed]] = []
    for index, (name, on_model) in enumerate(chain):
        try:
            result = await _run_on(user_id, on_model, through_seq=through_seq, on_step=on_step)
        except ModelCallFailed as error:
            failures.append((name, error))
            if index + 1 < len(chain):
                logger.warning(
                    "memory run for %s: model %s failed (%s); trying %s", user_id, name, error, chain[index + 1][0]
                )
            continue
        return result.model_copy(
            update={"model": name, "model_index": index, "notes": [*notes_of(failures), *result.notes]}
        )
    if len(failures) == 1:
        raise failures[0][1]
    raise ModelChainFailed(failures)


def notes_of(failures: list[tuple[str, ModelCallFailed]]) -> list[str]:
    """What a run that moved down the chain notes of the models that failed before it."""
    return [f"model {name} failed, the next was tried: {error}" for name, error in failures]


async def _run_on(
    user_id: str,
    context: MemoryContext,
    *,
    through_seq: int | None = None,
    on_step: StepCallback | None = None,
) -> MemoryRunResult:
    """Consume the user's unprocessed buffer on the context's model: learn from it, persist, move the cursor.

    A buffer larger than one run's input (`memory_max_input_tokens`) is remembered in windows,
    oldest first (`input_windows`): each window is one graph run that persists and moves the
    cursor past exactly that window, so nothing is marked processed that no run read. The
    result adds the windows' changes up; its event is the last window's.

    through_seq: consume the buffer only up to this message seq (a topic shift closes the
    earlier turns as their own event; later turns stay for the next run). on_step: awaited
    as each step starts and finishes (the app shows the step in progress); its failures are
    logged, never fail the run.

    Raises the failing step's error when a step cannot complete (model unreachable,
    unusable summary or extraction); the cursor then stays after the windows already
    remembered, so the next run retries from the first one not done.
    """
    started = time.perf_counter()
    messages = await context.store.unprocessed_messages(user_id)
    if through_seq is not None:
        messages = [message for message in messages if (message.seq or 0) <= through_seq]
    if not messages:
        return MemoryRunResult(user_id=user_id, skipped_reason="no unprocessed messages")
    if not any(message.content.strip() for message in messages):
        # blank messages teach nothing; consume them so they never block the buffer
        through = max(message.seq or 0 for message in messages)
        await context.store.advance_cursor(user_id, through)
        return MemoryRunResult(
            user_id=user_id,
            processed_through_seq=through,
            message_count=len(messages),
            skipped_reason="only blank messages",
        )
    windows = input_windows(messages, context.graph.max_input_tokens, context.store_part.token_encoding)
    results = []
    for window in windows:
        graph_input: MemoryInput = {"user_id": user_id, "messages": window}
        if on_step is None:
            output = await _compiled_graph().ainvoke(graph_input, context=context)
        else:
            output = await _stream_steps(graph_input, context, on_step)
        results.append(output["result"])
    result = combined(results)
    logger.info(
        "memory run user=%s model=%s messages=%d windows=%d duration=%.3fs model_calls=%d "
        "added=%d updated=%d deleted=%d event=%s",
        user_id,
        model_label(context.llm),
        result.message_count,
        len(windows),
        time.perf_counter() - started,
        result.model_calls,
        len(result.added),
        len(result.updated),
        len(result.deleted),
        result.event_id,
    )
    return result


def combined(results: list[MemoryRunResult]) -> MemoryRunResult:
    """One result for the windows of a run, in order: their changes added up, the last one's event."""
    if len(results) == 1:
        return results[0]
    last = results[-1]
    learned = [result for result in results if result.changed]
    return last.model_copy(
        update={
            "added": [entry for result in results for entry in result.added],
            "updated": [entry for result in results for entry in result.updated],
            "deleted": [entry for result in results for entry in result.deleted],
            "profile_delta": [change for result in results for change in result.profile_delta],
            "event_ids": [event for result in results for event in result.event_ids],
            "message_count": sum(result.message_count for result in results),
            "model_calls": sum(result.model_calls for result in results),
            "prompt_tokens": sum(result.prompt_tokens for result in results),
            "notes": [note for result in results for note in result.notes],
            "skipped_reason": None if learned else last.skipped_reason,
            "windows": len(results),
        }
    )


async def _stream_steps(graph_input: MemoryInput, context: MemoryContext, on_step: StepCallback) -> MemoryOutput:
    """Run the graph with LangGraph's "tasks" stream (an event as each node starts and
    finishes), reporting each to `on_step`; the output is the persist step's update."""
    user_id = graph_input["user_id"]
    running: dict[str, str] = {}  # task id → step
    done: list[str] = []
    output: MemoryOutput = {}
    async for event in _compiled_graph().astream(graph_input, context=context, stream_mode="tasks"):
        step = event["name"]
        finished = "result" in event or "error" in event
        if finished:
            running.pop(event["id"], None)
            done.append(step)
            if isinstance(event.get("result"), dict) and "result" in event["result"]:
                output = {"result": event["result"]["result"]}
        else:
            running[event["id"]] = step
        try:
            await on_step(MemoryStep(user_id, step, finished, tuple(running.values()), tuple(done)))
        except Exception:  # progress display only: the run goes on
            logger.exception("the step callback failed for %s at %s", user_id, step)
    if "result" not in output:
        raise RuntimeError(f"the memory graph ended for {user_id} without its persist step's result")
    return output
