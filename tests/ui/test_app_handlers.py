"""The app's handlers called alone, without Gradio's server: a ChatApp on the real store."""

from __future__ import annotations

import gradio as gr
import pytest

from memlane import StoreError
from memlane.tools import remember_fact
from memlane.ui.handlers import ChatApp, ask_forget, panel, search, select_id, short_id, switch_user
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
