"""The relation tools over MCP (issue 53, item 4; serve/mcp_relations.py): list_entities,
list_relations (now, as_of, include_past), forget_entity and forget_relation, per tenant and user
through `memlane serve`'s endpoint, hostile ids answered, never crashed on."""

from __future__ import annotations

from conftest import HOSTILE_IDS
from test_mcp import SERVE_CONFIG, http_client, http_url, text  # noqa: F401  (http_url: a pytest fixture)
from test_relation_doors import DAY, moves

from memlane.serve.config import store_user_id


async def test_the_relation_tools_list_and_forget_per_tenant(store, http_url):  # noqa: F811
    alice = store_user_id("acme", "alice")
    await moves(store, alice)  # me -sister-> Bea; Bea lives in Lisbon (days 2-9), then Porto
    async with http_client(http_url, "key-acme", "alice") as client:
        entities = text(await client.call_tool("list_entities", {}))
        assert [line.split("] ", 1)[1].split(" (")[0] for line in entities.splitlines()] == [
            "Bea",
            "Lisbon",
            "Porto",
            "user",
        ]
        now = await client.call_tool("list_relations", {})
        assert text(now).splitlines()[0].startswith("[relation:") and "the user → sister → Bea" in text(now)
        assert "Bea → lives in → Porto (since" in text(now) and "Lisbon" not in text(now)
        links = now.structured_content["results"]
        assert {(link["subject_name"], link["predicate"], link["object_name"]) for link in links} == {
            ("user", "sister", "Bea"),
            ("Bea", "lives_in", "Porto"),
        }
        then = text(await client.call_tool("list_relations", {"as_of": 5 * DAY}))
        assert "Lisbon" in then and "Porto" not in then
        assert "Lisbon" in text(await client.call_tool("list_relations", {"as_of": "1970-01-06"}))
        every = text(await client.call_tool("list_relations", {"include_past": True}))
        assert "Bea → lives in → Lisbon (since 1970-01-0" in every and ", until 1970-01-" in every
        bad = await client.call_tool("list_relations", {"as_of": "last spring"})
        assert bad.is_error and "ISO 8601" in said(bad)
        past = await client.call_tool("list_relations", {"include_past": True})
        lisbon_id = next(link["id"] for link in past.structured_content["results"] if link["object_name"] == "Lisbon")

        # another tenant's alice and another user see none of it, and forget nothing
        async with http_client(http_url, "key-globex", "alice") as other:
            assert text(await other.call_tool("list_relations", {})) == "no relations"
            assert text(await other.call_tool("forget_entity", {"entity": "Bea"})).startswith("no person")
            assert text(await other.call_tool("forget_relation", {"relation_id": lisbon_id})).startswith("no relation")
        for hostile in HOSTILE_IDS:
            answer = await client.call_tool("forget_relation", {"relation_id": hostile})  # unknown, or too long
            assert said(answer).startswith("no relation") or (answer.is_error and "relation id" in said(answer))
            answer = await client.call_tool("forget_entity", {"entity": hostile})
            assert answer.is_error or said(answer).startswith("no person"), said(answer)
        refused = await client.call_tool("forget_relation", {"relation_id": "a\x00b"})
        assert refused.is_error and "NUL" in said(refused)

        assert text(await client.call_tool("forget_relation", {"relation_id": f"[relation:{lisbon_id}]"})) == (
            f"forgot relation:{lisbon_id}"
        )
        assert "Lisbon →" not in text(await client.call_tool("list_relations", {"include_past": True}))
        assert text(await client.call_tool("forget_entity", {"entity": "Bea"})) == "forgot Bea and 2 links"
        assert text(await client.call_tool("list_relations", {"include_past": True})) == "no relations"
    async with http_client(http_url, "key-acme-reader", "alice") as reader:
        refused = await reader.call_tool("forget_entity", {"entity": "Porto"})
        assert refused.is_error and "write" in said(refused)
        assert "Porto" in text(await reader.call_tool("list_entities", {}))


def said(result) -> str:
    """What a tool answered, an error too."""
    return " ".join(getattr(part, "text", "") for part in result.content)
