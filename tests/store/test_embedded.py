"""The embedded Redis Stack launcher: start, reuse, restart with data kept, clear errors."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
import redis

from memlane.config import Settings
from memlane.store.embedded import server as embedded
from memlane.store.embedded.binaries import (
    LIBSSL_SHA256,
    LIBSSL_VERSION,
    ensure_libssl,
    find_redis_stack,
    unpack_libssl,
)
from memlane.store.embedded.server import EmbeddedRedis
from memlane.store.errors import RedisUnavailable
from memlane.store.records import Message
from memlane.store.redis.store import open_store


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
    first = EmbeddedRedis(settings.store)
    url = first.start()
    assert url.startswith("redis://:") and "@127.0.0.1:" in url
    state = json.loads((tmp_path / "redis" / "server.json").read_text())
    assert oct((tmp_path / "redis" / "server.json").stat().st_mode)[-3:] == "600"

    # a second memlane process finds the running server instead of starting another
    probe = textwrap.dedent(f"""
        from memlane.config import Settings
        from memlane.store.embedded.server import EmbeddedRedis
        server = EmbeddedRedis(Settings(data_dir={str(tmp_path)!r}, redis_url=None).store)
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
    assert first.running_url() is None  # stopped: the state keeps the port and password, not a pid

    second = EmbeddedRedis(settings.store)
    url2 = second.start()
    assert url2 == url  # the same port and password: clients that kept the URL reconnect
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
        server = EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None, redis_port=port).store)
        with pytest.raises(RedisUnavailable, match="REDIS_URL"):
            server.start(timeout=10)


async def test_open_store_on_a_dead_url_says_what_to_do(embeddings):
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await open_store(Settings(redis_url="redis://127.0.0.1:1/0"), embeddings=embeddings)


PINNED_DEB = f"libssl1.1_{LIBSSL_VERSION}_amd64.deb"


def test_a_libssl_package_that_is_not_the_pinned_one_is_refused(tmp_path):
    debs = tmp_path / "apt" / "debs"
    debs.mkdir(parents=True)
    (debs / PINNED_DEB).write_bytes(b"!<arch>\nnot the package Debian signed")
    # an unpacked copy that no check vouches for is not used either
    unverified = tmp_path / "libssl1.1" / "usr" / "lib" / "x86_64-linux-gnu"
    unverified.mkdir(parents=True)
    (unverified / "libssl.so.1.1").write_bytes(b"anything")

    with pytest.raises(RedisUnavailable, match="refusing .*SHA-256.*REDIS_URL"):
        unpack_libssl(tmp_path, "amd64")
    with pytest.raises(RedisUnavailable, match="no pinned SHA-256 .* s390x"):
        unpack_libssl(tmp_path, "s390x")


def test_the_pinned_libssl_package_is_unpacked_and_marked(tmp_path):
    cached = Settings().cache_dir / "apt" / "debs" / PINNED_DEB
    if not cached.is_file():
        pytest.skip(f"no {PINNED_DEB} in the cache (this system has libssl1.1, or it was never fetched)")
    debs = tmp_path / "apt" / "debs"
    debs.mkdir(parents=True)
    shutil.copy(cached, debs / PINNED_DEB)
    libssl_dir = unpack_libssl(tmp_path, "amd64")
    assert (libssl_dir / "libssl.so.1.1").is_file()
    assert (tmp_path / "libssl1.1" / ".sha256").read_text().strip() == LIBSSL_SHA256["amd64"]


async def read_when_back(store, timeout: float = 60.0) -> list[str]:
    """The messages of u/s through `store`'s client, once its Redis answers again."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                return [message.content for message in await store.recent_messages("u", "s")]
            except RedisUnavailable:
                await asyncio.sleep(0.2)


async def test_a_crashed_server_comes_back_on_its_url_and_old_clients_reconnect(tmp_path, embeddings):
    server = EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None).store)
    url = server.start()
    store = await open_store(Settings(redis_url=url, key_prefix="crash"), embeddings=embeddings)
    try:
        await store.add_messages([Message(id="m1", user_id="u", session_id="s", role="user", content="我喜欢黑咖啡")])
        crashed = server.process
        os.kill(crashed.pid, signal.SIGKILL)

        # the process that started it starts it again, on the same port and password
        assert await read_when_back(store) == ["我喜欢黑咖啡"]
        assert server.url == url and server.process is not None and server.process.pid != crashed.pid
        again = await open_store(Settings(redis_url=url, key_prefix="crash"), embeddings=embeddings)
        assert [hit.memory.text for hit in await again.search_memories("u", "咖啡")] == ["我喜欢黑咖啡"]
        await again.aclose()
    finally:
        await store.aclose()
        server.stop()


async def test_a_new_open_store_starts_a_crashed_server_again_on_its_url(tmp_path, embeddings, monkeypatch):
    settings = Settings(data_dir=tmp_path, redis_url=None, key_prefix="crash")
    # started by `memlane redis start` (detached: no process watches over it)
    detached = EmbeddedRedis(settings.store, detach=True)
    url = detached.start()
    monkeypatch.setattr(embedded, "_process_server", None)
    store = await open_store(settings, embeddings=embeddings)
    try:
        assert store.url == url
        await store.add_messages([Message(id="m1", user_id="u", session_id="s", role="user", content="我喜欢黑咖啡")])
        os.kill(detached.process.pid, signal.SIGKILL)
        detached.process.wait()

        # this process's next open_store finds the server dead and starts it on the same URL
        again = await open_store(settings, embeddings=embeddings)
        assert again.url == url
        assert [m.content for m in await again.recent_messages("u", "s")] == ["我喜欢黑咖啡"]
        await again.aclose()
        assert await read_when_back(store) == ["我喜欢黑咖啡"]  # the old client reconnects
    finally:
        await store.aclose()
        if embedded._process_server is not None:
            embedded._process_server.stop()


def modes(root) -> dict[str, str]:
    """Permission bits of `root` and everything under it, by path relative to `root`'s parent."""
    found = {root.name: oct(root.stat().st_mode & 0o777)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root.parent))] = oct(path.stat().st_mode & 0o777)
    return found


