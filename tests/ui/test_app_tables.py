"""The memory panel's tables in headless Chromium: short ids, dates on one line, enough rows
in view, and search hits whose shown score falls with their order. Screenshots go to
test-artifacts/screenshots (or $SCREENSHOT_DIR)."""

from __future__ import annotations

import re

import pytest
from test_app import open_app, wait_for_text
from ui_browser import browser, page, save_screenshot, served_app  # noqa: F401  (pytest fixtures)

from memlane.ui.sample import SAMPLE_USER


@pytest.fixture(scope="module")
def app_url(redis_url: str, tmp_path_factory):
    with served_app(redis_url, tmp_path_factory.mktemp("app-tables") / "data") as (url, demo):
        demo.memlane_service.sample_delay = 0.0
        yield url


# each row of a table (Gradio draws rows as [role=row] divs): its cells' text, size and line height
CELLS = """(selector) => [...document.querySelectorAll(selector + ' .virtual-row')].map(row =>
    [...row.querySelectorAll('[role=gridcell]')].map(cell => {
        const box = cell.getBoundingClientRect();
        const span = cell.querySelector('span') || cell;  // the text itself: its height counts its lines
        const line = parseFloat(getComputedStyle(span).lineHeight) || 20;
        const text = span.getBoundingClientRect();
        return {text: cell.innerText.trim(), width: box.width, height: text.height, line: line, top: box.top, bottom: box.bottom};
    }))"""


def column(rows: list[list[dict]], headers: list[str], name: str) -> list[dict]:
    index = headers.index(name)
    return [row[index] for row in rows if len(row) > index]


def headers_of(page, selector: str) -> list[str]:
    return page.evaluate(
        f"() => [...document.querySelectorAll('{selector} thead th')].map(th => th.innerText.trim().toLowerCase())"
    )


def assert_on_one_line(cells: list[dict], what: str) -> None:
    for cell in cells:
        assert cell["text"], f"an empty {what} cell"
        # one line of text, not one character per line
        assert cell["height"] < 1.6 * cell["line"], f"the {what} cell {cell['text']!r} wraps: {cell}"


def test_the_tables_read_well(app_url, page):
    open_app(page, app_url, "someone")
    page.get_by_role("button", name="Load a sample conversation").click()
    page.wait_for_function(
        "(user) => document.querySelector('#user textarea').value === user", arg=SAMPLE_USER, timeout=10_000
    )
    wait_for_text(page, "#memory-status", "sample loaded", 60_000)
    wait_for_text(page, "#profile", "Maya", 10_000)

    save_screenshot(page, "ui-profile-table")
    headers = headers_of(page, "#profile")
    rows = page.evaluate(CELLS, "#profile")
    assert len(rows) >= 6, f"the sample has more profile entries than {len(rows)}"
    ids, dates = column(rows, headers, "id"), column(rows, headers, "since")
    assert_on_one_line(ids, "id")
    assert_on_one_line(dates, "since")
    assert all(len(cell["text"]) <= 20 for cell in ids), [cell["text"] for cell in ids]
    # at least six rows are in view inside the table, not three
    box = page.locator("#profile").bounding_box()
    in_view = [row for row in rows if row and row[0]["bottom"] <= box["y"] + box["height"]]
    assert len(in_view) >= 6, f"{len(in_view)} profile rows in view"

    page.get_by_role("tab", name="Search").click()
    page.locator("#search-query textarea, #search-query input").first.fill("咖啡 睡眠 跑步")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_function(
        "() => document.querySelectorAll('#search-results .virtual-row').length >= 4", timeout=20_000
    )
    page.wait_for_timeout(300)
    save_screenshot(page, "ui-search-table")
    headers = headers_of(page, "#search-results")
    rows = page.evaluate(CELLS, "#search-results")
    shown = [cell["text"] for cell in column(rows, headers, "score")]
    scores = [float(text.split()[0]) for text in shown]
    assert all(text.endswith(" weak") == (score < 0.1) for text, score in zip(shown, scores)), shown  # weak says so
    assert scores[0] < 1.0  # never relative to the best hit
    assert len(scores) >= 4 and scores == sorted(scores, reverse=True), (
        f"the order and the shown scores disagree: {scores}"
    )
    assert_on_one_line(column(rows, headers, "id"), "id")
    said = column(rows, headers, "when")  # every hit shows when it was said, on one line
    assert_on_one_line(said, "when")
    assert all(re.fullmatch(r"\d\d-\d\d \d\d:\d\d", cell["text"]) for cell in said), [cell["text"] for cell in said]


