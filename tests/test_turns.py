"""The turn service (memlane/turns.py) under every door: one scripted conversation (English
and Chinese, a group line, a follow-up, a topic shift, then the session's end) through the
agent middleware, `memlane serve` and the app leaves the same history, profile, events and
session title."""

from __future__ import annotations

from typing import Any

import httpx
from fake_upstream import FakeUpstream
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from scripted import ScriptedChatModel

from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryScheduler
from memlane.middleware import MemoryAgentContext, MemoryMiddleware
from memlane.serve.app import create_app
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key
from memlane.testing import memory_rules
from memlane.ui.service import ChatService

REPLY = "Got it."
# (speaker, text): None is the user; the fourth line follows up; the fifth moves on to a new topic
CONVERSATION: list[tuple[str | None, str]] = [
    (None, "I run trails on Sundays, mostly in the hills."),
    (None, "我最近总是凌晨 2 点才睡，连续两周都在加班。"),
    ("朋友A", "我最喜欢的电影是《星际穿越》。"),
    (None, "What about it?"),
    (None, "By the way, I adopted a cat named Miso."),
]


def memory_model() -> ScriptedChatModel:
    """Titles, topic checks (the cat moves on) and memory runs, the same for every door."""

    def topic(messages: Any) -> str:
        text = "\n".join(str(m.content) for m in messages)
        new_message = text.split("New message:", 1)[-1]
        return '{"related": false}' if "cat named Miso" in new_message else '{"related": true}'

    return ScriptedChatModel(
        rules=[
            ("session_title", '{"title": "Trails, sleep and a cat"}'),
            ("topic_shift", topic),
            ("session_summary", '{"summary": "trails, sleep, a film, a cat"}'),
            ("rewrite", '{"query": "the film 星际穿越"}'),
            *memory_rules(
                summary="The user runs trails on Sundays and sleeps late.",
                facts=[
                    {
                        "topic": "interests",
                        "subtopic": "sports",
                        "content": "runs trails on Sundays",
                        "confidence": 0.9,
                        "messages": [1],
                    }
                ],
                tags=["running"],
            ),
        ],
        default="{}",
    )


async def through_the_middleware(store, settings, user: str) -> None:
    scheduler = await MemoryScheduler(
        MemoryContext(store=store, llm=memory_model(), **settings.parts(*CONTEXT_PARTS))
    ).__aenter__()
    try:
        middleware = MemoryMiddleware(store, scheduler=scheduler, settings=settings)
        agent = create_agent(
            ScriptedChatModel(default=REPLY), middleware=[middleware], context_schema=MemoryAgentContext
        )
        history: list[Any] = []
        for speaker, text in CONVERSATION:
            history = [*history, HumanMessage(text, name=speaker)]
            result = await agent.ainvoke(
                {"messages": history}, context=MemoryAgentContext(user_id=user, session_id="s1")
            )
            history = result["messages"]
            await middleware.wait_idle()
            await scheduler.wait_idle(10)
        assert await middleware.turns.end_session(user, "s1")
        await scheduler.wait_idle(10)
    finally:
        await scheduler.__aexit__(None, None, None)


async def through_the_service(store, settings, user: str) -> None:
    with FakeUpstream(reply=REPLY) as upstream:
        config = ServeConfig(
            keys=[ApiKey(name="acme", tenant="acme", hash=hash_api_key("key-acme"), scopes=("chat", "read", "write"))],
            personas={"assistant": {"model": "fake-model", "base_url": upstream.url, "memory_scope": "user"}},
        )
        app = create_app(config, settings, store=store, memory_model=memory_model(), mount_mcp=False)
        async with app.router.lifespan_context(app):
            service = app.state.memlane
            transport = httpx.ASGITransport(app=app)
            headers = {"Authorization": "Bearer key-acme", "X-Memlane-Session": "s1"}
            async with httpx.AsyncClient(
                transport=transport, base_url="http://memlane", headers=headers, timeout=30
            ) as http:
                history: list[dict[str, Any]] = []
                for speaker, text in CONVERSATION:
                    history.append({"role": "user", "content": text, **({"name": speaker} if speaker else {})})
                    answer = await http.post(
                        "/v1/chat/completions", json={"model": "assistant", "user": user, "messages": history}
                    )
                    assert answer.status_code == 200, answer.text
                    history.append({"role": "assistant", "content": answer.json()["choices"][0]["message"]["content"]})
                    await service.turns.wait_idle()
                    await service.scheduler.wait_idle(10)
                ended = await http.post(f"/v1/users/{user}/sessions/s1/end")
                assert ended.json()["queued"] is True
                await service.scheduler.wait_idle(10)


