"""Memory tools: search, remember, forget — called by an agent, scoped to the run's user."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from scripted import ScriptedChatModel

from memlane.middleware import MemoryAgentContext
from memlane.store.records import Message
from memlane.tools import memory_tools, write_note


class ToolCallingModel(ScriptedChatModel):
    """Answers with the scripted tool calls first, then with text."""

    tool_calls: list[list[dict]] = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._calls.append(list(messages))
        if self.tool_calls:
            calls = self.tool_calls.pop(0)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=calls))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])


def call(name: str, call_id: str, **args) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


async def run_tools(store, settings, user_id: str, *rounds: list[dict]) -> list[str]:
    model = ToolCallingModel(tool_calls=[list(r) for r in rounds])
    agent = create_agent(model, tools=memory_tools(store, settings), context_schema=MemoryAgentContext)
    result = await agent.ainvoke(
        {"messages": [HumanMessage("go")]}, context=MemoryAgentContext(user_id=user_id, session_id="s")
    )
    return [m.content for m in result["messages"] if m.type == "tool"]


async def test_remember_search_and_forget(store, settings):
    outputs = await run_tools(
        store,
        settings,
        "u",
        [call("remember", "1", text="drinks black coffee without sugar", topic="diet", subtopic="coffee")],
        [call("remember", "2", text="Her cat is called Miso")],
        [call("search_memories", "3", query="coffee"), call("search_memories", "4", query="cat name")],
    )
    assert outputs[0].startswith("remembered as profile diet / coffee")
    assert [e.content for e in await store.get_profile("u")] == ["drinks black coffee without sugar"]
    events = await store.list_events("u")
    assert [e.summary for e in events] == ["Her cat is called Miso"] and events[0].tags == ["remembered"]
    assert "black coffee" in outputs[2].splitlines()[0] and "Miso" in outputs[3].splitlines()[0]

    profile_id = outputs[2].splitlines()[0].split("]")[0].lstrip("[")
    cat_id = outputs[3].splitlines()[0].split("]")[0].lstrip("[")
    outputs = await run_tools(
        store,
        settings,
        "u",
        [call("forget", "5", what=profile_id), call("forget", "6", what=f"[{cat_id}]")],
        [call("forget", "7", what="[event:nope]")],
    )
    assert (
        outputs[:2] == [f"forgot [{profile_id}]", f"forgot [{cat_id}]"]
        and outputs[2] == "no memory [event:nope] to forget"
    )
    assert await store.get_profile("u") == []
    assert await store.search_memories("u", "cat Miso coffee") == []


async def test_tools_cannot_reach_another_user(store, settings):
    await run_tools(store, settings, "alice", [call("remember", "1", text="alice secret: loves opera")])
    outputs = await run_tools(store, settings, "bob", [call("search_memories", "1", query="opera")])
    assert outputs == ["no memories found"]


async def test_search_tool_understands_time_words_and_shows_speakers(store, settings):
    import time

    day = 86_400.0
    await store.add_messages(
        [
            Message(
                id="a",
                user_id="u",
                session_id="s1",
                role="user",
                content="I cooked a mushroom risotto",
                created_at=time.time() - 9 * day,
            ),
            Message(
                id="b",
                user_id="u",
                session_id="s2",
                role="user",
                content="I cooked a lentil curry",
                created_at=time.time() - day,
            ),
            Message(
                id="c",
                user_id="u",
                session_id="g",
                role="user",
                name="Bea",
                content="I cooked pancakes",
                created_at=time.time() - 3 * day,
            ),
        ]
    )
    outputs = await run_tools(
        store,
        settings,
        "u",
        [
            call("search_memories", "1", query="what did I cook yesterday?"),
            call("search_memories", "2", query="昨天做的菜"),
        ],
    )
    for output in outputs:
        assert "lentil curry" in output.splitlines()[0], output
    assert any(line.endswith("Bea: I cooked pancakes") for line in outputs[0].splitlines())


async def test_forget_takes_what_to_forget_in_words(store, settings):
    await store.add_messages(
        [
            Message(id="a", user_id="u", session_id="s", role="user", content="I'm allergic to peanuts."),
            Message(id="b", user_id="u", session_id="s", role="user", content="我对花生过敏，但是喜欢喝豆浆。"),
            Message(id="c", user_id="u", session_id="s", role="user", content="My cat Miso sleeps all day."),
        ]
    )
    await run_tools(
        store, settings, "u", [call("remember", "1", text="allergic to peanuts", topic="health", subtopic="allergy")]
    )
    outputs = await run_tools(
        store,
        settings,
        "u",
        [call("forget", "2", what="what I said about peanuts")],
        [call("forget", "3", what="关于花生的事")],
    )
    assert outputs[0].startswith("forgot ") and "profile entry" in outputs[0] and "message" in outputs[0]
    assert outputs[1].startswith("forgot ") and "1 message (1 rewritten)" in outputs[1]
    contents = [m.content for m in await store.recent_messages("u", "s")]
    assert contents == ["喜欢喝豆浆。", "My cat Miso sleeps all day."]
    assert await store.get_profile("u") == []
    outputs = await run_tools(
        store, settings, "u", [call("forget", "4", what="[message:c]")], [call("forget", "5", what="quantum physics")]
    )
    assert outputs == ["forgot [message:c]", "nothing stored matched 'quantum physics'"]
    assert [m.content for m in await store.recent_messages("u", "s")] == ["喜欢喝豆浆。"]


async def test_remember_now_tool_runs_the_memory_graph_when_a_scheduler_is_given(store, settings):
    import asyncio

    from memory_graph_helpers import memory_rules

    from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler

    assert [tool.name for tool in memory_tools(store, settings)] == ["search_memories", "remember", "forget"]
    await store.add_messages(
        [Message(id="a", user_id="u", session_id="s", role="user", content="顺便，我喜欢黑咖啡，不加糖。")]
    )
    context = MemoryContext(store=store, llm=ScriptedChatModel(rules=memory_rules()), **settings.parts(*CONTEXT_PARTS))
    async with MemoryScheduler(context, docket_url=f"memory://{settings.key_prefix}") as scheduler:
        tools = memory_tools(store, settings, scheduler=scheduler)
        assert [tool.name for tool in tools] == ["search_memories", "remember", "forget", "remember_now"]
        model = ToolCallingModel(tool_calls=[[call("remember_now", "1")]])
        agent = create_agent(model, tools=tools, context_schema=MemoryAgentContext)
        result = await agent.ainvoke(
            {"messages": [HumanMessage("go")]}, context=MemoryAgentContext(user_id="u", session_id="s")
        )
        assert [m.content for m in result["messages"] if m.type == "tool"][0].startswith("remembering")
        await scheduler.wait_idle(20)
    assert any("黑咖啡" in entry.content for entry in await store.get_profile("u"))
    assert await store.unprocessed_messages("u") == []


async def test_forget_has_the_memory_model_confirm_what_it_finds_by_meaning(store, settings):
    import json
    import re

    from memlane.testing import ScriptedChatModel as MemoryModel
    from memlane.testing import answer_from

    def confirm(prompt: str) -> str:  # the model names the clause about the pet, not the neighbour's cat
        shown = dict(
            (sentence, int(number)) for number, sentence in re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        )
        return json.dumps({"sentences": [shown["我养了一只狗，"]]})

    memory_model = MemoryModel(rules=[("confirm_forget", answer_from(confirm))])
    await store.add_messages(
        [
            Message(id="a", user_id="u", session_id="s", role="user", content="我养了一只狗，叫旺财。我教数学。"),
            Message(id="b", user_id="u", session_id="s", role="user", content="我邻居家养了一只猫。"),
        ]
    )
    model = ToolCallingModel(tool_calls=[[call("forget", "1", what="忘掉我的宠物")]])
    tools = memory_tools(store, settings, memory_model=memory_model)
    agent = create_agent(model, tools=tools, context_schema=MemoryAgentContext)
    await agent.ainvoke({"messages": [HumanMessage("go")]}, context=MemoryAgentContext(user_id="u", session_id="s"))
    assert memory_model.prompts
    assert [m.content for m in await store.recent_messages("u", "s")] == ["我教数学。", "我邻居家养了一只猫。"]


async def test_remember_fact_keeps_one_entry_per_slot_with_its_source_and_metadata_in_history(store):
    """Issue 31, item 5, in Python: the slot's entry is replaced, never doubled; the history keeps
    what each write said it came from and the metadata it carried; a run restating it adds nothing."""
    from memlane.store.records import MemoryUpdate
    from memlane.tools import remember_fact

    first = await remember_fact(
        store, "u", "home", "city", "Lyon", source_message_ids=["m1"], metadata={"crm": 7}, actor="api:crm"
    )
    second = await remember_fact(
        store, "u", "Home", "city ", "Paris", source_message_ids=["m9"], metadata={"crm": 8}, actor="api:crm"
    )
    assert first.id == second.id and [e.content for e in await store.get_profile("u")] == ["Paris"]
    stored = (await store.get_profile("u"))[0]
    assert (stored.source_message_ids, stored.metadata) == (["m9"], {"crm": 8})
    restated = stored.model_copy(update={"source_message_ids": ["m10"]})
    await store.apply_update(
        MemoryUpdate(user_id="u", upsert_profile=[restated], actor="run:e1")
    )  # a run saying it again
    history = await store.profile_history("u", first.id)
    assert [(r.action, r.after_content, r.after_source_message_ids, r.after_metadata) for r in history] == [
        ("add", "Lyon", ["m1"], {"crm": 7}),
        ("update", "Paris", ["m9"], {"crm": 8}),
    ]


async def test_a_note_the_user_has_already_is_not_remembered_twice(store, settings):
    """Issue 31, item 6: the remember tool (and write_note under it) answers the stored note for
    the same text in other case or spacing and for a near duplicate; an update is a note of its own."""
    outputs = await run_tools(
        store,
        settings,
        "u",
        [call("remember", "1", text="I live in Lyon with my sister")],
        [call("remember", "2", text="i live in  lyon with my SISTER")],
        [call("remember", "3", text="The user lives in Lyon with the sister.")],
        [call("remember", "4", text="I moved to Paris")],
        [call("remember", "5", text="I live in Lyon with my sister")],
    )
    stored = outputs[0].removeprefix("remembered [").removesuffix("]")
    assert outputs[1] == f"not stored again: already remembered [{stored}] I live in Lyon with my sister"
    assert outputs[2].startswith("not stored again: a near duplicate (similarity 0.") and f"of [{stored}]" in outputs[2]
    assert outputs[3].startswith("remembered [") and stored not in outputs[3]
    assert outputs[4] == outputs[1]  # the very same note again is a repeat too, said so (issue 50, item 1)
    assert sorted(event.summary for event in await store.list_events("u")) == [
        "I live in Lyon with my sister",
        "I moved to Paris",
    ]
    assert (
        await write_note(store, "other", "The user lives in Lyon with the sister.", session_id="s")
    ).repeat_of is None


async def test_the_same_note_again_is_a_repeat_and_its_metadata_is_merged_never_dropped(store):
    """Issue 50, item 1: the same text noted again answered as new, and the stored metadata was
    replaced by the repeat's (none: {}); now it is a repeat, and the keys it gives are merged in."""
    first = await write_note(store, "meta", "Parking spot is B12", session_id="s", metadata={"project": "apollo"})
    assert first.repeat_of is None
    again = await write_note(store, "meta", "Parking spot is B12", session_id="s")
    assert again.repeat_of is not None and again.repeat_of.identical and again.repeat_of.memory.id == first.memory.id
    assert again.memory.metadata == {"project": "apollo"}
    merged = await write_note(
        store, "meta", "Parking spot is B12", session_id="t", metadata={"owner": "kim", "project": "gemini"}
    )
    assert merged.repeat_of is not None and merged.memory.metadata == {"project": "gemini", "owner": "kim"}
    [event] = await store.list_events("meta")
    assert event.metadata == {"project": "gemini", "owner": "kim"}
    [hit] = await store.search_memories("meta", "parking spot", limit=1)
    assert hit.memory.id == first.memory.id and hit.memory.metadata == {"project": "gemini", "owner": "kim"}


