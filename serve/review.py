"""The review list of `memlane serve`, under /v1/users/{user_id}/review: the facts the memory model
extracted under `memory_min_confidence`, held out of the profile until the user confirms one (it
becomes a profile entry) or drops it. Same keys, scopes, tenants and `?agent_id=` as the memories API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from memlane.serve.errors import ApiError
from memlane.serve.memories import Reader, Writer
from memlane.serve.memory_schemas import PathId, ProfileEntryOut
from memlane.serve.service import Store

router = APIRouter(prefix="/v1/users/{user_id}/review", tags=["review"])


class HeldFactOut(BaseModel):
    id: str = Field(description="the held fact's id: POST .../review/{id}/confirm or .../drop")
    topic: str
    subtopic: str
    content: str
    confidence: float = Field(description="the memory model's confidence, under memory_min_confidence")
    held_at: float = Field(description="when the memory run held it (epoch seconds)")
    said_at: float = Field(description="when it was said: its newest source message")
    source_message_ids: list[str]


class Dropped(BaseModel):
    id: str
    dropped: bool = True


def _not_held(held_id: str) -> ApiError:
    return ApiError(
        404, f"the user has no fact {held_id!r} held for review (confirmed or dropped already?)", "not_held"
    )


@router.get("")
async def list_held(caller: Reader, store: Store) -> dict[str, Any]:
    """The user's facts held for review, oldest first."""
    held = await store.held_facts(caller.store_user)
    data = [
        HeldFactOut(
            id=fact.id,
            **fact.entry.model_dump(include={"topic", "subtopic", "content", "confidence", "source_message_ids"}),
            held_at=fact.entry.created_at,
            said_at=fact.entry.since,
        ).model_dump()
        for fact in held
    ]
    return {"object": "list", "data": data}


@router.post("/{held_id}/confirm")
async def confirm_held(held_id: PathId, caller: Writer, store: Store) -> ProfileEntryOut:
    """Confirm a held fact: it is written into its profile slot (confidence 1) and recalled from now on."""
    entry = await store.confirm_held_fact(caller.store_user, held_id, actor=caller.actor)
    if entry is None:
        raise _not_held(held_id)
    return ProfileEntryOut.of(entry)


@router.post("/{held_id}/drop")
async def drop_held(held_id: PathId, caller: Writer, store: Store) -> Dropped:
    """Drop a held fact: nothing of it is kept."""
    if not await store.drop_held_fact(caller.store_user, held_id):
        raise _not_held(held_id)
    return Dropped(id=held_id)
