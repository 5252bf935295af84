"""Memory scopes through `memlane serve` (store/scopes.py): each persona keeps its own memory of a
user unless configured to share the user's; every memories route and MCP reach an agent's memory
with `agent_id` / `X-Memlane-Agent` and nothing else; the tenant's shared memory is written with
the `shared` scope only and read by the personas that ask for it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from conftest import HOSTILE_IDS, drop_prefix_sync
from fake_upstream import FakeUpstream, Served
from test_serve import Env, GatedMemoryModel, api_key, reply_for, system_prompt, user_path, wait_for

from memlane.config import Settings
from memlane.serve.app import create_app
from memlane.serve.config import ServeConfig

FACT = "My locker code is 3141."


@pytest.fixture(scope="module")
def env(redis_url, tmp_path_factory, embeddings):
    key_prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url,
        key_prefix=key_prefix,
        data_dir=tmp_path_factory.mktemp("scopes-data"),
        openai_api_key=None,
        openai_base_url=None,
        llm_timeout_seconds=5.0,
        llm_max_retries=0,
    )
    with FakeUpstream(reply=reply_for) as upstream:
        config = ServeConfig(
            keys=[
                api_key("acme", "acme"),
                api_key("acme-curator", "acme", "read", "shared"),
                api_key("globex", "globex", "chat", "read", "write", "shared"),
            ],
            personas={
                "assistant": {"model": "m", "base_url": upstream.url},  # default: its own memory
                "coach": {"model": "m", "base_url": upstream.url},
                "front": {"model": "m", "base_url": upstream.url, "memory_scope": "user", "read_shared": True},
                "desk": {"model": "m", "base_url": upstream.url, "memory_scope": "user"},
            },
        )
        memory_model = GatedMemoryModel(rules=[], default="{}")
        with Served(create_app(config, settings, memory_model=memory_model)) as served:
            yield Env(served.url, upstream, upstream, memory_model, settings)
    drop_prefix_sync(redis_url, key_prefix)


def chat(env: Env, persona: str, user: str, text: str, key: str = "acme") -> dict[str, Any]:
    return (
        env.openai(key)
        .chat.completions.create(model=persona, user=user, messages=[{"role": "user", "content": text}])
        .model_dump()
    )


def exported(env: Env, user: str, agent: str | None = None, key: str = "acme") -> dict[str, Any]:
    with env.http(key) as http:
        answer = http.get(user_path(user) + "/export", params={"agent_id": agent} if agent else None)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_persona_recalls_only_its_own_memory_of_the_user(env):
    chat(env, "assistant", "ana", FACT)
    wait_for(lambda: exported(env, "ana", "assistant")["messages"])
    chat(env, "coach", "ana", "What is my locker code?")
    assert "3141" not in system_prompt(env.request_with("What is my locker code?"))
    chat(env, "assistant", "ana", "Remind me: what is my locker code?")
    assert "3141" in system_prompt(env.request_with("Remind me: what is my locker code?"))
    # the user's own memory (personas with memory_scope = "user") has none of it either
    chat(env, "desk", "ana", "Do you know my locker code?")
    assert "3141" not in system_prompt(env.request_with("Do you know my locker code?"))
    whole = wait_for(lambda: (e := exported(env, "ana")) and len(e["agents"]) == 2 and e)
    assert [m["content"] for m in whole["agents"]["assistant"]["messages"]][:2] == [FACT, f"Noted: {FACT}"]
    assert whole["agents"]["assistant"]["messages"][0]["user_id"] == "ana"  # never the store's scoped id
    assert "3141" not in str(whole["agents"]["coach"]) and "3141" not in str(whole["messages"])


@pytest.mark.parametrize("agent", ["coach", *HOSTILE_IDS[:5]])
def test_every_route_reaches_the_named_agents_memory_and_nothing_else(env, agent):
    user = f"ben-{uuid.uuid4().hex[:6]}"
    mine = {"agent_id": agent}
    with env.http() as http:
        base = user_path(user)
        entry = http.post(
            base + "/profile", params=mine, json={"topic": "locker", "subtopic": "code", "content": "3141"}
        ).json()
        note = http.post(base + "/memories", params=mine, json={"text": "keeps running shoes in locker 12"}).json()
        put = http.put(base + "/profile/shoe/size", params=mine, json={"content": "44"})
        assert put.status_code == 201, put.text
        stored = http.post(
            base + "/messages",
            params=mine,
            json={"messages": [{"id": "x1", "role": "user", "content": "I train at dawn"}]},
        )
        assert stored.status_code == 201, stored.text
        # the user's own memory, and another agent's, see none of it
        for other in (None, {"agent_id": "tutor"}):
            assert (
                http.post(base + "/search", params=other, json={"query": "locker 3141 running shoes dawn"}).json()[
                    "data"
                ]
                == []
            )
            assert http.get(base + "/profile", params=other).json()["data"] == []
            assert http.get(base + "/events", params=other).json()["data"] == []
            assert (
                http.post(base + "/recall", params=other, json={"message": "what is my locker code?"}).json()["text"]
                == ""
            )
            for method, path, body in [
                ("GET", f"{base}/profile/{entry['id']}", None),
                ("GET", f"{base}/profile/{entry['id']}/history", None),
                ("PATCH", f"{base}/profile/{entry['id']}", {"content": "hijacked"}),
                ("DELETE", f"{base}/profile/{entry['id']}", None),
                ("DELETE", f"{base}/memories/{quote(note['id'], safe='')}", None),
                ("DELETE", f"{base}/events/{note['id'].removeprefix('event:')}", None),
                ("DELETE", f"{base}/messages/x1", None),
            ]:
                answer = http.request(method, path, params=other, json=body)
                assert answer.status_code == 404, (other, method, path, answer.text)
            forgot = http.post(base + "/forget", params=other, json={"query": "locker"}).json()
            assert "nothing" in forgot["description"].lower(), forgot
            assert http.post(base + "/remember-now", params=other).status_code in (202, 409)
        # the agent's memory has it all
        assert {e["content"] for e in http.get(base + "/profile", params=mine).json()["data"]} == {"3141", "44"}
        hits = http.post(base + "/search", params=mine, json={"query": "running shoes locker"}).json()["data"]
        assert hits and any("locker 12" in hit["memory"]["text"] for hit in hits)
        assert (
            "3141"
            in http.post(base + "/recall", params=mine, json={"message": "what is my locker code?"}).json()["text"]
        )
        assert http.get(f"{base}/profile/{entry['id']}/history", params=mine).status_code == 200
        assert http.delete(f"{base}/messages/x1", params=mine).status_code == 200
        # deleting the user's own memory alone leaves the agent's; deleting the user takes it
        assert http.delete(base, params={"agent_id": "tutor"}).status_code == 200
        assert len(http.get(base + "/profile", params=mine).json()["data"]) == 2
        assert http.delete(base).status_code == 200
        assert http.get(base + "/profile", params=mine).json()["data"] == []
        assert http.get(base + "/export").json()["agents"] == {}


@pytest.mark.parametrize("agent", ["", "a\x01b", "x" * 129])
def test_a_bad_agent_id_is_a_clear_422(env, agent):
    with env.http() as http:
        answer = http.get(user_path("cy") + "/profile", params={"agent_id": agent})
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_agent_id"


def test_the_tenants_shared_memory(env):
    with env.http("acme") as acme:  # write needs the shared scope, which default keys lack
        refused = acme.post("/v1/shared/memories", json={"text": "The office closes at 6 pm on Fridays"})
        assert refused.status_code == 403 and "shared" in refused.json()["error"]["message"]
    with env.http("acme-curator") as curator:
        note = curator.post("/v1/shared/memories", json={"text": "The office closes at 6 pm on Fridays"})
        assert note.status_code == 201, note.text
        hits = curator.post("/v1/shared/search", json={"query": "when does the office close?"}).json()["data"]
        assert hits and "6 pm" in hits[0]["memory"]["text"]
        assert curator.get("/v1/shared/export").json()["user_id"] == "shared"
    # personas that read it (front) recall it for every user of the tenant; the others do not
    chat(env, "front", "dee", "When does the office close on Fridays?")
    assert "6 pm" in system_prompt(env.request_with("When does the office close on Fridays?"))
    chat(env, "desk", "dee", "Does the office close early on Fridays?")
    assert "6 pm" not in system_prompt(env.request_with("Does the office close early on Fridays?"))
    with env.http() as acme:
        assert (
            "6 pm"
            in acme.post(
                user_path("eve") + "/recall", json={"message": "office hours Friday?", "include_shared": True}
            ).json()["text"]
        )
        assert (
            "6 pm"
            not in acme.post(user_path("eve") + "/recall", json={"message": "office hours Friday?"}).json()["text"]
        )
    # another tenant's shared memory is its own
    chat(env, "front", "dee", "When does the office close on Fridays, please?", key="globex")
    assert "6 pm" not in system_prompt(env.request_with("When does the office close on Fridays, please?"))
    with env.http("globex") as globex:
        assert globex.post("/v1/shared/search", json={"query": "office close"}).json()["data"] == []
        assert globex.delete(f"/v1/shared/memories/{quote(note.json()['id'], safe='')}").status_code == 404
    with env.http("acme-curator") as curator:
        assert curator.delete(f"/v1/shared/memories/{quote(note.json()['id'], safe='')}").status_code == 200
        assert curator.post("/v1/shared/search", json={"query": "office close"}).json()["data"] == []


def test_mcp_acts_on_the_agent_its_header_names(env):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call(agent: str | None, tool: str, arguments: dict[str, Any]) -> str:
        headers = {"Authorization": "Bearer key-acme", "X-Memlane-User": "fay"}
        if agent is not None:
            headers["X-Memlane-Agent"] = agent
        client = Client(
            streamable_http_client(env.url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
        )
        async with client:
            result = await client.call_tool(tool, arguments)
            return result.content[0].text

    assert asyncio.run(call("coach", "remember", {"text": "runs a marathon in May"})).startswith("remembered")
    assert "marathon" in asyncio.run(call("coach", "search_memories", {"query": "marathon May"}))
    assert "marathon" not in asyncio.run(call(None, "search_memories", {"query": "marathon May"}))
    assert "marathon" not in asyncio.run(call("tutor", "search_memories", {"query": "marathon May"}))
    with env.http() as http:
        events = http.get(user_path("fay") + "/events", params={"agent_id": "coach"}).json()["data"]
        assert [e["summary"] for e in events] == ["runs a marathon in May"]
    with env.http(None) as http:
        refused = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": "Bearer key-acme", "X-Memlane-User": "fay", "X-Memlane-Agent": "a\tb"},
        )
        assert refused.status_code == 400 and "X-Memlane-Agent" in refused.text
