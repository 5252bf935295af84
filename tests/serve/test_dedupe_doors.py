"""A note the user has already is not stored again through the memories API and MCP (issue 31,
item 6): the same text in other case or spacing, or a near duplicate, answers the stored memory
(200 and `repeat_of` over HTTP, "not stored again" over MCP); an update is stored; nothing is
matched across users or tenants."""

from __future__ import annotations

from urllib.parse import quote

import httpx
from test_mcp import SERVE_CONFIG, http_client, serving, text

from memlane.serve.app import create_app
from memlane.serve.config import store_user_id


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


async def test_the_memories_api_stores_a_note_once_and_says_which_it_matched(store, settings):
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        first = await http.post(user_path("alice") + "/memories", json={"text": "I am allergic to peanuts"})
        assert first.status_code == 201 and first.json()["repeat_of"] is None
        stored = first.json()["id"]
        same = await http.post(user_path("alice") + "/memories", json={"text": "i am  ALLERGIC to peanuts"})
        assert same.status_code == 200 and same.json()["id"] == stored
        assert same.json()["repeat_of"] == {
            "id": stored,
            "similarity": same.json()["repeat_of"]["similarity"],
            "identical": True,
        }
        near = await http.post(user_path("alice") + "/memories", json={"text": "The user is allergic to peanuts."})
        assert (
            near.status_code == 200
            and near.json()["id"] == stored
            and near.json()["text"] == "I am allergic to peanuts"
        )
        assert near.json()["repeat_of"]["identical"] is False and near.json()["repeat_of"]["similarity"] >= 0.9
        update = await http.post(user_path("alice") + "/memories", json={"text": "I am no longer allergic to peanuts"})
        assert update.status_code == 201 and update.json()["id"] != stored
        other_user = await http.post(user_path("bob") + "/memories", json={"text": "I am allergic to peanuts"})
        assert other_user.status_code == 201 and other_user.json()["repeat_of"] is None
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-globex"}, timeout=60) as http,
    ):  # another tenant's alice is another user
        assert (
            await http.post(user_path("alice") + "/memories", json={"text": "I am allergic to peanuts"})
        ).status_code == 201
    notes = sorted(event.summary for event in await store.list_events(store_user_id("acme", "alice")))
    assert notes == ["I am allergic to peanuts", "I am no longer allergic to peanuts"]


async def test_mcp_remember_stores_a_note_once_and_names_the_stored_one(store, settings):
    async with serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url:
        async with http_client(base_url + "/mcp", "key-acme", "dana") as dana:
            first = text(await dana.call_tool("remember", {"text": "Dana plays the cello in an orchestra"}))
            stored = first.removeprefix("remembered [").removesuffix("]")
            assert first.startswith("remembered [event:")
            again = text(await dana.call_tool("remember", {"text": "dana plays the cello in an orchestra"}))
            assert again == f"not stored again: already remembered [{stored}] Dana plays the cello in an orchestra"
            near = text(await dana.call_tool("remember", {"text": "Dana plays cello in an orchestra!"}))
            assert near.startswith("not stored again: a near duplicate (similarity") and f"[{stored}]" in near
            assert text(await dana.call_tool("remember", {"text": "Dana plays the violin in an orchestra"})).startswith(
                "remembered ["
            )
        async with http_client(base_url + "/mcp", "key-acme", "erin") as erin:
            assert text(await erin.call_tool("remember", {"text": "Dana plays the cello in an orchestra"})).startswith(
                "remembered ["
            )
    assert len(await store.list_events(store_user_id("acme", "dana"))) == 2


async def test_exists_says_whether_the_user_has_a_text_and_writes_nothing(store, settings):
    """issue 54: exists(text) over HTTP, as adding the note would read a repeat."""
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        path = user_path("erin") + "/memories/exists"
        assert (await http.post(path, json={"text": "I am allergic to peanuts"})).json() == {
            "exists": False,
            "memory": None,
            "similarity": None,
            "identical": False,
        }
        stored = (await http.post(user_path("erin") + "/memories", json={"text": "I am allergic to peanuts"})).json()
        same = (await http.post(path, json={"text": "i am  ALLERGIC to peanuts"})).json()
        assert same["exists"] and same["identical"] and same["memory"]["id"] == stored["id"]
        near = (await http.post(path, json={"text": "The user is allergic to peanuts."})).json()
        assert near["exists"] and not near["identical"] and near["similarity"] >= 0.9
        assert not (await http.post(path, json={"text": "我住在成都"})).json()["exists"]
        assert not (
            await http.post(user_path("frank") + "/memories/exists", json={"text": "I am allergic to peanuts"})
        ).json()["exists"]  # another user's note is not theirs
        assert (await http.post(path, json={"text": "  "})).status_code == 422
    assert [event.summary for event in await store.list_events(store_user_id("acme", "erin"))] == [
        "I am allergic to peanuts"
    ]  # exists wrote nothing
