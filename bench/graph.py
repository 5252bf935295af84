"""Memory-graph benchmark: a long bilingual chat through the buffered policy.

A zero-latency scripted model answers every step, so the figures are the graph's own
cost: overhead per run without model time (target <= 50 ms), model calls and prompt
tokens per 100 chat messages, and graph runs per 1k chat tokens. The same chat runs
twice: merging fact by fact (`memory_merge_batch_size=1`, the old merge) and batched;
the calls and tokens of both are printed with their ratio.

    .venv/bin/python bench/graph.py [--messages 600] [--buffer-tokens 1024] [--merge-batch-size 20]

Uses REDIS_URL when set, otherwise starts the embedded Redis Stack in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from scripted import ScriptedChatModel, prompt_text  # noqa: E402

from memlane.config import Settings  # noqa: E402
from memlane.graph import CONTEXT_PARTS, MemoryContext, decide_run, run_memory_graph  # noqa: E402
from memlane.store.records import Message  # noqa: E402
from memlane.store.redis.store import open_store  # noqa: E402
from memlane.store.text.tokens import count_tokens_many  # noqa: E402

# (keyword in the message, topic, subtopic, English line, Chinese line)
FACT_TEMPLATES = [
    (
        "coffee",
        "lifestyle",
        "diet",
        "I drink my coffee black, no sugar, usually {n} cups.",
        "我喝黑咖啡不加糖，一天大概{n}杯。",
    ),
    (
        "sleep",
        "lifestyle",
        "sleep_schedule",
        "I went to sleep at {n} am again last night.",
        "我昨晚又是凌晨{n}点才睡。",
    ),
    ("overtime", "work", "workload", "I worked overtime {n} days this week.", "这周我加班了{n}天。"),
    ("running", "health", "exercise", "I ran {n} km this morning.", "今天早上我跑了{n}公里。"),
    ("guitar", "interests", "hobbies", "I practiced guitar for {n} minutes.", "我练了{n}分钟吉他。"),
    ("trip", "goals", "short_term", "I'm planning a trip in {n} weeks.", "我打算{n}周后去旅行。"),
]
SMALL_TALK = [
    "ok, thanks!",
    "哈哈，好的。",
    "Sounds good.",
    "嗯嗯，明白了。",
    "What do you think?",
    "你觉得呢？",
]
ASSISTANT = ["Got it, tell me more.", "明白了，还有别的吗？", "That sounds tiring.", "听起来挺累的。"]
KEYWORDS = {
    "coffee": 0,
    "咖啡": 0,
    "sleep": 1,
    "睡": 1,
    "overtime": 2,
    "加班": 2,
    "ran": 3,
    "跑": 3,
    "guitar": 4,
    "吉他": 4,
    "trip": 5,
    "旅行": 5,
}
CHAT_LINE = re.compile(r"^\[(\d+)\] user: (.+)$", re.MULTILINE)


def synthetic_chat(user_id: str, count: int, session_length: int) -> list[Message]:
    messages: list[Message] = []
    facts_said = 0
    for index in range(count):
        session = f"s{index // session_length}"
        if index % 2:
            role, content = "assistant", ASSISTANT[index % len(ASSISTANT)]
        elif index % 6 == 4:
            role, content = "user", SMALL_TALK[index % len(SMALL_TALK)]
        else:
            template = FACT_TEMPLATES[facts_said % len(FACT_TEMPLATES)]
            language = 4 if (index // 12) % 2 else 3  # alternate English and Chinese stretches
            role, content = "user", template[language].format(n=index % 9 + 1)
            facts_said += 1
        messages.append(Message(id=f"m{index}", user_id=user_id, session_id=session, role=role, content=content))
    return messages


def slot_of(line: str) -> tuple[str, str] | None:
    for keyword, position in KEYWORDS.items():
        if keyword in line:
            return FACT_TEMPLATES[position][1], FACT_TEMPLATES[position][2]
    return None


def answer_extract(messages) -> str:
    facts = []
    for number, line in CHAT_LINE.findall(prompt_text(messages)):
        slot = slot_of(line)
        if slot:
            facts.append(
                {
                    "topic": slot[0],
                    "subtopic": slot[1],
                    "content": line,
                    "confidence": 0.8,
                    "messages": [int(number)],
                }
            )
    return json.dumps({"facts": facts}, ensure_ascii=False)


def answer_summarize(messages) -> str:
    lines = [line for _, line in CHAT_LINE.findall(prompt_text(messages))]
    return json.dumps({"summary": " ".join(lines[:3])[:200]}, ensure_ascii=False)


def answer_shorten(messages) -> str:
    entry = prompt_text(messages).rsplit("Entry: ", 1)[-1].removesuffix("\n</chat>")
    return json.dumps({"content": entry[-120:]}, ensure_ascii=False)


def answer_merge_batch(messages) -> str:
    """APPEND for every numbered fact of a batched merge prompt."""
    numbers = re.findall(r"^Fact \[(\d+)\]$", prompt_text(messages), re.MULTILINE)
    decisions = [{"fact": int(number), "action": "APPEND", "content": ""} for number in numbers]
    return json.dumps({"decisions": decisions})


class TimedModel(ScriptedChatModel):
    """Zero-latency scripted model that adds up the time spent inside it."""

    seconds: float = 0.0

    # run_manager named: LangChain hands it (and with it the step's tag) only to a method that takes it
    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):  # type: ignore[override]
        started = time.perf_counter()
        try:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


class TimedStore:
    """Proxy that adds up the time spent in store calls."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not asyncio.iscoroutinefunction(attribute):
            return attribute

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await attribute(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


async def measure(settings: Settings, chat_length: int, session_length: int) -> dict[str, Any]:
    """Feed a fresh user's synthetic chat through the buffered policy; the run's figures."""
    real_store = await open_store(settings, key_prefix=f"bench{uuid.uuid4().hex[:6]}")
    store = TimedStore(real_store)
    model = TimedModel(
        rules=[
            ("summarize", answer_summarize),
            ("extract", answer_extract),
            ("merge_batch", answer_merge_batch),
            ("merge", '{"action": "APPEND", "content": ""}'),
            ("organize", '{"subtopics": []}'),
            ("resummarize", answer_shorten),
            ("tag", '{"tags": ["作息", "work", "饮食"]}'),
        ]
    )
    context = MemoryContext(store=store, llm=model, **settings.parts(*CONTEXT_PARTS))  # type: ignore[arg-type]
    user_id = f"bench-{uuid.uuid4().hex[:6]}"
    chat = synthetic_chat(user_id, chat_length, session_length)

    runs: list[dict[str, float]] = []
    model_calls = prompt_tokens = 0
    try:
        for index, message in enumerate(chat):
            await real_store.add_messages([message])
            last = index == len(chat) - 1
            session_ended = last or chat[index + 1].session_id != message.session_id
            decision = decide_run(
                await real_store.unprocessed_messages(user_id),
                threshold_tokens=settings.memory_buffer_tokens,
                session_ended=session_ended,
            )
            if not decision.due:
                continue
            model_before, store_before = model.seconds, store.seconds
            started = time.perf_counter()
            result = await run_memory_graph(user_id, context)
            wall = time.perf_counter() - started
            model_time, store_time = model.seconds - model_before, store.seconds - store_before
            runs.append(
                {
                    "wall": wall,
                    "without_model": wall - model_time,
                    "graph_only": wall - model_time - store_time,
                }
            )
            model_calls += result.model_calls
            prompt_tokens += result.prompt_tokens
        profile = await real_store.get_profile(user_id)
        events = await real_store.list_events(user_id, limit=1000)
    finally:
        await real_store.delete_user(user_id)
        await real_store.aclose()
    per_100 = 100 / len(chat)
    return {
        "chat": chat,
        "runs": runs,
        "model_calls": model_calls * per_100,
        "merge_calls": sum(step in ("merge", "merge_batch") for step in model.steps) * per_100,
        "prompt_tokens": prompt_tokens * per_100,
        "profile": {(entry.topic, entry.subtopic): entry.content for entry in profile},
        "events": len(events),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--buffer-tokens", type=int, default=Settings().memory_buffer_tokens)
    parser.add_argument("--session-length", type=int, default=100, help="messages per session")
    parser.add_argument(
        "--merge-batch-size",
        type=int,
        default=Settings().memory_merge_batch_size,
        help="facts per merge call of the 'after' run (the 'before' run asks one fact per call)",
    )
    options = parser.parse_args()

    settings = Settings(
        data_dir=Path(tempfile.mkdtemp(prefix="memlane-bench-")), memory_buffer_tokens=options.buffer_tokens
    )
    # the same scripted conversation twice: merges fact by fact, then batched
    before = await measure(
        settings.model_copy(update={"memory_merge_batch_size": 1}), options.messages, options.session_length
    )
    after = await measure(
        settings.model_copy(update={"memory_merge_batch_size": options.merge_batch_size}),
        options.messages,
        options.session_length,
    )
    chat, runs = after["chat"], after["runs"]
    chat_tokens = sum(count_tokens_many([message.content for message in chat]))

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms"

    print(f"chat: {len(chat)} messages, {chat_tokens} tokens, buffer threshold {settings.memory_buffer_tokens} tokens")
    print(f"graph runs: {len(runs)} -> {len(runs) / (chat_tokens / 1000):.2f} runs per 1k chat tokens")
    print(
        f"overhead per run without model time (graph + store + embeddings): {ms([run['without_model'] for run in runs])}"
    )
    print(
        f"overhead per run without model and store time (graph only):      {ms([run['graph_only'] for run in runs])}  (target <= 50 ms)"
    )
    print(f"per 100 chat messages      merge fact by fact   merge batched ({options.merge_batch_size}/call)   ratio")
    for label, key in (
        ("model calls", "model_calls"),
        ("  of which merge", "merge_calls"),
        ("prompt tokens", "prompt_tokens"),
    ):
        ratio = after[key] / before[key] if before[key] else float("nan")
        print(f"  {label:<24} {before[key]:>18.1f}   {after[key]:>24.1f}   {ratio:>5.2f}")
    same = "the same profile" if before["profile"] == after["profile"] else "DIFFERENT profiles"
    print(f"result: {len(after['profile'])} profile entries, {after['events']} events; both runs give {same}")


if __name__ == "__main__":
    asyncio.run(main())
