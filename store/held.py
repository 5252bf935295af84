"""A fact held for review: what the memory model extracted under `memory_min_confidence`."""

from __future__ import annotations

from pydantic import BaseModel

from memlane.store.ids import stable_id
from memlane.store.records import ProfileEntry


class HeldFact(BaseModel):
    """A fact held for review: its id and the profile entry it becomes once confirmed."""

    id: str
    entry: ProfileEntry


def held_fact_id(entry: ProfileEntry) -> str:
    """A held fact's id, from its slot and its words: the same fact held twice is held once."""
    return stable_id("held", entry.user_id, entry.id, entry.content)
