"""Per-memory expiry through the memories API and MCP (issue 54): `expires_at` on a note and a
profile entry, as epoch seconds or an ISO datetime; nonsense is a 422 (a tool error over MCP) and
nothing is stored; once expired the memory is neither searched nor listed."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timezone
from urllib.parse import quote

import httpx
from test_mcp import SERVE_CONFIG, http_client, serving, text

from memlane.serve.app import create_app
from memlane.serve.config import store_user_id


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


async def test_the_memories_api_keeps_a_note_and_an_entry_until_their_expiry(store, settings):
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        memories = user_path("alice") + "/memories"
        for nonsense in ["soon", "2019-05-01T00:00:00Z", 1e15, -1, True, {"at": 1}]:
            refused = await http.post(memories, json={"text": "the gate code is 4411", "expires_at": nonsense})
            assert refused.status_code == 422, (nonsense, refused.text)
            assert "expires_at" in refused.text
        bad_entry = {"topic": "travel", "subtopic": "now", "content": "in Kyoto", "expires_at": "tomorrow-ish"}
        assert (await http.post(user_path("alice") + "/profile", json=bad_entry)).status_code == 422
        alice = store_user_id("acme", "alice")
        assert await store.list_events(alice) == [] and await store.get_profile(alice) == []  # nothing stored
        soon = time.time() + 1.5
        note = await http.post(memories, json={"text": "the gate code is 4411", "expires_at": soon})
        assert note.status_code == 201 and abs(note.json()["expires_at"] - soon) < 1e-3
        iso = datetime.fromtimestamp(soon, UTC).isoformat()
        entry_in = {"topic": "travel", "subtopic": "now", "content": "in Kyoto this week", "expires_at": iso}
        entry = await http.post(user_path("alice") + "/profile", json=entry_in)
        assert entry.status_code == 201 and abs(entry.json()["expires_at"] - soon) < 1e-3
        kept = await http.post(memories, json={"text": "my sister lives in Porto"})
        assert kept.json()["expires_at"] is None
        found = await http.post(user_path("alice") + "/search", json={"query": "gate code 4411 Kyoto", "limit": 10})
        assert {hit["memory"]["text"] for hit in found.json()["data"]} >= {"the gate code is 4411"}
        await asyncio.sleep(max(0.0, soon - time.time()) + 0.05)
        found = await http.post(user_path("alice") + "/search", json={"query": "gate code 4411 Kyoto", "limit": 10})
        texts = " ".join(hit["memory"]["text"] for hit in found.json()["data"])
        assert "4411" not in texts and "Kyoto" not in texts
        assert (await http.get(user_path("alice") + "/profile")).json()["data"] == []
        events = (await http.get(user_path("alice") + "/events")).json()["data"]
        assert [event["summary"] for event in events] == ["my sister lives in Porto"]


async def test_mcp_remember_takes_an_expiry_and_refuses_nonsense(store, settings):
    async with serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url:
        async with http_client(base_url + "/mcp", "key-acme", "dana") as dana:
            refused = await dana.call_tool("remember", {"text": "parked on level 3", "expires_at": "whenever"})
            assert refused.is_error and "expires_at must be epoch seconds" in refused.content[0].text
            soon = datetime.fromtimestamp(time.time() + 1.5, UTC).isoformat()
            assert text(await dana.call_tool("remember", {"text": "parked on level 3", "expires_at": soon})).startswith(
                "remembered [event:"
            )
            assert "level 3" in text(await dana.call_tool("search_memories", {"query": "where did I park"}))
            await asyncio.sleep(1.6)
            assert text(await dana.call_tool("search_memories", {"query": "where did I park"})) == "no memories found"
            assert text(await dana.call_tool("list_events", {})) == "no events yet"
    assert await store.list_events(store_user_id("acme", "dana")) == []
