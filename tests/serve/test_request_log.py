"""One log line per chat request says what recall injected, by kind, for which user and persona
(issue 54): never a memory's text."""

from __future__ import annotations

import logging

import httpx
from fake_upstream import FakeUpstream
from test_mcp import SERVE_CONFIG, serving

from memlane.serve.app import create_app
from memlane.serve.config import ServeConfig


async def test_each_chat_request_logs_what_was_injected_by_kind_and_never_the_text(store, settings, caplog):
    with FakeUpstream(reply="Noted.") as upstream:
        config = ServeConfig(
            keys=SERVE_CONFIG.keys,
            personas={"assistant": {"model": "fake-model", "base_url": upstream.url, "memory_scope": "user"}},
        )
        async with serving(create_app(config, settings, store=store, mount_mcp=False)) as url:
            async with httpx.AsyncClient(
                base_url=url, headers={"Authorization": "Bearer key-acme"}, timeout=60
            ) as http:
                secret = "My locker code at the gym is 4417"
                assert (await http.post("/v1/users/gus/memories", json={"text": secret})).status_code == 201
                caplog.set_level(logging.INFO, logger="memlane.serve.chat")
                for toggles in (None, {"enabled": False}):
                    body = {
                        "model": "assistant",
                        "user": "gus",
                        "messages": [{"role": "user", "content": "What is my locker code at the gym?"}],
                        **({"memory_config": toggles} if toggles else {}),
                    }
                    answer = await http.post("/v1/chat/completions", json=body)
                    assert answer.status_code == 200, answer.text
    lines = [record.getMessage() for record in caplog.records if record.getMessage().startswith("recall for")]
    assert len(lines) == 2, lines
    assert lines[0].startswith("recall for acme/gus (persona assistant): injected ") and "1 event" in lines[0]
    assert lines[0].endswith("tokens)")
    assert lines[1] == "recall for acme/gus (persona assistant): off for this request, nothing injected"
    assert not any("4417" in line or "locker" in line for line in lines)  # counts, never the text
