"""Memories stored once: `add_memories` does not store again what a user already has under another
id, and `repeated_memory` names the stored memory a new one would repeat (a note is written with
its event card, store/redis/updates.py, so `memlane.tools.write_note` asks first).

A repeat is a memory of the same user, kind and metadata (never a turn: each is its own) that
is identical (its text, case and spacing aside) or, above `near_duplicate_similarity`, a near
duplicate (store/text/sameness.py: the newer says nothing the older does not). The stored memory keeps
its id; the new one's answer is that id. A stored memory that a newer fact replaced
(`valid_until` set) and a LangGraph item are never what a new memory repeats.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memlane.store.ids import ITEM_MEMORY_PREFIX
from memlane.store.records import Memory
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.memories import Memories
from memlane.store.redis.quotas import Quotas, text_bytes
from memlane.store.redis.retention import record_kind
from memlane.store.redis.search import Search
from memlane.store.schema import MemoryField
from memlane.store.text.sameness import RepeatedMemory, is_near_duplicate, normalized, text_digest
from memlane.store.vectors import stored_vector

# stored memories a new one is compared with: its nearest of the same kind
_CANDIDATES = 4
# a call's own new memories are compared with each other only up to this many per user and kind
# (a bulk import of more is compared with what was stored before it, and identical texts)
_MAX_COMPARED_IN_ONE_CALL = 2_000
# nearest-memory searches in flight at once for one call
_SEARCHES_AT_ONCE = 16


@dataclass(eq=False, repr=False)
class Duplicates(StorePart):
    """`add_memories` and `repeated_memory`: what a user already has is not stored twice."""

    memories: Memories
    search: Search
    quotas: Quotas = field(kw_only=True)  # the user's quotas, checked before a record is added

    @property
    def _threshold(self) -> float | None:
        return self.core.store.near_duplicate_similarity or None

    async def add_memories(self, memories: Sequence[Memory]) -> list[str]:
        """Embed and store memories (upsert by id). A memory that repeats one the user has under
        another id, of the same kind, is not stored: the same text (case and spacing aside, earlier
        ones in the same call included) or, above `near_duplicate_similarity`, a near duplicate.
        Its answer is the stored one's id. Turns (kind "message") are each their own. A memory that
        is its own record (not the search entry of a message, card or entry) counts against the
        user's quotas (a repeat reserved and not stored is dropped at the next recount)."""
        own = [memory for memory in memories if memory.kind != "message" and record_kind(memory.id) is None]
        for user_id in dict.fromkeys(memory.user_id for memory in own):
            await self.quotas.reserve(user_id, {m.id: text_bytes(m.text) for m in own if m.user_id == user_id})
        stored_as = await self._stored_texts(memories)
        new = [memory for memory in memories if memory.id not in stored_as]
        rows = await self.memories.memory_rows(new)
        near = await self._near_duplicates(new, rows)
        stored_as.update({memory_id: repeat.memory.id for memory_id, repeat in near.items()})
        kept = [memory for memory in new if memory.id not in near]

        def texts_and_expiries(pipe: Any) -> None:
            for memory in kept:
                if memory.kind != "message":
                    pipe.hset(
                        self.layout.memory_texts(memory.user_id),
                        text_digest(memory.kind, memory.text, memory.metadata),
                        memory.id,
                    )
            self.memories.queue_follow(pipe, kept)

        await self.memories.write_rows(
            [(key, row) for key, row in rows if as_text(row[MemoryField.ID]) not in near], texts_and_expiries
        )
        self.search.counts_changed({memory.user_id for memory in new})  # counted while looking for repeats
        return [stored_as.get(memory.id, memory.id) for memory in memories]

    async def repeated_memory(self, memory: Memory) -> RepeatedMemory | None:
        """The stored memory of the same user and kind that `memory` repeats under another id:
        identical, or a near duplicate above `near_duplicate_similarity`. None for a turn, or when
        none does (the memory itself, stored under its own id, is not a repeat: it is rewritten)."""
        if memory.kind == "message":
            return None
        memory = self.memories.redacted(memory)  # compared as it would be stored
        [vector] = await self.core.embed_documents([self.memories.embedding_input(memory)], owner=memory.user_id)
        return await self._repeat_of(memory, np.asarray(vector, dtype=np.float32))

    async def _stored_texts(self, memories: Sequence[Memory]) -> dict[str, str]:
        """Memory id → the id its text is already stored under (another memory of the user, still
        there), for those of `memories` that are repeats, earlier ones in the same call included."""
        texts = [memory for memory in memories if memory.kind != "message"]
        if not texts:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for memory in texts:
            pipe.hget(self.layout.memory_texts(memory.user_id), text_digest(memory.kind, memory.text, memory.metadata))
        known = [as_text(value) if value is not None else None for value in await self._run(pipe.execute())]
        pipe = self.client.pipeline(transaction=False)
        for memory, other in zip(texts, known):
            pipe.hmget(
                self.layout.memory(memory.user_id, other or memory.id),
                [MemoryField.KIND, MemoryField.TEXT, MemoryField.METADATA],
            )
        stored = await self._run(pipe.execute())
        repeats: dict[str, str] = {}
        first: dict[tuple[str, str], str] = {}
        for memory, other, (kind, text, metadata) in zip(texts, known, stored):
            slot = (memory.user_id, text_digest(memory.kind, memory.text, memory.metadata))
            # the memory noted under this text still holds it (not deleted, nor rewritten since)
            there = (
                text is not None
                and text_digest(as_text(kind), as_text(text), json.loads(as_text(metadata) or "{}")) == slot[1]
            )
            if other and other != memory.id and there:
                repeats[memory.id] = other
            elif slot in first and first[slot] != memory.id:
                repeats[memory.id] = first[slot]
            else:
                first.setdefault(slot, memory.id)
        return repeats

    async def _near_duplicates(
        self, new: Sequence[Memory], rows: Sequence[tuple[str, dict[str, Any]]]
    ) -> dict[str, RepeatedMemory]:
        """Memory id → the stored memory (or an earlier one of this call) it nearly duplicates, for
        the embedded `rows` of memories the store does not hold yet (a stored id rewritten stays)."""
        if self._threshold is None:
            return {}
        by_key = {self.layout.memory(memory.user_id, memory.id): memory for memory in new}
        candidates = [(key, row) for key, row in rows if by_key[key].kind != "message"]
        if not candidates:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for key, _ in candidates:
            pipe.exists(key)
        held = await self._run(pipe.execute())
        fresh = [  # each as stored (its text masked), with its vector
            (
                by_key[key].model_copy(update={"text": row[MemoryField.TEXT]}),
                stored_vector(row[MemoryField.EMBEDDING], self.core.dims),
            )
            for (key, row), there in zip(candidates, held)
            if not there
        ]
        gate = asyncio.Semaphore(_SEARCHES_AT_ONCE)

        async def stored_repeat(memory: Memory, vector: np.ndarray) -> RepeatedMemory | None:
            async with gate:
                return await self._repeat_of(memory, vector)

        found = await asyncio.gather(*(stored_repeat(memory, vector) for memory, vector in fresh))
        repeats = {memory.id: repeat for (memory, _), repeat in zip(fresh, found) if repeat is not None}
        repeats.update(
            self._repeats_in_call([(memory, vector) for memory, vector in fresh if memory.id not in repeats])
        )
        return repeats

    def _repeats_in_call(self, fresh: Sequence[tuple[Memory, np.ndarray]]) -> dict[str, RepeatedMemory]:
        """Near duplicates among one call's new memories: each is compared with the earlier ones of
        its user and kind that are kept."""
        groups: dict[tuple[str, str], list[tuple[Memory, np.ndarray]]] = {}
        for memory, vector in fresh:
            groups.setdefault((memory.user_id, memory.kind), []).append((memory, vector))
        repeats: dict[str, RepeatedMemory] = {}
        for group in groups.values():
            if len(group) > _MAX_COMPARED_IN_ONE_CALL:
                continue
            kept: list[tuple[Memory, np.ndarray]] = []
            for memory, vector in group:
                similarities = np.stack([other for _, other in kept]) @ vector if kept else np.zeros(0)
                match = next(
                    (
                        RepeatedMemory(memory=kept[i][0], similarity=float(similarities[i]), identical=False)
                        for i in np.argsort(-similarities)
                        if self._repeats(memory, kept[i][0], float(similarities[i]))
                    ),
                    None,
                )
                if match is None:
                    kept.append((memory, vector))
                else:
                    repeats[memory.id] = match
        return repeats

    async def _repeat_of(self, memory: Memory, vector: np.ndarray) -> RepeatedMemory | None:
        """The nearest stored memory of the user and kind that `memory` repeats, if any."""
        nearest = await self.search.nearest_memories(
            memory.user_id, vector.tolist(), limit=_CANDIDATES, kinds=[memory.kind]
        )
        for other, similarity in nearest:
            if other.id == memory.id or other.id.startswith(ITEM_MEMORY_PREFIX) or other.valid_until is not None:
                continue
            if normalized(other.text) == normalized(memory.text) and other.metadata == memory.metadata:
                return RepeatedMemory(memory=other, similarity=similarity, identical=True)
            if self._repeats(memory, other, similarity):
                return RepeatedMemory(memory=other, similarity=similarity, identical=False)
        return None

    def _repeats(self, newer: Memory, older: Memory, similarity: float) -> bool:
        """A near duplicate: the rule of store/text/sameness.py, and the same metadata (a note filed under
        another project is another note)."""
        return newer.metadata == older.metadata and is_near_duplicate(
            newer.text, older.text, similarity, self._threshold
        )
