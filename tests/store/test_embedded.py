"""The embedded Redis Stack launcher: start, reuse, restart with data kept, clear errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import redis

from memlane.config import Settings
from memlane.store.base import Message, RedisUnavailable
from memlane.store.embedded import EmbeddedRedis, ensure_libssl, find_redis_stack
from memlane.store.redis import open_store



def test_redis_stack_binaries_and_libssl_are_found(tmp_path):
    binaries = find_redis_stack()
    libssl_dir = ensure_libssl(Settings().cache_dir)
    env = dict(os.environ)
    if libssl_dir is not None:
        assert (libssl_dir / "libssl.so.1.1").exists()
        env["LD_LIBRARY_PATH"] = str(libssl_dir)
    version = subprocess.run([str(binaries.server), "--version"], env=env, capture_output=True, text=True)
    assert version.returncode == 0 and "v=7." in version.stdout
    assert "LD_LIBRARY_PATH" not in os.environ or str(libssl_dir) not in os.environ["LD_LIBRARY_PATH"]


async def test_data_survives_a_restart_and_a_second_process_reuses_the_server(tmp_path, embeddings):
    settings = Settings(data_dir=tmp_path, redis_url=None)
    first = EmbeddedRedis(settings)
    url = first.start()
    assert url.startswith("redis://:") and "@127.0.0.1:" in url
    state = json.loads((tmp_path / "redis" / "server.json").read_text())
    assert oct((tmp_path / "redis" / "server.json").stat().st_mode)[-3:] == "600"

    # a second memlane process finds the running server instead of starting another
    probe = textwrap.dedent(f"""
        from memlane.config import Settings
        from memlane.store.embedded import EmbeddedRedis
        server = EmbeddedRedis(Settings(data_dir={str(tmp_path)!r}, redis_url=None))
        print(server.start(), server.owner)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == [url, "False"], out.stderr

    store = await open_store(Settings(redis_url=url, key_prefix="restart"), embeddings=embeddings)
    await store.add_messages([Message(id="m1", user_id="u", session_id="s", role="user", content="我喜欢黑咖啡")])
    await store.aclose()
    first.stop()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=state["port"], password=state["password"], socket_connect_timeout=1).ping()
    assert not (tmp_path / "redis" / "server.json").exists()

    second = EmbeddedRedis(settings)
    url2 = second.start()
    try:
        store = await open_store(Settings(redis_url=url2, key_prefix="restart"), embeddings=embeddings)
        assert [m.content for m in await store.recent_messages("u", "s")] == ["我喜欢黑咖啡"]
        assert [h.memory.text for h in await store.search_memories("u", "咖啡")] == ["我喜欢黑咖啡"]
        await store.aclose()
    finally:
        second.stop()


def test_a_server_that_cannot_start_says_what_to_do(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None, redis_port=port))
        with pytest.raises(RedisUnavailable, match="REDIS_URL"):
            server.start(timeout=10)


async def test_open_store_on_a_dead_url_says_what_to_do(embeddings):
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await open_store(Settings(redis_url="redis://127.0.0.1:1/0"), embeddings=embeddings)