# each header cell of a table: its text, and whether the text is cut (wider than the cell shows)
HEADER_FIT = """(selector) => [...document.querySelectorAll(selector + ' thead th')].map(th => {
    const box = th.getBoundingClientRect();
    const text = th.querySelector('span') || th;
    const range = document.createRange();
    range.selectNodeContents(text);
    const inner = range.getBoundingClientRect();
    return {text: th.innerText.trim(), width: box.width, textWidth: inner.width, left: box.left, right: box.right,
            textLeft: inner.left, textRight: inner.right, clipped: text.scrollWidth > text.clientWidth + 1};
})"""


def assert_headers_read(page, selector: str) -> None:
    """Every header of the table reads whole: not cut ("conf" drawn as "cc"); a table wider than
    the phone scrolls sideways inside its frame, never the page."""
    headers = page.evaluate(HEADER_FIT, selector)
    assert headers, f"{selector} has no header"
    for header in headers:
        assert header["text"], header
        assert not header["clipped"] and header["textRight"] <= header["right"] + 1, f"{selector}: cut {header}"
        assert header["textLeft"] >= header["left"] - 1, f"{selector}: cut {header}"
    page_width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert page_width[0] <= page_width[1] + 1, f"the page scrolls sideways: {page_width}"
    frame = page.evaluate(
        "(s) => { const v = document.querySelector(s + ' .virtual-table-viewport');"
        " return [v.scrollWidth, v.clientWidth, getComputedStyle(v).overflowX]; }",
        selector,
    )
    assert frame[0] <= frame[1] + 1 or frame[2] in ("auto", "scroll"), f"{selector} is cut, not scrolled: {frame}"


def scroll_table_right(page, selector: str) -> None:
    page.evaluate(
        "(s) => { const v = document.querySelector(s + ' .virtual-table-viewport'); v.scrollLeft = v.scrollWidth; }",
        selector,
    )
    page.wait_for_timeout(200)


def test_the_tables_read_on_a_phone(app_url, browser):
    """Issue 55, item 6: at 390 px wide (a phone) the profile table's `conf` header was cut to "cc"."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    try:
        open_app(page, app_url, "someone-on-a-phone")
        page.get_by_role("button", name="Load a sample conversation").click()
        page.wait_for_function(
            "(user) => document.querySelector('#user textarea').value === user", arg=SAMPLE_USER, timeout=10_000
        )
        page.wait_for_function(  # the module's other test may have loaded it first
            "() => /sample loaded|already loaded/.test(document.querySelector('#memory-status').innerText)",
            timeout=60_000,
        )
        wait_for_text(page, "#profile", "Maya", 10_000)
        page.locator("#profile").scroll_into_view_if_needed()
        save_screenshot(page, "ui-phone-profile-table")
        assert headers_of(page, "#profile") == ["entry", "content", "conf", "since", "id"]
        assert_headers_read(page, "#profile")
        rows = page.evaluate(CELLS, "#profile")
        headers = headers_of(page, "#profile")
        assert_on_one_line(column(rows, headers, "conf"), "conf")
        assert_on_one_line(column(rows, headers, "id"), "id")
        assert_on_one_line(column(rows, headers, "since"), "since")
        scroll_table_right(page, "#profile")
        save_screenshot(page, "ui-phone-profile-table-scrolled")

        page.get_by_role("tab", name="Search").click()
        page.locator("#search-query textarea, #search-query input").first.fill("咖啡 睡眠 跑步")
        page.get_by_role("button", name="Search", exact=True).click()
        page.wait_for_function(
            "() => document.querySelectorAll('#search-results .virtual-row').length >= 4", timeout=20_000
        )
        page.wait_for_timeout(300)
        page.locator("#search-results").scroll_into_view_if_needed()
        save_screenshot(page, "ui-phone-search-table")
        assert_headers_read(page, "#search-results")
        rows = page.evaluate(CELLS, "#search-results")
        headers = headers_of(page, "#search-results")
        assert_on_one_line(column(rows, headers, "score"), "score")
        assert_on_one_line(column(rows, headers, "when"), "when")
        scroll_table_right(page, "#search-results")
        save_screenshot(page, "ui-phone-search-table-scrolled")
    finally:
        context.close()
