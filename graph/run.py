"""Running the memory graph over a user's unprocessed buffer."""

from __future__ import annotations

import logging
import time
from functools import lru_cache

from memlane.graph.build import compile_memory_graph
from memlane.nodes.context import MemoryContext
from memlane.nodes.persist import MemoryRunResult

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _compiled_graph():
    return compile_memory_graph()


async def run_memory_graph(user_id: str, context: MemoryContext) -> MemoryRunResult:
    """Consume the user's unprocessed buffer: learn from it, persist, move the cursor.

    Raises the failing step's error when a step cannot complete (model unreachable,
    unusable summary or extraction); the cursor then stays, so the next run retries.
    """
    started = time.perf_counter()
    messages = await context.store.unprocessed_messages(user_id)
    if not messages:
        return MemoryRunResult(user_id=user_id, skipped_reason="no unprocessed messages")
    if not any(message.content.strip() for message in messages):
        # blank messages teach nothing; consume them so they never block the buffer
        through = max(message.seq or 0 for message in messages)
        await context.store.advance_cursor(user_id, through)
        return MemoryRunResult(
            user_id=user_id,
            processed_through_seq=through,
            message_count=len(messages),
            skipped_reason="only blank messages",
        )
    output = await _compiled_graph().ainvoke({"user_id": user_id, "messages": messages}, context=context)
    result: MemoryRunResult = output["result"]
    logger.info(
        "memory run user=%s messages=%d duration=%.3fs model_calls=%d added=%d updated=%d deleted=%d event=%s",
        user_id,
        result.message_count,
        time.perf_counter() - started,
        result.model_calls,
        len(result.added),
        len(result.updated),
        len(result.deleted),
        result.event_id,
    )
    return result
