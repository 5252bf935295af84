"""MemoryMiddleware with scripted streaming models: recall goes in before the model call,
the turn is stored and the memory graph runs after the reply, never in front of it."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from memory_graph_helpers import memory_rules
from scripted import ScriptedChatModel

from memlane import SHARED_USER_ID, scoped_user_id
from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler
from memlane.middleware import IndexBacklog, MemoryAgentContext, MemoryMiddleware, MissingUser
from memlane.recall import HEADINGS
from memlane.store.ids import profile_memory_id
from memlane.store.records import Memory, MemoryUpdate, Message, ProfileEntry
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore

COFFEE = ProfileEntry(
    user_id="u", topic="diet", subtopic="coffee", content="drinks black coffee without sugar", confidence=0.9
)


async def seed_coffee(store) -> None:
    memory = Memory(
        id=profile_memory_id(COFFEE.id),
        user_id="u",
        kind="profile",
        text="diet / coffee: drinks black coffee without sugar",
        ref_id=COFFEE.id,
    )
    await store.apply_update(MemoryUpdate(user_id="u", upsert_profile=[COFFEE], memories=[memory]))


class TimedMemoryModel(ScriptedChatModel):
    """The memory graph's model: its first call is slow; it notes when each call started."""

    first_delay: float = 3.0
    started: list[float] = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self.started.append(time.perf_counter())
        await asyncio.sleep(self.first_delay if len(self.started) == 1 else 0.01)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def agent_for(model, middleware, **kwargs):
    return create_agent(model, middleware=[middleware], context_schema=MemoryAgentContext, **kwargs)


async def test_memories_are_in_the_system_prompt_of_the_model_call(store, settings):
    await seed_coffee(store)
    model = ScriptedChatModel(script=["Black, no sugar."])
    middleware = MemoryMiddleware(store, settings=settings)
    agent = agent_for(model, middleware, system_prompt="Be brief.")
    result = await agent.ainvoke(
        {"messages": [HumanMessage("How do I take my coffee?")]},
        context=MemoryAgentContext(user_id="u", session_id="s"),
    )
    assert result["messages"][-1].content == "Black, no sugar."
    system = model.calls[0][0]
    assert system.type == "system" and system.content.startswith("Be brief.\n\n" + HEADINGS["en"]["intro"])
    assert "black coffee without sugar" in system.content
    assert middleware.last_recall["u"].profile[0].ref_id == COFFEE.id

    await middleware.wait_idle()
    stored = await store.recent_messages("u", "s")
    assert [(m.role, m.content) for m in stored] == [
        ("user", "How do I take my coffee?"),
        ("assistant", "Black, no sugar."),
    ]
    # saving the same turn again stores nothing new (ids come from the agent's messages)
    middleware.persistence.save_turn(MemoryAgentContext(user_id="u", session_id="s"), stored)
    await middleware.wait_idle()
    assert len(await store.recent_messages("u", "s")) == 2


