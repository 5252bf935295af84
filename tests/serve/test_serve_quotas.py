"""Quotas through `memlane serve` (HTTP and MCP): a write past a user's quota answers 429 (records)
or 413 (bytes) naming the quota and its setting, the Python client raises OverQuota without
retrying, an MCP tool answers the same sentence as its error, and what the user had stays."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote

import httpx
import pytest
from test_mcp import SERVE_CONFIG, bracketed_id, http_client, serving, text

from memlane.client import AsyncMemlaneClient, OverQuota
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id
from memlane.store.redis.store import STORE_PARTS


def capped(store, settings, **retention):
    settings = settings.model_copy(update={f"retention_{k}": v for k, v in retention.items()})
    return store.with_settings(**settings.parts(*STORE_PARTS)), settings


async def test_http_answers_429_and_413_past_a_quota_and_keeps_what_was_stored(store, settings):
    limited, limited_settings = capped(store, settings, max_memories_per_user=2, max_bytes_per_user=60)
    async with serving(create_app(SERVE_CONFIG, limited_settings, store=limited, mount_mcp=False)) as url:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http:
            base = "/v1/users/" + quote("dana", safe="")
            assert (await http.post(base + "/memories", json={"text": "Her sister lives in Porto"})).status_code == 201
            entry = await http.post(base + "/profile", json={"topic": "diet", "subtopic": "tea", "content": "oolong"})
            assert entry.status_code == 201
            refused = await http.post(base + "/memories", json={"text": "Allergic to peanuts"})
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert (
                error["code"] == "quota_exceeded" and "MEMLANE_RETENTION_MAX_MEMORIES_PER_USER (2)" in error["message"]
            )
            messages = await http.post(
                base + "/messages", json={"messages": [{"role": "user", "content": "hi", "id": "x1"}]}
            )
            assert messages.status_code == 429, messages.text
            too_long = await http.put(
                base + "/profile/diet/tea", json={"content": "oolong, " * 10}
            )  # a rewrite: no new record, more bytes
            assert too_long.status_code == 413, too_long.text
            assert "MEMLANE_RETENTION_MAX_BYTES_PER_USER (60)" in too_long.json()["error"]["message"]
            assert [e["summary"] for e in (await http.get(base + "/events")).json()["data"]] == [
                "Her sister lives in Porto"
            ]
            assert [e["content"] for e in (await http.get(base + "/profile")).json()["data"]] == ["oolong"]
            note_id = (await http.get(base + "/events")).json()["data"][0]["memory_id"]
            assert (await http.delete(f"{base}/memories/{quote(note_id, safe='')}")).status_code == 200
            assert (
                await http.post(base + "/memories", json={"text": "Allergic to peanuts"})
            ).status_code == 201  # room again
        async with AsyncMemlaneClient(url, "key-acme", backoff_seconds=5) as client:  # a full quota is not retried
            started = time.monotonic()
            with pytest.raises(OverQuota) as over:
                await client.note("Likes the sea", user_id="dana")
            assert over.value.status == 429 and over.value.code == "quota_exceeded" and time.monotonic() - started < 5


async def test_mcp_tools_answer_the_quota_as_their_error(store, settings):
    limited, limited_settings = capped(store, settings, max_memories_per_user=1)
    async with serving(create_app(SERVE_CONFIG, limited_settings, store=limited)) as url:
        async with http_client(url + "/mcp", "key-acme", "erin") as client:
            remembered = text(
                await client.call_tool("remember", {"text": "likes oolong", "topic": "diet", "subtopic": "tea"})
            )
            refused = await client.call_tool("remember", {"text": "Her cat is called Miso"})
            assert refused.is_error and "MEMLANE_RETENTION_MAX_MEMORIES_PER_USER (1)" in refused.content[0].text
            assert text(
                await client.call_tool("forget", {"what": f"[{bracketed_id(remembered.split()[-1])}]"})
            ).startswith("forgot")
            assert text(await client.call_tool("remember", {"text": "Her cat is called Miso"})).startswith(
                "remembered [event:"
            )
    assert [event.summary for event in await store.list_events(store_user_id("acme", "erin"))] == [
        "Her cat is called Miso"
    ]


async def test_a_chat_turn_over_quota_is_answered_and_says_it_is_not_stored(store, settings, caplog):
    """Issue 50, item 2: past the records quota the chat still answers, and its header says the turn
    is not stored and which quota stops it (it answered 200 and the turn vanished); the refusal is
    never retried nor kept for the next turn (the buffer grew 2 -> 4 -> 6), no traceback is
    logged, and nothing the user had changes. Streamed or not, turn after turn."""
    from fake_upstream import FakeUpstream

    from memlane.serve.config import ServeConfig

    limited, limited_settings = capped(store, settings, max_memories_per_user=1)
    user = store_user_id("acme", "fay")
    with FakeUpstream(reply="Noted.") as upstream:
        config = ServeConfig(
            keys=SERVE_CONFIG.keys, personas={"assistant": {"model": "fake-model", "base_url": upstream.url}}
        )
        app = create_app(config, limited_settings, store=limited, mount_mcp=False)
        async with serving(app) as url:
            async with httpx.AsyncClient(
                base_url=url, headers={"Authorization": "Bearer key-acme"}, timeout=60
            ) as http:
                assert (
                    await http.post("/v1/users/fay/memories", json={"text": "Her sister lives in Porto"})
                ).status_code == 201
                for number, stream in enumerate([False, True, False]):
                    body = {
                        "model": "assistant",
                        "user": "fay",
                        "stream": stream,
                        "messages": [{"role": "user", "content": f"I keep bees ({number})"}],
                    }
                    answer = await http.post("/v1/chat/completions", json=body)
                    assert answer.status_code == 200
                    assert "[DONE]" in answer.text if stream else answer.json()["choices"][0]["message"]["content"]
                    said = answer.headers["X-Memlane-Turn-Not-Saved"]
                    assert said == "memories quota: MEMLANE_RETENTION_MAX_MEMORIES_PER_USER=1", said
                await asyncio.sleep(1.0)  # a save would run after the reply
                metrics = (await http.get("/metrics")).text
        persistence = app.state.memlane.require_turns().persistence
        assert persistence.unsaved == {}  # nothing kept to be retried with the next turn
    assert 'memlane_turns_total{outcome="refused"} 3.0' in metrics
    assert await limited.unprocessed_messages(user) == [] and await limited.list_sessions(user) == []
    assert not [record for record in caplog.records if record.exc_info], "no traceback for a refusal"
    assert [event.summary for event in await limited.list_events(user)] == ["Her sister lives in Porto"]
