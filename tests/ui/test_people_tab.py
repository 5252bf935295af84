"""The memory panel's People tab (issue 53, item 4; ui/relations_tab.py, ui/relations_picture.py) in
headless Chromium, desktop and a 390 px phone: the user's people and places drawn as a picture,
current links solid, ended ones dashed, Chinese names drawn, a name like `<script>` shown as text
and never run; forget from the tab. Screenshots go to test-artifacts/screenshots."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import xml.etree.ElementTree as ET

from test_app import open_app
from ui_browser import browser, clean_keys, launch_app, page, save_screenshot  # noqa: F401  (pytest fixtures)

from memlane.store.redis.store import open_store
from memlane.store.relations import RelationStatement
from memlane.ui.app import build_app
from memlane.ui.relations_picture import relation_svg

DAY = 86_400.0
HOSTILE = "<script>window.pwned=1</script>"
IMG_HOSTILE = "<img src=x onerror=window.pwned=2>"
SVG = "{http://www.w3.org/2000/svg}"


def seed(settings, user_id: str) -> None:
    """alice's family, boss and a move, in English and Chinese, and two names that are markup."""

    async def write() -> None:
        store = await open_store(settings)  # the embedder the app opens with, as the index holds it
        try:
            await store.record_relations(
                user_id,
                [
                    RelationStatement(
                        subject="me",
                        predicate="sister",
                        object="Bea",
                        object_type="person",
                        valid_from=DAY,
                        exclusive=False,
                    ),
                    RelationStatement(
                        subject="Bea", predicate="lives_in", object="Lisbon", object_type="place", valid_from=2 * DAY
                    ),
                    RelationStatement(
                        subject="me", predicate="boss", object="王总", object_type="person", valid_from=3 * DAY
                    ),
                    RelationStatement(
                        subject="王总",
                        predicate="daughter",
                        object="小雨",
                        object_type="person",
                        valid_from=3 * DAY,
                        exclusive=False,
                    ),
                    RelationStatement(
                        subject="小雨", predicate="lives_in", object="杭州", object_type="place", valid_from=4 * DAY
                    ),
                    RelationStatement(subject="me", predicate="friend", object=HOSTILE, exclusive=False),
                    RelationStatement(
                        subject=HOSTILE, predicate="dog", object=IMG_HOSTILE, object_type="pet", exclusive=False
                    ),
                ],
            )
            await store.record_relations(
                user_id,
                [
                    RelationStatement(
                        subject="Bea", predicate="lives_in", object="Porto", object_type="place", valid_from=9 * DAY
                    )
                ],
            )
        finally:
            await store.aclose()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # a loop of its own: the test's may be running
        thread.submit(asyncio.run, write()).result()


def picture_of(page) -> ET.Element:
    """The SVG the tab's <img> shows, parsed (it must be well-formed XML, every name escaped)."""
    source = page.locator("#people-picture img").get_attribute("src")
    assert source.startswith("data:image/svg+xml;base64,")
    return ET.fromstring(base64.b64decode(source.split(",", 1)[1]).decode("utf-8"))


def open_people_tab(page) -> None:
    tab = page.get_by_role("tab", name="People")
    if not tab.is_visible():  # the tabs that do not fit (on a phone) wait behind Gradio's "More tabs"
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text="People").click()
    else:
        tab.click()
    page.locator("#people-picture img").wait_for(timeout=20_000)