async def test_a_slot_or_note_no_door_would_store_is_refused_with_what_to_change(store):
    """The topic and subtopic rule of every door (`check_slot`: 1-64 characters of text): a tool or
    MCP caller's topic of only NUL bytes raised an unexpected error (it is cleaned, as a tool's
    texts are, and is then no topic: a note), and a topic of 5,000 characters was kept where the
    API answered 422. A note of NUL bytes is nothing to remember (it was a 500 through the API:
    blank once cleaned)."""
    import pytest

    from memlane.store.errors import InvalidInput
    from memlane.tools import answer_remember

    with pytest.raises(InvalidInput, match="at most 64"):
        await answer_remember(store, "slots", "black coffee", topic="t" * 65, subtopic="coffee", session_id="s")
    assert (await answer_remember(store, "slots", "oolong", topic="\x00", subtopic="tea", session_id="s")).startswith(
        "remembered [event:"
    )
    assert (
        await answer_remember(store, "slots", "\x00 \x00", session_id="s") == "nothing to remember: the text is empty"
    )
    with pytest.raises(InvalidInput, match="only spaces or NUL bytes"):
        await write_note(store, "slots", "\x00", session_id="s")
    assert (
        await answer_remember(store, "slots", "black coffee", topic="t" * 64, subtopic="coffee", session_id="s")
    ).startswith("remembered as profile")
    assert [entry.topic for entry in await store.get_profile("slots")] == ["t" * 64]
    assert [event.summary for event in await store.list_events("slots")] == ["oolong"]
