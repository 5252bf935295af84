"""Several `memlane serve` and `memlane worker` processes on one Redis (issue 26): run state lives
in Redis, so a run queued by one server and finished by a worker leaves that server free to delete
the user and to queue the user's later runs. Real processes, a real Redis Stack, a fake
OpenAI-compatible upstream for the chat and for the memory model."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from urllib.parse import quote

import httpx
import pytest
from conftest import drop_prefix_sync
from fake_upstream import FakeUpstream
from test_serve import LONG_NOTE, reply_for

from memlane import open_store
from memlane.config import Settings
from memlane.serve.config import hash_api_key

USERS = [f"user-{number}" for number in range(8)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return value


@pytest.fixture
def deployment(redis_url, tmp_path, embeddings):
    """Server A, server B and two workers on the test Redis, under a private key prefix."""
    key_prefix = f"t{uuid.uuid4().hex[:10]}"
    processes: list[subprocess.Popen] = []
    with FakeUpstream(reply=reply_for) as chat, FakeUpstream(reply='{"summary": ""}') as memory:
        config = tmp_path / "serve.toml"
        config.write_text(
            f'[[keys]]\nname = "acme"\ntenant = "acme"\nhash = "{hash_api_key("key-acme")}"\n\n'
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
            "MEMLANE_MEMORY_BUFFER_TOKENS": "150",
            "MEMLANE_MEMORY_IDLE_FLUSH_SECONDS": "0",  # nothing but the servers' queuing runs the buffers
            "MEMLANE_LLM_MAX_RETRIES": "0",
        }
        command = [sys.executable, "-m", "memlane.cli"]
        ports = [free_port(), free_port()]
        try:
            for port in ports:
                processes.append(
                    subprocess.Popen(
                        [*command, "serve", "--port", str(port)],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=open(tmp_path / f"serve-{port}.log", "wb"),
                    )
                )
            for number in range(2):
                processes.append(
                    subprocess.Popen(
                        [*command, "worker"],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=open(tmp_path / f"worker-{number}.log", "wb"),
                    )
                )
            urls = [f"http://127.0.0.1:{port}" for port in ports]
            for url in urls:
                wait_for(lambda: _ready(url), 120, f"memlane serve at {url}")
            time.sleep(3)  # the workers take runs too
            settings = Settings(
                redis_url=redis_url,
                key_prefix=key_prefix,
                data_dir=tmp_path / "data",
                openai_api_key=None,
                openai_base_url=None,
            )
            yield urls, settings, memory, tmp_path
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
            drop_prefix_sync(redis_url, key_prefix)


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + "/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def unprocessed(settings: Settings, embeddings, users: list[str]) -> dict[str, int]:
    async def count() -> dict[str, int]:
        store = await open_store(settings, embeddings=embeddings)
        try:
            return {user: len(await store.unprocessed_messages(f"acme/{user}")) for user in users}
        finally:
            await store.aclose()

    return asyncio.run(count())


def test_a_run_finished_by_another_process_frees_the_user_on_the_server_that_queued_it(deployment, embeddings):
    (server_a, server_b), settings, memory, tmp_path = deployment
    headers = {"Authorization": "Bearer key-acme"}
    with httpx.Client(base_url=server_a, headers=headers, timeout=90) as a:
        for user in USERS:  # each turn is over the buffer: server A queues one run per user
            chat = {"model": "assistant", "user": user, "messages": [{"role": "user", "content": LONG_NOTE}]}
            assert a.post("/v1/chat/completions", json=chat).status_code == 200
        wait_for(lambda: not any(unprocessed(settings, embeddings, USERS).values()), 120, "the first runs")
        time.sleep(1.0)

        # the runs were shared out: most of A's ended in server B or a worker, none may hold A
        for user in USERS[:4]:
            started = time.monotonic()
            deleted = a.delete("/v1/users/" + quote(user, safe=""))
            assert deleted.status_code == 200, (user, deleted.text)
            assert time.monotonic() - started < 10

        # A still queues the others' runs: their next turns are remembered
        requests_before = len(memory.requests)
        for user in USERS[4:]:
            chat = {
                "model": "assistant",
                "user": user,
                "messages": [{"role": "user", "content": "Second thought. " + LONG_NOTE}],
            }
            assert a.post("/v1/chat/completions", json=chat).status_code == 200
        for user in USERS[4:]:
            wait_for(
                lambda: len(a.get("/v1/users/" + quote(user, safe="") + "/export").json()["messages"]) >= 4,
                30,
                "the saves",
            )
        wait_for(lambda: not any(unprocessed(settings, embeddings, USERS[4:]).values()), 90, "the later runs")
        assert len(memory.requests) > requests_before
        queued = [
            line
            for line in a.get("/metrics").text.splitlines()
            if line.startswith('memlane_memory_runs_total{state="queued"}')
        ]
        assert float(queued[0].split()[-1]) == len(USERS) + len(USERS[4:])
