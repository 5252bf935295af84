"""The app's handlers called alone, without Gradio's server: a ChatApp on the real store."""

from __future__ import annotations

import asyncio

import gradio as gr
import pytest

from memlane import StoreError
from memlane.testing import ScriptedChatModel
from memlane.tools import remember_fact
from memlane.ui.handlers import (
    ChatApp,
    ask_forget,
    drain,
    enqueue,
    panel,
    search,
    select_id,
    short_id,
    switch_session,
    switch_user,
)
from memlane.ui.service import ChatService


async def test_handlers_answer_for_a_chat_app_on_the_real_store(store, settings):
    service = ChatService(settings, store=store)
    app = ChatApp(service)
    try:
        await remember_fact(store, "ui-alone", "diet", "coffee", "drinks black coffee without sugar")
        status, table, ids, timeline, version = await panel(app, " ui-alone ")
        assert table["content"].tolist() == ["drinks black coffee without sugar"] and len(ids) == 1
        assert table["entry"].tolist() == ["diet / coffee"] and table["id"].tolist() == [short_id(ids[0])]

        results, result_ids = await search(app, "ui-alone", "black coffee")
        assert results["text"].tolist() == ["diet / coffee: drinks black coffee without sugar"]
        assert ids[0] in result_ids  # the same memory, by its full id

        shown, question = ask_forget("ui-alone")
        assert shown["visible"] is True and "`ui-alone`" in question
    finally:
        await service.aclose()


def test_a_clicked_row_gives_its_full_id():
    class Click:
        row_value = ["a", "b", short_id("profile:e0c4803ab81b42")]
        index = [0, 4]

    assert select_id(["profile:e0c4803ab81b42", "profile:ffff0000"], Click()) == "profile:e0c4803ab81b42"


async def test_a_user_switch_that_failed_is_tried_again_by_the_next_enter(store, settings, monkeypatch):
    service = ChatService(settings, store=store)
    app = ChatApp(service)
    listing = service.session_choices
    failures = [StoreError("Redis went away")]

    async def once_failing(user_id: str):
        if failures:
            raise failures.pop()
        return await listing(user_id)

    try:
        assert await switch_user(app, "first-user", None) != gr.skip()
        monkeypatch.setattr(service, "session_choices", once_failing)
        with pytest.raises(StoreError):
            await switch_user(app, "second-user", None)
        assert app.tab_of(None).user == "first-user"  # still on screen
        shown = await switch_user(app, "second-user", None)  # Enter again: tried, not skipped
        assert shown != gr.skip() and shown[-2] == "second-user"
        assert await switch_user(app, "second-user", None) == gr.skip()  # now shown: nothing to do
    finally:
        await service.aclose()


def send(app: ChatApp, text: str, user_id: str, session_id: str = "default", *, save: bool = False) -> None:
    enqueue(app, text, user_id, session_id, "You are a helpful assistant.", True, save, "", None)


async def drawn(app: ChatApp) -> list:
    """What one drain of the tab draws, in order (Gradio's skips left out)."""
    return [chat for chat in [chat async for chat in drain(app, [], None)] if chat != gr.skip()]


def texts(chat: list) -> list[str]:
    return [message["content"] for message in chat]


async def test_a_message_sent_during_a_switch_is_drawn_by_its_reply_not_wiped_by_the_switch(
    store, settings, monkeypatch
):
    """The switch's answer may reach the browser after the reply's (here at once: the app has no
    model), so the switch leaves the chat to the reply, which draws it with the message."""
    service = ChatService(
        settings, store=store
    )  # no model: each reply is at once the how-to-configure answer, never saved
    app = ChatApp(service)
    history, gate = service.history, asyncio.Event()

    async def gated_history(user_id: str, session_id: str):
        await gate.wait()
        return await history(user_id, session_id)

    monkeypatch.setattr(service, "history", gated_history)
    try:
        switching = asyncio.ensure_future(switch_user(app, "opening-user", None))  # the page's own switch
        await asyncio.sleep(0.05)
        send(app, "hello?", "opening-user")  # sent while the switch is on its way
        replying = asyncio.ensure_future(drawn(app))
        await asyncio.sleep(0.05)
        assert not replying.done()  # the reply waits for the switch
        gate.set()
        session, chat, *_ = await switching
        assert chat == gr.skip(), "the switch would draw the stored chat over the reply's"
        assert session != gr.skip()
        last = (await replying)[-1]
        assert texts(last)[0] == "hello?" and "OPENAI_API_KEY" in texts(last)[1]
        assert app.tab_of(None).shown == last
    finally:
        await service.aclose()


async def test_the_pages_first_switch_keeps_the_chat_a_reply_drew_before_it(store, settings):
    """A message sent before the page's own switch began (its user field restored, the switch
    not yet asked): the switch lands on that same chat and keeps it, the reply with it."""
    service = ChatService(settings, store=store)
    app = ChatApp(service)
    try:
        send(app, "hello?", "restored-user")
        last = (await drawn(app))[-1]
        assert texts(last)[0] == "hello?"
        _, chat, *_ = await switch_user(app, "restored-user", None)
        assert chat == gr.skip() and app.tab_of(None).shown == last
        # a later switch to that session reads it from the store: that answer was not saved
        assert await switch_session(app, "restored-user", "default", None) == []
    finally:
        await service.aclose()