def test_the_people_tab_draws_the_graph_and_forgets(settings, clean_keys, launch_app, browser):  # noqa: F811
    seed(settings, "alice")
    url = launch_app(build_app(settings))
    desktop = browser.new_context(viewport={"width": 1400, "height": 900})
    page = desktop.new_page()
    try:
        open_app(page, url, "alice")
        page.wait_for_timeout(500)
        open_people_tab(page)
        page.locator("#people-picture").scroll_into_view_if_needed()
        save_screenshot(page, "ui-people-graph")
        svg = picture_of(page)
        names = {
            text.text
            for group in svg.iter(f"{SVG}g")
            if group.get("class") == "entity"
            for text in group.iter(f"{SVG}text")
        }
        assert {"Bea", "Porto", "Lisbon", "王总", "小雨", "杭州", "me · 我"} <= names
        assert any(name and name.startswith("<script>") for name in names)  # drawn as text
        links = [group for group in svg.iter(f"{SVG}g") if (group.get("class") or "").startswith("link")]
        ended = [group for group in links if group.get("data-state") == "ended"]
        assert len(ended) == 1 and ended[0].find(f"{SVG}line").get("stroke-dasharray")  # Lisbon, dashed
        assert all(group.find(f"{SVG}line").get("stroke-dasharray") is None for group in links if group not in ended)
        labels = {group.find(f"{SVG}text").text for group in links}
        assert "sister · 姐姐" in labels and "boss · 上司" in labels and "daughter · 女儿" in labels
        # the CJK names are drawn with a font that has them (not tofu): their width is that of glyphs
        widths = page.evaluate(
            """() => { const c = document.createElement('canvas').getContext('2d');
                       c.font = "13px 'WenQuanYi Zen Hei', sans-serif";
                       return [c.measureText('王总小雨').width, c.measureText('\\u{10FFFF}\\u{10FFFE}').width]; }"""
        )
        assert widths[0] > 30, widths
        assert page.evaluate("() => window.pwned") is None  # neither markup name ran
        assert page.locator("#people-picture script").count() == 0
        assert page.locator("#people-picture img").count() == 1

        # forget a link by its id, then a person with her links
        details = page.locator("#people-picture details")
        details.locator("summary").click()
        lisbon = next(
            line.split()[0] for line in details.inner_text().splitlines() if "Lisbon" in line and "relation:" in line
        )
        page.locator("#people-target textarea, #people-target input").first.fill(lisbon)
        page.locator("#people-forget").click()
        page.wait_for_function("() => document.querySelector('#people-note').innerText.includes('forgot relation:')")
        page.locator("#people-target textarea, #people-target input").first.fill("bea")
        page.locator("#people-forget").click()
        page.wait_for_function("() => document.querySelector('#people-note').innerText.includes('forgot bea and 2')")
        page.wait_for_timeout(300)
        svg = picture_of(page)
        assert "Bea" not in {text.text for text in svg.iter(f"{SVG}text")}
        page.locator("#people-target textarea, #people-target input").first.fill("nobody")
        page.locator("#people-forget").click()
        page.wait_for_function("() => document.querySelector('#people-note').innerText.includes('nothing named')")
        save_screenshot(page, "ui-people-graph-after-forget")
        # another user on the same tab: her picture (none), never alice's
        page.locator("#user textarea").fill("bob")
        page.locator("#user textarea").press("Enter")
        page.wait_for_function("() => document.querySelector('#people-picture').innerText.includes('no people')")
        assert page.locator("#people-picture img").count() == 0
    finally:
        desktop.close()

    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = phone.new_page()
    try:
        open_app(page, url, "alice")
        page.wait_for_timeout(500)
        open_people_tab(page)
        page.locator("#people-picture").scroll_into_view_if_needed()
        save_screenshot(page, "ui-phone-people-graph")
        box = page.locator("#people-picture img").bounding_box()
        assert box["width"] <= 390 and box["height"] > 100, box  # scaled to the phone, not cut
        widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1] + 1, f"the page scrolls sideways: {widths}"
    finally:
        phone.close()


def test_the_picture_escapes_every_name_and_stays_well_formed():
    from memlane.store.relations import Entity, Relation, entity_id

    names = ["user", HOSTILE, IMG_HOSTILE, 'a"b&c', "</svg><script>x</script>"]
    entities = [Entity(id=entity_id(name), name=name, aliases=["<b>"]) for name in names]
    relations = [
        Relation(id=f"r{index}", subject=entity_id("user"), predicate="friend", object=entity_id(name), valid_from=DAY)
        for index, name in enumerate(names[1:])
    ]
    svg = relation_svg(entities, relations, as_of=2 * DAY)
    root = ET.fromstring(svg)  # well-formed: no name closed a tag
    assert not [element for element in root.iter() if element.tag.endswith("script") or element.tag.endswith("img")]
    drawn = {text.text for text in root.iter(f"{SVG}text")}
    assert 'a"b&c' in drawn and any(text.startswith("<img src=x") for text in drawn)  # as text, cut to 18
