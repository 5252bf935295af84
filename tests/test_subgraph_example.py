"""The memory graph as a node of an application's own LangGraph graph, and called from a node (docs/doors/agent.md shows both;
tests/test_docs.py runs its blocks)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from memory_graph_helpers import memory_rules
from scripted import ScriptedChatModel

from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryRunResult, compile_memory_graph
from memlane.store.records import Message


async def test_memory_graph_as_a_subgraph_node(store, settings):
    class AppState(TypedDict, total=False):
        user_id: str
        messages: list[Message]  # the memory graph's input: the user's unprocessed buffer
        result: MemoryRunResult  # the memory graph's output
        report: str

    async def load_buffer(state: AppState, runtime: Runtime[MemoryContext]) -> dict:
        return {"messages": await runtime.context.store.unprocessed_messages(state["user_id"])}

    async def report(state: AppState) -> dict:
        result = state["result"]
        return {"report": f"{len(result.added)} added, {len(result.updated)} updated"}

    builder = StateGraph(AppState, context_schema=MemoryContext)
    builder.add_node("load_buffer", load_buffer)
    builder.add_node("memory", compile_memory_graph())  # shares user_id / messages / result
    builder.add_node("report", report)
    builder.add_edge(START, "load_buffer")
    builder.add_edge("load_buffer", "memory")
    builder.add_edge("memory", "report")
    builder.add_edge("report", END)
    app = builder.compile()

    context = MemoryContext(store=store, llm=ScriptedChatModel(rules=memory_rules()), **settings.parts(*CONTEXT_PARTS))

    await store.add_messages(
        [
            Message(
                id="m1", user_id="u", session_id="s", role="user", content="我最近总是凌晨 2 点才睡，白天困得不行。"
            ),
            Message(id="m2", user_id="u", session_id="s", role="user", content="顺便，我喜欢黑咖啡，不加糖。"),
        ]
    )
    output = await app.ainvoke({"user_id": "u"}, context=context)
    assert output["report"].startswith(f"{len(output['result'].added)} added") and output["result"].added
    assert await store.get_profile("u") and await store.unprocessed_messages("u") == []


async def test_memory_graph_called_from_a_node(store, settings):
    memory_graph = compile_memory_graph()

    class ChatState(TypedDict, total=False):
        user_id: str
        learned: list[str]

    async def remember(state: ChatState, runtime: Runtime[MemoryContext]) -> dict:
        buffer = await runtime.context.store.unprocessed_messages(state["user_id"])
        if not buffer:
            return {"learned": []}
        output = await memory_graph.ainvoke({"user_id": state["user_id"], "messages": buffer}, context=runtime.context)
        return {"learned": [change.content for change in output["result"].profile_delta]}

    app = StateGraph(ChatState, context_schema=MemoryContext).add_node(remember).add_edge(START, "remember").compile()

    await store.add_messages(
        [Message(id="m1", user_id="u", session_id="s", role="user", content="顺便，我喜欢黑咖啡，不加糖。")]
    )
    context = MemoryContext(store=store, llm=ScriptedChatModel(rules=memory_rules()), **settings.parts(*CONTEXT_PARTS))
    output = await app.ainvoke({"user_id": "u"}, context=context)
    assert any("黑咖啡" in text for text in output["learned"])
    assert (await app.ainvoke({"user_id": "u"}, context=context))["learned"] == []  # the buffer was consumed