async def test_a_switch_that_lands_on_the_chat_a_reply_streams_into_leaves_it_drawing(store, settings):
    model = ScriptedChatModel(default="one two three four five six seven eight nine ten", chunk_size=2, chunk_delay=0.1)
    service = ChatService(settings, store=store, chat_model=model)
    app = ChatApp(service)
    try:
        await switch_user(app, "steady-user", None)
        send(app, "count to ten", "steady-user")
        replying = asyncio.ensure_future(drawn(app))
        while not (app.tab_of(None).shown or [{}])[-1].get("content"):  # the reply has begun
            await asyncio.sleep(0.02)
        # the session picked again in its list, mid-reply: the store has not the turn yet
        assert await switch_session(app, "steady-user", "default", None) == []
        chats = await replying
        assert texts(chats[-1])[:2] == ["count to ten", "one two three four five six seven eight nine ten"]
        assert texts(app.tab_of(None).shown)[:2] == texts(chats[-1])[:2]
    finally:
        await service.aclose()


async def test_a_message_sent_before_the_page_restored_its_user_goes_to_that_user(store, settings):
    """The user field is empty until the page restores this browser's user: a message sent
    then waits for the page's switch and goes to the user it shows, not to the default user."""
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="Hello again."))
    app = ChatApp(service)
    try:
        send(app, "it's me", "", save=True)  # the field still empty
        replying = asyncio.ensure_future(drawn(app))
        await asyncio.sleep(0.1)
        assert not replying.done()  # waits for the page to show its user
        _, chat, *_ = await switch_user(app, "returning-user", None)  # the page's own switch
        assert chat == gr.skip()  # the reply draws the chat, with the message
        last = (await replying)[-1]
        assert texts(last)[:2] == ["it's me", "Hello again."]
        assert app.tab_of(None).shown_of == ("returning-user", "default")
        await service.turns.wait_idle()  # the turn is saved after the reply, in the background
        assert texts(await service.history("returning-user", "default"))[:2] == ["it's me", "Hello again."]
        assert await service.history("demo-user", "default") == []
    finally:
        await service.aclose()


async def test_the_speaker_field_wins_over_a_typed_name(store, settings):
    """Issue 55, item 1: with the Speaker field empty, "Alice: I love jazz" is Alice's line; with
    a name in the field the message is that person's, as typed (docs/doors/app.md)."""
    service = ChatService(settings, store=store)
    app = ChatApp(service)
    try:
        for text, speaker in [
            ("Alice: I love jazz", ""),
            ("Alice: I love jazz", "朋友A"),
            ("Note: I moved", ""),
            ("Note: I moved\nAlice: I love jazz\nBob: I don't", ""),  # a group chat pasted whole
        ]:
            enqueue(app, text, "speakers", "default", "", True, False, speaker, None)
        pending = app.tab_of(None).pending
        assert [(item.earlier, item.speaker, item.text) for item in pending] == [
            ((), "Alice", "I love jazz"),
            ((), "朋友A", "Alice: I love jazz"),
            ((), "", "Note: I moved"),
            ((("", "Note: I moved"), ("Alice", "I love jazz")), "Bob", "I don't"),
        ]
        assert [line["content"] for line in pending[-1].shown()] == [
            "Note: I moved",
            "**Alice**: I love jazz",
            "**Bob**: I don't",
        ]
    finally:
        await service.aclose()


async def test_a_friends_typed_line_gives_the_friend_the_fact_not_the_user(store, settings):
    """Issue 55, item 1, as the user sees it: typing "朋友A: 我最喜欢的电影是《星际穿越》" gave the
    user an interests / movies entry. The memory model here calls the film the user's (as a model
    reading the line without its speaker would); the line's speaker gives it to 朋友A."""
    from memlane.testing import memory_rules

    film = {"topic": "interests", "subtopic": "movies", "content": "最喜欢的电影是《星际穿越》", "messages": [1]}
    memory = ScriptedChatModel(rules=memory_rules(summary="朋友A最喜欢《星际穿越》。", facts=[film], tags=["电影"]))
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="好的。"), memory_model=memory)
    app = ChatApp(service)
    try:
        send(app, "朋友A: 我最喜欢的电影是《星际穿越》", "film-user", save=True)
        await drawn(app)
        await service.middleware.wait_idle()
        assert await service.remember_now("film-user") == "remembering…"
        await service.scheduler.wait_idle(10)
        entries = [(entry.topic, entry.subtopic, entry.content) for entry in await store.get_profile("film-user")]
        assert entries and all(topic != "interests" for topic, _, _ in entries), entries
        assert any("朋友A" in subtopic + content for _, subtopic, content in entries), entries
    finally:
        await service.aclose()
