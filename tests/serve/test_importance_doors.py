"""Importance through the memories API and MCP (issue 54): a note or a profile entry carries the
importance its caller gives (0..1, 0.5 when unset), shown back and weighed by search; anything
else is a 422 (a tool error over MCP) and nothing is stored."""

from __future__ import annotations

from urllib.parse import quote

import httpx
from test_mcp import SERVE_CONFIG, http_client, serving, text

from memlane.serve.app import create_app
from memlane.serve.config import store_user_id


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


async def test_the_memories_api_keeps_importance_and_search_weighs_it(store, settings):
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        memories = user_path("alice") + "/memories"
        for nonsense in [1.5, -0.1, "high", {"level": 1}]:
            refused = await http.post(memories, json={"text": "the launch is in May", "importance": nonsense})
            assert refused.status_code == 422 and "importance" in refused.text, (nonsense, refused.text)
        bad_entry = {"topic": "work", "subtopic": "launch", "content": "in May", "importance": 2}
        assert (await http.post(user_path("alice") + "/profile", json=bad_entry)).status_code == 422
        alice = store_user_id("acme", "alice")
        assert await store.list_events(alice) == [] and await store.get_profile(alice) == []  # nothing stored
        plain = await http.post(memories, json={"text": "发布会在五月的第一周"})
        assert plain.status_code == 201 and plain.json()["importance"] == 0.5
        marked = await http.post(memories, json={"text": "发布会在五月的第二周", "importance": 0.9})
        assert marked.status_code == 201 and marked.json()["importance"] == 0.9
        found = await http.post(user_path("alice") + "/search", json={"query": "发布会在五月哪一周？", "limit": 2})
        assert [hit["memory"]["text"] for hit in found.json()["data"]][0] == "发布会在五月的第二周"
        entry_in = {"topic": "work", "subtopic": "launch", "content": "launch moves to May", "importance": 0.8}
        entry = await http.post(user_path("alice") + "/profile", json=entry_in)
        assert entry.status_code == 201 and entry.json()["importance"] == 0.8
        put = await http.put(user_path("alice") + "/profile/work/launch", json={"content": "launch moves to June"})
        assert put.json()["importance"] == 0.5  # a write of the slot says its own importance
        again = await http.post(memories, json={"text": "发布会在五月的第一周", "importance": 0.7})
        assert again.status_code == 200 and again.json()["importance"] == 0.7  # the same note again takes it


async def test_mcp_remember_takes_an_importance_and_refuses_nonsense(store, settings):
    async with serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url:
        async with http_client(base_url + "/mcp", "key-acme", "dana") as dana:
            refused = await dana.call_tool("remember", {"text": "the board meets on Tuesday", "importance": 3})
            assert refused.is_error and "importance" in refused.content[0].text
            assert await store.list_events(store_user_id("acme", "dana")) == []
            answer = text(await dana.call_tool("remember", {"text": "the board meets on Tuesday", "importance": 0.9}))
            assert answer.startswith("remembered [event:")
            fact = {"text": "prefers morning meetings", "topic": "work", "subtopic": "meetings", "importance": 0.2}
            assert text(await dana.call_tool("remember", fact)).startswith("remembered as profile work / meetings")
    dana_id = store_user_id("acme", "dana")
    [event] = await store.list_events(dana_id)
    [entry] = await store.get_profile(dana_id)
    assert (event.importance, entry.importance) == (0.9, 0.2)
