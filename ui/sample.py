"""A sample conversation for exploring the memory panel offline.

Two short chats, one in English and one in Chinese, are stored through the real store and
remembered by the real memory graph; only the model is scripted: `SampleMemoryModel`
answers each step with canned JSON (the summary, the facts, the tags of its chat),
so the panel fills in with no model configured. The second chat changes a fact the first
one stated, so the profile shows an update with its history.

    await load_sample(store, settings)  →  one MemoryRunResult per chat
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from memlane import MemoryContext, MemoryRunResult, MemoryStore, Message, SessionSummary, Settings, run_memory_graph
from memlane.doors import StepCallback
from memlane.testing import call_step, prompt_text

SAMPLE_USER = "sample-user"


@dataclass(frozen=True)
class SampleChat:
    """One bundled chat and what the scripted memory model says about it."""

    session_id: str
    title: str
    lines: tuple[tuple[str, str], ...]  # (role, text)
    summary: str  # the event card's summary
    session_summary: str  # the session's rolling summary
    facts: tuple[dict[str, Any], ...]  # extract's answer ("messages" cite [numbers] of `lines`)
    tags: tuple[str, ...]
    hours_ago: float = 0.0  # when it was said, for the timeline

    def messages(self, user_id: str) -> list[Message]:
        said = time.time() - self.hours_ago * 3600
        return [
            Message(
                id=f"{self.session_id}-m{number}",
                user_id=user_id,
                session_id=self.session_id,
                role=role,
                content=text,
                created_at=said + number,
            )
            for number, (role, text) in enumerate(self.lines, 1)
        ]


SAMPLE_CHATS: tuple[SampleChat, ...] = (
    SampleChat(
        session_id="sample-en",
        title="Sample: night shifts, coffee and a half marathon",
        lines=(
            ("user", "Hi! I'm Maya, I work night shifts as a nurse at a hospital in Porto."),
            ("assistant", "Nice to meet you, Maya. Night shifts are demanding; how do you manage your sleep?"),
            ("user", "Badly, honestly. I go to bed around 9 am and drink far too much black coffee, no sugar."),
            ("assistant", "That sounds tough. We could look for a routine that protects your sleep."),
            ("user", "Also, I'm training for the Lisbon half marathon in October."),
            ("assistant", "A great goal! I can help you plan your runs around your shifts."),
        ),
        summary="Maya, a night-shift nurse in Porto, sleeps badly (bed around 9 am), drinks a lot of black "
        "coffee without sugar, and trains for the Lisbon half marathon in October.",
        session_summary="Maya introduced herself: night-shift nurse in Porto, poor sleep, lots of black coffee; "
        "training for the Lisbon half marathon in October.",
        facts=(
            {"topic": "basic_info", "subtopic": "name", "content": "Maya", "confidence": 0.95, "messages": [1]},
            {
                "topic": "basic_info",
                "subtopic": "location",
                "content": "lives in Porto",
                "confidence": 0.85,
                "messages": [1],
            },
            {
                "topic": "work",
                "subtopic": "occupation",
                "content": "nurse working night shifts at a hospital",
                "confidence": 0.95,
                "messages": [1],
            },
            {
                "topic": "lifestyle",
                "subtopic": "sleep_schedule",
                "content": "goes to bed around 9 am after night shifts; sleeps badly",
                "confidence": 0.85,
                "messages": [3],
            },
            {
                "topic": "lifestyle",
                "subtopic": "diet",
                "content": "drinks a lot of black coffee without sugar",
                "confidence": 0.9,
                "messages": [3],
            },
            {
                "topic": "interests",
                "subtopic": "sports",
                "content": "training for the Lisbon half marathon in October",
                "confidence": 0.9,
                "messages": [5],
            },
        ),
        tags=("night shifts", "sleep", "running"),
        hours_ago=50,
    ),
    SampleChat(
        session_id="sample-zh",
        title="示例：改喝绿茶，养了一只猫",
        lines=(
            ("user", "最近我把咖啡戒了，改喝绿茶，睡得好多了。"),
            ("assistant", "太好了！戒掉咖啡对倒班后的睡眠很有帮助。"),
            ("user", "还有，上周我领养了一只橘猫，叫小米。"),
            ("assistant", "恭喜！小米适应新家了吗？"),
        ),
        summary="用户戒了咖啡、改喝绿茶，睡眠明显改善；上周领养了一只叫小米的橘猫。",
        session_summary="用户说戒了咖啡改喝绿茶，睡得更好；上周领养了橘猫小米。",
        facts=(
            {
                "topic": "lifestyle",
                "subtopic": "diet",
                "content": "戒了咖啡，改喝绿茶",
                "confidence": 0.9,
                "messages": [1],
            },
            {
                "topic": "lifestyle",
                "subtopic": "sleep_schedule",
                "content": "戒咖啡后睡得好多了",
                "confidence": 0.8,
                "messages": [1],
            },
            {
                "topic": "interests",
                "subtopic": "pets",
                "content": "上周领养了一只叫小米的橘猫",
                "confidence": 0.9,
                "messages": [3],
            },
        ),
        tags=("饮食", "睡眠", "宠物"),
        hours_ago=2,
    ),
)

_MERGE_QUESTION = re.compile(r"Slot holds: (?P<held>.*)\nNew fact: (?P<fact>.*)")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _merge_decision(held: str, fact: str) -> dict[str, str]:
    """What a sensible model decides: add to an empty slot, keep a repeat, replace a change."""
    if held.strip() == "(empty)":
        return {"action": "ADD", "content": fact}
    if held.strip() == fact.strip():
        return {"action": "ABORT", "content": ""}
    return {"action": "UPDATE", "content": fact}


class SampleMemoryModel(BaseChatModel):
    """The memory model of the sample: canned JSON for each memory-graph step.

    It answers by the step each call is tagged with (`memlane.testing.call_step`), never by the
    prompt's words, so it answers the same steps a real model would, in whatever order the
    graph asks; only merge reads its question (what each slot holds, the new fact).
    """

    chat: Any = Field(description="the SampleChat this run remembers")
    delay: float = Field(default=0.0, description="seconds per answer, so the app can show each step")

    @property
    def _llm_type(self) -> str:
        return "memlane-sample"

    def answer(self, step: str | None, prompt: str = "") -> str:
        """The answer to a call for `step` (`prompt`: the call's text, which merge reads)."""
        chat: SampleChat = self.chat
        if step == "summarize":
            return _json({"summary": chat.summary})
        if step == "extract":
            return _json({"facts": list(chat.facts)})
        if step in ("merge", "merge_batch"):
            decisions = [_merge_decision(match["held"], match["fact"]) for match in _MERGE_QUESTION.finditer(prompt)]
            if step == "merge_batch":
                return _json(
                    {"decisions": [{"fact": number, **decision} for number, decision in enumerate(decisions, 1)]}
                )
            return _json(decisions[0] if decisions else {"action": "ABORT", "content": ""})
        if step == "tag":
            return _json({"tags": list(chat.tags)})
        if step in ("session_summary", "window_summary"):
            return _json({"summary": chat.session_summary})
        if step == "resummarize":
            return _json({"content": ""})  # the sample's entries are short: never asked
        return "{}"  # organize and anything else: no change

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return self._result(messages, call_step(run_manager))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._result(messages, call_step(run_manager))

    def _result(self, messages: Sequence[BaseMessage], step: str | None) -> ChatResult:
        answer = self.answer(step, prompt_text(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


@dataclass
class SampleLoad:
    """What loading the sample did."""

    user_id: str
    results: list[MemoryRunResult] = field(default_factory=list)
    already_loaded: list[str] = field(default_factory=list)  # session ids remembered before

    @property
    def latest_session(self) -> str:
        return SAMPLE_CHATS[-1].session_id


async def load_sample(
    store: MemoryStore,
    settings: Settings,
    user_id: str = SAMPLE_USER,
    *,
    on_step: StepCallback | None = None,
    delay: float = 0.0,
) -> SampleLoad:
    """Store the sample chats for `user_id` and remember each with a scripted memory run.

    Loading twice changes nothing: the messages keep their ids and a chat already
    remembered leaves nothing in the buffer. Each run covers only its own chat (the
    buffer up to its last message), so each chat becomes its own event card.
    """
    loaded = SampleLoad(user_id=user_id)
    for chat in SAMPLE_CHATS:
        messages = chat.messages(user_id)
        await store.add_messages(messages)
        await store.set_session_title(user_id, chat.session_id, chat.title)
        if await store.get_session_summary(user_id, chat.session_id) is None:
            await store.set_session_summary(
                SessionSummary(
                    user_id=user_id,
                    session_id=chat.session_id,
                    summary=chat.session_summary,
                    source_message_ids=[message.id for message in messages],
                )
            )
        buffered = [m for m in await store.unprocessed_messages(user_id) if m.session_id == chat.session_id]
        if not buffered:
            loaded.already_loaded.append(chat.session_id)
            continue
        context = MemoryContext(
            store=store,
            llm=SampleMemoryModel(chat=chat, delay=delay),
            models=settings.models,
            graph=settings.graph,
            scheduler=settings.scheduler,
            retention=settings.retention,
        )
        through = max(message.seq or 0 for message in buffered)
        loaded.results.append(await run_memory_graph(user_id, context, through_seq=through, on_step=on_step))
    return loaded
