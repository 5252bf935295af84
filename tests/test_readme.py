"""The README's promises: its code is the tested code, its commands are CI's."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path

from langchain.agents import create_agent
from scripted import ScriptedChatModel
from memory_graph_helpers import memory_rules

from memlane import MemoryAgentContext, MemoryContext, MemoryMiddleware, MemoryScheduler, open_store
from memlane.config import get_settings
from memlane.store.base import Message

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
MARKER = re.compile(r"^[ \t]*# --- README: (?P<name>.+?) \(start\) ---\n(?P<body>.*?)^[ \t]*# --- README: (?P=name) \(end\) ---", re.M | re.S)


def readme_snippets() -> dict[str, str]:
    """Every `# --- README: name (start/end) ---` block of the tests, dedented."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for match in MARKER.finditer(path.read_text()):
            found[f"{path.name}: {match['name']}"] = textwrap.dedent(match["body"]).strip()
    return found


def test_every_tested_snippet_is_in_the_readme_verbatim():
    snippets = readme_snippets()
    assert len(snippets) >= 3
    stale = [name for name, body in snippets.items() if body not in README]
    assert not stale, f"README code differs from the tested code of: {stale}"


def test_the_readme_test_command_is_what_ci_runs():
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command in README


async def test_add_memory_to_your_agent(settings, monkeypatch):
    for name, value in {
        "REDIS_URL": settings.redis_url,
        "MEMLANE_KEY_PREFIX": settings.key_prefix,
        "MEMLANE_MEMORY_BUFFER_TOKENS": "1",  # a run after every turn
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    model = ScriptedChatModel(rules=memory_rules(), default="记住了：黑咖啡，不加糖。")
    try:
        # --- README: agent (start) ---
        store = await open_store()  # REDIS_URL, or the embedded Redis Stack
        async with MemoryScheduler(MemoryContext(store=store, llm=model)) as scheduler:
            agent = create_agent(model, middleware=[MemoryMiddleware(store, scheduler=scheduler)], context_schema=MemoryAgentContext)
            await agent.ainvoke({"messages": [("user", "顺便，我喜欢黑咖啡，不加糖。")]}, context=MemoryAgentContext(user_id="alice"))
        # --- README: agent (end) ---
            async with asyncio.timeout(20):
                while not await store.get_profile("alice"):
                    await asyncio.sleep(0.05)
        assert any("黑咖啡" in entry.content for entry in await store.get_profile("alice"))
        await store.aclose()
    finally:
        get_settings.cache_clear()


async def test_search_that_finds_what_was_said(store):
    import time

    await store.add_messages([
        Message(id="y1", user_id="alice", session_id="s1", role="user", content="我昨天喝了一杯燕麦拿铁", created_at=time.time() - 86_400),
        Message(id="y2", user_id="alice", session_id="g", role="user", name="朋友A", content="我喝了美式咖啡", created_at=time.time() - 86_400),
    ])
    printed: list[tuple[str, float, bool]] = []
    print = lambda *args: printed.append(args)  # noqa: E731  (the snippet prints)
    # --- README: search (start) ---
    hits = await store.search_memories("alice", "我昨天喝了什么？", speaker_roles=["owner"])
    for hit in hits:
        print(hit.memory.attributed_text, hit.score, hit.time_match)
    # --- README: search (end) ---
    assert [(text, time_match) for text, _, time_match in printed] == [("我昨天喝了一杯燕麦拿铁", True)]  # the friend's is left out
