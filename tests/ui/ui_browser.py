"""Fixtures of the app tests: the app on a free loopback port, and headless Debian Chromium.

Imported by the test modules: a second conftest.py would shadow tests/conftest.py
(the tests import `from conftest import HOSTILE_IDS`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest
from conftest import drop_prefix_sync

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def launch_app():
    """launch_app(demo) serves the Blocks on a free loopback port and returns its URL."""
    from memlane.ui.app import LAUNCH_OPTIONS

    launched = []

    def launch(demo) -> str:
        port = free_port()
        demo.queue().launch(
            server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **LAUNCH_OPTIONS
        )
        launched.append(demo)
        return f"http://127.0.0.1:{port}/"

    yield launch
    for demo in launched:
        demo.close()


@contextlib.contextmanager
def served_app(redis_url: str, data_dir, *, chat_model=None, memory_model=None, **settings_fields):
    """The chat app on its own key prefix, served on a free loopback port: yields (url, demo);
    closed and its keys dropped afterwards."""
    from memlane.config import Settings
    from memlane.ui.app import LAUNCH_OPTIONS, build_app

    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url,
        key_prefix=prefix,
        data_dir=data_dir,
        openai_api_key=None,
        openai_base_url=None,
        **settings_fields,
    )
    demo = build_app(settings, chat_model=chat_model, memory_model=memory_model)
    port = free_port()
    demo.queue().launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **LAUNCH_OPTIONS
    )
    try:
        yield f"http://127.0.0.1:{port}/", demo
    finally:
        demo.close()
        drop_prefix_sync(redis_url, prefix)


@pytest.fixture
def clean_keys(settings):
    """The test's keys are removed after it (what the `store` fixture does, without an event loop)."""
    yield
    drop_prefix_sync(settings.redis_url, settings.key_prefix)


@pytest.fixture(scope="module")
def browser():
    """Headless system Chromium (never a downloaded browser), one per test module."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    executable = chromium_path()
    if executable is None:
        message = "Chromium is not installed: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI runs the browser tests; .ci/run installs it)")
        pytest.skip(message)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A page in a fresh browser context (its own storage: nothing carries over between tests)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def screenshot_dir() -> Path:
    """Where the browser tests keep their screenshots: $SCREENSHOT_DIR, else test-artifacts/screenshots."""
    return Path(os.environ.get("SCREENSHOT_DIR") or Path(__file__).parents[2] / "test-artifacts" / "screenshots")


def save_screenshot(page, name: str) -> Path:
    """A full-page PNG named `name` (a test artifact, not checked in)."""
    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