async def through_the_app(store, settings, user: str) -> None:
    service = ChatService(
        settings, store=store, chat_model=ScriptedChatModel(default=REPLY), memory_model=memory_model()
    )
    try:
        history: list[dict[str, Any]] = []
        for speaker, text in CONVERSATION:
            answer = [piece async for piece in service.stream_reply(user, "s1", text, history, speaker=speaker)][-1]
            history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
            await service.wait_background()
            await service.scheduler.wait_idle(10)
        await service.end_session(user, "s1")  # asked in the background: "New session" opens at once
        await service.wait_background()
        await service.scheduler.wait_idle(10)
    finally:
        await service.aclose()


async def what_is_kept(store, user: str) -> dict[str, Any]:
    exported = await store.export_user(user)
    by_id = {message.id: message for message in exported.messages}
    return {
        "history": [
            (m.session_id, m.role, m.name, m.content) for m in sorted(exported.messages, key=lambda m: m.seq or 0)
        ],
        "profile": sorted((e.topic, e.subtopic, e.content) for e in exported.profile),
        "events": sorted(
            (e.summary, tuple(e.tags), tuple(by_id[i].content for i in e.source_message_ids if i in by_id))
            for e in exported.events
        ),
        "titles": exported.session_titles,
        "unprocessed": [m.content for m in await store.unprocessed_messages(user)],
    }


async def test_one_conversation_through_every_door_leaves_the_same_memory(store, settings):
    settings = settings.model_copy(
        update={"memory_buffer_tokens": 100_000}
    )  # runs come from the topic shift and the end
    await through_the_middleware(store, settings, "agent-door")
    await through_the_service(store, settings, "serve-door")
    await through_the_app(store, settings, "app-door")
    kept = {
        door: await what_is_kept(store, user)
        for door, user in (("middleware", "agent-door"), ("serve", "acme/serve-door"), ("app", "app-door"))  # noqa: E501
    }

    middleware = kept["middleware"]
    assert [line[2:] for line in middleware["history"][:6]] == [
        (None, CONVERSATION[0][1]),
        (None, REPLY),
        (None, CONVERSATION[1][1]),
        (None, REPLY),
        ("朋友A", CONVERSATION[2][1]),
        (None, REPLY),
    ]
    assert len(middleware["history"]) == 10 and middleware["titles"] == {"s1": "Trails, sleep and a cat"}
    assert len(middleware["events"]) == 2  # the topic shift closed the turns before the cat; the end closed the rest
    assert middleware["events"][0][2][-2:] == (CONVERSATION[4][1], REPLY) or middleware["events"][1][2][-2:] == (
        CONVERSATION[4][1],
        REPLY,
    )
    assert middleware["profile"] == [("interests", "sports", "runs trails on Sundays")]
    assert middleware["unprocessed"] == []
    assert kept["serve"] == middleware
    assert kept["app"] == middleware


async def test_a_recall_slow_while_redis_answers_is_waited_for_past_the_budget(store):
    # a loaded machine: recall outlives its budget, but Redis answers the probe, so memory is not dropped
    # (a frozen Redis, which answers no probe, is given up at the budget: tests/serve/test_hardening.py)
    import asyncio

    from memlane.turns import within_recall_budget

    async def slow_recall() -> str:
        await asyncio.sleep(0.6)
        return "recalled"

    assert await within_recall_budget(slow_recall(), store, 0.2) == "recalled"
