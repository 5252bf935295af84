"""The app's back end without a browser: status texts, the panel's reads, delete and forget me."""

from __future__ import annotations

import json
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import SecretStr
from scripted import ScriptedChatModel

from memlane.graph import MemoryRunResult
from memlane.store.ids import profile_memory_id
from memlane.store.records import Memory, MemoryUpdate, Message, ProfileEntry
from memlane.ui.service import ChatService, ReplyFailed, describe_result, new_session_id


async def seeded_service(store, settings) -> ChatService:
    entry = ProfileEntry(user_id="u", topic="diet", subtopic="coffee", content="black coffee, no sugar", confidence=0.9)
    memory = Memory(
        id=profile_memory_id(entry.id),
        user_id="u",
        kind="profile",
        text="diet / coffee: black coffee, no sugar",
        ref_id=entry.id,
    )
    await store.apply_update(MemoryUpdate(user_id="u", upsert_profile=[entry], memories=[memory]))
    await store.add_messages(
        [Message(id="m1", user_id="u", session_id="s", role="user", content="I run trails on Sundays")]
    )
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
    assert (
        results[0][1:3] == ["message", "I run trails on Sundays"] and results[0][4] == "m1" and 0 <= results[0][0] <= 1
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", results[0][3])  # when it was said

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
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="All good here."))
    answers = [answer async for answer in service.stream_reply("u", "s", "how are you?", [], persona="Be terse.")]
    assert answers[-1] == "All good here." and len(answers) > 2
    await service.middleware.wait_idle()
    await service.scheduler.wait_idle(10)
    assert [m.content for m in await store.recent_messages("u", "s")] == ["how are you?", "All good here."]
    assert service.status("u").text.startswith("saved · ")  # below the buffer threshold: no run yet
    # a new user's first run starts at first_run_tokens, and the status line says that one (issue 55,
    # item 2: it showed memory_buffer_tokens, 1024, while the run came at 256)
    first = min(settings.graph.first_run_tokens, settings.graph.buffer_tokens)
    assert service.status("u").text.endswith(f"/{first} tokens until the next memory run"), service.status("u").text
    await service.aclose()


async def test_the_stored_chat_shows_a_group_line_with_its_speaker_as_the_reply_drew_it(store, settings):
    """A line another person said (朋友A) is drawn "朋友A: …" while the reply streams; the chat
    read back from the store (a session switched to, the page opened again, a switch answering
    after the reply) drew it without the name, and the speaker vanished from the screen."""
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="好的。"))
    [answer async for answer in service.stream_reply("u", "s", "我最喜欢的电影是《星际穿越》", [], speaker="朋友A")]
    await service.middleware.wait_idle()
    assert [line["content"] for line in await service.history("u", "s")] == [
        "**朋友A**: 我最喜欢的电影是《星际穿越》",  # the name in bold, as the reply drew it
        "好的。",
    ]
    await service.aclose()


async def test_a_group_chat_pasted_whole_stores_each_line_under_its_speaker(store, settings):
    """Issue 55, item 1: the lines of one message said by several people (earlier_lines) are
    stored one by one, each with its speaker, before the line the reply answers."""
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="好的。"))
    lines = [("", "Note: I moved to Lyon"), ("Alice", "I love jazz")]
    [answer async for answer in service.stream_reply("u", "s", "I don't", [], speaker="Bob", earlier_lines=lines)]
    await service.middleware.wait_idle()
    stored = await store.recent_messages("u", "s")
    assert [(m.role, m.name, m.content) for m in stored] == [
        ("user", None, "Note: I moved to Lyon"),
        ("user", "Alice", "I love jazz"),
        ("user", "Bob", "I don't"),
        ("assistant", None, "好的。"),
    ]
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
    assert (
        sent[2][0] == "HumanMessage" and "cv.pdf" in sent[2][1] and "not" in sent[2][1]
    )  # the file is noted, not sent
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
            body = json.dumps(
                {"error": {"message": "Incorrect API key provided: sk-wrong", "code": "invalid_api_key"}}
            ).encode()
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