def test_the_password_stays_off_the_command_line_and_the_data_is_private(tmp_path):
    # what an older memlane left: a world-readable data dir and AOF files
    old = tmp_path / "data" / "redis"
    (old / "appendonlydir").mkdir(parents=True)
    (old / "appendonlydir" / "appendonly.aof.1.incr.aof").write_text("")
    (old / "server.json.partial").write_text("{}")
    for path in (tmp_path / "data", old, old / "appendonlydir"):
        path.chmod(0o755)
    for path in (old / "appendonlydir" / "appendonly.aof.1.incr.aof", old / "server.json.partial"):
        path.chmod(0o644)

    server = EmbeddedRedis(Settings(data_dir=tmp_path / "data", redis_url=None).store)
    url = server.start()
    try:
        password = json.loads(server.state_file.read_text())["password"]
        assert password and password in url
        # what `ps` shows, at exec time and now
        assert not any(password in arg for arg in server.process.args)
        with open(f"/proc/{server.process.pid}/cmdline", "rb") as cmdline:
            assert password.encode() not in cmdline.read()
        # the config file carries it, readable by this user alone, and the server requires it
        assert password in server.config_file.read_text()
        client = redis.Redis.from_url(url)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=json.loads(server.state_file.read_text())["port"]).ping()

        client.set("k", "v" * 1000)
        client.bgrewriteaof()  # new AOF files, written by the server itself
        for _ in range(100):
            if not client.info("persistence")["aof_rewrite_in_progress"]:
                break
            time.sleep(0.05)
        client.save()  # an RDB file too
        client.close()
        found = modes(old)
        assert "redis/dump.rdb" in found and any(path.endswith(".base.rdb") for path in found), found
        assert {path: mode for path, mode in found.items() if (old.parent / path).is_dir()} == {
            "redis": "0o700",
            "redis/appendonlydir": "0o700",
        }
        assert {mode for path, mode in found.items() if not (old.parent / path).is_dir()} == {"0o600"}, found
        assert oct((tmp_path / "data").stat().st_mode & 0o777) == "0o755"  # a data dir someone chose is theirs
    finally:
        server.stop()

    fresh = EmbeddedRedis(Settings(data_dir=tmp_path / "new" / "data", redis_url=None).store)
    fresh.start()
    fresh.stop()
    assert oct((tmp_path / "new" / "data").stat().st_mode & 0o777) == "0o700"  # one memlane creates is private


async def test_saves_that_fail_while_redis_is_dead_give_their_connections_back(tmp_path, embeddings):
    server = EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None).store, detach=True)
    url = server.start()
    settings = Settings(redis_url=url, key_prefix="leak", redis_max_connections=3, redis_pool_timeout_seconds=2.0)
    store = await open_store(settings, embeddings=embeddings)
    try:

        def turn(number: int) -> list[Message]:
            return [Message(id=f"m{number}", user_id="u", session_id="s", role="user", content=f"turn {number}")]

        await asyncio.gather(*(store.add_messages(turn(n)) for n in range(3)))  # the pool holds 3 connections
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
        for number in range(3, 9):  # each fails on a connection Redis closed
            with pytest.raises(RedisUnavailable):
                await store.add_messages(turn(number))
        EmbeddedRedis(Settings(data_dir=tmp_path, redis_url=None).store, detach=True).start()
        await store.add_messages(turn(9))  # a free connection: none was kept by a failed save
        assert [m.content for m in await store.recent_messages("u", "s")][-1] == "turn 9"
    finally:
        await store.aclose()
        embedded.stop_running(Settings(data_dir=tmp_path, redis_url=None).store)
