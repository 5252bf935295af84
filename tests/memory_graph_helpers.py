"""Helpers and fixtures of the memory-graph tests (tests/nodes, tests/graph).

A context on the real store, chat helpers, and rules that answer every node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from scripted import ScriptedChatModel

from memlane.config import Settings
from memlane.graph import CONTEXT_PARTS, MemoryContext
from memlane.nodes.persist import build_update
from memlane.nodes.profile_config import ProfileConfig, default_profile_config
from memlane.store.protocols import MemoryStore
from memlane.store.records import Message, ProfileEntry
from memlane.testing import CHINESE_FACTS, CHINESE_SUMMARY, CHINESE_TAGS, as_json, batched, memory_rules  # noqa: F401 (re-exported)

CHINESE_CHAT = [
    ("user", None, "我最近总是凌晨 2 点才睡，白天困得不行。"),
    ("user", "朋友A", "那你最近加班多吗？"),
    ("user", None, "是的，连续两周都在加班。"),
    ("user", None, "顺便，我喜欢黑咖啡，不加糖。"),
]


def scripted(**answers: Any) -> ScriptedChatModel:
    return ScriptedChatModel(rules=memory_rules(**answers))


def calls_for(model: ScriptedChatModel, task: str) -> int:
    return sum(1 for prompt in model.prompts if f"TASK: {task}" in prompt)


async def add_chat(
    store: MemoryStore,
    user_id: str,
    lines: Sequence[tuple[str, str | None, str]],
    *,
    session_id: str = "s1",
    start: int = 0,
) -> list[Message]:
    messages = [
        Message(
            id=f"{session_id}-m{start + index}",
            user_id=user_id,
            session_id=session_id,
            role=role,
            name=name,
            content=content,
        )
        for index, (role, name, content) in enumerate(lines)
    ]
    return await store.add_messages(messages)


@pytest.fixture
def profile_config() -> ProfileConfig:
    """Fixture: the default profile config."""
    return default_profile_config()


@pytest.fixture
def make_context(store: MemoryStore, settings: Settings, profile_config: ProfileConfig):
    """Fixture (import it, with `profile_config`, into a test module): `make_context(llm, config=..., **settings)`."""

    def make(llm: Any, *, config: ProfileConfig | None = None, **setting_overrides: Any) -> MemoryContext:
        run_settings = settings.model_copy(update=setting_overrides) if setting_overrides else settings
        return MemoryContext(
            store=store,
            llm=llm,
            **run_settings.parts(*CONTEXT_PARTS),
            store_settings=run_settings.store,
            profile_config=config or profile_config,
        )

    return make


class SlowScriptedChatModel(ScriptedChatModel):
    """A scripted model that takes `delay` seconds per call and records how many calls overlap."""

    delay: float = 0.05
    active: int = 0
    max_active: int = 0

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(self.delay)
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        finally:
            self.active -= 1


DAY = 86_400.0


async def said_then_changed(
    store: MemoryStore, user_id: str, old: str, new: str, *, topic: str, subtopic: str
) -> float:
    """`old` said 60 days ago and stored by a run (ADD), `new` 20 days ago (the merge step's UPDATE)."""
    first = Message(
        id=f"{user_id}-1", user_id=user_id, session_id="s1", role="user", content=old, created_at=time.time() - 60 * DAY
    )
    second = Message(
        id=f"{user_id}-2", user_id=user_id, session_id="s2", role="user", content=new, created_at=time.time() - 20 * DAY
    )
    await store.add_messages([first])
    entry = ProfileEntry(user_id=user_id, topic=topic, subtopic=subtopic, content=old, source_message_ids=[first.id])
    await store.apply_update(build_update(user_id, [first], [first], old, [], [], [entry])[0])
    await store.add_messages([second])
    before = await store.get_profile(user_id)
    after = before[0].model_copy(update={"content": new, "source_message_ids": [first.id, second.id]})
    await store.apply_update(build_update(user_id, [second], [second], new, [], before, [after])[0])
    return second.created_at