async def test_the_status_line_shows_paused_models_and_parked_runs(store, settings):
    """A memory model that keeps failing: its run is retried, then parked; the status line says
    the model is paused and that a run is parked, and "Remember now" brings both back."""
    from memory_graph_helpers import memory_rules

    memory_model = ScriptedChatModel(default=ConnectionError("connection refused"))
    tuned = settings.model_copy(
        update={
            "memory_run_retries": 1,
            "circuit_failure_threshold": 2,
            "circuit_reset_seconds": 0.3,
            "memory_run_retry_delay_seconds": 0.01,
        }
    )
    service = ChatService(tuned, store=store, chat_model=ScriptedChatModel(default="ok"), memory_model=memory_model)
    await store.add_messages(
        [Message(id="m1", user_id="u", session_id="s", role="user", content="我喜欢黑咖啡，不加糖。")]
    )
    assert await service.remember_now("u") == "remembering…"
    await service.scheduler.wait_idle(20)

    line = service.status_line("u")
    assert line.startswith("memory run failed: ")
    assert "the memory model paused after 2 failures, retry in " in line  # the retry's failure opened it
    assert "1 memory run parked after failing (last: " in line and "Remember now tries again" in line

    memory_model.rules = memory_rules()  # the model is back
    assert await service.remember_now("u") == "remembering…"
    await service.scheduler.wait_idle(20)
    assert service.status_line("u").startswith("remembered: ")
    assert "paused" not in service.status_line("u") and "parked" not in service.status_line("u")
    assert await store.parked_runs("u") == []
    await service.aclose()


# -- issue 15: the memories a reply used, profile edits, titled sessions, topic shifts ----------------


def test_the_memories_used_block_and_a_failure_note_never_reach_the_model():
    from memlane.ui.chat import history_messages

    history = [
        {"role": "user", "content": "I like tea"},
        {"role": "assistant", "content": "Tea it is."},
        {
            "role": "assistant",
            "content": "**Profile**\n- diet / tea",
            "metadata": {"title": "Memories used: 1 profile line", "id": "memlane-recall:7"},
        },
        {"role": "assistant", "content": "⚠️ the model failed", "metadata": {"id": "memlane-reply-failed"}},
        {"role": "assistant", "content": "a thought of another app", "metadata": {"title": "Thinking"}},
    ]
    assert [m.text for m in history_messages(history)] == ["I like tea", "Tea it is.", "a thought of another app"]


async def test_a_reply_shows_the_memories_it_used(store, settings):
    from memlane.ui.panel import recall_markdown, recall_title

    service = await seeded_service(store, settings)
    service.chat_model = ScriptedChatModel(default="Black coffee it is.")
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    # in another session: the message about trails is found by search, not shown as a recent one
    [a async for a in service.stream_reply("u", "s2", "Do I still run trails on Sundays?", history)]
    recalled = service.used_memories("u", "s2", "Do I still run trails on Sundays?")
    assert recalled is not None and recalled.profile
    assert recall_title(recalled).startswith("Memories used: 1 profile line")
    shown = recall_markdown(recalled)
    assert "diet / coffee: black coffee, no sugar" in shown and "confidence 0.90" in shown
    # searched memories come with their score and sources
    assert any(item.layer == "message" for item in recalled.memories) and "`m1`" in shown

    [a async for a in service.stream_reply("u", "s", "And tea?", [], recall_enabled=False)]
    assert service.used_memories("u", "s", "And tea?") is None  # recall off: nothing is shown
    await service.wait_background()
    await service.aclose()


