"""Wiring of the memory graph.

    truncate → summarize ─┬─ (empty summary) ─────────────────────────────────→ persist
                          ├─ extract → merge → organize → resummarize ─┐
                          └─ tag ───────────────────────────────────────┴→ persist

Each node adapts the state to one step function of `memlane.nodes`; the store and the
model come from the runtime context, so `graph.ainvoke(input, context=MemoryContext(...))`
runs it standalone and a parent graph with the same context schema can embed it.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from memlane.graph.state import MemoryInput, MemoryOutput, MemoryState
from memlane.nodes.context import MemoryContext
from memlane.nodes.extract import extract_facts, hold_unsure
from memlane.nodes.llm import ModelCaller, Step
from memlane.nodes.merge import merge_facts
from memlane.nodes.organize import organize_profile
from memlane.nodes.persist import build_update, persist_run
from memlane.nodes.relations import record_window_relations
from memlane.nodes.resummarize import resummarize_entries
from memlane.nodes.summarize import summarize_chat
from memlane.nodes.tag import tag_event
from memlane.nodes.truncate import truncate_chat
from memlane.store.relations import RelationStore
from memlane.store.text.trivial import is_trivial

Update = dict[str, Any]


def _caller(runtime: Runtime[MemoryContext], step: Step) -> ModelCaller:
    return runtime.context.caller(step)


async def truncate(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    context = runtime.context
    chat = truncate_chat(state["messages"], context.graph.max_input_tokens, context.store_part.token_encoding)
    return {"chat": chat}


async def summarize(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    profile = await runtime.context.store.get_profile(state["user_id"])
    if all(is_trivial(message.content) for message in state["chat"] if message.role != "assistant"):
        # greetings, thanks and "ok" only (store/text/trivial.py): nothing to keep, no model asked
        return {"profile": profile, "working_profile": profile, "summary": ""}
    caller = _caller(runtime, Step.SUMMARIZE)
    summary = await summarize_chat(state["chat"], profile, runtime.context.profile_config_of(state["user_id"]), caller)
    return {"profile": profile, "working_profile": profile, "summary": summary, **caller.usage.as_update()}


def route_after_summary(state: MemoryState) -> str | list[str]:
    """An empty summary skips straight to persist, which only moves the cursor."""
    if not state.get("summary"):
        return "persist"
    return ["extract", "tag"]


async def extract(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    caller = _caller(runtime, Step.EXTRACT)
    facts, notes = await extract_facts(
        state["chat"], state["summary"], state["profile"], runtime.context.profile_config_of(state["user_id"]), caller
    )
    facts, held = hold_unsure(facts, runtime.context.graph.min_confidence)
    if held:
        notes = [*notes, f"extract: held {len(held)} facts under memory_min_confidence for review"]
    return {"facts": facts, "held_facts": held, "notes": notes, **caller.usage.as_update()}


async def merge(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    caller = _caller(runtime, Step.MERGE)
    merged, notes = await merge_facts(
        state["facts"], state["profile"], state["user_id"], runtime.context.profile_config_of(state["user_id"]), caller
    )
    return {"working_profile": merged, "notes": notes, **caller.usage.as_update()}


async def organize(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    caller = _caller(runtime, Step.ORGANIZE)
    profile_config = runtime.context.profile_config_of(state["user_id"])
    organized, notes = await organize_profile(
        state["working_profile"],
        profile_config.max_subtopics_per_topic,
        caller,
        open_topics=[topic.name for topic in profile_config.topics if topic.open_subtopics],
    )
    return {"working_profile": organized, "notes": notes, **caller.usage.as_update()}


async def resummarize(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    caller = _caller(runtime, Step.RESUMMARIZE)
    shortened, notes = await resummarize_entries(
        state["working_profile"],
        runtime.context.profile_config_of(state["user_id"]).max_tokens_per_entry,
        caller,
        runtime.context.store_part.token_encoding,
    )
    return {"working_profile": shortened, "notes": notes, **caller.usage.as_update()}


async def tag(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    graph = runtime.context.graph
    caller = _caller(runtime, Step.TAG)
    tags, notes = await tag_event(state["summary"], graph.max_tags, graph.tag_max_chars, caller)
    return {"tags": tags, "notes": notes, **caller.usage.as_update()}


async def persist(state: MemoryState, runtime: Runtime[MemoryContext]) -> Update:
    summary = state.get("summary", "")
    notes = list(state.get("notes", []))
    store = runtime.context.store
    model_calls, prompt_tokens = state.get("model_calls", 0), state.get("prompt_tokens", 0)
    graph = runtime.context.graph
    if graph.extract_relations and isinstance(store, RelationStore):  # before the cursor moves
        caller = _caller(runtime, Step.RELATIONS) if graph.relations_model else None
        notes += await record_window_relations(store, state["user_id"], state["messages"], caller)
        if caller is not None:
            model_calls, prompt_tokens = (
                model_calls + caller.usage.model_calls,
                prompt_tokens + caller.usage.prompt_tokens,
            )
    update, changes = build_update(
        state["user_id"],
        state["messages"],
        state.get("chat", []),
        summary,
        state.get("tags", []),
        state.get("profile", []),
        state.get("working_profile", []),
        held=state.get("held_facts", []),
    )
    result = await persist_run(runtime.context.store, update, changes)
    result = result.model_copy(
        update={
            "message_count": len(state["messages"]),
            "model_calls": model_calls,
            "prompt_tokens": prompt_tokens,
            "notes": notes,
            "skipped_reason": None if summary else "the chat says nothing to remember about the user",
        }
    )
    return {"result": result}


def build_memory_graph() -> StateGraph[MemoryState, MemoryContext, MemoryInput, MemoryOutput]:
    """The memory graph, uncompiled: add it to a parent graph or compile it."""
    builder = StateGraph(
        MemoryState, context_schema=MemoryContext, input_schema=MemoryInput, output_schema=MemoryOutput
    )
    builder.add_node("truncate", truncate)
    builder.add_node("summarize", summarize)
    builder.add_node("extract", extract)
    builder.add_node("merge", merge)
    builder.add_node("organize", organize)
    builder.add_node("resummarize", resummarize)
    builder.add_node("tag", tag)
    builder.add_node("persist", persist)
    builder.add_edge(START, "truncate")
    builder.add_edge("truncate", "summarize")
    builder.add_conditional_edges("summarize", route_after_summary, ["persist", "extract", "tag"])
    builder.add_edge("extract", "merge")
    builder.add_edge("merge", "organize")
    builder.add_edge("organize", "resummarize")
    builder.add_edge(["resummarize", "tag"], "persist")
    builder.add_edge("persist", END)
    return builder


def compile_memory_graph(
    checkpointer: Checkpointer = None, **compile_options: Any
) -> CompiledStateGraph[MemoryState, MemoryContext, MemoryInput, MemoryOutput]:
    """The memory graph compiled; `compile_options` go to `StateGraph.compile` (e.g. interrupt_before)."""
    return build_memory_graph().compile(checkpointer=checkpointer, name="memory_graph", **compile_options)
