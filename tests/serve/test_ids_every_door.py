"""Ids that work where they are shown (issue 49, item 4): every id any door shows of a memory (its
memory id, `profile:…` / `event:…` / `message:…` / `item:…`, or its record's own id) is taken by
every call that takes an id, at every door: `get`, `update`, `history`, `delete` and `forget`."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from typing import Any

import httpx
import pytest
from fake_upstream import Served
from memory_graph_helpers import said_then_changed
from test_mcp import http_client
from test_one_relevance import CONFIG, QUERY, seed

from memlane import cli
from memlane.client import AsyncMemlaneClient
from memlane.langgraph_store import MemlaneStore
from memlane.memory import AsyncMemory
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id
from memlane.store.errors import InvalidInput
from memlane.store.ids import event_memory_id, item_memory_id, message_memory_id, profile_entry_id
from memlane.tools import answer_forget

HEADERS = {"Authorization": "Bearer key-acme"}
NOTE = "Her cat Miso knocks coffee cups off the table"


async def records_of(store, user_id: str) -> dict[str, tuple[str, str | None]]:
    """What `seed` wrote for the user, by name: (memory id, the record's own id)."""
    entry = profile_entry_id(user_id, "diet", "coffee")
    events = await store.list_events(user_id, limit=10)
    note = next(event.id for event in events if event.summary == NOTE)
    records: dict[str, tuple[str, str | None]] = {
        "entry": (f"profile:{entry}", entry),
        "note": (event_memory_id(note), note),
        "item": (item_memory_id(("memories", user_id), "order"), None),
    }
    for turn in ("s1-m0", "s1-m1", "s1-m2"):
        records[turn] = (message_memory_id(turn), turn)
    return records


async def still_there(store, user_id: str, memory_id: str, query: str = QUERY) -> bool:
    kind, _, own = memory_id.partition(":")
    if kind == "profile" and ":earlier:" not in own:
        return any(entry.id == own for entry in await store.get_profile(user_id))
    if kind == "event":
        return (await store.get_events(user_id, [own]))[0] is not None
    if kind == "message":
        return any(message.id == own for message in await store.message_neighbours(user_id, own, before=0, after=0))
    return any(hit.memory.id == memory_id for hit in await store.search_memories(user_id, query, limit=20))


def printed_by_cli(*argv: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(list(argv)) == 0
    return printed.getvalue()


async def shown_ids(store, settings, user_id: str, url: str) -> dict[str, set[str]]:
    """Every id each door shows for the user (`alice` of tenant acme)."""
    shown: dict[str, set[str]] = {}
    hits = await store.search_memories(user_id, QUERY, limit=20)
    shown["store search"] = {hit.memory.id for hit in hits} | {hit.memory.ref_id for hit in hits if hit.memory.ref_id}
    shown["store search sources"] = {source for hit in hits for source in hit.memory.source_message_ids}

    facade = AsyncMemory(store, settings=settings)
    shown["facade search"] = {hit["id"] for hit in (await facade.search(QUERY, user_id=user_id, limit=20))["results"]}
    shown["facade get_all"] = {memory["id"] for memory in (await facade.get_all(user_id=user_id))["results"]}

    lg = MemlaneStore(store, user_of=1)
    for collection in ("memlane_profile", "memlane_events"):
        shown[f"MemlaneStore {collection}"] = {item.key for item in await lg.asearch((collection, user_id))}

    cli_lines = await asyncio.to_thread(printed_by_cli, "search", "--tenant", "acme", "alice", QUERY, "--limit", "20")
    shown["CLI search"] = {line.split("\t")[0] for line in cli_lines.splitlines()}
    shown["CLI search sources"] = {
        source for line in cli_lines.splitlines() for source in line.split("\t")[-1].split(",") if source
    }
    printed = await asyncio.to_thread(
        printed_by_cli, "search", "--tenant", "acme", "alice", QUERY, "--limit", "20", "--json"
    )
    shown["CLI search --json"] = {hit["id"] for hit in json.loads(printed)["results"]}

    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        data = (await http.post("/v1/users/alice/search", json={"query": QUERY, "limit": 20})).json()["data"]
        shown["HTTP search"] = {hit["memory"]["id"] for hit in data} | {
            hit["memory"]["ref_id"] for hit in data if hit["memory"]["ref_id"]
        }
        profile = (await http.get("/v1/users/alice/profile")).json()["data"]
        shown["HTTP profile"] = {entry["id"] for entry in profile} | {entry["memory_id"] for entry in profile}
        events = (await http.get("/v1/users/alice/events")).json()["data"]
        shown["HTTP events"] = {event["id"] for event in events} | {event["memory_id"] for event in events}
        items = (await http.post("/v1/users/alice/recall", json={"message": QUERY, "session_id": "s1"})).json()["items"]
        shown["HTTP recall"] = {item[name] for item in items for name in ("memory_id", "ref_id") if item.get(name)}
        shown["HTTP recall sources"] = {source for item in items for source in item["source_message_ids"]}

    async with AsyncMemlaneClient(url, "key-acme") as client:
        found = await client.search(QUERY, user_id="alice", limit=20)
        shown["client search"] = {hit["id"] for hit in found["results"]}
        shown["client get_all"] = {memory["id"] for memory in (await client.get_all(user_id="alice"))["results"]}

    async with http_client(url + "/mcp", "key-acme", "alice") as mcp:
        for tool, arguments in (
            ("search_memories", {"query": QUERY, "limit": 20}),
            ("get_profile", {}),
            ("list_events", {}),
        ):
            text = (await mcp.call_tool(tool, arguments)).content[0].text
            shown[f"MCP {tool}"] = set(re.findall(r"^\[([^\]]+)\]", text, re.MULTILINE))
    return shown


async def test_every_id_a_door_shows_is_taken_by_every_call_that_takes_one(
    store, settings, monkeypatch, fresh_settings
):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    alice = store_user_id("acme", "alice")
    await seed(store, alice)
    records = await records_of(store, alice)
    names = {form: name for name, (memory_id, own) in records.items() for form in (memory_id, own) if form}
    with Served(create_app(CONFIG, settings)) as served:
        shown = await shown_ids(store, settings, alice, served.url)
        for door, ids in shown.items():
            assert ids, f"{door} showed no id"
            unknown = ids - set(names)
            assert not unknown, f"{door} shows ids that name no memory: {unknown}"
        # each record, in each spelling some door showed: its memory id, its own id
        forms = sorted({(names[form], form == records[names[form]][0]) for ids in shown.values() for form in ids})
        assert {name for name, _ in forms} == set(records)

        facade = AsyncMemory(store, settings=settings)
        async with (
            httpx.AsyncClient(base_url=served.url, headers=HEADERS, timeout=60) as http,
            AsyncMemlaneClient(served.url, "key-acme") as client,
        ):
            # get and history take every spelling of every record (an item is LangGraph's: it is got there)
            for name, as_memory_id in forms:
                memory_id, own = records[name]
                form = memory_id if as_memory_id else own
                assert form is not None
                got = await facade.get(form, user_id=alice)
                assert got is not None and got["id"] == memory_id, (form, got)
                assert await facade.history(form, user_id=alice), form
                got = await client.get(form, user_id="alice")
                assert got is not None and got["id"] == memory_id, (form, got)
                assert await client.history(form, user_id="alice"), form
                if name == "entry":
                    assert (await http.get(f"/v1/users/alice/profile/{form}")).status_code == 200, form
                    assert (await http.get(f"/v1/users/alice/profile/{form}/history")).status_code == 200, form
            # update takes them too (a turn is refused as a turn: it is kept as it was said)
            for name, as_memory_id in forms:
                memory_id, own = records[name]
                form = memory_id if as_memory_id else own
                if name in ("entry", "note"):
                    updated = await facade.update(form, f"{name} changed by {form}", user_id=alice)
                    assert updated["memory"].endswith(f"{name} changed by {form}")
                    updated = await client.update(form, f"{name} changed again by {form}", user_id="alice")
                    assert updated["memory"].endswith(f"{name} changed again by {form}")
                if name == "entry":
                    edited = await http.patch(f"/v1/users/alice/profile/{form}", json={"content": "drinks flat whites"})
                    assert edited.status_code == 200, (form, edited.text)
                if name.startswith("s1-"):  # found, and refused as the turn it is (not as an unknown id)
                    with pytest.raises(InvalidInput, match="is a stored turn"):
                        await facade.update(form, "something else", user_id=alice)

            # delete and forget take them: each call on a user of its own, seeded alike
            async def forget_by_cli(user: str, form: str) -> bool:
                printed = await asyncio.to_thread(printed_by_cli, "forget", "--tenant", "acme", user, form)
                return printed.startswith("forgot [")

            async def forget_by_mcp(user: str, form: str) -> bool:
                async with http_client(served.url + "/mcp", "key-acme", user) as mcp:
                    answer = (await mcp.call_tool("forget", {"what": f"[{form}]"})).content[0].text
                return answer.startswith("forgot [")

            async def delete_by_http(user: str, form: str) -> bool:
                return (await http.delete(f"/v1/users/{user}/memories/{form}")).status_code == 200

            async def delete_by_facade(user: str, form: str) -> bool:
                answer = await facade.delete(form, user_id=store_user_id("acme", user))
                return answer == {"message": "Memory deleted successfully!"}

            async def delete_by_client(user: str, form: str) -> bool:
                answer = await client.delete(form, user_id=user)
                return answer == {"message": "Memory deleted successfully!"}

            async def forget_by_tool(user: str, form: str) -> bool:
                answer = await answer_forget(store, store_user_id("acme", user), form, actor="test")
                return answer.startswith("forgot [")

            deleters = {
                "CLI forget": forget_by_cli,
                "MCP forget": forget_by_mcp,
                "HTTP DELETE /memories": delete_by_http,
                "facade delete": delete_by_facade,
                "client delete": delete_by_client,
                "agent tool forget": forget_by_tool,
            }
            for number, ((name, as_memory_id), (door, delete)) in enumerate(
                (form, deleter) for form in forms for deleter in deleters.items()
            ):
                user = f"bob{number}"
                store_user = store_user_id("acme", user)
                await seed(store, store_user)
                memory_id, own = (await records_of(store, store_user))[name]
                form = memory_id if as_memory_id else own
                assert form is not None
                assert await still_there(store, store_user, memory_id)
                assert await delete(user, form), (door, name, form)
                assert not await still_there(store, store_user, memory_id), (door, name, form)


BEFORE = "Where did I live before?"


async def test_a_past_value_search_shows_is_taken_by_every_call_that_takes_an_id(
    store, settings, monkeypatch, fresh_settings
):
    """What a profile entry held before a memory run replaced it is shown by search as
    `profile:<entry>:earlier:…`: get and history answer it, update says to update the entry, and
    every delete and forget removes it (and it alone)."""
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)

    async def changed(user: str) -> str:
        store_user = store_user_id("acme", user)
        await said_then_changed(
            store, store_user, "I live in Boston", "I moved to Denver", topic="home", subtopic="city"
        )
        [past] = [
            hit.memory.id for hit in await store.search_memories(store_user, BEFORE) if ":earlier:" in hit.memory.id
        ]
        return past

    past = await changed("carol")
    carol = store_user_id("acme", "carol")
    facade = AsyncMemory(store, settings=settings)
    assert past in {hit["id"] for hit in (await facade.search(BEFORE, user_id=carol))["results"]}
    got = await facade.get(past, user_id=carol)
    assert got is not None and got["id"] == past and got["memory"] == "home / city: I live in Boston"
    assert [entry["event"] for entry in await facade.history(past, user_id=carol)][:2] == ["ADD", "UPDATE"]
    with pytest.raises(InvalidInput, match="update the entry"):
        await facade.update(past, "I live in Austin", user_id=carol)
    with Served(create_app(CONFIG, settings)) as served:
        async with (
            httpx.AsyncClient(base_url=served.url, headers=HEADERS, timeout=60) as http,
            AsyncMemlaneClient(served.url, "key-acme") as client,
        ):
            data = (await http.post("/v1/users/carol/search", json={"query": BEFORE})).json()["data"]
            assert past in {hit["memory"]["id"] for hit in data}
            assert (await client.get(past, user_id="carol"))["id"] == past
            assert await client.history(past, user_id="carol")

            async def by_cli(user: str, form: str) -> bool:
                printed = await asyncio.to_thread(printed_by_cli, "forget", "--tenant", "acme", user, form)
                return printed.startswith("forgot [")

            async def by_mcp(user: str, form: str) -> bool:
                async with http_client(served.url + "/mcp", "key-acme", user) as mcp:
                    return (await mcp.call_tool("forget", {"what": f"[{form}]"})).content[0].text.startswith("forgot [")

            async def by_http(user: str, form: str) -> bool:
                return (await http.delete(f"/v1/users/{user}/memories/{form}")).status_code == 200

            async def by_facade(user: str, form: str) -> bool:
                return bool(await facade.delete(form, user_id=store_user_id("acme", user)))

            async def by_client(user: str, form: str) -> bool:
                return bool(await client.delete(form, user_id=user))

            for number, delete in enumerate((by_cli, by_mcp, by_http, by_facade, by_client)):
                user = f"dan{number}"
                form = await changed(user)
                assert await delete(user, form), delete.__name__
                store_user = store_user_id("acme", user)
                assert not await still_there(store, store_user, form, BEFORE), delete.__name__
                assert [entry.content for entry in await store.get_profile(store_user)] == ["I moved to Denver"]