async def test_editing_an_entry_keeps_its_history(store, settings):
    service = await seeded_service(store, settings)
    (row,) = await service.profile_rows("u")
    memory_id = row[-1]
    entry = await service.profile_entry("u", memory_id)
    assert entry is not None and entry.content == "black coffee, no sugar"

    assert await service.edit_entry("u", memory_id, "  green tea  ", 0.6) == "edited diet / coffee"
    (row,) = await service.profile_rows("u")
    assert row[2:4] == ["green tea", 0.6] and service.status("u").version == 1
    history = await service.entry_history("u", memory_id)
    assert (
        "edited in the app" in history and "black coffee, no sugar (0.90)" in history and "green tea (0.60)" in history
    )
    hits = await store.search_memories("u", "green tea", kinds=["profile"])
    assert hits and "green tea" in hits[0].memory.text  # the mirror memory follows the edit

    assert (await service.edit_entry("u", memory_id, "   ", 0.5)).startswith("an entry needs some content")
    assert (await service.edit_entry("u", "profile:nope", "x", 0.5)).startswith("click a profile row")
    assert (await service.profile_rows("u"))[0][2] == "green tea"


def titling_model(**rules) -> ScriptedChatModel:
    """A memory model that titles, judges topic shifts (a cat is a new topic) and remembers."""
    from memory_graph_helpers import memory_rules

    def topic(messages) -> str:
        new_message = prompt_after(messages, "New message:")
        return '{"related": false}' if "cat" in new_message else '{"related": true}'

    return ScriptedChatModel(
        rules=[
            ("session_title", '{"title": "Trail running on Sundays"}'),
            ("topic_shift", topic),
            ("session_summary", '{"summary": "running, then a cat"}'),
            *memory_rules(
                summary="The user runs trails on Sundays.",
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
        ]
    )


def prompt_after(messages, marker: str) -> str:
    text = "\n".join(str(m.content) for m in messages)
    return text.split(marker, 1)[1] if marker in text else ""


async def test_a_session_is_titled_once_after_its_first_exchange(store, settings):
    memory = titling_model()
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="Nice."), memory_model=memory)
    [a async for a in service.stream_reply("u", "s1", "I run trails on Sundays", [], recall_enabled=False)]
    await service.wait_background()
    assert await service.session_choices("u") == [("Trail running on Sundays", "s1")]
    assert service.status("u").titles == 1
    [a async for a in service.stream_reply("u", "s1", "Mostly in the hills", [], recall_enabled=False)]
    await service.wait_background()
    assert sum("TASK: title" in prompt for prompt in memory.prompts) == 1  # once per session
    await service.aclose()


async def test_without_a_memory_model_the_title_is_the_first_message(store, settings):
    service = ChatService(settings, store=store)
    await store.add_messages(
        [
            Message(
                id="t1",
                user_id="u",
                session_id="s9",
                role="user",
                content="Plans for a weekend in Hangzhou with my sister",
            )
        ]
    )
    title = await service.ensure_title("u", "s9")
    assert title.startswith("Plans for a weekend in Hangzhou") and title.endswith("…")
    assert await service.ensure_title("u", "s9") is None  # titled already
    assert await service.session_choices("u") == [(title, "s9")]


async def test_a_topic_shift_remembers_the_turns_before_it_as_their_own_event(store, settings):
    settings = settings.model_copy(update={"memory_buffer_tokens": 100_000})  # no run by threshold
    memory = titling_model()
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="Nice."), memory_model=memory)

    async def say(text: str) -> None:
        [a async for a in service.stream_reply("u", "s", text, [], recall_enabled=False)]
        await service.wait_background()
        await service.scheduler.wait_idle(10)

    await say("I run trails on Sundays")
    await say("Mostly hill repeats, actually")  # related: nothing is remembered yet
    assert await store.list_events("u") == [] and len(await store.unprocessed_messages("u")) == 4
    await say("By the way, I adopted a cat named Miso")

    (event,) = await store.list_events("u")
    earlier = [m for m in await store.recent_messages("u", "s", limit=10)][:4]
    assert event.source_message_ids == [m.id for m in earlier]  # the run covered the turns before the shift
    left = await store.unprocessed_messages("u")
    assert [m.content for m in left] == ["By the way, I adopted a cat named Miso", "Nice."]  # the next buffer
    assert not any("Miso" in prompt for prompt in memory.prompts if "TASK: summarize a chat" in prompt)
    assert service.status("u").done[-1] == "persist"  # the run's steps were reported
    await service.aclose()


