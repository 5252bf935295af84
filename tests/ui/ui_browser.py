"""Fixtures of the app tests: the app on a free loopback port, and headless Debian Chromium.

Imported by the test modules: a second conftest.py would shadow tests/conftest.py
(the tests import `from conftest import HOSTILE_IDS`)."""

from __future__ import annotations

import os
import shutil
import socket
import pytest

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


@pytest.fixture
def page(tmp_path):
    """A page in headless system Chromium (never a downloaded browser)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    executable = chromium_path()
    if executable is None:
        message = "Chromium is not installed: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI runs the browser tests; .ci/run installs it)")
        pytest.skip(message)
    with sync_api.sync_playwright() as playwright:
        # a fresh profile directory each time (Playwright passes it as --user-data-dir)
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        page = context.pages[0] if context.pages else context.new_page()
        yield page
        context.close()
