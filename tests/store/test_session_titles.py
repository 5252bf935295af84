"""Session titles: kept per user, listed with the sessions, exported, forgotten with the user."""

from __future__ import annotations

import pytest

from memlane.store.errors import InvalidInput
from memlane.store.records import Message
from memlane.store.redis.store import RedisMemoryStore


async def test_titles_are_kept_per_session_and_go_with_the_user(store: RedisMemoryStore):
    await store.add_messages([Message(id="m1", user_id="u", session_id="s1", role="user", content="hello")])
    assert await store.session_titles("u") == {}
    await store.set_session_title("u", "s1", "  Planning   a trip  ")
    await store.set_session_title("u", "s2|*", "周末去杭州")
    assert await store.session_titles("u") == {"s1": "Planning a trip", "s2|*": "周末去杭州"}
    await store.set_session_title("u", "s1", "Trip to Lisbon")  # a new title replaces the old
    assert (await store.session_titles("u"))["s1"] == "Trip to Lisbon"
    assert await store.session_titles("someone else") == {}
    with pytest.raises(InvalidInput):
        await store.set_session_title("u", "s1", "   ")

    assert (await store.export_user("u")).session_titles == {"s1": "Trip to Lisbon", "s2|*": "周末去杭州"}
    await store.delete_user("u")
    assert await store.session_titles("u") == {}


async def test_a_title_is_masked_like_every_text_the_store_keeps(store: RedisMemoryStore):
    await store.set_session_title("u", "s1", "Call me at +86 138 0013 8000")
    title = (await store.session_titles("u"))["s1"]
    assert "138 0013 8000" not in title and "[phone]" in title