async def test_streamed_reply_comes_first_and_the_graph_runs_after_it(store, settings):
    rolling = ("session_summary", '{"summary": "用户作息不规律，喜欢黑咖啡。"}')
    memory_model = TimedMemoryModel(rules=[rolling, *memory_rules()], started=[])
    reply = "Noted: you sleep late and drink black coffee. " * 3
    chat_model = ScriptedChatModel(script=[reply, "Second answer."], chunk_size=4, chunk_delay=0.005)
    memory_settings = settings.model_copy(update={"memory_buffer_tokens": 1, "llm_timeout_seconds": 10.0})
    context = MemoryContext(store=store, llm=memory_model, **memory_settings.parts(*CONTEXT_PARTS))
    async with MemoryScheduler(context) as scheduler:
        middleware = MemoryMiddleware(store, scheduler=scheduler, settings=settings)
        agent = agent_for(chat_model, middleware)
        run_context = MemoryAgentContext(user_id="u", session_id="s")

        async def stream(text: str) -> tuple[float, bool, float, list[str]]:
            """(seconds to the first token, memory run busy at that moment, end time, pieces)"""
            started = time.perf_counter()
            first, busy, pieces = None, False, []
            async for chunk, _meta in agent.astream(
                {"messages": [HumanMessage(text)]}, context=run_context, stream_mode="messages"
            ):
                if isinstance(chunk, AIMessageChunk) and chunk.content:
                    if first is None:
                        first, busy = time.perf_counter(), scheduler.is_busy("u")
                    pieces.append(chunk.content)
            return first - started, busy, time.perf_counter(), pieces

        _, _, first_reply_done, pieces = await stream("我最近总是凌晨 2 点才睡，我喜欢黑咖啡，不加糖。")
        assert len(pieces) > 5 and "".join(pieces) == reply
        assert memory_model.started == [] or min(memory_model.started) > first_reply_done

        await middleware.wait_idle()
        # the graph run of turn 1 is under way (its first model call takes 3 s) ...
        for _ in range(100):
            if memory_model.started:
                break
            await asyncio.sleep(0.01)
        assert scheduler.is_busy("u")
        # ... and the next reply's first token does not wait for it
        second_first_token, busy_at_first_token, _, pieces = await stream("and what else?")
        assert "".join(pieces) == "Second answer."
        assert busy_at_first_token, "the first token came while the memory run was still working"
        assert second_first_token < 2.0, f"first token after {second_first_token:.3f}s"

        await middleware.wait_idle()
        await scheduler.wait_idle(30)
    assert min(memory_model.started) > first_reply_done
    profile = await store.get_profile("u")
    assert any("黑咖啡" in entry.content for entry in profile)
    assert await store.unprocessed_messages("u") == []


async def test_toggles_turn_recall_and_saving_off(store, settings):
    await seed_coffee(store)
    model = ScriptedChatModel(script=["one", "two"])
    middleware = MemoryMiddleware(store, settings=settings)
    agent = agent_for(model, middleware, system_prompt="Base.")
    off = MemoryAgentContext(user_id="u", session_id="s", recall_enabled=False, auto_save_enabled=False)
    await agent.ainvoke({"messages": [HumanMessage("coffee?")]}, context=off)
    await middleware.wait_idle()
    assert model.calls[0][0].content == "Base."
    assert await store.recent_messages("u", "s") == []

    # the same switches through `configurable`, for agents without a context schema
    plain = create_agent(model, middleware=[middleware], system_prompt="Base.")
    config = {"configurable": {"user_id": "u", "session_id": "s2", "recall_enabled": True}}
    await plain.ainvoke({"messages": [HumanMessage("coffee?")]}, config=config)
    await middleware.wait_idle()
    assert "black coffee" in model.calls[1][0].content
    assert [m.content for m in await store.recent_messages("u", "s2")] == ["coffee?", "two"]


async def test_an_agent_keeps_its_own_memory_and_reads_the_shared_one(store, settings):
    await seed_coffee(store)  # the user's own memory
    await store.add_memories([Memory(id="hours", user_id=SHARED_USER_ID, kind="event", text="The café opens at 8 am")])
    model = ScriptedChatModel(script=["one", "two", "three"])
    middleware = MemoryMiddleware(store, settings=settings)
    agent = agent_for(model, middleware, system_prompt="Base.")
    coach = MemoryAgentContext(user_id="u", session_id="s", agent_id="coach", shared_user_id=SHARED_USER_ID)
    await agent.ainvoke({"messages": [HumanMessage("When does the café open? I like coffee.")]}, context=coach)
    await middleware.wait_idle()
    assert "8 am" in model.calls[0][0].content and "black coffee" not in model.calls[0][0].content
    assert [m.content for m in await store.recent_messages(scoped_user_id("u", "coach"), "s")] == [
        "When does the café open? I like coffee.",
        "one",
    ]
    assert await store.recent_messages("u", "s") == []
    # through `configurable` too; without shared_user_id, the shared memory is not read
    plain = create_agent(model, middleware=[middleware], system_prompt="Base.")
    await plain.ainvoke(
        {"messages": [HumanMessage("café hours?")]},
        config={"configurable": {"user_id": "u", "agent_id": "coach", "session_id": "s2"}},
    )
    await middleware.wait_idle()
    assert "8 am" not in model.calls[1][0].content
    assert [m.content for m in await store.recent_messages(scoped_user_id("u", "coach"), "s2")] == [
        "café hours?",
        "two",
    ]


