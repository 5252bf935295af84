"""Helpers and fixtures of the memory-graph tests (tests/nodes, tests/graph).

A context on the real store, chat helpers, and rules that answer every node.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Sequence

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from scripted import TIMEOUT, ScriptedChatModel

from memlane.config import Settings
from memlane.graph import MemoryContext
from memlane.nodes.merge import MERGE_PROMPT
from memlane.nodes.profile_config import ProfileConfig, default_profile_config
from memlane.store.base import Message, MemoryStore

CHINESE_CHAT = [
    ("user", None, "我最近总是凌晨 2 点才睡，白天困得不行。"),
    ("user", "朋友A", "那你最近加班多吗？"),
    ("user", None, "是的，连续两周都在加班。"),
    ("user", None, "顺便，我喜欢黑咖啡，不加糖。"),
]

CHINESE_SUMMARY = "用户最近总是凌晨2点才睡、白天很困；连续两周加班；喜欢不加糖的黑咖啡。"
CHINESE_FACTS = [
    {
        "topic": "lifestyle",
        "subtopic": "sleep_schedule",
        "content": "最近总是凌晨2点才睡，白天困得不行",
        "confidence": 0.9,
        "messages": [1],
    },
    {
        "topic": "work",
        "subtopic": "workload",
        "content": "连续两周都在加班",
        "confidence": 0.9,
        "messages": [3],
    },
    {
        "topic": "lifestyle",
        "subtopic": "diet",
        "content": "喜欢黑咖啡，不加糖",
        "confidence": 0.95,
        "messages": [4],
    },
]
CHINESE_TAGS = ["作息异常", "工作压力", "饮食偏好"]


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_BATCHED_FACT = re.compile(r"Fact \[(\d+)\]\n")


def batched(merge: Any) -> Any:
    """An answer to the batched merge prompt made of `merge`'s answer to each fact on its own,
    so one scripted merge answer serves both prompts. A per-fact answer that is not a JSON
    object leaves its fact out of the batched answer (the node then asks that fact alone)."""
    if merge is TIMEOUT or isinstance(merge, BaseException):
        return merge

    def answer(messages: list[BaseMessage]) -> str:
        parts = _BATCHED_FACT.split(str(messages[-1].content))
        decisions = []
        for number, block in zip(parts[1::2], parts[2::2]):
            fact_block = block.replace("</chat>", "").strip()
            single = [SystemMessage(content=MERGE_PROMPT), HumanMessage(content=f"<chat>\n{fact_block}\n</chat>")]
            try:
                decision = json.loads(merge(single) if callable(merge) else merge)
            except (TypeError, ValueError):
                continue  # an exception or prose: that fact is left out
            if isinstance(decision, dict):
                decisions.append({"fact": int(number), **decision})
        return as_json({"decisions": decisions})

    return answer


def memory_rules(
    *,
    summary: Any = CHINESE_SUMMARY,
    facts: Any = CHINESE_FACTS,
    merge: Any = '{"action": "ADD", "content": ""}',
    merge_batch: Any = None,
    tags: Any = CHINESE_TAGS,
    organize: Any = '{"subtopics": []}',
    resummarize: Any = '{"content": ""}',
) -> list[tuple[str, Any]]:
    """Rules answering every node; a dict/list value is sent as JSON, anything else as is.
    `merge` answers the one-fact merge prompt; `merge_batch` the batched one (default: `merge`
    applied to each fact, see `batched`)."""

    def wrap(key: str, value: Any) -> Any:
        if isinstance(value, (dict, list)) and key:
            return as_json({key: value})
        return value

    return [
        ("TASK: summarize", as_json({"summary": summary}) if isinstance(summary, str) else summary),
        ("TASK: extract", wrap("facts", facts)),
        ("TASK: merge new facts", batched(merge) if merge_batch is None else merge_batch),
        ("TASK: merge", merge),
        ("TASK: organize", organize),
        ("TASK: shorten", resummarize),
        ("TASK: tag", wrap("tags", tags)),
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
            store=store, llm=llm, settings=run_settings, profile_config=config or profile_config
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
