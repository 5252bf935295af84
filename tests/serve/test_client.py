"""memlane.client against a real `memlane serve` process (issue 31, item 4): the memories API by
name, sync and async, typed errors, retries that reuse their Idempotency-Key, and streaming chat
through the `openai` client. A real Redis Stack and a fake OpenAI-compatible upstream."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid

import httpx
import pytest
from conftest import drop_prefix_sync
from fake_upstream import FakeUpstream
from test_workers import _ready, free_port, wait_for

from memlane.client import (
    AsyncMemlaneClient,
    AuthenticationError,
    Conflict,
    InvalidRequest,
    MemlaneClient,
    MemoryClient,
    NotFound,
    ServiceUnavailable,
)
from memlane.serve.config import hash_api_key

KEY = "key-client"


@pytest.fixture(scope="module")
def served(redis_url, tmp_path_factory):
    """One `memlane serve` process on the test Redis, under a private key prefix."""
    tmp_path = tmp_path_factory.mktemp("client")
    key_prefix = f"t{uuid.uuid4().hex[:10]}"
    with FakeUpstream(reply="Noted, you live in Lyon now.") as chat, FakeUpstream(reply='{"summary": ""}') as memory:
        config = tmp_path / "serve.toml"
        config.write_text(
            f'[[keys]]\nname = "crm"\ntenant = "acme"\nhash = "{hash_api_key(KEY)}"\n\n'
            f'[personas.assistant]\nmodel = "chat-m"\nbase_url = "{chat.url}"\nmemory_scope = "user"\n'
        )
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "MEMLANE_KEY_PREFIX": key_prefix,
            "MEMLANE_DATA_DIR": str(tmp_path / "data"),
            "MEMLANE_SERVE_CONFIG": str(config),
            "OPENAI_BASE_URL": memory.url,
            "OPENAI_API_KEY": "memory-key",
            "MEMLANE_MEMORY_MODEL": "memory-m",
            "MEMLANE_MEMORY_IDLE_FLUSH_SECONDS": "0",
            "MEMLANE_LLM_MAX_RETRIES": "0",
        }
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "memlane.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "serve.log", "wb"),
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: _ready(url), 120, f"memlane serve at {url}")
            yield url, chat
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
            drop_prefix_sync(redis_url, key_prefix)


def test_the_sync_client_reaches_every_memory_by_name(served):
    url, _ = served
    with MemlaneClient(url, KEY) as memory:
        said = [
            {"id": "c1", "role": "user", "content": "I moved to Lyon last month."},
            {"id": "c2", "role": "assistant", "content": "Lyon is lovely."},
        ]
        assert memory.add(said, user_id="ana", infer=False)["stored"] == 2
        again = memory.add(said, user_id="ana", infer=False)  # ids: a repeated add stores nothing new
        assert again["stored"] == 0 and [r["event"] for r in again["results"]] == ["NONE", "NONE"]
        note = memory.note("Her sister lives in Porto", user_id="ana")
        hits = memory.search("where does her sister live?", user_id="ana", limit=3)["results"]
        assert hits[0]["id"] == note["id"]
        assert any("Lyon" in hit["memory"] for hit in memory.search("Lyon", filters={"user_id": "ana"})["results"])

        entry = memory.put_profile("home", "city", "Lyon", user_id="ana", source_message_id="c1", meta={"crm": 1})
        assert memory.put_profile("home", "city", "Lyon, Croix-Rousse", user_id="ana")["id"] == entry["id"]
        assert memory.edit_profile(entry["id"], user_id="ana", confidence=0.6)["confidence"] == 0.6
        entry_memory = f"profile:{entry['id']}"
        assert memory.get(entry_memory)["memory"] == "home / city: Lyon, Croix-Rousse"  # the user: ana, seen above
        assert [r["event"] for r in memory.history(entry_memory, user_id="ana")] == ["ADD", "UPDATE", "UPDATE"]
        everything = memory.get_all(user_id="ana")["results"]
        assert {m["id"] for m in everything if m["kind"] != "message"} == {entry_memory, note["id"]}
        assert "Lyon" in memory.recall("where do I live?", user_id="ana")["text"]
        assert memory.forget("Porto", user_id="ana", dry_run=True)["dry_run"] is True
        assert memory.delete(note["id"], user_id="ana")["message"]
        with pytest.raises(NotFound):
            memory.delete(note["id"], user_id="ana")
        assert memory.export(user_id="ana")["user_id"] == "ana"

        assert memory.get("profile:no-such-entry", user_id="ana") is None
        with pytest.raises(InvalidRequest, match="confidence"):
            memory.edit_profile(entry["id"], user_id="ana", confidence=2.0)
        with pytest.raises(Conflict, match="PUT"):
            memory.add_profile("home", "city", "x", user_id="ana")
        assert memory.add_profile("home", "country", "France", user_id="ana")["content"] == "France"
        memory.reset(user_id="ana")
        assert memory.get_all(user_id="ana")["results"] == []

    with MemlaneClient(url, "not-a-key") as stranger, pytest.raises(AuthenticationError):
        stranger.search("anything", user_id="ana")


def test_the_client_is_built_as_mem0s_is(served, monkeypatch):
    url, _ = served
    monkeypatch.setenv("MEMLANE_URL", url)
    with MemoryClient(api_key=KEY) as client:  # mem0's spelling: the service from MEMLANE_URL
        assert client.add("I keep bees.", user_id="fay", infer=False)["stored"] == 1
    with MemoryClient(host=url, api_key=KEY) as client:
        assert client.get_all(filters={"user_id": "fay"})["results"][0]["memory"] == "I keep bees."
    monkeypatch.delenv("MEMLANE_KEY", raising=False)
    with pytest.raises(ValueError, match="MEMLANE_KEY"):
        MemoryClient()


def test_update_and_history_take_any_memory_and_add_answers_what_it_learned(served):
    url, _ = served
    with MemlaneClient(url, KEY) as memory:
        note = memory.note("My locker code is 3141.", user_id="eve")
        updated = memory.update(note["id"], "My locker code is 2718.")  # positional, as mem0's update
        assert updated == {
            "message": "Memory updated successfully!",
            "id": note["id"],
            "memory": "My locker code is 2718.",
        }
        assert [(h["event"], h["new_memory"]) for h in memory.history(note["id"])] == [
            ("ADD", "My locker code is 3141."),
            ("UPDATE", "My locker code is 2718."),
        ]
        assert memory.search("locker code", user_id="eve", kinds=["event"])["results"][0]["memory"].endswith("2718.")
        turn = memory.add("I play the cello.", user_id="eve", infer=False)["results"][0]
        assert [h["event"] for h in memory.history(turn["id"])] == ["ADD"]
        with pytest.raises(InvalidRequest, match="as it was said"):
            memory.update(turn["id"], "I play the viola.")
        with pytest.raises(ValueError, match="pass user_id"):
            memory.update("event:never-shown", "x")
        # the memory model of this service answers no facts: the run learns nothing, and says so
        learned = memory.add("I moved to Porto.", user_id="eve", metadata={"source": "crm"})
        assert learned["results"] == [] and learned["stored"] == 1
        started = memory.add("I moved to Braga.", user_id="eve", wait=False)
        assert started["results"] == [] and started["memory_run_id"]
        ended = memory.add_run(started["memory_run_id"], user_id="eve", wait=True)
        assert ended["status"] == "done" and ended["results"] == []
        with pytest.raises(NotFound):
            memory.add_run(started["memory_run_id"], user_id="someone-else")


async def test_the_async_client_and_streaming_chat_through_openai(served):
    url, chat = served
    async with AsyncMemlaneClient(url, KEY) as memory:
        await memory.put_profile("diet", "coffee", "black, no sugar", user_id="ben")
        openai = memory.openai()
        stream = await openai.chat.completions.create(
            model="assistant",
            user="ben",
            stream=True,
            messages=[{"role": "user", "content": "How do I take my coffee?"}],
        )
        reply = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
        assert reply == "Noted, you live in Lyon now."
        assert "black, no sugar" in str(chat.requests[-1]["messages"])  # recalled before the model was called
        deadline = time.monotonic() + 20
        while (
            not (await memory.search("coffee", user_id="ben", kinds=["message"]))["results"]
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(0.2)  # the turn is saved after the reply
        assert (await memory.search("coffee", user_id="ben", kinds=["message"]))["results"]


async def test_a_client_for_an_agent_acts_on_that_agents_memory_only(served):
    url, _ = served
    async with AsyncMemlaneClient(url, KEY, agent_id="coach") as coach, AsyncMemlaneClient(url, KEY) as own:
        await coach.put_profile("sport", "running", "5k on Tuesdays", user_id="cai")
        await coach.note("Trains for a marathon in May", user_id="cai")
        coachs = (await coach.get_all(user_id="cai"))["results"]
        assert [m["memory"] for m in coachs if m["kind"] == "profile"] == ["sport / running: 5k on Tuesdays"]
        assert all(m["agent_id"] == "coach" for m in coachs)
        assert (await own.get_all(user_id="cai"))["results"] == []
        assert (await own.search("marathon May", user_id="cai"))["results"] == []
        found = (await coach.search("marathon May", user_id="cai"))["results"]
        assert found[0]["memory"] == "Trains for a marathon in May"
        assert (await own.search("marathon May", user_id="cai", agent_id="coach"))["results"][0]["id"] == found[0]["id"]
        assert list((await own.export(user_id="cai"))["agents"]) == ["coach"]
        await own.reset(user_id="cai")  # the user, and every agent's memory of the user
        assert (await coach.get_all(user_id="cai"))["results"] == []


class FlakyTransport(httpx.AsyncBaseTransport):
    """The real network, with the first `failures` requests answered 503 (and `Retry-After: 0`);
    keeps the Idempotency-Key each request carried."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.keys: list[str | None] = []
        self.real = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.keys.append(request.headers.get("Idempotency-Key"))
        if self.failures > 0:
            self.failures -= 1
            return httpx.Response(
                503, json={"error": {"code": "redis_unavailable", "message": "try again"}}, headers={"Retry-After": "0"}
            )
        return await self.real.handle_async_request(request)


async def test_a_write_is_retried_with_one_idempotency_key_and_gives_up_with_a_typed_error(served):
    url, _ = served
    flaky = FlakyTransport(failures=2)
    async with AsyncMemlaneClient(url, KEY, transport=flaky, backoff_seconds=0.01) as memory:
        assert (await memory.add("I drink oat milk.", user_id="cyd"))["stored"] == 1
    assert len(flaky.keys) == 3 and len(set(flaky.keys)) == 1 and flaky.keys[0]  # one key, every try

    down = FlakyTransport(failures=10)
    async with AsyncMemlaneClient(url, KEY, transport=down, max_retries=2, backoff_seconds=0.01) as memory:
        with pytest.raises(ServiceUnavailable) as raised:
            await memory.search("milk", user_id="cyd")
    assert raised.value.status == 503 and raised.value.code == "redis_unavailable" and len(down.keys) == 3

    async with AsyncMemlaneClient(
        f"http://127.0.0.1:{free_port()}", KEY, max_retries=1, backoff_seconds=0.01
    ) as nowhere:
        with pytest.raises(ServiceUnavailable, match="did not answer"):
            await nowhere.search("milk", user_id="cyd")
