"""Facts held for review: what the memory model extracted under `memory_min_confidence`.

One hash per user (held id → the `ProfileEntry` the fact becomes once confirmed). A held fact is
not in the profile and has no search memory, so nothing recalls it; the user confirms it (it is
written as a profile entry, with its search memory, by the same one write as any other) or drops
it. The hash sits under the user's prefix, so deleting the user deletes it; `export_user` lists it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlane.store.held import HeldFact, held_fact_id
from memlane.store.records import MemoryUpdate, ProfileEntry
from memlane.store.redis.core import StorePart

if TYPE_CHECKING:  # updates.py writes what this holds (queue_held)
    from memlane.store.redis.updates import Updates

CONFIRMED_CONFIDENCE = 1.0  # the user vouched for it


def queue_held(pipe: Any, key: str, entries: Sequence[ProfileEntry]) -> None:
    """Hold `entries` (one write of the memory graph's transaction)."""
    if entries:
        pipe.hset(key, mapping={held_fact_id(entry): entry.model_dump_json() for entry in entries})


@dataclass(eq=False, repr=False)
class Review(StorePart):
    """List, confirm or drop the facts held for review."""

    updates: Updates  # a confirmed fact is written as any profile entry is

    async def held_facts(self, user_id: str) -> list[HeldFact]:
        """The user's held facts, oldest first."""
        raw = await self._run(self.client.hgetall(self.layout.review(user_id)))
        held = [
            HeldFact(id=key.decode() if isinstance(key, bytes) else key, entry=ProfileEntry.model_validate_json(value))
            for key, value in raw.items()
        ]
        return sorted(held, key=lambda fact: (fact.entry.created_at, fact.id))

    async def confirm_held_fact(self, user_id: str, held_id: str, *, actor: str = "user") -> ProfileEntry | None:
        """Write the held fact into its profile slot (replacing what the slot held, with its history and
        search memory) at confidence 1, and stop holding it; None when no such fact is held."""
        raw = await self._run(self.client.hget(self.layout.review(user_id), held_id))
        if raw is None:
            return None
        entry = ProfileEntry.model_validate_json(raw).model_copy(update={"confidence": CONFIRMED_CONFIDENCE})
        await self.updates.apply_update(
            MemoryUpdate(user_id=user_id, upsert_profile=[entry], memories=[entry.as_memory()], actor=actor)
        )
        # after the write: a confirmation cut short is confirmed again, the same entry written once
        await self._run(self.client.hdel(self.layout.review(user_id), held_id))
        return entry

    async def drop_held_fact(self, user_id: str, held_id: str) -> bool:
        """Stop holding the fact, keeping nothing of it; False when no such fact is held."""
        return bool(await self._run(self.client.hdel(self.layout.review(user_id), held_id)))
