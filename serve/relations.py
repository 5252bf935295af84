"""The user's entities and the links between them, under /v1/users/{user_id}/entities and /relations
(issue 53): read-only, with the memories API's keys, scopes, tenants and `?agent_id=`. `as_of=`
(epoch seconds) gives the links that held then; `include_past=true` every link, ended ones too."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from memlane.serve.errors import ApiError
from memlane.serve.memories import Reader
from memlane.serve.service import Store
from memlane.store.relations import RelationStore

router = APIRouter(prefix="/v1/users/{user_id}", tags=["relations"])


class EntityOut(BaseModel):
    id: str
    name: str = Field(description="canonical name; the user is 'user'")
    aliases: list[str]
    type: str
    created_at: float


class RelationOut(BaseModel):
    id: str
    subject: str = Field(description="entity id")
    subject_name: str
    predicate: str
    object: str = Field(description="entity id")
    object_name: str
    valid_from: float = Field(description="when the link began (epoch seconds)")
    valid_until: float | None = Field(description="when a newer link ended it; null while it holds")
    source_message_ids: list[str]
    confidence: float


def _relations_of(store: Any) -> RelationStore:
    if not isinstance(store, RelationStore):
        raise ApiError(501, "this store keeps no relations (a RedisMemoryStore does)", "no_relations")
    return store


@router.get("/entities")
async def list_entities(caller: Reader, store: Store) -> dict[str, Any]:
    """The user's people, places and things, by name."""
    entities = await _relations_of(store).list_entities(caller.store_user)
    return {"object": "list", "data": [EntityOut(**entity.model_dump()).model_dump() for entity in entities]}


@router.get("/relations")
async def list_relations(
    caller: Reader,
    store: Store,
    as_of: float | None = Query(default=None, ge=0, description="the links that held then (epoch seconds)"),
    include_past: bool = Query(default=False, description="every link, ended ones too"),
) -> dict[str, Any]:
    """The user's links that hold now (or held `as_of`), oldest first."""
    relations_store = _relations_of(store)
    names = {entity.id: entity.name for entity in await relations_store.list_entities(caller.store_user)}
    relations = await relations_store.list_relations(caller.store_user, as_of=as_of, include_past=include_past)
    data = [
        RelationOut(
            **relation.model_dump(exclude={"exclusive"}),
            subject_name=names.get(relation.subject, ""),
            object_name=names.get(relation.object, ""),
        ).model_dump()
        for relation in relations
    ]
    return {"object": "list", "data": data}
