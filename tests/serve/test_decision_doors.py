"""Decisions as memories through the facade and the memories API (issue 54): what the memory model
records as a decision is listed (get_all, GET …/profile with the decision it superseded under
"earlier") and found by search for "what did we decide about…", in English and Chinese."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest
from test_mcp import SERVE_CONFIG, serving

from memlane.memory import AsyncMemory
from memlane.nodes.profile_config import DECISIONS_TOPIC
from memlane.serve.app import create_app
from memlane.serve.config import store_user_id
from memlane.testing import ScriptedChatModel, memory_rules


@pytest.mark.parametrize(
    ("said", "decided", "subject", "question"),
    [
        (
            ("We decided to hold the offsite in Lisbon.", "Change of plan: we decided on Porto for the offsite."),
            ("the user's team chose Lisbon for the offsite", "the user's team chose Porto for the offsite"),
            "offsite",
            "What did we decide about the offsite?",
        ),
        (
            ("我们决定团建去杭州。", "改主意了，我们决定团建去苏州。"),
            ("用户的团队决定团建去杭州", "用户的团队决定团建去苏州"),
            "团建",
            "我们团建最后决定去哪？",
        ),
    ],
)
async def test_a_decision_is_listed_and_found_through_the_facade_and_the_api(
    store, settings, said, decided, subject, question
):
    user = store_user_id("acme", "alice")
    for line, content in zip(said, decided):
        facts = [{"topic": DECISIONS_TOPIC, "subtopic": subject, "content": content, "messages": [1]}]
        model = ScriptedChatModel(rules=memory_rules(facts=facts, merge='{"action": "UPDATE", "content": ""}'))
        await AsyncMemory(store, model=model, settings=settings).add(line, user_id=user)
    memory = AsyncMemory(store, settings=settings)
    listed = [item["memory"] for item in (await memory.get_all(user_id=user))["results"]]
    assert any(decided[1] in text for text in listed) and not any(decided[0] in text for text in listed)
    found = [hit["memory"] for hit in (await memory.search(question, user_id=user, limit=5))["results"]]
    assert any(decided[1] in text for text in found)
    async with (
        serving(create_app(SERVE_CONFIG, settings, store=store, mount_mcp=False)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60) as http,
    ):
        profile = (await http.get("/v1/users/" + quote("alice", safe="") + "/profile")).json()["data"]
        [entry] = [entry for entry in profile if entry["topic"] == DECISIONS_TOPIC]
        assert (entry["subtopic"], entry["content"]) == (subject, decided[1])
        [earlier] = entry["earlier"]  # what it superseded, and when
        assert earlier["content"] == decided[0] and earlier["valid_until"] >= earlier["valid_from"]
        hits = await http.post("/v1/users/alice/search", json={"query": question, "limit": 5})
        assert any(decided[1] in hit["memory"]["text"] for hit in hits.json()["data"])