async def test_a_run_without_a_user_says_how_to_name_one(store, settings):
    agent = create_agent(ScriptedChatModel(script=["x"]), middleware=[MemoryMiddleware(store, settings=settings)])
    with pytest.raises(MissingUser, match="MemoryAgentContext"):
        await agent.ainvoke({"messages": [HumanMessage("hi")]})


async def test_a_redis_that_goes_away_costs_the_memory_not_the_reply_nor_the_turn(store, settings, embeddings):
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    from memlane.store.errors import RedisUnavailable

    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    dead = RedisMemoryStore(client, embeddings, **settings.parts(*STORE_PARTS))
    failures: list[BaseException] = []

    async def on_failed(identity, error):
        failures.append(error)

    model = ScriptedChatModel(script=["first answer", "second answer"])
    # no tries again: the turn is kept for the next one at once (tries again: the test below)
    no_retries = settings.model_copy(update={"save_retry_seconds": 0.0})
    middleware = MemoryMiddleware(dead, settings=no_retries, on_failed=on_failed)
    agent = agent_for(model, middleware, system_prompt="Base.")
    context = MemoryAgentContext(user_id="u", session_id="s")
    result = await agent.ainvoke({"messages": [HumanMessage("first question")]}, context=context)
    await middleware.wait_idle()
    assert result["messages"][-1].content == "first answer"  # answered without memory
    assert model.calls[0][0].content == "Base."
    assert len(failures) == 2 and all(isinstance(error, RedisUnavailable) for error in failures)  # recall, save
    assert [m.content for m in middleware.persistence.unsaved["u"]] == ["first question", "first answer"]

    # Redis is back: the next turn stores the kept turn first, in order
    middleware.store = middleware.persistence.store = store
    await agent.ainvoke({"messages": [HumanMessage("second question")]}, context=context)
    await middleware.wait_idle()
    assert [m.content for m in await store.recent_messages("u", "s")] == [
        "first question",
        "first answer",
        "second question",
        "second answer",
    ]
    assert middleware.persistence.unsaved == {}
    await client.aclose()


async def test_a_lone_surrogate_costs_neither_the_reply_nor_the_next_turns(store, settings):
    await seed_coffee(store)
    failures: list[BaseException] = []

    async def on_failed(identity, error):
        failures.append(error)

    model = ScriptedChatModel(script=["first", "second", "third", "fourth"])
    middleware = MemoryMiddleware(store, settings=settings, on_failed=on_failed)
    agent = agent_for(model, middleware, system_prompt="Base.")
    context = MemoryAgentContext(user_id="u", session_id="s")
    result = await agent.ainvoke({"messages": [HumanMessage("my coffee \ud800?")]}, context=context)
    assert result["messages"][-1].content == "first"
    assert "black coffee without sugar" in model.calls[0][0].content  # recalled for the broken query
    for text in ("how do I take my coffee?", "and tea?", "thanks"):
        await agent.ainvoke({"messages": [HumanMessage(text)]}, context=context)
    await middleware.wait_idle()
    assert [m.content for m in await store.recent_messages("u", "s")] == [
        "my coffee \ufffd?",
        "first",
        "how do I take my coffee?",
        "second",
        "and tea?",
        "third",
        "thanks",
        "fourth",
    ]
    assert middleware.persistence.unsaved == {} and failures == []


async def test_a_message_that_cannot_be_stored_does_not_hold_back_the_next(store, settings):
    middleware = MemoryMiddleware(store, settings=settings)
    identity = MemoryAgentContext(user_id="u", session_id="s")
    # built past validation, as a caller's own store messages could be: Redis cannot encode it
    broken = Message.model_construct(
        id="bad", user_id="u", session_id="s", role="user", content="\udc00", created_at=1.0
    )
    middleware.persistence.save_turn(
        identity, [broken, Message(id="ok", user_id="u", session_id="s", role="assistant", content="ok")]
    )
    for number in range(3):
        middleware.persistence.save_turn(
            identity, [Message(id=f"m{number}", user_id="u", session_id="s", role="user", content=f"turn {number}")]
        )
    await middleware.wait_idle()
    assert [m.content for m in await store.recent_messages("u", "s")] == ["ok", "turn 0", "turn 1", "turn 2"]
    assert middleware.persistence.unsaved == {}


