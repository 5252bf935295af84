"""Metadata and filters through the memories API and MCP (issue 31, item 2): notes and messages
keep their metadata, search narrows by it on the declared fields, and an undeclared field or a
value a declared field cannot hold is answered 422 (a tool error over MCP) naming the field and
the setting."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest
from test_mcp import SERVE_CONFIG, http_client, serving, text

from memlane.config import Settings
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"metadata_fields": {"project": "tag", "priority": "numeric"}})


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


async def test_the_memories_api_keeps_metadata_and_filters_search_by_it(store, settings):
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(
            base_url=base_url + user_path("alice"), headers={"Authorization": "Bearer key-acme"}, timeout=60
        ) as http,
    ):
        notes = [
            ("the apollo launch moved to friday", {"project": "apollo", "priority": 1}),
            ("the gemini review is on monday", {"project": "gemini", "priority": 3, "owner": {"name": "Li"}}),
            ("the launch party needs a cake", {"project": "a*b|c{d}", "priority": 5}),
        ]
        for note, metadata in notes:
            created = await http.post("/memories", json={"text": note, "metadata": metadata})
            assert created.status_code == 201 and created.json()["metadata"] == metadata
        # the same note again (issue 50, item 1): 200 with repeat_of, the stored metadata kept and merged
        again = await http.post("/memories", json={"text": notes[0][0]})
        assert again.status_code == 200 and again.json()["repeat_of"]["identical"] is True, again.text
        assert again.json()["metadata"] == notes[0][1]
        merged = await http.post("/memories", json={"text": notes[0][0], "metadata": {"owner": "kim"}})
        assert merged.status_code == 200 and merged.json()["metadata"] == {**notes[0][1], "owner": "kim"}
        notes[0] = (notes[0][0], {**notes[0][1], "owner": "kim"})  # as exported below
        stored = await http.post(
            "/messages",
            json={
                "messages": [
                    {
                        "id": "m1",
                        "role": "user",
                        "content": "the apollo launch checklist is done",
                        "metadata": {"project": "apollo", "channel": "slack"},
                    },
                ]
            },
        )
        assert stored.status_code == 201 and stored.json()["stored"] == 1

        async def search(filter) -> list[dict]:
            answer = await http.post(
                "/search", json={"query": "launch review checklist", "limit": 20, "filter": filter}
            )
            assert answer.status_code == 200, answer.text
            return [hit["memory"] for hit in answer.json()["data"]]

        apollo = await search({"project": "apollo"})
        assert sorted(memory["text"] for memory in apollo) == [
            "the apollo launch checklist is done",
            "the apollo launch moved to friday",
        ]
        assert {memory["kind"] for memory in apollo} == {"event", "message"}
        assert next(m for m in apollo if m["kind"] == "message")["metadata"] == {
            "project": "apollo",
            "channel": "slack",
        }
        assert [m["text"] for m in await search({"priority": {"gte": 2, "lt": 5}})] == [
            "the gemini review is on monday"
        ]
        assert [m["text"] for m in await search({"project": "a*b|c{d}"})] == ["the launch party needs a cake"]
        assert {m["text"] for m in await search({"OR": [{"project": {"in": ["gemini"]}}, {"priority": 5}]})} == {
            "the gemini review is on monday",
            "the launch party needs a cake",
        }
        assert len(await search(None)) == 4

        refused = await http.post("/search", json={"query": "launch", "filter": {"channel": "slack"}})
        assert refused.status_code == 422
        message = refused.json()["error"]["message"]
        assert "'channel' is not a declared field" in message and "MEMLANE_METADATA_FIELDS" in message
        assert (
            await http.post("/search", json={"query": "launch", "filter": {"priority": {"like": 1}}})
        ).status_code == 422
        assert (await http.post("/search", json={"query": "launch", "filter": ["project"]})).status_code == 422
        nul_filter = await http.post("/search", json={"query": "launch", "filter": {"project": "a\u0000"}})
        assert nul_filter.status_code == 422 and "no control characters" in nul_filter.json()["error"]["message"]
        bad_note = await http.post("/memories", json={"text": "another note", "metadata": {"priority": "urgent"}})
        assert bad_note.status_code == 422 and "'priority' is declared numeric" in bad_note.json()["error"]["message"]
        bad_message = await http.post(
            "/messages", json={"messages": [{"role": "user", "content": "x", "metadata": "slack"}]}
        )
        assert bad_message.status_code == 422 and "not a JSON object" in bad_message.json()["error"]["message"]

        exported = (await http.get("/export")).json()
        assert exported["messages"][0]["metadata"] == {"project": "apollo", "channel": "slack"}
        assert sorted(json.dumps(event["metadata"], sort_keys=True) for event in exported["events"]) == sorted(
            json.dumps(metadata, sort_keys=True) for _, metadata in notes
        )
    assert (
        await store.search_memories(store_user_id("acme", "bob"), "launch", metadata_filter={"project": "apollo"}) == []
    )


async def test_mcp_tools_remember_with_metadata_and_search_with_a_filter(store, settings):
    async with serving(create_app(SERVE_CONFIG, settings, store=store)) as base_url:
        async with http_client(base_url + "/mcp", "key-acme", "dana") as dana:
            assert text(
                await dana.call_tool(
                    "remember",
                    {"text": "the apollo launch moved to friday", "metadata": {"project": "apollo", "priority": 2}},
                )
            ).startswith("remembered [event:")
            assert text(
                await dana.call_tool(
                    "remember", {"text": "the gemini launch is on monday", "metadata": {"project": "gemini"}}
                )
            ).startswith("remembered")
            found = text(
                await dana.call_tool("search_memories", {"query": "launch", "filter": {"project": "apollo"}})
            ).splitlines()
            assert (
                len(found) == 1
                and "apollo launch" in found[0]
                and found[0].endswith('{"project": "apollo", "priority": 2}')
            )
            assert "gemini" in text(
                await dana.call_tool("search_memories", {"query": "launch", "filter": {"priority": {"ne": 2}}})
            )
            refused = await dana.call_tool("search_memories", {"query": "launch", "filter": {"team": "x"}})
            assert refused.is_error and "'team' is not a declared field" in refused.content[0].text
            refused = await dana.call_tool("remember", {"text": "a third note", "metadata": {"priority": "high"}})
            assert refused.is_error and "declared numeric" in refused.content[0].text
        async with http_client(
            base_url + "/mcp", "key-acme", "erin"
        ) as erin:  # another user's filter finds nothing of dana's
            assert (
                text(await erin.call_tool("search_memories", {"query": "launch", "filter": {"project": "apollo"}}))
                == "no memories found"
            )
    [event] = [e for e in await store.list_events(store_user_id("acme", "dana")) if "apollo" in e.summary]
    assert event.metadata == {"project": "apollo", "priority": 2}
