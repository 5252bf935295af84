"""The memory made visible, in headless Chromium: the memories each reply used, profile
edits with their history, sessions by title, a topic shift closing an event, a run's steps
on the graph, and the offline sample. One app serves the module; each test has its own user.
Screenshots go to test-artifacts/screenshots (or $SCREENSHOT_DIR)."""

from __future__ import annotations

import asyncio
import time

import pytest
from memory_graph_helpers import memory_rules
from scripted import ScriptedChatModel
from test_app import bot_texts, open_app, send_and_wait, wait_for_text
from ui_browser import browser, page, save_screenshot, served_app  # noqa: F401  (pytest fixtures)

from memlane.ui.sample import SAMPLE_USER

REPLY = "Noted."


def title_of(messages) -> str:
    text = "\n".join(str(m.content) for m in messages)
    return '{"title": "Trail running on Sundays"}' if "trails" in text else '{"title": "A chat"}'


def topic_of(messages) -> str:
    text = "\n".join(str(m.content) for m in messages)
    new_message = text.split("New message:", 1)[-1]
    return '{"related": false}' if "cat" in new_message else '{"related": true}'


def memory_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        rules=[
            ("session_title", title_of),
            ("topic_shift", topic_of),
            ("session_summary", '{"summary": "running on Sundays"}'),
            *memory_rules(
                summary="The user runs trails on Sundays, mostly hill repeats.",
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


@pytest.fixture(scope="module")
def app_url(redis_url: str, tmp_path_factory):
    with served_app(
        redis_url,
        tmp_path_factory.mktemp("app-memory") / "data",
        chat_model=ScriptedChatModel(default=REPLY, chunk_size=3),
        memory_model=memory_model(),
        llm_timeout_seconds=5.0,
        llm_max_retries=0,
        memory_buffer_tokens=100_000,  # runs come from topic shifts, Remember now and the sample only
    ) as (url, demo):
        demo.memlane_service.sample_delay = 0.3  # each step stays on screen for a poll or two
        yield url, demo


def load_the_sample(page, url: str) -> None:
    open_app(page, url, "someone")
    page.get_by_role("button", name="Load a sample conversation").click()
    page.wait_for_function(
        "(user) => document.querySelector('#user textarea').value === user", arg=SAMPLE_USER, timeout=5_000
    )
    wait_for_text(page, "#profile", "Maya", 30_000)
    page.wait_for_function(
        "() => /sample loaded|already loaded/.test(document.querySelector('#memory-status').innerText)", timeout=30_000
    )


def test_the_sample_fills_the_panel_and_shows_each_step(app_url, page):
    url, _ = app_url
    open_app(page, url, "someone")
    page.get_by_role("tab", name="Memory graph").click()
    page.get_by_role("button", name="Load a sample conversation").click()

    # the step in progress: in the status line and on the diagram
    wait_for_text(page, "#memory-status", "step:", 20_000)
    page.wait_for_function(
        "() => (document.querySelector('#memory-graph img')?.dataset.running || '') !== ''", timeout=20_000
    )
    assert "step in progress:" in page.locator("#memory-graph").inner_text()
    save_screenshot(page, "ui-memory-graph-step-in-progress")

    wait_for_text(page, "#memory-status", "sample loaded", 30_000)
    wait_for_text(page, "#memory-graph", "last run: truncate", 10_000)
    page.get_by_role("tab", name="Profile").click()
    wait_for_text(page, "#profile", "Maya", 10_000)
    assert "上周领养了一只叫小米的橘猫" in page.locator("#profile").inner_text()
    # the latest sample chat is shown, its session listed by title
    page.wait_for_function("() => document.querySelector('#session input').value.startsWith('示例')", timeout=10_000)
    users = page.evaluate(
        "() => [...document.querySelectorAll('#chat [data-testid=\"user\"]')].map(u => u.innerText.trim())"
    )
    assert users[0] == "最近我把咖啡戒了，改喝绿茶，睡得好多了。"
    page.locator("#session input").click()
    page.get_by_role("option", name="Sample: night shifts, coffee and a half marathon").wait_for(timeout=5_000)
    page.keyboard.press("Escape")
    save_screenshot(page, "ui-sample-profile")

    # the timeline says what each event changed, not only its tags
    page.get_by_role("tab", name="Timeline").click()
    wait_for_text(page, "#timeline", "updated lifestyle / diet", 5_000)
    timeline = page.locator("#timeline").inner_text()
    assert "drinks a lot of black coffee without sugar" in timeline and "戒了咖啡，改喝绿茶" in timeline
    assert "added interests / pets" in timeline
    save_screenshot(page, "ui-timeline-profile-delta")


def test_a_reply_shows_the_memories_it_used_folded(app_url, page):
    url, demo = app_url
    load_the_sample(page, url)
    send_and_wait(page, "What should I drink before a night shift?", 2, REPLY)

    block = page.locator("#chat").get_by_text("Memories used:")
    block.wait_for(timeout=10_000)
    assert "profile line" in block.inner_text()
    chat_text = page.locator("#chat").inner_text()
    assert "basic_info / name: Maya" not in chat_text  # folded by default
    block.click()
    wait_for_text(page, "#chat", "basic_info / name: Maya", 5_000)
    assert "confidence" in page.locator("#chat").inner_text()
    page.locator("#chat").get_by_text("basic_info / name: Maya").scroll_into_view_if_needed()
    save_screenshot(page, "ui-memories-used")

    # the block is shown, never sent back to the model as part of the conversation
    send_and_wait(page, "Thanks!", 4, REPLY)
    reply_call = next(call for call in reversed(demo.memlane_service.chat_model.calls) if call[-1].text == "Thanks!")
    sent = [m.text for m in reply_call if m.type in ("human", "ai")]
    assert not any("Memories used" in text or "basic_info / name" in text for text in sent)
    page.wait_for_function(  # the second reply has its own block
        "() => [...document.querySelectorAll('#chat [data-testid=\"bot\"]')].length === 6", timeout=10_000
    )
    assert bot_texts(page)[-1].startswith("Memories used")


def test_editing_a_profile_entry_shows_its_history(app_url, page):
    url, _ = app_url
    load_the_sample(page, url)
    page.locator("#profile").get_by_text("上周领养了一只叫小米的橘猫").click()
    page.wait_for_function(  # the editor opens on the clicked entry
        "() => document.querySelector('#edit-content textarea')?.value.includes('小米')", timeout=10_000
    )
    content = page.locator("#edit-content textarea")
    wait_for_text(page, "#entry-history", "memory run", 5_000)

    content.fill("adopted an orange cat called Xiaomi last week")
    slider = page.locator("#edit-confidence input[type=number]")
    slider.fill("0.7")
    slider.press("Enter")
    page.get_by_role("button", name="Save edit").click()
    wait_for_text(page, "#profile", "adopted an orange cat called Xiaomi", 10_000)
    wait_for_text(page, "#entry-history", "edited in the app", 10_000)
    history = page.locator("#entry-history").inner_text()
    assert (
        "上周领养了一只叫小米的橘猫 (0.90)" in history
        and "adopted an orange cat called Xiaomi last week (0.70)" in history
    )
    wait_for_text(page, "#memory-status", "edited interests / pets", 5_000)
    save_screenshot(page, "ui-profile-edit-history")


def wait_for_new_session(page, gradio_calls: list[str]) -> None:
    """The session field shows the session "New session" started; on a timeout, what it shows
    instead and the app's last calls (it failed in 1 of 4 clean-clone CI runs while a user switch
    answering after "New session" put the old session back)."""
    try:
        page.wait_for_function(
            "() => document.querySelector('#session input').value.startsWith('session-')", timeout=30_000
        )
    except Exception:
        shown = page.evaluate("() => document.querySelector('#session input').value")
        save_screenshot(page, "ui-new-session-not-shown")
        raise AssertionError(
            f"after New session the field shows {shown!r}; the app's last calls:\n" + "\n".join(gradio_calls[-40:])
        ) from None


def test_sessions_get_titles_and_a_topic_shift_closes_an_event(app_url, page):
    url, _ = app_url
    gradio_calls: list[str] = []  # when each of the app's calls answered, for a failure's report
    page.on(
        "response",
        lambda response: (
            gradio_calls.append(
                f"{time.monotonic():.2f} {response.status} {response.url.split('/gradio_api/')[-1][:60]}"
            )
            if "/gradio_api/" in response.url
            else None
        ),
    )
    open_app(page, url, "runner")
    page.get_by_role("button", name="New session").click()
    wait_for_new_session(page, gradio_calls)
    send_and_wait(page, "I run trails on Sundays", 0, REPLY)
    # titled once after the first exchange, off the reply path
    page.wait_for_function(
        "() => document.querySelector('#session input').value === 'Trail running on Sundays'", timeout=15_000
    )
    send_and_wait(page, "Mostly hill repeats, actually", 1, REPLY)
    page.get_by_role("tab", name="Timeline").click()
    assert "No events yet" in page.locator("#timeline").inner_text()

    send_and_wait(page, "By the way, I adopted a cat named Miso", 2, REPLY)
    wait_for_text(page, "#timeline", "runs trails on Sundays", 20_000)  # the earlier turns, as their own event
    assert "Miso" not in page.locator("#timeline").inner_text()
    wait_for_text(page, "#memory-status", "remembered:", 10_000)
    save_screenshot(page, "ui-topic-shift-event")

    page.get_by_role("button", name="New session").click()
    wait_for_new_session(page, gradio_calls)
    page.locator("#session input").click()
    page.get_by_role("option", name="Trail running on Sundays").wait_for(timeout=5_000)
    save_screenshot(page, "ui-sessions-by-title")


def test_new_session_clicked_before_the_user_switch_answers_is_kept(app_url, page, monkeypatch):
    """Enter in the user field, then "New session" at once: the switch (sent twice, by submit
    and by the field's blur) answers last, and the new session and its empty chat stay."""
    url, demo = app_url
    service = demo.memlane_service
    history = service.history
    switches: list[float] = []

    async def slow_history(user_id: str, session_id: str):
        if user_id == "hasty":
            switches.append(time.monotonic())
            await asyncio.sleep(1.5)  # the user's switch answers after "New session" has
        return await history(user_id, session_id)

    monkeypatch.setattr(service, "history", slow_history)
    open_app(page, url, "hasty")  # its last step presses Enter in the user field
    page.get_by_role("button", name="New session").click()
    wait_for_new_session(page, [])
    started = page.evaluate("() => document.querySelector('#session input').value")
    page.wait_for_timeout(2_500)  # the switch's answer has come (and gone)
    assert switches, "the user's switch never ran"
    assert page.evaluate("() => document.querySelector('#session input').value") == started
    assert bot_texts(page) == []
    assert len(switches) == 1, "the blur after Enter switched to the same user again"
    send_and_wait(page, "Hello from the new session", 0, REPLY)
    save_screenshot(page, "ui-new-session-kept-after-a-slow-switch")


def test_a_message_sent_while_the_user_switch_is_on_its_way_is_the_new_users_alone(app_url, page, monkeypatch):
    """Another user typed, Enter, and a message at once, before the switch answers: the reply
    waits for the switch, follows the new user's own chat, and neither the model nor the new
    user's history gets the previous user's chat still on screen."""
    url, demo = app_url
    service = demo.memlane_service
    history = service.history

    async def slow_history(user_id: str, session_id: str):
        if user_id == "late-bob":
            await asyncio.sleep(1.5)  # the switch to Bob answers after his message was sent
        return await history(user_id, session_id)

    open_app(page, url, "early-ann")
    send_and_wait(page, "Ann here, my locker code is 4321", 0, REPLY)
    monkeypatch.setattr(service, "history", slow_history)
    page.locator("#user textarea").fill("late-bob")
    page.locator("#user textarea").press("Enter")
    page.locator("#message textarea").fill("Bob here, hello")
    page.locator("#message textarea").press("Enter")
    page.wait_for_function(  # Bob's message alone, answered
        """(reply) => { const users = [...document.querySelectorAll('#chat [data-testid="user"]')].map(u => u.innerText.trim());
                        const bots = [...document.querySelectorAll('#chat [data-testid="bot"]')];
                        return users.length === 1 && users[0] === 'Bob here, hello' && bots.length === 1 && bots[0].innerText.trim() === reply; }""",
        arg=REPLY,
        timeout=20_000,
    )
    page.wait_for_timeout(1_000)  # nothing else lands on the chat
    assert bot_texts(page) == [REPLY]
    reply_call = next(call for call in reversed(service.chat_model.calls) if call[-1].text == "Bob here, hello")
    assert not any("4321" in str(message.content) for message in reply_call), "Ann's chat went to the model as Bob's"
    monkeypatch.setattr(service, "history", history)
    page.reload()  # Bob's latest session, as stored
    page.locator("#message textarea").wait_for(timeout=20_000)
    page.wait_for_function("() => document.querySelector('#user textarea').value === 'late-bob'", timeout=20_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#chat [data-testid=\"user\"]')].some(u => u.innerText.includes('Bob here'))",
        timeout=10_000,
    )
    assert "4321" not in page.locator("#chat").inner_text(), "Ann's chat was stored as Bob's"
    save_screenshot(page, "ui-switch-then-send-at-once")


def test_new_session_clicked_while_a_reply_streams_gets_an_empty_chat(app_url, page, monkeypatch):
    """The reply streaming when "New session" is clicked stays off the new session's chat, and
    is still saved in its own session (back on screen after a reload)."""
    url, demo = app_url
    monkeypatch.setattr(demo.memlane_service.chat_model, "chunk_delay", 0.8)  # "Noted." in 2 pieces, 1.6 s
    open_app(page, url, "mid-stream-mia")
    page.locator("#message textarea").fill("I am training for a marathon")
    page.locator("#message textarea").press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#chat [data-testid=\"bot\"]')].some(b => b.innerText.trim() === 'Not')",
        timeout=20_000,
    )
    page.get_by_role("button", name="New session").click()
    wait_for_new_session(page, [])
    page.wait_for_timeout(2_000)  # the reply has ended meanwhile
    assert (
        page.evaluate(
            '() => document.querySelectorAll(\'#chat [data-testid="user"], #chat [data-testid="bot"]\').length'
        )
        == 0
    )
    assert page.evaluate("() => document.querySelector('#session input').value").startswith("session-")
    save_screenshot(page, "ui-new-session-while-a-reply-streams")
    page.reload()  # the user's latest session with messages: the one the reply went to
    page.locator("#message textarea").wait_for(timeout=20_000)
    page.wait_for_function("() => document.querySelector('#user textarea').value === 'mid-stream-mia'", timeout=20_000)
    page.wait_for_function(
        "(reply) => [...document.querySelectorAll('#chat [data-testid=\"bot\"]')].some(b => b.innerText.trim() === reply)",
        arg=REPLY,
        timeout=10_000,
    )
    assert "I am training for a marathon" in page.locator("#chat").inner_text()