async def test_an_embedder_that_is_down_costs_the_vector_recall_not_the_reply(store, settings, embeddings):
    import gc
    import warnings

    from scripted import FlakyEmbeddings

    await seed_coffee(store)
    flaky = FlakyEmbeddings(embeddings, down=True)
    degraded = RedisMemoryStore(store.client, flaky, **settings.parts(*STORE_PARTS))
    model = ScriptedChatModel(script=["Black, no sugar.", "In Lyon."])
    middleware = MemoryMiddleware(degraded, settings=settings)
    agent = agent_for(model, middleware, system_prompt="Base.")
    context = MemoryAgentContext(user_id="u", session_id="s")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = await agent.ainvoke({"messages": [HumanMessage("How do I take my coffee?")]}, context=context)
        await middleware.wait_idle()
        gc.collect()
    assert result["messages"][-1].content == "Black, no sugar."
    assert "black coffee without sugar" in model.calls[0][0].content  # recalled by keyword
    assert not [w for w in caught if "never awaited" in str(w.message)]
    # the turn is stored although it could not be indexed; nothing is kept back in memory
    assert [m.content for m in await store.recent_messages("u", "s")] == [
        "How do I take my coffee?",
        "Black, no sugar.",
    ]
    assert middleware.persistence.unsaved == {}

    flaky.down = False  # back: the next turn's save indexes the earlier one too
    await agent.ainvoke({"messages": [HumanMessage("Where do I live?")]}, context=context)
    await middleware.wait_idle()
    hits = await degraded.search_memories("u", "take my coffee", kinds=["message"])
    assert hits[0].memory.text == "How do I take my coffee?" and hits[0].vector_similarity > 0


async def test_a_turn_saved_while_redis_is_briefly_down_is_stored_once_when_it_is_back(tmp_path, embeddings):
    import os
    import signal

    from memlane.config import Settings
    from memlane.store.embedded.server import EmbeddedRedis, stop_running
    from memlane.store.redis.store import open_store

    # a private server: this test kills it (detached: nothing starts it again but the test)
    server = EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None).store, detach=True)
    url = server.start()
    settings = Settings(redis_url=url, key_prefix="briefly-down", save_retry_seconds=60.0, openai_api_key=None)
    store = await open_store(settings, embeddings=embeddings)
    failures: list[BaseException] = []

    async def on_failed(identity, error):
        failures.append(error)

    try:
        model = ScriptedChatModel(script=["first answer", "second answer", "third answer"])
        middleware = MemoryMiddleware(store, settings=settings, on_failed=on_failed)
        agent = agent_for(model, middleware, system_prompt="Base.")
        context = MemoryAgentContext(user_id="u", session_id="s")
        await agent.ainvoke({"messages": [HumanMessage("first question")]}, context=context)
        await middleware.wait_idle()

        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
        result = await agent.ainvoke({"messages": [HumanMessage("my sister lives in Lyon")]}, context=context)
        assert result["messages"][-1].content == "second answer"  # answered without memory
        for _ in range(200):  # the save failed once and is tried again in the background
            if middleware.persistence.retrying.get("u"):
                break
            await asyncio.sleep(0.05)
        assert middleware.persistence.retrying == {"u": 2} and failures
        # the same user's next turn is answered too: it does not wait behind the save
        result = await agent.ainvoke({"messages": [HumanMessage("third question")]}, context=context)
        assert result["messages"][-1].content == "third answer"

        EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None).store, detach=True).start()  # back, same URL
        await middleware.wait_idle(60)
        stored = [m.content for m in await store.recent_messages("u", "s")]
        assert stored == [
            "first question",
            "first answer",
            "my sister lives in Lyon",
            "second answer",
            "third question",
            "third answer",
        ]  # each once, in order
        assert middleware.persistence.unsaved == {} and middleware.persistence.retrying == {}
        hits = await store.search_memories("u", "where does my sister live", kinds=["message"])
        assert hits and hits[0].memory.text == "my sister lives in Lyon"  # indexed for search as well
    finally:
        await store.aclose()
        stop_running(Settings(data_dir=tmp_path, redis_url=None).store)


