"""Keyword-findable while the embedder is down, through the memories API (issue 54; the store's side
is tests/store/test_keyword_while_down.py)."""

from __future__ import annotations

import httpx
from scripted import FlakyEmbeddings
from test_mcp import SERVE_CONFIG, serving

from memlane.serve.app import create_app
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore


async def test_the_memories_api_finds_a_message_stored_during_the_outage_by_its_words(store, settings, embeddings):
    """The HTTP door: POST /messages while the embedder is down, POST /search by its words at once."""
    flaky = FlakyEmbeddings(embeddings, down=True)
    degraded = RedisMemoryStore(store.client, flaky, **settings.parts(*STORE_PARTS))
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=degraded, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        body = {"messages": [{"role": "user", "content": "Our wifi password is plum-4471"}]}
        assert (await http.post("/v1/users/bo/messages", json=body)).status_code == 201
        found = await http.post("/v1/users/bo/search", json={"query": "wifi password plum-4471"})
        assert [hit["memory"]["text"] for hit in found.json()["data"]] == ["Our wifi password is plum-4471"]
        flaky.down = False  # the next save embeds what waited (a worker's sweep does too: reindex_unindexed)
        later = {"messages": [{"role": "user", "content": "I am back home"}], "session_id": "later"}
        assert (await http.post("/v1/users/bo/messages", json=later)).status_code == 201
        found = await http.post("/v1/users/bo/search", json={"query": "what is the wireless network key"})
        assert found.json()["data"][0]["memory"]["text"] == "Our wifi password is plum-4471"
        assert found.json()["data"][0]["vector_similarity"] > 0  # embedded since
