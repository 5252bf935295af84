"""The panel's Markdown: an entry's history and an event card with its profile delta."""

from __future__ import annotations

from memlane import Event
from memlane.store.records import ProfileChange, ProfileRevision
from memlane.ui.panel import actor_label, event_markdown, history_markdown


def test_history_says_who_changed_what():
    revisions = [
        ProfileRevision(
            entry_id="e",
            user_id="u",
            action="add",
            actor="run:0123456789abcdef",
            at=0,
            topic="diet",
            subtopic="coffee",
            after_content="black | no sugar",
            after_confidence=0.9,
        ),
        ProfileRevision(
            entry_id="e",
            user_id="u",
            action="update",
            actor="user",
            at=60,
            topic="diet",
            subtopic="coffee",
            before_content="black | no sugar",
            before_confidence=0.9,
            after_content="green tea",
            after_confidence=0.6,
        ),
    ]
    table = history_markdown(revisions).splitlines()
    assert table[0] == "| when | by | change | before | after |"
    assert "memory run (event 01234567…)" in table[2] and "| — | black \\| no sugar (0.90) |" in table[2]
    assert "edited in the app" in table[3] and "green tea (0.60)" in table[3]
    assert history_markdown([]).startswith("_No history")
    assert actor_label("api:ci-key") == "API (ci-key)" and actor_label("cli") == "cli"


def test_an_event_card_lists_its_profile_delta():
    event = Event(
        id="ev1",
        user_id="u",
        summary="Switched to tea.",
        tags=["diet"],
        profile_delta=[
            ProfileChange(
                action="update",
                entry_id="e",
                topic="lifestyle",
                subtopic="diet",
                content="green tea",
                previous_content="black coffee",
            ),
            ProfileChange(action="add", entry_id="f", topic="interests", subtopic="pets", content="a cat"),
            ProfileChange(
                action="delete", entry_id="g", topic="work", subtopic="company", content="", previous_content="Acme"
            ),
        ],
    )
    card = event_markdown(event)
    assert "- updated **lifestyle / diet**: ~~black coffee~~ → green tea" in card
    assert "- added **interests / pets**: a cat" in card
    assert "- deleted **work / company**: ~~Acme~~" in card
    assert "`diet`" in card and "event:ev1" in card