class GatedEmbeddings:
    """Real embeddings whose document calls wait for `gate` (a slow embedding endpoint)."""

    def __init__(self, inner) -> None:
        self.inner, self.dims, self.gate = inner, inner.dims, asyncio.Event()

    async def aembed_documents(self, texts):
        await self.gate.wait()
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text):
        return await self.inner.aembed_query(text)


async def test_the_next_turn_waits_for_the_previous_one_in_history_not_for_its_embedding(store, settings, embeddings):
    gated = GatedEmbeddings(embeddings)
    slow = RedisMemoryStore(store.client, gated, **settings.parts(*STORE_PARTS))
    model = ScriptedChatModel(script=["Noted: Lyon.", "You said your sister lives in Lyon."])
    middleware = MemoryMiddleware(slow, settings=settings)
    agent = agent_for(model, middleware, system_prompt="Base.")
    context = MemoryAgentContext(user_id="u", session_id="s")
    await agent.ainvoke({"messages": [HumanMessage("My sister lives in Lyon")]}, context=context)
    # a client that sends no history: the first turn is still being embedded, yet the second
    # turn's recall goes ahead and shows it from the session's history
    second = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("Where does she live?")]}, context=context))
    result = await asyncio.wait_for(second, timeout=20)
    assert result["messages"][-1].content == "You said your sister lives in Lyon."
    assert "My sister lives in Lyon" in model.calls[1][0].content
    assert not gated.gate.is_set()  # answered while the first turn still waited for its embedding
    gated.gate.set()
    await middleware.wait_idle()
    hits = await slow.search_memories("u", "sister Lyon", kinds=["message"])
    assert "My sister lives in Lyon" in [hit.memory.text for hit in hits]


async def test_a_turn_waiting_for_its_embedding_is_in_the_index_backlog_until_searchable(store, settings, embeddings):
    gated = GatedEmbeddings(embeddings)
    slow = RedisMemoryStore(store.client, gated, **settings.parts(*STORE_PARTS))
    middleware = MemoryMiddleware(slow, settings=settings)
    agent = agent_for(ScriptedChatModel(script=["Noted: Lyon."]), middleware)
    assert middleware.index_backlog() == IndexBacklog(turns=0, messages=0, oldest_seconds=0.0, embedding=None)
    await agent.ainvoke(
        {"messages": [HumanMessage("My sister lives in Lyon")]}, context=MemoryAgentContext(user_id="u")
    )
    await asyncio.sleep(0.3)
    backlog = middleware.index_backlog()
    assert (backlog.turns, backlog.messages) == (1, 2) and backlog.oldest_seconds >= 0.3
    assert backlog.embedding is None  # this embedder keeps no queue of its own to report
    assert not await slow.search_memories("u", "sister Lyon", kinds=["message"])
    gated.gate.set()
    await middleware.wait_idle()
    assert middleware.index_backlog().turns == 0
    assert await slow.search_memories("u", "sister Lyon", kinds=["message"])


async def test_a_streamed_reply_carries_only_the_reply_models_tokens(store, settings):
    # the rewrite of a follow-up is a model call inside the agent's model step: streamed with
    # stream_mode="messages", its answer must not show up as part of the reply
    await store.add_messages(
        [
            Message(
                id="z1", user_id="u", session_id="s", role="user", content="Do you remember my colleague Zhang Wei?"
            ),
            Message(id="z2", user_id="u", session_id="s", role="assistant", content="Yes, your colleague."),
        ]
    )
    rewrite_model = ScriptedChatModel(default="When does Zhang Wei leave for Shanghai?")
    chat_model = ScriptedChatModel(script=["Next Wednesday."], chunk_size=3)
    middleware = MemoryMiddleware(store, settings=settings, rewrite_model=rewrite_model)
    agent = agent_for(chat_model, middleware)
    pieces = []
    async for chunk, _meta in agent.astream(
        {"messages": [HumanMessage("When does he leave?")]},
        context=MemoryAgentContext(user_id="u", session_id="s"),
        stream_mode="messages",
    ):
        if chunk.content:
            pieces.append(chunk.content)
    assert rewrite_model.prompts, "the follow-up was rewritten by the model"
    assert "".join(pieces) == "Next Wednesday."
    await middleware.wait_idle()