async def test_the_topic_check_can_be_turned_off(store, settings):
    settings = settings.model_copy(update={"memory_buffer_tokens": 100_000, "topic_shift_check": False})
    memory = titling_model()
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="Nice."), memory_model=memory)
    for text in ("I run trails on Sundays", "I adopted a cat named Miso"):
        [a async for a in service.stream_reply("u", "s", text, [], recall_enabled=False)]
        await service.wait_background()
    await service.scheduler.wait_idle(10)
    assert await store.list_events("u") == []
    assert not any("TASK: decide whether" in prompt for prompt in memory.prompts)
    await service.aclose()


async def test_the_timeline_shows_what_each_event_changed(store, settings):
    from memlane.ui.sample import SAMPLE_USER

    service = ChatService(settings, store=store)
    service.sample_delay = 0
    assert (await service.load_sample()).startswith("sample loaded: ")
    timeline = await service.timeline_markdown(SAMPLE_USER)
    assert "- added **lifestyle / diet**: drinks a lot of black coffee without sugar" in timeline
    assert (
        "- updated **lifestyle / diet**: ~~drinks a lot of black coffee without sugar~~ → 戒了咖啡，改喝绿茶"
        in timeline
    )
    assert await service.load_sample() == "the sample is already loaded"


async def test_the_rewrite_of_a_follow_up_never_shows_in_the_reply(store, settings):
    # a memory model that answers the rewrite like a real one, quickly
    memory = ScriptedChatModel(rules=[("rewrite", "Why does the user drink black coffee?")], default="{}")
    chat = ScriptedChatModel(default="Because you like it strong.")
    service = ChatService(settings, store=store, chat_model=chat, memory_model=memory)
    await store.add_messages(
        [
            Message(id="c1", user_id="u", session_id="s", role="user", content="I drink black coffee"),
            Message(id="c2", user_id="u", session_id="s", role="assistant", content="Noted."),
        ]
    )
    history = [{"role": "user", "content": "I drink black coffee"}, {"role": "assistant", "content": "Noted."}]
    answers = [answer async for answer in service.stream_reply("u", "s", "Why?", history)]
    assert any("Last question:" in prompt for prompt in memory.prompts), "the follow-up was rewritten"
    assert answers and all("Because you like it strong.".startswith(answer) for answer in answers), answers[-1]
    await service.wait_background()
    await service.middleware.wait_idle()
    await service.aclose()


def test_search_rows_keep_searchs_order_and_show_the_one_relevance_never_relative_to_the_best():
    from memlane.store.hits import MemoryHit
    from memlane.store.records import Memory as StoredMemory
    from memlane.ui.panel_store import ranked_scores

    def hit(name: str, relevance: float, fused: float) -> MemoryHit:
        memory = StoredMemory(id=name, user_id="u", kind="message", text=name)
        return MemoryHit(memory=memory, score=relevance, rank_score=fused, vector_similarity=relevance, text_score=0.0)

    # search's order (a statement before the question asking for it) is kept, not re-sorted by score
    hits = [hit("b", 0.31, 0.032), hit("c", 0.02, 0.030), hit("a", 0.04, 0.033)]
    shown = ranked_scores(hits)
    assert [(h.memory.id, score) for h, score in shown] == [("b", 0.31), ("c", 0.02), ("a", 0.04)]  # no 1.00 on top
    assert [h.weak for h, _ in shown] == [False, True, True]


def test_new_sessions_started_in_one_second_get_their_own_ids():
    ids = {new_session_id() for _ in range(50)}
    assert len(ids) == 50 and all(re.fullmatch(r"session-\d{8}-\d{6}-[0-9a-f]{6}", value) for value in ids)
