"""Handlers called alone, as plain functions on the real store: the memories API's routes with
the objects their dependencies would give, the MCP tools with a context of memlane's server."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from memlane.serve.app import healthz
from memlane.serve.config import ApiKey, hash_api_key, store_user_id
from memlane.serve.mcp import McpCaller, build_mcp_server, get_profile, list_events, remember, search_memories
from memlane.serve.memories import Caller, ProfileEntryIn, add_entry, delete_entry, find_entry, list_profile


def caller_of(tenant: str, user_id: str) -> Caller:
    key = ApiKey(name=f"{tenant}-key", tenant=tenant, hash=hash_api_key(f"key-{tenant}"), scopes=("read", "write"))
    return Caller(key=key, user_id=user_id, store_user=store_user_id(tenant, user_id))


async def test_memories_routes_called_alone_act_in_the_callers_tenant(store):
    ann = caller_of("acme", "ann")
    added = await add_entry(ProfileEntryIn(topic="diet", subtopic="coffee", content="black, no sugar"), ann, store)
    assert added.content == "black, no sugar" and added.memory_id == f"profile:{added.id}"

    listed = await list_profile(ann, store)
    assert [entry["content"] for entry in listed["data"]] == ["black, no sugar"]
    assert (await find_entry(store, ann.store_user, added.id)).id == added.id
    assert (await list_profile(caller_of("other", "ann"), store))["data"] == []  # another tenant's ann

    assert (await delete_entry(added.id, ann, store)).deleted
    assert (await list_profile(ann, store))["data"] == []
    assert await healthz() == {"status": "ok"}


async def test_mcp_tools_called_alone_act_for_the_resolved_caller(store):
    server = build_mcp_server(lambda: store, lambda _ctx: McpCaller(user_id="mcp-alone"))
    ctx = Context(mcp_server=server)

    answer = await remember("Drinks black coffee without sugar", ctx, topic="diet", subtopic="coffee")
    assert "coffee" in answer.lower()
    profile = await get_profile(ctx)
    assert "diet / coffee: Drinks black coffee without sugar" in profile and profile.startswith("[profile:")
    assert "coffee" in (await search_memories("coffee", ctx)).content[0].text.lower()
    assert await list_events(ctx) == "no events yet"
    assert await store.get_profile("someone-else") == []


async def test_the_messages_route_names_the_user_speaker_and_stores_an_overlap_once(store):
    from types import SimpleNamespace

    from fastapi import Response

    from memlane.config import Settings
    from memlane.serve.imports import add_messages
    from memlane.serve.memory_schemas import MessagesIn

    ann = caller_of("acme", "ann")
    service = SimpleNamespace(require_store=lambda: store, settings=Settings())
    lines = [{"speaker": name, "text": f"{name} line {i}", "created_at": 1e9 + i} for i, name in enumerate("ABAB")]
    first = await add_messages(MessagesIn(messages=lines[:3], user_speaker="A"), ann, service, Response())
    assert (first.received, first.stored) == (3, 3)
    again = await add_messages(MessagesIn(messages=lines[1:], user_speaker="A"), ann, service, Response())
    assert (again.received, again.stored) == (3, 1)  # the overlap is known by what it is
    history = (await store.export_user(ann.store_user)).messages
    assert [(m.name, m.speaker_role) for m in history] == [("A", "owner"), ("B", "other")] * 2
