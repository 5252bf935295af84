"""A search on every primary's index: what a search of items that may be anyone's asks (a
LangGraph namespace prefix that names no user, store/redis/item_search.py).

Each primary is read as a user's search reads its one (`ShardIndexes.on_owner`): from the
primary's previous index while a new one reads its memories (complete, no wait; `_readable`),
its index chosen again when the slot of its name moved or it was dropped (in the background, every
primary whose name moved too: index_upkeep.py), and what could not be read within the search's one
wait said (`SearchNotes`, a warning line). It used to take each primary's index as it was: a new
index still reading answered with what it had read, silently, and a moved name raised.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from redis.asyncio.cluster import ClusterNode
from redis.exceptions import MovedError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex

from memlane.store.cluster.client import SEARCH_RETRIES
from memlane.store.cluster.index_parts import unknown_index
from memlane.store.cluster.indexes import SearchNotes
from memlane.store.cluster.previous_index import SlotBusy

if TYPE_CHECKING:
    from memlane.store.cluster.indexes import ShardIndexes

Answer = TypeVar("Answer")


async def on_every_primary(
    shards: ShardIndexes, call: Callable[[AsyncSearchIndex], Awaitable[Answer]], notes: SearchNotes | None = None
) -> list[Answer]:
    """`call` on the index of each primary, side by side, each answer whole (see the module)."""
    notes = SearchNotes() if notes is None else notes
    primaries = shards.cluster.get_primaries()
    return list(await asyncio.gather(*(on_primary(shards, node, call, notes) for node in primaries)))


async def on_primary(
    shards: ShardIndexes,
    node: ClusterNode,
    call: Callable[[AsyncSearchIndex], Awaitable[Answer]],
    notes: SearchNotes,
) -> Answer:
    """`call` on the primary `node`'s index: its previous one while a new one reads, chosen again
    when its name moved (an index query names no key but the index: any MOVED is the name's)."""
    failures = 0
    while True:
        try:
            index = await shards.index_of(node)
            searched, missing = await shards._readable(node, index, notes)
            answer = await call(searched)
            if missing is not None:
                shards._note(notes, missing)
            return answer
        except Exception as raised:
            error = raised.__cause__ if isinstance(raised, RedisSearchError) and raised.__cause__ else raised
            if isinstance(error, SlotBusy):  # the previous index's slot really moves: the new one answers
                shards._previous[node.name] = (None, time.monotonic())
                continue
            if (isinstance(error, MovedError) or unknown_index(error)) and failures <= SEARCH_RETRIES:
                failures += 1
                shards.forget_index(node.name)
                shards._sweep.soon(shards)
                continue
            raise
