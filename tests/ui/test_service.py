"""The app's back end without a browser: status texts, the panel's reads, delete and forget me."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import SecretStr
from scripted import ScriptedChatModel

from memlane.graph import MemoryRunResult
from memlane.store.base import Memory, MemoryUpdate, Message, ProfileEntry, profile_memory_id
from memlane.ui.service import ChatService, ReplyFailed, describe_result


async def seeded_service(store, settings) -> ChatService:
    entry = ProfileEntry(user_id="u", topic="diet", subtopic="coffee", content="black coffee, no sugar", confidence=0.9)
    memory = Memory(id=profile_memory_id(entry.id), user_id="u", kind="profile", text="diet / coffee: black coffee, no sugar", ref_id=entry.id)
    await store.apply_update(MemoryUpdate(user_id="u", upsert_profile=[entry], memories=[memory]))
    await store.add_messages([Message(id="m1", user_id="u", session_id="s", role="user", content="I run trails on Sundays")])
    return ChatService(settings, store=store)


def test_result_descriptions():
    result = MemoryRunResult(user_id="u", added=["a"], updated=["b", "c"], event_id="e")
    assert describe_result(result) == "remembered: 2 updated, 1 added, 1 event"
    assert describe_result(RuntimeError("model down")) == "memory run failed: model down"
    skipped = MemoryRunResult(user_id="u", skipped_reason="the chat says nothing to remember about the user")
    assert describe_result(skipped).startswith("remembered nothing new")


async def test_panel_reads_search_delete_and_forget(store, settings):
    service = await seeded_service(store, settings)
    rows = await service.profile_rows("u")
    assert [row[:3] for row in rows] == [["diet", "coffee", "black coffee, no sugar"]]
    assert await service.sessions("u") == ["s"]
    assert await service.history("u", "s") == [{"role": "user", "content": "I run trails on Sundays"}]

    results = await service.search_rows("u", "trail running")
    assert results[0][1:4] == ["message", "I run trails on Sundays", "m1"] and 0 <= results[0][0] <= 1

    assert await service.delete_entry("u", rows[0][-1]) == f"deleted {rows[0][-1]}"
    assert await service.profile_rows("u") == [] and service.status("u").version == 1
    assert (await service.delete_entry("u", "nope")).startswith("no entry")

    assert (await service.forget_user("u")).startswith("forgot everything of u")
    assert await service.search_rows("u", "trail running") == [] and await service.sessions("u") == []


async def test_reply_without_a_model_explains_the_configuration(store, settings):
    service = ChatService(settings, store=store)
    answers = [answer async for answer in service.stream_reply("u", "s", "hi", [])]
    assert len(answers) == 1 and "OPENAI_BASE_URL" in answers[0]
    assert await store.recent_messages("u", "s") == []


async def test_reply_streams_and_reports_the_save(store, settings):
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="All good here.", rules=[("zzz", "")]))
    answers = [answer async for answer in service.stream_reply("u", "s", "how are you?", [], persona="Be terse.")]
    assert answers[-1] == "All good here." and len(answers) > 2
    await service.middleware.wait_idle()
    await service.scheduler.wait_idle(10)
    assert [m.content for m in await store.recent_messages("u", "s")] == ["how are you?", "All good here."]
    assert service.status("u").text.startswith("saved · ")  # below the buffer threshold: no run yet
    await service.aclose()


def name_from_the_conversation(messages) -> str:
    """A scripted answer that knows the user's name only if an earlier turn said it."""
    said = [m.text for m in messages if isinstance(m, HumanMessage)][:-1]
    names = [text.split("My name is", 1)[1].strip(" .") for text in said if "My name is" in text]
    return f"Your name is {names[-1]}." if names else "I do not know your name."


async def test_every_turn_of_the_session_reaches_the_model_whatever_its_shape(store, settings):
    chat = ScriptedChatModel(default=name_from_the_conversation)
    service = ChatService(settings, store=store, chat_model=chat)
    # what Gradio 6's Chatbot hands back: content as a list of blocks, files among them
    history = [
        {"role": "user", "content": [{"type": "text", "text": "My name is Zed"}], "metadata": None, "options": None},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello Zed."}], "metadata": None, "options": None},
        {"role": "user", "content": [{"type": "file", "file": {"path": "/tmp/x/cv.pdf", "orig_name": "cv.pdf"}}]},
        {"role": "assistant", "content": {"type": "text", "text": "Got your file."}},
        {"role": "user", "content": "And I like tea."},
        {"role": "assistant", "content": "Tea it is."},
    ]
    answers = [a async for a in service.stream_reply("u", "s", "What is my name?", history, recall_enabled=False)]
    assert answers[-1] == "Your name is Zed."
    sent = [(type(m).__name__, m.text) for m in chat.calls[-1] if not isinstance(m, SystemMessage)]
    assert sent[:2] == [("HumanMessage", "My name is Zed"), ("AIMessage", "Hello Zed.")]
    assert sent[2][0] == "HumanMessage" and "cv.pdf" in sent[2][1] and "not" in sent[2][1]  # the file is noted, not sent
    assert sent[3:] == [
        ("AIMessage", "Got your file."),
        ("HumanMessage", "And I like tea."),
        ("AIMessage", "Tea it is."),
        ("HumanMessage", "What is my name?"),
    ]
    await service.middleware.wait_idle()
    await service.aclose()


@pytest.fixture
def refusing_server():
    """An OpenAI-compatible endpoint on loopback that answers every request 401."""

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.dumps({"error": {"message": "Incorrect API key provided: sk-wrong", "code": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


async def test_a_refused_model_call_says_who_answered_what(store, settings, refusing_server, caplog, capfd):
    settings = settings.model_copy(update={"openai_base_url": refusing_server, "openai_api_key": SecretStr("sk-wrong")})
    service = ChatService(settings, store=store)
    with caplog.at_level(logging.INFO):
        with pytest.raises(ReplyFailed) as failed:
            [a async for a in service.stream_reply("u", "s", "hello", [], recall_enabled=False)]
    text = str(failed.value)
    assert f"the model gpt-4o-mini at {refusing_server} answered 401: Incorrect API key provided" in text
    assert "OPENAI_API_KEY" in text  # what to do
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1 and "401" in problems[0].getMessage() and problems[0].exc_info is None
    assert "Traceback" not in capfd.readouterr().err
    await service.aclose()


async def test_a_failing_model_names_the_error_and_what_to_do(store, settings, caplog, capfd):
    chat = ScriptedChatModel(default=RuntimeError("the GPU fell over"))
    service = ChatService(settings, store=store, chat_model=chat)
    with caplog.at_level(logging.INFO):
        with pytest.raises(ReplyFailed, match="RuntimeError: the GPU fell over") as failed:
            [a async for a in service.stream_reply("u", "s", "hello", [], recall_enabled=False)]
    assert "send again" in str(failed.value)
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert "Traceback" not in capfd.readouterr().err
    await service.aclose()
