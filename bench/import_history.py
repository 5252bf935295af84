"""Import benchmark: one LoCoMo conversation (about 600 turns over 19-32 sessions) brought in
whole through `memlane.importing` and remembered with a scripted memory model.

    .venv/bin/python bench/import_history.py ../shared/datasets/locomo-dev/41.json [--max-input-tokens 6000]

The scripted model answers at once and, in each window it reads, states the window's first
turn as a fact: so what is measured is the pipeline (reading, storing with embeddings,
windows, persisting), not extraction. Prints the turns read and stored, the windows run,
the messages processed and left unprocessed, whether facts from the first session were
learned, and the wall time with the load average. Targets (issue 30): every message
processed; the first session's facts present. Before windows, one run read the newest
6,000 tokens and marked the whole backlog processed.

Uses REDIS_URL when set, otherwise starts the embedded Redis Stack in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memlane.config import Settings  # noqa: E402
from memlane.graph import CONTEXT_PARTS, MemoryContext  # noqa: E402
from memlane.importing import import_messages, messages_of  # noqa: E402
from memlane.store.redis.store import open_store  # noqa: E402
from memlane.testing import ScriptedChatModel, answer_from, as_json, memory_rules  # noqa: E402

_LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$", re.MULTILINE)


def first_turn_as_fact(prompt: str) -> str:
    """The extract step's answer: the window's first chat line as a fact of its own slot."""
    chat = prompt.split("<chat>")[-1]
    match = _LINE.search(chat)
    if match is None:
        return as_json({"facts": []})
    number, speaker, text = match.groups()
    fact = {
        "about": "user",
        "topic": "history",
        "subtopic": text[:40],
        "content": f"{speaker}: {text[:200]}",
        "confidence": 0.9,
        "messages": [int(number)],
    }
    return as_json({"facts": [fact]})


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("conversation", type=Path, help="a locomo-dev conversation file (sessions with turns)")
    parser.add_argument(
        "--max-input-tokens", type=int, default=6000, help="memory_max_input_tokens: one window's budget"
    )
    args = parser.parse_args()

    document = json.loads(args.conversation.read_text(encoding="utf-8"))
    user = f"import-{document.get('conversation', args.conversation.stem)}"
    settings = Settings(
        redis_url=os.environ.get("REDIS_URL"),
        data_dir=Path(tempfile.mkdtemp(prefix="memlane-bench-")),
        key_prefix=f"bench{uuid.uuid4().hex[:6]}",
        memory_max_input_tokens=args.max_input_tokens,
    )
    store = await open_store(settings)
    try:
        messages = messages_of(document, user)
        first_session = {m.content[:200] for m in messages if m.session_id == messages[0].session_id}
        model = ScriptedChatModel(rules=memory_rules(facts=answer_from(first_turn_as_fact), tags=["history"]))
        context = MemoryContext(store=store, llm=model, **settings.parts(*CONTEXT_PARTS))
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        started = time.perf_counter()
        added, result = await import_messages(store, user, messages, context=context)
        elapsed = time.perf_counter() - started
        left = await store.unprocessed_messages(user)
        profile = await store.get_profile(user)
        learned_first = [e for e in profile if e.content.split(": ", 1)[-1] in first_session]
        print(f"turns read {len(messages)}, stored {added}, sessions {len({m.session_id for m in messages})}")
        print(f"windows run {result.windows}, messages processed {result.message_count}, left unprocessed {len(left)}")
        print(f"profile entries {len(profile)}, of them from the first session {len(learned_first)} (target >= 1)")
        print(f"wall time {elapsed:.1f} s (embedding included), load average after: {os.getloadavg()[0]:.1f}")
    finally:
        await store.delete_user(user)
        await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=True)
        await store.aclose()
        if not settings.redis_url:
            from memlane.store.embedded.server import stop_running

            stop_running(settings.store)


if __name__ == "__main__":
    asyncio.run(main())
