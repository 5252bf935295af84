"""The user's entities and the links between them, under /v1/users/{user_id}/entities and /relations
(issue 53), with the memories API's keys, scopes, tenants and `?agent_id=`. `as_of=` (epoch
seconds) gives the links that held then; `include_past=true` every link, ended ones too.
DELETE /entities/{entity} (its id or any of its names) forgets the entity and every link touching
it; DELETE /relations/{id} ("relation:<id>" too, as the MCP tools show it) forgets one link: 404
when the user has none such."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from memlane.serve.errors import ApiError
from memlane.serve.memories import Reader, Writer
from memlane.serve.memory_schemas import Deleted, PathId
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


class EntityForgotten(Deleted):
    relations_removed: int = Field(description="the links that touched it, forgotten with it")


@router.delete("/entities/{entity}")
async def forget_entity(entity: PathId, caller: Writer, store: Store) -> EntityForgotten:
    """Forget a person, place or thing (by id or any of its names) and every link touching it."""
    removed = await _relations_of(store).forget_entity(caller.store_user, entity)
    if not removed:
        raise ApiError(404, f"the user has no entity {entity!r} (GET .../entities lists them)", "entity_not_found")
    return EntityForgotten(id=entity, relations_removed=removed - 1)


@router.delete("/relations/{relation_id}")
async def forget_relation(relation_id: PathId, caller: Writer, store: Store) -> Deleted:
    """Forget one link."""
    bare = relation_id.removeprefix("relation:")
    if not await _relations_of(store).forget_relation(caller.store_user, bare):
        raise ApiError(404, f"the user has no relation {relation_id!r}", "relation_not_found")
    return Deleted(id=bare)