async def test_every_user_line_of_a_request_is_stored_and_re_sent_history_is_not(store, settings):
    # the seed's chat in one agent call: a friend's line and the user's lines, then the reply
    model = ScriptedChatModel(script=["好的，记住了。", "大理很美。", "不客气。"])
    middleware = MemoryMiddleware(store, settings=settings)
    agent = agent_for(model, middleware)
    run = MemoryAgentContext(user_id="u", session_id="group")
    first = [
        HumanMessage("我下个月去大理旅游", name="朋友A"),
        HumanMessage("我也想去大理"),
        HumanMessage("顺便，我喜欢黑咖啡，不加糖。"),
    ]
    await agent.ainvoke({"messages": first}, context=run)
    await middleware.wait_idle()
    stored = await store.recent_messages("u", "group")
    assert [(m.role, m.name, m.content) for m in stored] == [
        ("user", "朋友A", "我下个月去大理旅游"),
        ("user", None, "我也想去大理"),
        ("user", None, "顺便，我喜欢黑咖啡，不加糖。"),
        ("assistant", None, "好的，记住了。"),
    ]

    # the client sends the history again (new message objects, no ids) with a new line
    history = [
        HumanMessage("我下个月去大理旅游", name="朋友A"),
        HumanMessage("我也想去大理"),
        HumanMessage("顺便，我喜欢黑咖啡，不加糖。"),
        AIMessage("好的，记住了。"),
    ]
    await agent.ainvoke({"messages": [*history, HumanMessage("大理怎么样？")]}, context=run)
    await middleware.wait_idle()
    contents = [m.content for m in await store.recent_messages("u", "group")]
    assert contents == [
        "我下个月去大理旅游",
        "我也想去大理",
        "顺便，我喜欢黑咖啡，不加糖。",
        "好的，记住了。",
        "大理怎么样？",
        "大理很美。",
    ]

    # a turn with saving off stays unsaved when the next request carries it again
    off = MemoryAgentContext(user_id="u", session_id="group", auto_save_enabled=False)
    history += [HumanMessage("大理怎么样？"), AIMessage("大理很美。")]
    await agent.ainvoke({"messages": [*history, HumanMessage("我的银行卡密码是 1234")]}, context=off)
    model.script.append("好的。")
    history += [HumanMessage("我的银行卡密码是 1234"), AIMessage("不客气。")]
    await agent.ainvoke({"messages": [*history, HumanMessage("谢谢")]}, context=run)
    await middleware.wait_idle()
    contents = [m.content for m in await store.recent_messages("u", "group")]
    assert contents[6:] == ["谢谢", "好的。"], contents


async def test_a_turn_over_quota_is_said_once_and_neither_kept_nor_tried_again(store, settings, caplog):
    """Issue 50, item 2: a save refused for good (the user's records quota) was kept for the next
    turn and tried again, the buffer growing each turn (2 -> 4 -> 6), an ERROR and a traceback each
    time. It is said once per turn (on_failed, a warning line), and nothing is kept."""
    from memlane.store.errors import QuotaExceeded
    from memlane.store.redis.store import STORE_PARTS

    capped = settings.model_copy(update={"retention_max_memories_per_user": 1})
    limited = store.with_settings(**capped.parts(*STORE_PARTS))
    await limited.add_messages([Message(id="m0", user_id="u", session_id="s0", role="user", content="I keep bees")])
    failures: list[BaseException] = []

    async def on_failed(identity, error):
        failures.append(error)

    model = ScriptedChatModel(script=["one", "two", "three"])
    middleware = MemoryMiddleware(limited, settings=capped, on_failed=on_failed)
    agent = agent_for(model, middleware, system_prompt="Base.")
    context = MemoryAgentContext(user_id="u", session_id="s")
    for question in ("first", "second", "third"):
        await agent.ainvoke({"messages": [HumanMessage(question)]}, context=context)
        await middleware.wait_idle()
        assert middleware.persistence.unsaved == {}
    assert len(failures) == 3 and all(isinstance(error, QuotaExceeded) for error in failures)
    assert middleware.persistence.refused_turns == 3
    assert not [record for record in caplog.records if record.exc_info]
    assert [m.content for m in await limited.recent_messages("u", "s")] == []
