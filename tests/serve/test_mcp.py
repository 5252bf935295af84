"""The MCP server through the SDK's own client: over stdio (`memlane mcp`) and streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memlane.cli import build_parser
from memlane.serve.cli import cmd_mcp
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key, store_user_id
from memlane.serve.mcp import serve_mcp_endpoint

TOOLS = {"search_memories", "remember", "forget", "get_profile", "list_events", "remember_now", "recall"}
TOOLS |= {"list_entities", "list_relations", "forget_entity", "forget_relation"}  # serve/mcp_relations.py


def text(result) -> str:
    assert not result.is_error, result.content
    return result.content[0].text


def bracketed_id(line: str) -> str:
    return line.split("]")[0].lstrip("[")


async def test_stdio_tools_act_for_the_command_line_user(store, settings):
    command = Path(sys.executable).parent / "memlane"
    params = StdioServerParameters(
        command=str(command),
        args=["mcp", "--tenant", "acme", "--user", "alice"],
        env={
            "REDIS_URL": settings.redis_url,
            "MEMLANE_KEY_PREFIX": settings.key_prefix,
            "MEMLANE_DATA_DIR": str(settings.data_dir),
        },
    )
    user_id = store_user_id("acme", "alice")  # the same store user `memlane serve` gives acme's alice
    async with Client(params, read_timeout_seconds=60) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS

        assert text(
            await client.call_tool(
                "remember", {"text": "drinks black coffee, no sugar", "topic": "diet", "subtopic": "coffee"}
            )
        ).startswith("remembered as profile diet / coffee")
        assert text(await client.call_tool("remember", {"text": "Her cat is called Miso"})).startswith(
            "remembered [event:"
        )
        assert [entry.content for entry in await store.get_profile(user_id)] == ["drinks black coffee, no sugar"]

        found = text(await client.call_tool("search_memories", {"query": "what coffee does she drink?"})).splitlines()
        assert "black coffee" in found[0]
        profile = text(await client.call_tool("get_profile", {}))
        assert "diet / coffee: drinks black coffee, no sugar (since " in profile and bracketed_id(
            profile
        ) == bracketed_id(found[0])
        events = text(await client.call_tool("list_events", {}))
        assert "Her cat is called Miso #remembered" in events
        recalled = text(await client.call_tool("recall", {"message": "what coffee should I order?"}))
        assert "drinks black coffee, no sugar" in recalled  # the block a model would get before answering

        preview = text(await client.call_tool("forget", {"what": "what I said about Miso", "dry_run": True}))
        assert preview.startswith("would forget 1 event") and "Her cat is called Miso" in preview
        assert "Her cat is called Miso #remembered" in text(await client.call_tool("list_events", {}))
        assert text(await client.call_tool("forget", {"what": f"[{bracketed_id(profile)}]"})).startswith(
            "forgot [profile:"
        )
        assert text(await client.call_tool("forget", {"what": "what I said about Miso"})).startswith("forgot 1 event")
        history = await store.profile_history(user_id, bracketed_id(profile).removeprefix("profile:"))
        assert [(revision.action, revision.actor) for revision in history] == [("add", "mcp"), ("delete", "mcp")]
        assert text(await client.call_tool("get_profile", {})) == "no profile yet"
        assert text(await client.call_tool("list_events", {})) == "no events yet"
        assert text(await client.call_tool("search_memories", {"query": "coffee cat Miso"})) == "no memories found"
        # no scheduler in this process: the run is queued for the workers on the same Redis
        assert text(await client.call_tool("remember_now", {})).startswith("remembering… (queued")


def key(name: str, tenant: str, *scopes: str) -> ApiKey:
    return ApiKey(name=name, tenant=tenant, hash=hash_api_key(f"key-{name}"), scopes=scopes)


SERVE_CONFIG = ServeConfig(
    keys=[
        key("acme", "acme", "chat", "read", "write"),
        key("globex", "globex", "read", "write"),
        key("acme-reader", "acme", "read"),
        key("acme-chat", "acme", "chat"),
    ]
)


@pytest.fixture
async def http_url(store):
    """`memlane serve`'s MCP endpoint alone, on loopback."""
    endpoint = serve_mcp_endpoint(SimpleNamespace(store=store, config=SERVE_CONFIG))
    async with serving(endpoint.app()) as base_url:
        yield base_url + "/mcp"


