"""Imports through `memlane serve` (serve/imports.py, memlane/import_jobs.py): a large one is
answered at once with a job that says how far it got, every message it acknowledged ends up
stored and searchable, what it could not store is said, and the body has a cap of its own."""

from __future__ import annotations

import asyncio
import json

import httpx
from test_mcp import SERVE_CONFIG, serving

from memlane.serve.app import create_app
from memlane.store.redis.store import STORE_PARTS

BASE = "/v1/users/imp"
HEADERS = {"Authorization": "Bearer key-acme"}


def importing(store, settings, **changes):
    settings = settings.model_copy(update=changes)
    return store.with_settings(**settings.parts(*STORE_PARTS)), settings


async def finished(http: httpx.AsyncClient, job_url: str, timeout: float = 240.0) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        job = (await http.get(job_url)).json()
        if job["state"] != "running" or asyncio.get_running_loop().time() > deadline:
            return job
        await asyncio.sleep(0.2)


async def test_a_large_import_is_a_job_and_every_message_it_took_is_stored_and_searchable(store, settings):
    limited, limited_settings = importing(
        store, settings, import_sync_messages=5, import_batch_messages=7, max_message_chars=2000
    )
    messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"entry {i}: the lighthouse keeper number {i} paints boats",
            "created_at": 1_700_000_000 + i,
        }
        for i in range(40)
    ]
    messages[13] = {"role": "user", "content": "x" * 3000, "id": "too-long", "created_at": 1_700_000_013}
    messages[39]["content"] = "entry 39: my sister Ingrid moved to Tromsø to study glaciers"
    app = create_app(SERVE_CONFIG, limited_settings, store=limited, mount_mcp=False)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        taken = await http.post(BASE + "/messages", json={"messages": messages})
        assert taken.status_code == 202, taken.text
        answer = taken.json()
        assert answer["received"] == 40 and answer["job_url"] == f"{BASE}/imports/{answer['job_id']}"

        job = await finished(http, answer["job_url"])
        assert job["state"] == "done", job
        assert (job["received"], job["stored"], job["embedded"], job["failed"]) == (40, 39, 39, 1)
        [failure] = job["failures"]  # what was dropped is said, with what to do
        assert failure["id"] == "too-long" and "MEMLANE_MAX_MESSAGE_CHARS" in failure["reason"]

        stored = (await limited.export_user("acme/imp")).messages
        assert len(stored) == 39 and {m.id for m in stored}.isdisjoint({"too-long"})
        hits = await limited.search_memories("acme/imp", "Where did Ingrid move?", kinds=["message"], limit=3)
        assert "Tromsø" in hits[0].memory.text
        indexed = await limited.search_memories(
            "acme/imp", "lighthouse keeper paints boats", kinds=["message"], limit=50
        )
        # every stored message is searchable, not only the last batch's
        assert {hit.memory.source_message_ids[0] for hit in indexed} == {m.id for m in stored}

        # another user (or another tenant) finds no such job
        other = await http.get(f"/v1/users/someone/imports/{answer['job_id']}")
        assert other.status_code == 404 and "no import job" in other.json()["error"]["message"]

        again = await http.post(BASE + "/messages", json={"messages": messages})  # nothing new: all held
        job = await finished(http, again.json()["job_url"])
        assert (job["stored"], job["failed"]) == (39, 1) and len((await limited.export_user("acme/imp")).messages) == 39

        small = await http.post(BASE + "/messages", json={"messages": messages[:3]})  # small: in the request
        assert small.status_code == 201 and small.json()["stored"] == 0


async def test_an_import_has_a_size_cap_of_its_own(store, settings):
    limited, limited_settings = importing(store, settings, import_max_bytes=64 * 1024, serve_max_body_bytes=8 * 1024)
    app = create_app(SERVE_CONFIG, limited_settings, store=limited, mount_mcp=False)
    line = {"role": "user", "content": "a line of an old chat about bicycles and rain " * 2}
    async with serving(app) as url, httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        fits = json.dumps({"messages": [line] * 200})  # 20 KB: over the body cap, under the import cap
        taken = await http.post(BASE + "/messages", content=fits, headers={"Content-Type": "application/json"})
        assert taken.status_code == 201 and taken.json()["stored"] == 200, taken.text  # (repeats are messages)

        too_large = json.dumps({"messages": [line] * 1000})  # 100 KB
        refused = await http.post(BASE + "/messages", content=too_large, headers={"Content-Type": "application/json"})
        message = refused.json()["error"]["message"]
        assert refused.status_code == 413 and "MEMLANE_IMPORT_MAX_BYTES" in message and "in parts" in message

        note = await http.post(BASE + "/memories", json={"text": "x" * 10_000})  # other routes keep their cap
        assert note.status_code == 413 and "MEMLANE_SERVE_MAX_BODY_BYTES" in note.json()["error"]["message"]


