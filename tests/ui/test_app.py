"""The app end to end in headless Chromium: the reply streams in pieces, then the profile
panel fills in once the background memory run lands."""

from __future__ import annotations

import time
from pathlib import Path

from ui_browser import launch_app, page  # noqa: F401  (pytest fixtures)
from memory_graph_helpers import memory_rules
from scripted import ScriptedChatModel

from memlane.ui.app import build_app

ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"
REPLY = "Noted: black coffee without sugar, and late nights around 2 am. I will keep that in mind."
FACTS = [
    {"topic": "lifestyle", "subtopic": "diet", "content": "drinks black coffee without sugar", "confidence": 0.95, "messages": [1]},
    {"topic": "lifestyle", "subtopic": "sleep_schedule", "content": "goes to bed around 2 am", "confidence": 0.8, "messages": [1]},
]


def scripted_models():
    chat = ScriptedChatModel(default=REPLY, rules=[("zzz-never", "")], chunk_size=3, chunk_delay=0.04)
    rolling = ("TASK: update the rolling summary", '{"summary": "The user talked about coffee and sleep."}')
    memory = ScriptedChatModel(
        rules=[rolling, *memory_rules(summary="Drinks black coffee without sugar; sleeps around 2 am.", facts=FACTS, tags=["coffee", "sleep"])]
    )
    return chat, memory


def bot_text(page) -> str:
    return page.evaluate(
        """() => { const bots = document.querySelectorAll('#chat [data-testid="bot"]');
                   return bots.length ? bots[bots.length - 1].innerText : ''; }"""
    )


def wait_for_text(page, selector: str, text: str, timeout_ms: int) -> None:
    page.wait_for_function(
        "([selector, text]) => (document.querySelector(selector)?.innerText || '').includes(text)",
        arg=[selector, text],
        timeout=timeout_ms,
    )


def test_chat_streams_then_the_profile_panel_updates(settings, store, launch_app, page):
    chat, memory = scripted_models()
    app_settings = settings.model_copy(update={"memory_buffer_tokens": 1, "llm_timeout_seconds": 10.0})
    url = launch_app(build_app(app_settings, chat_model=chat, memory_model=memory))

    page.goto(url)
    page.locator("#message textarea").wait_for(timeout=20_000)
    page.locator("#user textarea").fill("ui-user")
    page.locator("#user textarea").press("Enter")
    page.locator("#message textarea").fill("I drink black coffee without sugar and I go to bed around 2 am.")
    page.locator("#message textarea").press("Enter")

    seen: list[str] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = bot_text(page)
        if text and (not seen or text != seen[-1]):
            seen.append(text)
        if text.strip() == REPLY:
            break
        time.sleep(0.02)
    assert seen and seen[-1].strip() == REPLY, seen[-3:]
    partial = [text for text in seen if REPLY.startswith(text.strip()) and text.strip() != REPLY]
    assert len(partial) >= 3, f"the reply arrived in {len(seen)} piece(s): {seen}"

    wait_for_text(page, "#profile", "drinks black coffee without sugar", 30_000)
    wait_for_text(page, "#memory-status", "remembered:", 10_000)
    assert "goes to bed around 2 am" in page.locator("#profile").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui-chat-and-profile.png"), full_page=True)

    # clicking a row puts its full id in the delete box; deleting removes that entry only
    page.locator("#profile").get_by_text("goes to bed around 2 am").click()
    page.wait_for_function(
        "() => /^profile:[0-9a-f]{16,}$/.test(document.querySelector('#entry-id textarea, #entry-id input')?.value || '')",
        timeout=5_000,
    )
    entry_id = page.locator("#entry-id textarea, #entry-id input").first.input_value()
    assert entry_id.startswith("profile:") and "…" not in entry_id
    page.get_by_role("button", name="Delete entry").click()
    page.wait_for_function(
        "() => !document.querySelector('#profile').innerText.includes('goes to bed around 2 am')", timeout=10_000
    )
    assert "drinks black coffee without sugar" in page.locator("#profile").inner_text()

    # the timeline shows the event card with its tags
    page.get_by_role("tab", name="Timeline").click()
    wait_for_text(page, "#timeline", "sleeps around 2 am", 5_000)
    assert "coffee" in page.locator("#timeline").inner_text()


def test_without_a_model_the_app_says_how_to_configure_one(settings, store, launch_app, page):
    url = launch_app(build_app(settings))  # the settings fixture configures no endpoint
    page.goto(url)
    page.locator("#message textarea").wait_for(timeout=20_000)
    assert "OPENAI_BASE_URL" in page.locator("#no-model").inner_text()
    page.locator("#message textarea").fill("hello?")
    page.locator("#send").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#chat [data-testid=\"bot\"]')].some(b => b.innerText.includes('OPENAI_API_KEY'))",
        timeout=10_000,
    )
    page.get_by_role("tab", name="Search").click()
    page.locator("#search-query textarea").fill("coffee")
    page.locator("#search-query textarea").press("Enter")
    wait_for_text(page, "#search-results", "score", 5_000)  # the panel answers without a model
