"""Relations through the API and the CLI (issue 53): GET /v1/users/{user}/entities and /relations
(as_of=, include_past=), per tenant and agent scope; `memlane relations USER [--past|--as-of]`."""

from __future__ import annotations

import asyncio

import httpx
from test_mcp import SERVE_CONFIG, serving

from memlane import cli, scoped_user_id
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id
from memlane.store.relations import RelationStatement

DAY = 86_400.0


async def moves(store, user_id: str) -> None:
    await store.record_relations(
        user_id,
        [
            RelationStatement(subject="me", predicate="sister", object="Bea", valid_from=1 * DAY, exclusive=False),
            RelationStatement(subject="Bea", predicate="lives_in", object="Lisbon", valid_from=2 * DAY),
        ],
    )
    await store.record_relations(
        user_id, [RelationStatement(subject="Bea", predicate="lives_in", object="Porto", valid_from=9 * DAY)]
    )


def links(data: list[dict]) -> set[tuple[str, str, str]]:
    return {(link["subject_name"], link["predicate"], link["object_name"]) for link in data}


async def test_the_api_lists_entities_and_links_per_tenant_scope_and_time(store, settings):
    await moves(store, store_user_id("acme", "alice"))
    await moves(store, scoped_user_id(store_user_id("acme", "alice"), "coach"))
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        entities = (await http.get("/v1/users/alice/entities")).json()["data"]
        assert sorted(entity["name"] for entity in entities) == ["Bea", "Lisbon", "Porto", "user"]
        now = (await http.get("/v1/users/alice/relations")).json()["data"]
        assert links(now) == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
        then = (await http.get("/v1/users/alice/relations", params={"as_of": 5 * DAY})).json()["data"]
        assert links(then) == {("user", "sister", "Bea"), ("Bea", "lives_in", "Lisbon")}
        every = (await http.get("/v1/users/alice/relations", params={"include_past": "true"})).json()["data"]
        assert [link["valid_until"] for link in every if link["object_name"] == "Lisbon"] == [9 * DAY]
        assert len((await http.get("/v1/users/alice/relations?agent_id=coach")).json()["data"]) == 2
        bad = await http.get("/v1/users/alice/relations", params={"as_of": "yesterday"})
        assert bad.status_code == 422
        other_tenant = await http.get("/v1/users/alice/relations", headers={"Authorization": "Bearer key-globex"})
        assert other_tenant.status_code == 200 and other_tenant.json()["data"] == []
        assert (await http.get("/v1/users/bob/entities")).json()["data"] == []


async def test_the_cli_lists_links(store, settings, monkeypatch, capsys, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await moves(store, "u")

    def run_cli(*argv: str) -> tuple[int, str]:
        code = cli.main(["relations", *argv])
        return code, capsys.readouterr().out

    code, out = await asyncio.to_thread(run_cli, "u")
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0 and rows[0] == ["subject", "predicate", "object", "since", "until"]
    assert {tuple(row[:3]) for row in rows[1:]} == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
    code, out = await asyncio.to_thread(run_cli, "u", "--past")
    assert len(out.splitlines()) == 4 and any(row.split("\t")[4] for row in out.splitlines()[1:])
    code, out = await asyncio.to_thread(run_cli, "u", "--as-of", str(5 * DAY))
    assert "Lisbon" in out and "Porto" not in out
    assert (await asyncio.to_thread(run_cli, "nobody"))[1] == "no relations\n"