async def test_what_a_job_could_not_store_is_said_with_its_reason(store, settings):
    limited, limited_settings = importing(
        store, settings, import_sync_messages=5, import_batch_messages=4, retention_max_memories_per_user=10
    )
    messages = [
        {"role": "user", "content": f"old line {i} about the harbour", "created_at": 1e9 + i} for i in range(30)
    ]
    app = create_app(SERVE_CONFIG, limited_settings, store=limited, mount_mcp=False)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        taken = await http.post(BASE + "/messages", json={"messages": messages})
        job = await finished(http, taken.json()["job_url"])
    assert job["state"] == "failed" and "MEMLANE_RETENTION_MAX_MEMORIES_PER_USER" in job["error"]
    kept = len((await limited.export_user("acme/imp")).messages)
    assert job["stored"] == kept and job["stored"] + job["failed"] == 30 and job["failed"] > 0
    assert all("MEMLANE_RETENTION_MAX_MEMORIES_PER_USER" in failure["reason"] for failure in job["failures"])


async def test_a_locomo_conversation_over_http_names_the_user_speaker(store, settings):
    limited, limited_settings = importing(store, settings, import_sync_messages=3)
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I started learning the cello."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "My brother plays the drums."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "I practise every evening."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "Nice, keep going."},
        ],
    }
    app = create_app(SERVE_CONFIG, limited_settings, store=limited, mount_mcp=False)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60) as http:
        taken = await http.post(BASE + "/messages", json={"conversation": conversation, "user_speaker": "Ana"})
        assert taken.status_code == 202, taken.text
        assert (await finished(http, taken.json()["job_url"]))["stored"] == 4
        wrong = await http.post(BASE + "/messages", json={"conversation": conversation, "user_speaker": "Anna"})
        assert wrong.status_code == 422 and "'Anna' says nothing here" in wrong.json()["error"]["message"]
    stored = (await limited.export_user("acme/imp")).messages
    assert [(m.name, m.speaker_role) for m in stored] == [("Ana", "owner"), ("Ben", "other")] * 2


async def test_a_job_stopped_midway_kept_every_message_and_sending_it_again_finishes_it(store):
    from memlane.import_jobs import ImportJobs
    from memlane.importing import messages_of

    lines = [
        {"role": "user", "content": f"day {i}: I fed the neighbour's goats", "created_at": 1e9 + i} for i in range(60)
    ]
    messages = messages_of({"messages": lines}, "acme/stop")

    embedding = asyncio.Event()

    class StoppedWhileEmbedding:  # the store, whose embedding never ends: the process stops during it
        def __getattr__(self, name):
            return getattr(store, name)

        async def reindex_pending(self, user_id):
            embedding.set()
            await asyncio.Event().wait()

    stopping = ImportJobs(StoppedWhileEmbedding, batch_messages=10)
    job = stopping.start("acme/stop", messages)
    await asyncio.wait_for(embedding.wait(), 60)  # every message is stored before any is embedded
    await stopping.close()  # the process stops
    assert (job.state, job.stored, job.embedded) == ("running", 60, 0)
    assert len((await store.export_user("acme/stop")).messages) == 60  # what was acknowledged is kept

    jobs = ImportJobs(lambda: store, batch_messages=10)  # the next process
    again = jobs.start("acme/stop", messages)  # the client sends the import again
    await jobs.wait(120)
    assert (again.state, again.stored, again.embedded) == ("done", 60, 60)
    hits = await store.search_memories("acme/stop", "neighbour's goats", kinds=["message"], limit=100)
    assert len(hits) == 60 and len((await store.export_user("acme/stop")).messages) == 60
