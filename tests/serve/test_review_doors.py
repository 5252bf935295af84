"""The review list through the memories API and the CLI (issue 54): the facts a memory run held under
memory_min_confidence are listed, confirmed (a profile entry from then on) or dropped; another
tenant's key sees none of them, an unknown id is a 404 (exit 1 on the CLI) and changes nothing."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import httpx
from test_mcp import SERVE_CONFIG, serving
from test_webhooks import SECRET, receiver, until  # noqa: F401  (receiver: a pytest fixture)

from memlane import cli
from memlane.serve.app import create_app
from memlane.serve.config import Tenant, store_user_id
from memlane.store.records import MemoryUpdate, ProfileEntry
from memlane.webhooks import WebhookTarget


def _held(user_id: str, subtopic: str, content: str, confidence: float) -> ProfileEntry:
    return ProfileEntry(user_id=user_id, topic="interests", subtopic=subtopic, content=content, confidence=confidence)


async def hold(store, user_id: str, *entries: ProfileEntry) -> None:
    """What a memory run writes for facts under the floor (tests/graph/test_held_for_review.py runs the graph)."""
    await store.apply_update(MemoryUpdate(user_id=user_id, held_profile=list(entries)))


async def test_the_api_lists_confirms_and_drops_held_facts_per_tenant(store, settings):
    alice = store_user_id("acme", "alice")
    await hold(
        store, alice, _held(alice, "music", "might take up the cello", 0.1), _held(alice, "书", "也许喜欢科幻小说", 0.2)
    )
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        review = "/v1/users/" + quote("alice") + "/review"
        listed = (await http.get(review)).json()["data"]
        assert {(fact["subtopic"], fact["content"], fact["confidence"]) for fact in listed} == {
            ("music", "might take up the cello", 0.1),
            ("书", "也许喜欢科幻小说", 0.2),
        }
        other_tenant = await http.get(review, headers={"Authorization": "Bearer key-globex"})
        assert other_tenant.status_code == 200 and other_tenant.json()["data"] == []
        assert (await http.get(review + "?agent_id=coach")).json()["data"] == []
        cello, books = sorted(listed, key=lambda fact: fact["subtopic"] != "music")
        refused = await http.post(f"{review}/{cello['id']}/confirm", headers={"Authorization": "Bearer key-globex"})
        assert refused.status_code == 404
        read_only = await http.post(
            f"{review}/{cello['id']}/confirm", headers={"Authorization": "Bearer key-acme-reader"}
        )
        assert read_only.status_code == 403

        confirmed = await http.post(f"{review}/{cello['id']}/confirm")
        assert confirmed.status_code == 200 and confirmed.json()["confidence"] == 1.0
        profile = (await http.get("/v1/users/alice/profile")).json()["data"]
        assert [entry["content"] for entry in profile] == ["might take up the cello"]
        assert (await http.post(f"{review}/{cello['id']}/confirm")).status_code == 404
        assert (await http.post(f"{review}/{books['id']}/drop")).json() == {"id": books["id"], "dropped": True}
        assert (await http.post(f"{review}/{books['id']}/drop")).status_code == 404
        assert (await http.get(review)).json()["data"] == []
        assert [entry.content for entry in await store.get_profile(alice)] == ["might take up the cello"]


async def test_the_cli_lists_confirms_and_drops_held_facts(store, settings, monkeypatch, capsys, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await hold(
        store, "u", _held("u", "music", "might take up the cello", 0.1), _held("u", "书", "也许喜欢科幻小说", 0.2)
    )

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["review", *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, out, _ = await asyncio.to_thread(run_cli, "u")
    lines = out.splitlines()
    assert code == 0 and lines[0].split("\t") == ["id", "confidence", "said", "slot", "content"]
    rows = {line.split("\t")[4]: line.split("\t") for line in lines[1:]}
    assert set(rows) == {"might take up the cello", "也许喜欢科幻小说"} and rows["也许喜欢科幻小说"][1] == "0.20"
    assert (await asyncio.to_thread(run_cli, "other"))[1] == "no facts held for review\n"
    assert (await asyncio.to_thread(run_cli, "u", "drop"))[0] == 2
    code, out, err = await asyncio.to_thread(run_cli, "u", "confirm", rows["might take up the cello"][0], "nope")
    assert code == 1 and "confirmed" in out and "interests / music" in out and "no fact 'nope' held" in err
    code, out, _ = await asyncio.to_thread(run_cli, "u", "drop", rows["也许喜欢科幻小说"][0])
    assert code == 0 and out.startswith("dropped ")
    assert (await asyncio.to_thread(run_cli, "u"))[1] == "no facts held for review\n"
    assert [entry.content for entry in await store.get_profile("u")] == ["might take up the cello"]


async def test_a_confirmed_fact_is_posted_as_added_and_a_dropped_one_not_at_all(store, settings, receiver):  # noqa: F811
    alice = store_user_id("acme", "alice")
    await hold(
        store, alice, _held(alice, "music", "might take up the cello", 0.1), _held(alice, "书", "也许喜欢科幻小说", 0.2)
    )
    receiver.up()
    target = WebhookTarget(url=f"http://127.0.0.1:{receiver.port}/hook", secret=SECRET, backoff_seconds=0.2)
    config = SERVE_CONFIG.model_copy(update={"tenants": {"acme": Tenant(webhooks=[target])}})
    async with (
        serving(create_app(config, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        held = {fact["subtopic"]: fact["id"] for fact in (await http.get("/v1/users/alice/review")).json()["data"]}
        assert (await http.post(f"/v1/users/alice/review/{held['书']}/drop")).status_code == 200
        assert (await http.post(f"/v1/users/alice/review/{held['music']}/confirm")).status_code == 200
        await until(lambda: len(receiver.posts) >= 1)
        await asyncio.sleep(0.5)
    [event] = receiver.events()
    assert (event["type"], event["user_id"], event["memory"]["kind"]) == ("memory.added", "alice", "profile")
    assert event["memory"]["text"] == "interests / music: might take up the cello"
