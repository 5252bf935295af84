"""One relevance at every door (issue 49, item 3): a memory's relevance for a query is a property of
the (query, memory) pair, so every door shows the same number for it, whatever kinds were asked
for, whatever else was found: the store's search and `relevances`, the mem0-shaped facade, the
client against a real `memlane serve`, the memories API's search and recall, MCP, `memlane search
--json`, and `MemlaneStore(relevance=True)` on items and on memlane's own collections."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

import httpx
from fake_upstream import Served
from memory_graph_helpers import add_chat
from test_mcp import http_client

from memlane import cli
from memlane.client import AsyncMemlaneClient
from memlane.langgraph_store import MemlaneStore
from memlane.memory import AsyncMemory
from memlane.serve.app import create_app
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key, store_user_id
from memlane.store.ids import event_memory_id, item_memory_id, message_memory_id, profile_memory_id
from memlane.tools import answer_remember

QUERY = "What coffee does Alice drink today?"
TOLERANCE = 1e-6
CONFIG = ServeConfig(
    keys=[ApiKey(name="acme", tenant="acme", hash=hash_api_key("key-acme"), scopes=("chat", "read", "write"))],
    personas={"assistant": {"model": "m"}},
)


async def seed(store, user_id: str) -> None:
    """A profile entry, a note, the user's own turn, a friend's turn, and a LangGraph item."""
    await answer_remember(
        store, user_id, "drinks black coffee, no sugar", topic="diet", subtopic="coffee", session_id="s1"
    )
    await answer_remember(store, user_id, "Her cat Miso knocks coffee cups off the table", session_id="s1")
    await add_chat(
        store,
        user_id,
        [
            ("user", None, "I buy my coffee beans at a small roaster in Lyon."),
            ("user", "Bob", "I only drink green tea, never coffee."),
            ("assistant", None, "Noted: beans from Lyon, and Bob sticks to tea."),
        ],
    )
    await MemlaneStore(store, user_of=1).aput(
        ("memories", user_id), "order", {"text": "orders a flat white on Fridays"}
    )


def assert_same(door: str, shown: dict[str, float], reference: dict[str, float]) -> None:
    assert shown, f"{door} showed nothing"
    for memory_id, relevance in shown.items():
        assert memory_id in reference, f"{door} showed {memory_id!r}, which the store does not know"
        assert abs(relevance - reference[memory_id]) <= TOLERANCE, (door, memory_id, relevance, reference[memory_id])


def recall_item_id(item: dict[str, Any]) -> str | None:
    if item.get("memory_id"):
        return item["memory_id"]
    if item["layer"] == "profile":
        return profile_memory_id(item["ref_id"])
    if item["layer"] == "recent":
        return message_memory_id(item["source_message_ids"][0])
    return None


def cli_search_json(settings, user: str, query: str) -> dict[str, Any]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["search", "--tenant", "acme", user, query, "--limit", "20", "--json"]) == 0
    return json.loads(printed.getvalue())


async def test_every_door_shows_the_same_relevance(store, settings, monkeypatch, fresh_settings):
    user_id = store_user_id("acme", "alice")
    await seed(store, user_id)
    hits = await store.search_memories(user_id, QUERY, limit=20)
    ids = [hit.memory.id for hit in hits]
    assert len(ids) >= 6  # the entry, the note, three turns and the item
    reference = await store.relevances(user_id, QUERY, ids)
    assert set(reference) == set(ids)
    doors: dict[str, dict[str, float]] = {"store search": {hit.memory.id: hit.relevance for hit in hits}}

    # whatever kinds were asked for, however many were wanted
    for kinds in (["profile"], ["event"], ["message"], ["profile", "message"]):
        for limit in (1, 3):
            found = await store.search_memories(user_id, QUERY, kinds=kinds, limit=limit)
            doors[f"store search {kinds} limit {limit}"] = {hit.memory.id: hit.relevance for hit in found}

    facade = AsyncMemory(store, settings=settings)
    found = (await facade.search(QUERY, user_id=user_id, limit=20))["results"]
    doors["facade"] = {hit["id"]: hit["score"] for hit in found}
    assert all(hit["relevance"] == hit["score"] for hit in found)

    lg = MemlaneStore(store, user_of=1, relevance=True)
    for namespace, memory_id_of in (
        (("memlane_profile", user_id), profile_memory_id),
        (("memlane_events", user_id), event_memory_id),
        (("memories", user_id), lambda key: item_memory_id(("memories", user_id), key)),
    ):
        items = await lg.asearch(namespace, query=QUERY, limit=20)
        assert items, namespace
        doors[f"MemlaneStore {namespace[0]}"] = {memory_id_of(item.key): item.relevance for item in items}
        if namespace[0] != "memories":  # memlane's own records: their score is the relevance too
            assert all(item.score == item.relevance for item in items)
        listed = await lg.asearch(namespace, limit=20)  # no query: no relevance, but the attribute is there
        assert listed and all(item.relevance is None for item in listed)

    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    printed = await asyncio.to_thread(cli_search_json, settings, "alice", QUERY)
    doors["CLI --json"] = {hit["id"]: hit["relevance"] for hit in printed["results"]}

    with Served(create_app(CONFIG, settings)) as served:
        headers = {"Authorization": "Bearer key-acme"}
        async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=60) as http:
            for kinds in (None, ["profile"], ["event", "message"]):
                body: dict[str, Any] = {"query": QUERY, "limit": 20, **({"kinds": kinds} if kinds else {})}
                answer = await http.post("/v1/users/alice/search", json=body)
                assert answer.status_code == 200, answer.text
                data = answer.json()["data"]
                assert all(hit["score"] == hit["relevance"] for hit in data)
                doors[f"HTTP search {kinds}"] = {hit["memory"]["id"]: hit["relevance"] for hit in data}

            answer = await http.post("/v1/users/alice/recall", json={"message": QUERY, "session_id": "s1"})
            assert answer.status_code == 200, answer.text
            items = answer.json()["items"]
            assert items and all(item.get("relevance") is not None for item in items), items  # every item
            assert all(item["score"] == item["relevance"] for item in items)
            doors["HTTP recall"] = {
                memory_id: item["relevance"] for item in items if (memory_id := recall_item_id(item)) is not None
            }

        async with AsyncMemlaneClient(served.url, "key-acme") as client:
            found = await client.search(QUERY, user_id="alice", limit=20)
            doors["client"] = {hit["id"]: hit["score"] for hit in found["results"]}  # mem0's shape

        async with http_client(served.url + "/mcp", "key-acme", "alice") as mcp:
            result = await mcp.call_tool("search_memories", {"query": QUERY, "limit": 20})
            assert not result.is_error, result.content
            doors["MCP"] = {hit["id"]: hit["relevance"] for hit in result.structured_content["results"]}

    # the recent turns recall shows are memories of the store too: weigh them all
    every_id = {memory_id for shown in doors.values() for memory_id in shown}
    reference = await store.relevances(user_id, QUERY, sorted(every_id))
    for door, shown in doors.items():
        assert_same(door, shown, reference)
