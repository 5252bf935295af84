"""Every recalled item's relevance for the message, as every other door shows it (issue 49, item 3).

Recall chooses and orders its items by search's order (`MemoryHit.score`, which weighs what else
was found); what it shows of each is the relevance of the message and that item alone
(store/relevance.py), asked of the store for all of them at once: the profile entries search did
not rank, the memories, the recent messages, and the session's summary and the relation items'
links, which are no memories (embedded for it, by their line). The
same number `search_memories`, the memories API, MCP, the CLI, the facade and `MemlaneStore` give.
"""

from __future__ import annotations

import asyncio

from memlane.recall_block import Recall, RecallItem
from memlane.store.ids import message_memory_id, profile_memory_id
from memlane.store.protocols import SearchStore

SUMMARY = "summary"  # the summary's name among the texts weighed (it is no memory)


def item_memory_id(item: RecallItem) -> str | None:
    """The id of the memory a recalled item shows (None for the session's summary)."""
    if item.memory_id:
        return item.memory_id
    if item.layer == "profile" and item.ref_id:
        return profile_memory_id(item.ref_id)
    if item.layer == "recent" and item.source_message_ids:
        return message_memory_id(item.source_message_ids[0])
    return None


async def give_relevance(store: SearchStore, recalled: Recall, shared_user_id: str | None = None) -> None:
    """Set each item's `relevance` (and `score`, its other name) for the message recall was asked
    for; the user's own memories first, then the shared scope's (`shared_user_id`)."""
    items = recalled.items
    ids = [memory_id for item in items if item.layer != "relation" and (memory_id := item_memory_id(item))]
    summary = recalled.summary
    texts = {SUMMARY: (summary.text, summary.created_at or 0.0)} if summary is not None else {}
    # a link is no memory: weighed by its line ("Bea → lives in → Porto"), as the summary is
    texts |= {
        item.memory_id: (item.text, item.created_at or 0.0)
        for item in items
        if item.layer == "relation" and item.memory_id
    }
    owners = [recalled.user_id, *([shared_user_id] if shared_user_id else [])]
    found = await asyncio.gather(
        *(
            store.relevances(owner, recalled.query, ids, texts=texts if owner == recalled.user_id else None)
            for owner in owners
        )
    )
    relevances: dict[str, float] = {}
    for answer in reversed(found):  # the user's own win over the shared scope's
        relevances |= answer
    for item in items:
        name = SUMMARY if item is summary else item_memory_id(item)
        # None only for a memory gone since recall read it: no rank value is shown for it either
        item.relevance = item.score = relevances.get(name) if name is not None else None