@contextlib.asynccontextmanager
async def serving(app):
    """`app` under uvicorn on a free loopback port, on this event loop (it shares the test's store)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    running = asyncio.create_task(server.serve())
    while not server.started:
        assert not running.done(), "the test server did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await running


def http_client(url: str, key: str, user: str) -> Client:
    headers = {"Authorization": f"Bearer {key}", "X-Memlane-User": user}
    # httpx's 5 s default is short for a first embedding on a busy machine
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60)))


async def test_http_callers_see_only_their_own_memories(store, http_url):
    async with http_client(http_url, "key-acme", "alice") as alice:
        assert {tool.name for tool in (await alice.list_tools()).tools} == TOOLS
        remembered = text(
            await alice.call_tool("remember", {"text": "alice loves opera", "topic": "music", "subtopic": "genre"})
        )
        memory_id = bracketed_id(remembered.split()[-1])
        assert "opera" in text(await alice.call_tool("search_memories", {"query": "opera"}))

    for key, user in (("key-acme", "bob"), ("key-globex", "alice")):  # another user; the same name in another tenant
        async with http_client(http_url, key, user) as other:
            assert text(await other.call_tool("search_memories", {"query": "opera"})) == "no memories found"
            assert text(await other.call_tool("get_profile", {})) == "no profile yet"
            assert text(await other.call_tool("forget", {"what": memory_id})).startswith("no memory")
            assert text(await other.call_tool("forget", {"what": "opera"})).startswith("nothing stored matched")
    assert [entry.content for entry in await store.get_profile(store_user_id("acme", "alice"))] == ["alice loves opera"]
    history = await store.profile_history(store_user_id("acme", "alice"), memory_id.removeprefix("profile:"))
    assert [revision.actor for revision in history] == ["api:acme"]  # the key that wrote it

    async with http_client(http_url, "key-acme-reader", "alice") as reader:
        assert "opera" in text(await reader.call_tool("get_profile", {}))
        refused = await reader.call_tool("forget", {"what": memory_id})
        assert refused.is_error and "'write' scope" in refused.content[0].text
    assert len(await store.get_profile(store_user_id("acme", "alice"))) == 1


async def test_http_refuses_requests_without_key_user_or_memory_scope(http_url):
    list_tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient() as raw:
        for headers, status in (
            ({"X-Memlane-User": "alice"}, 401),
            ({"Authorization": "Bearer key-nope", "X-Memlane-User": "alice"}, 401),
            ({"Authorization": "Bearer key-acme"}, 400),
            ({"Authorization": "Bearer key-acme", "X-Memlane-User": "a/b"}, 400),
            ({"Authorization": "Bearer key-acme-chat", "X-Memlane-User": "alice"}, 403),
        ):
            assert (await raw.post(http_url, json=list_tools, headers=headers)).status_code == status, headers


def test_the_docs_client_configs_start_memlane_mcp():
    root = Path(__file__).parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    blocks = [block for page in pages for block in re.findall(r"```json\n(.*?)```", page.read_text(), re.S)]
    configs = [json.loads(block) for block in blocks]
    assert len(configs) >= 2 and all(
        "mcpServers" in config for config in configs
    )  # the README's and docs/doors/mcp.md's
    for config in configs:
        server = config["mcpServers"]["memlane"]
        assert server["command"].endswith("/bin/memlane")
        args = build_parser().parse_args(server["args"])
        assert args.handler is cmd_mcp and args.user == "alice" and args.tenant is None


async def test_memlane_serve_answers_mcp_at_slash_mcp(store, settings):
    from memlane.serve.app import create_app

    async with serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url:
        async with http_client(base_url + "/mcp", "key-acme", "carol") as carol:
            assert {tool.name for tool in (await carol.list_tools()).tools} == TOOLS
            assert text(await carol.call_tool("remember", {"text": "carol plays the cello"})).startswith("remembered")
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(base_url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401 and "Bearer" in refused.text  # the service's own error body
    assert [event.summary for event in await store.list_events(store_user_id("acme", "carol"))] == [
        "carol plays the cello"
    ]


async def test_tools_answer_a_clear_error_for_a_nul_in_an_id_and_drop_it_from_a_text(store, settings):
    """Issue 34, item 9, through MCP: an id holding a NUL byte is refused naming it; a text is cleaned."""
    from memlane.serve.app import create_app

    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url,
        http_client(base_url + "/mcp", "key-acme", "nul") as client,
    ):
        answer = await client.call_tool("forget", {"what": "[profile:a\x00b]"})
        assert answer.is_error and "a memory id holds a NUL byte" in answer.content[0].text, answer.content
        refused = await client.call_tool("recall", {"message": "tea?", "session_id": "a\x00b"})
        assert refused.is_error and "a session id holds a NUL byte" in refused.content[0].text, refused.content
        assert text(await client.call_tool("remember", {"text": "likes \x00oolong"})).startswith("remembered")
        assert "likes oolong" in text(await client.call_tool("search_memories", {"query": "oo\x00long"}))
        assert text(
            await client.call_tool("remember", {"text": "oolong", "topic": "di\x00et", "subtopic": "tea"})
        ).startswith("remembered")
    assert [event.summary for event in await store.list_events(store_user_id("acme", "nul"))] == ["likes oolong"]
    assert [entry.topic for entry in await store.get_profile(store_user_id("acme", "nul"))] == ["diet"]


async def test_a_tool_on_a_silent_redis_answers_an_error_within_its_budget():
    """Issue 51, item 5, through MCP: a tool call on a frozen Redis is an error after 2 s (the
    memories routes' budget), not a wait for the freeze's end."""
    import time

    from memlane.serve.errors import READY_TIMEOUT_SECONDS
    from memlane.serve.mcp import McpCaller, build_mcp_server

    class FrozenRedisStore:
        """Every call, the probe too, waits as on a stopped Redis; nothing has answered lately."""

        def answered_within(self, seconds: float) -> bool:
            return False

        def __getattr__(self, name: str):
            async def frozen(*args, **kwargs):
                await asyncio.sleep(3600)

            return frozen

    server = build_mcp_server(lambda: FrozenRedisStore(), lambda ctx: McpCaller(user_id="frozen"))
    async with Client(server) as client:
        started = time.monotonic()
        answer = await client.call_tool("search_memories", {"query": "coffee"})
        took = time.monotonic() - started
    assert answer.is_error and "the memory store is unavailable" in answer.content[0].text, answer.content
    assert "Redis answered nothing" in answer.content[0].text
    assert took < READY_TIMEOUT_SECONDS + 1.0, took
