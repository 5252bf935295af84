"""The memory panel's review tab (issue 54), its handlers called alone on the real store (no browser):
the facts a memory run held under memory_min_confidence are listed; confirm puts one in the profile
table, drop forgets one; an empty or unknown id says so and changes nothing. build_app lays the tab out."""

from __future__ import annotations

import gradio as gr

from memlane.store.records import MemoryUpdate, ProfileEntry
from memlane.ui.app import build_app
from memlane.ui.handlers import ChatApp, panel
from memlane.ui.review import confirm_held, drop_held, review_list
from memlane.ui.service import ChatService


async def test_the_review_tab_lists_confirms_and_drops_held_facts(store, settings):
    held = [
        ProfileEntry(
            user_id="u", topic="interests", subtopic="music", content="might take up the cello", confidence=0.1
        ),
        ProfileEntry(user_id="u", topic="阅读", subtopic="书", content="也许喜欢科幻小说", confidence=0.2),
    ]
    await store.apply_update(MemoryUpdate(user_id="u", held_profile=held))  # what a run writes under the floor
    app = ChatApp(ChatService(settings, store=store))

    table, ids, note = await review_list(app, "u")
    assert note == "2 facts held for review" and len(ids) == 2
    assert {(row["slot"], row["content"], row["confidence"]) for row in table.to_dict("records")} == {
        ("interests / music", "might take up the cello", "0.10"),
        ("阅读 / 书", "也许喜欢科幻小说", "0.20"),
    }
    assert (await review_list(app, "someone else"))[2] == "no facts held for review"
    cello = ids[[row["content"] for row in table.to_dict("records")].index("might take up the cello")]
    books = next(held_id for held_id in ids if held_id != cello)

    assert (await confirm_held(app, "u", ""))[2] == "click a row (or paste a held fact's id) first"
    assert (await drop_held(app, "u", "nope"))[2] == "no fact 'nope' is held for review"
    table, ids, note = await confirm_held(app, "u", cello)
    assert note == "confirmed: interests / music: might take up the cello" and ids == [books]
    _, profile, *_ = await panel(app, "u")
    assert list(profile["content"]) == ["might take up the cello"]
    table, ids, note = await drop_held(app, "u", books)
    assert note == f"dropped {books}" and ids == [] and table.empty
    assert [entry.content for entry in await store.get_profile("u")] == ["might take up the cello"]


def test_the_app_has_the_review_tab(store, settings):
    demo = build_app(settings, store=store)
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert {"review-tab", "review", "confirm-held", "drop-held"} <= ids
    assert any(isinstance(block, gr.Tab) and block.label == "Review" for block in demo.blocks.values())
