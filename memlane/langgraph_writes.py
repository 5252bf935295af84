"""How `MemlaneStore` writes: puts and deletes, batched across concurrent callers.

Every caller's puts wait in one queue; a pass takes all that wait, keeps the last put per (owner,
namespace, key), embeds the new items in one call and writes them in one pass per user. `_WRITERS`
passes run at once (one embeds while the other writes to Redis); a cancelled caller's put is still
written, as it was accepted. An item of a user gets memlane's own text (`langgraph_rules.item_text`)
for recall; with an index config, its vectors come from that config's embedder and `fields`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langgraph.store.base import PutOp

from memlane.langgraph_collections import MemlaneCollections, is_collection
from memlane.langgraph_rules import NO_USER, item_text, path_texts, vector_bytes
from memlane.store.ids import item_memory_id
from memlane.store.protocols import MemoryStore
from memlane.store.records import StoreItem

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

# passes writing waiting puts at once: one embeds while the other writes to Redis. Puts of one
# pass are one embedding call; concurrent passes hold concurrent calls, so either order is theirs
_WRITERS = 2


@dataclass(frozen=True)
class ResolvedPut:
    """A put or delete with the owner it was resolved to (in the caller's context)."""

    op: PutOp
    owner: str


class ItemWriter:
    """Writes the puts of every caller of one `MemlaneStore`, on the store's event loop.

    index: the store's index config (None: memlane's own embedder, no vectors of the config's);
    fields: the paths memlane's own text reads without an index config (None: every string).
    """

    def __init__(
        self,
        store: MemoryStore,
        collections: MemlaneCollections,
        *,
        index: dict[str, Any] | None,
        fields: list[str] | None,
        embeddings: Embeddings,
    ) -> None:
        self.store = store
        self.collections = collections
        self.index = index
        self.fields = fields
        self.embeddings = embeddings
        self._waiting_puts: list[tuple[list[ResolvedPut], asyncio.Future[None]]] = []
        self._writers: set[asyncio.Task[None]] = set()

    async def write(self, puts: list[ResolvedPut]) -> None:
        """Apply `puts` together with those of every caller waiting now: concurrent callers'
        puts are embedded in one call and written in one pass per user (`_WRITERS` passes at once)."""
        loop = asyncio.get_running_loop()  # the store's loop: every batch runs there
        done: asyncio.Future[None] = loop.create_future()
        self._waiting_puts.append((puts, done))
        self._writers = {writer for writer in self._writers if not writer.done()}
        if len(self._writers) < _WRITERS:
            self._writers.add(loop.create_task(self._write_waiting()))
        await asyncio.shield(done)  # a cancelled caller's put is still written, as it was accepted

    async def _write_waiting(self) -> None:
        while self._waiting_puts:
            taken, self._waiting_puts = self._waiting_puts, []
            latest = {(put.owner, tuple(put.op.namespace), str(put.op.key)): put for puts, _ in taken for put in puts}
            try:
                await self._apply_puts(list(latest.values()))
            except BaseException as error:  # every caller of this pass hears of it
                for _, done in taken:
                    if not done.done():
                        done.set_exception(error)
                if not isinstance(error, Exception):
                    raise
            else:
                for _, done in taken:
                    if not done.done():
                        done.set_result(None)

    async def _apply_puts(self, puts: list[ResolvedPut]) -> None:
        upserts: list[StoreItem] = []
        own_texts: list[list[str]] = []
        deletions: dict[str, list[str]] = {}
        for put in puts:
            op, namespace, key = put.op, tuple(put.op.namespace), str(put.op.key)
            if is_collection(namespace):
                await self.collections.delete(namespace, key)
            elif op.value is None:
                deletions.setdefault(put.owner, []).append(item_memory_id(namespace, key))
            else:
                value = dict(op.value)
                indexed = op.index is not False
                put_paths = op.index if isinstance(op.index, list) else None  # None or False: the store's fields
                if self.index is None:
                    text = item_text(value, self.fields if put_paths is None else put_paths) if indexed else ""
                    own_texts.append([])
                else:
                    paths: list[str] = self.index["fields"] if put_paths is None else put_paths
                    own_texts.append(path_texts(value, paths) if indexed else [])
                    # memlane's own text feeds recall: only a user's item needs one
                    text = item_text(value) if indexed and put.owner != NO_USER else ""
                upserts.append(
                    StoreItem(
                        user_id=put.owner,
                        namespace=list(namespace),
                        key=key,
                        value=value,
                        text=text,
                        ttl_minutes=op.ttl,
                    )
                )
        for owner, memory_ids in deletions.items():
            await self.store.delete_items(owner, memory_ids)
        if upserts:
            await self.store.put_items(upserts, vectors=await self._own_vectors(own_texts))

    async def _own_vectors(self, texts_per_item: list[list[str]]) -> list[bytes | None] | None:
        """Each item's vectors from the index config's embedder, in one call for every item."""
        if self.index is None:
            return None
        unique = list(dict.fromkeys(text for texts in texts_per_item for text in texts))
        embedded = dict(zip(unique, await self.embeddings.aembed_documents(unique))) if unique else {}
        return [vector_bytes([embedded[text] for text in texts]) if texts else None for texts in texts_per_item]
