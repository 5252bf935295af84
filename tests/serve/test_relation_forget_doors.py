"""Forgetting an entity or a relation through the API and the CLI (issue 53, item 4): DELETE
/v1/users/{user}/entities/{entity} and /relations/{id} (404 when unknown, per tenant and scope,
hostile ids never a 5xx and never forgetting another's), `memlane relations USER --forget-entity /
--forget-relation / --ids`."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import httpx
from conftest import HOSTILE_IDS
from test_mcp import SERVE_CONFIG, serving
from test_relation_doors import links, moves

from memlane import cli, scoped_user_id
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id


async def test_the_api_forgets_an_entity_or_a_link_of_one_user_only(store, settings):
    alice, coach = store_user_id("acme", "alice"), scoped_user_id(store_user_id("acme", "alice"), "coach")
    for user in (alice, coach, store_user_id("globex", "alice")):
        await moves(store, user)
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        every = (await http.get("/v1/users/alice/relations", params={"include_past": "true"})).json()["data"]
        lisbon = next(link["id"] for link in every if link["object_name"] == "Lisbon")
        # another tenant's key, a reader's key, another user: nothing goes
        globex = {"Authorization": "Bearer key-globex"}
        assert (await http.delete(f"/v1/users/bob/relations/{lisbon}")).status_code == 404
        # ids come from content: globex's alice holds a link of the same id, and forgets her own only
        assert (await http.delete(f"/v1/users/alice/relations/{lisbon}", headers=globex)).status_code == 200
        assert (await http.delete(f"/v1/users/alice/relations/{lisbon}", headers=globex)).status_code == 404
        reader = {"Authorization": "Bearer key-acme-reader"}
        assert (await http.delete("/v1/users/alice/entities/Bea", headers=reader)).status_code == 403
        for hostile in HOSTILE_IDS:
            for route in ("entities", "relations"):
                answer = await http.delete(f"/v1/users/alice/{route}/{quote(hostile, safe='')}")
                assert answer.status_code in (404, 422), (route, hostile, answer.status_code, answer.text)
        assert (await http.delete("/v1/users/alice/relations/a%00b")).status_code == 422
        assert len((await http.get("/v1/users/alice/relations", params={"include_past": "true"})).json()["data"]) == 3

        gone = await http.delete(f"/v1/users/alice/relations/relation:{lisbon}")
        assert gone.status_code == 200 and gone.json() == {"id": lisbon, "deleted": True}
        assert (await http.delete(f"/v1/users/alice/relations/{lisbon}")).status_code == 404  # once
        answer = await http.delete(f"/v1/users/alice/entities/{quote('bea')}")  # any of its names, case aside
        assert answer.status_code == 200 and answer.json()["relations_removed"] == 2
        assert (await http.get("/v1/users/alice/relations", params={"include_past": "true"})).json()["data"] == []
        assert "Bea" not in {e["name"] for e in (await http.get("/v1/users/alice/entities")).json()["data"]}
        assert (await http.delete("/v1/users/alice/entities/Bea")).status_code == 404

        # alice's coach scope and globex's alice keep theirs
        assert links((await http.get("/v1/users/alice/relations?agent_id=coach")).json()["data"]) == {
            ("user", "sister", "Bea"),
            ("Bea", "lives_in", "Porto"),
        }
        globex_links = (await http.get("/v1/users/alice/relations?include_past=true", headers=globex)).json()["data"]
        assert links(globex_links) == {("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")}
        chinese = await http.delete(f"/v1/users/alice/entities/{quote('王总')}?agent_id=coach")
        assert chinese.status_code == 404 and "王总" in chinese.json()["error"]["message"]


async def test_the_cli_forgets_by_name_and_by_id(store, settings, monkeypatch, capsys, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await moves(store, "u")
    await moves(store, "v")

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["relations", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = await asyncio.to_thread(run_cli, "u", "--past", "--ids")
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0 and rows[0][-1] == "id"
    lisbon = next(row[5] for row in rows[1:] if row[2] == "Lisbon")
    assert await asyncio.to_thread(run_cli, "u", "--forget-relation", lisbon) == (0, f"forgot relation {lisbon}\n", "")
    code, _, err = await asyncio.to_thread(run_cli, "u", "--forget-relation", lisbon)
    assert code == 1 and "no relation" in err
    assert (await asyncio.to_thread(run_cli, "u", "--forget-entity", "Bea"))[:2] == (
        0,
        "forgot Bea and 2 relation(s)\n",
    )
    assert (await asyncio.to_thread(run_cli, "u", "--past"))[1] == "no relations\n"
    code, _, err = await asyncio.to_thread(run_cli, "u", "--forget-entity", "")
    assert code == 2 and "empty" in err  # bad input: a clear error, nothing forgotten
    assert len(await store.list_relations("v", include_past=True)) == 3  # v keeps hers
