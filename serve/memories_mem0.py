"""mem0's calls over HTTP, the routes `memlane.client.MemoryClient` calls, under /v1/users/{user_id}:

    POST   /add                           mem0's `add`: store the messages, learn from them now (`wait`)
                                          or in the background (`memory_run_id`), or only store (`infer: false`)
    GET    /add-runs/{memory_run_id}      how an `add` that did not wait stands
    POST   /memories/search               mem0's `search`: {"results": [...]}
    GET    /memories                      mem0's `get_all`: {"results": [...], "next_offset"}
    GET    /memories/{memory_id}          mem0's `get`
    PATCH  /memories/{memory_id}          mem0's `update`: {"text": ...}, any profile entry or event card
    GET    /memories/{memory_id}/history  mem0's `history`

(`delete` and `delete_all` are serve/memories.py's DELETE /memories/{memory_id} and DELETE the
user.) The answers are the in-process facade's (memlane/memory.py), built by the same functions
(memlane/memory_ops.py, memlane/memory_shapes.py), so the client and the facade answer alike.
Every route takes `?agent_id=`, as serve/memories.py's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from memlane.importing import messages_of
from memlane.memory_ops import get_memory, list_memories, memory_history, run_results, stored_results, update_memory
from memlane.memory_shapes import call_scope, hit_memory
from memlane.serve.auth import SESSION_ID_MAX_CHARS, valid_session_id
from memlane.serve.errors import ApiError
from memlane.serve.memories import Caller, Reader, Writer
from memlane.serve.memory_schemas import PathId
from memlane.serve.service import ServeService, Service, Store
from memlane.store.errors import InvalidInput
from memlane.store.records import MemoryKind, Message
from memlane.store.scopes import split_user_id

router = APIRouter(prefix="/v1/users/{user_id}", tags=["memories, as mem0 calls them"])
"""mem0's calls: add (waiting or not), search, get_all, get, update, history; answers in mem0's shapes."""

NO_MEMORY_MODEL = (
    "memlane serve has no memory model, so it cannot learn from what is added: add a [memory] section to the "
    "configuration file, or set MEMLANE_MEMORY_MODEL / OPENAI_BASE_URL; or add with infer: false"
)


class AddIn(BaseModel):
    """mem0's `add`: the messages (a text is one user message) and how to learn from them."""

    model_config = ConfigDict(extra="forbid")
    messages: str | dict[str, Any] | list[dict[str, Any]] = Field(
        description="a text, one message, or a list of {role, content, id?, name?, created_at?, metadata?}"
    )
    run_id: str | None = Field(
        default=None, max_length=SESSION_ID_MAX_CHARS, description="the session the messages belong to"
    )
    metadata: dict[str, Any] | None = Field(default=None, description="kept on each message (a message's own wins)")
    infer: bool = Field(default=True, description="learn from them (the memory graph); false: store them only")
    wait: bool = Field(
        default=True,
        description="answer what was learned once the run ends; false: answer at once with a memory_run_id",
    )


class SearchIn(BaseModel):
    """mem0's `search`: the user is the path's; `filters` holds metadata conditions (and may repeat the scope)."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1)
    filters: dict[str, Any] | None = None
    top_k: int = Field(default=20, ge=1, le=1000)
    threshold: float | None = Field(default=None, ge=0, le=1, description="leave out results below this relevance")
    run_id: str | None = Field(default=None, max_length=SESSION_ID_MAX_CHARS, description="one session's turns")
    kinds: list[MemoryKind] | None = None


class MemoryTextIn(BaseModel):
    """mem0's `update`: the memory's new text."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, description="the new content of a profile entry, or the new text of an event card")


def _scope(caller: Caller, run_id: str | None = None) -> dict[str, str | None]:
    """The scope the answers name: the caller's user id (never the tenant's store id), its agent, the run."""
    return {"user_id": caller.user_id, "agent_id": split_user_id(caller.store_user)[1], "run_id": run_id}


@router.post("/add")
async def add(body: AddIn, caller: Writer, service: Service) -> dict[str, Any]:
    """Store the messages (idempotent on their ids) and learn from them: {"results": [{"id", "memory",
    "event": ADD | UPDATE | DELETE}], "stored", "event_id"} once the memory run ends; with `wait:
    false`, at once with a `memory_run_id` (GET /add-runs/{id}); with `infer: false`, each message
    as a result (ADD when new, NONE when the store held it)."""
    document = [{"role": "user", "content": body.messages}] if isinstance(body.messages, str) else body.messages
    try:
        messages = messages_of(document, caller.store_user, session_id=valid_session_id(body.run_id or "default"))
    except InvalidInput as error:
        raise ApiError(422, str(error), "invalid_messages") from None
    if body.metadata:
        messages = [m.model_copy(update={"metadata": {**body.metadata, **m.metadata}}) for m in messages]
    store = service.require_store()
    scope = _scope(caller, body.run_id)
    if not body.infer:
        new = await store.add_messages(messages)
        return {"results": stored_results(messages, new), "stored": len(new), "event_id": None}
    if service.memory_model is None:
        raise ApiError(409, NO_MEMORY_MODEL, "no_memory_model")
    if body.wait:
        return await _remember(service, caller.store_user, messages, scope)
    new = await store.add_messages(messages)  # stored before the answer, as when it waits
    memory_run_id = service.start_add_run(caller.store_user, _remember(service, caller.store_user, [], scope))
    return {"results": [], "stored": len(new), "event_id": None, "memory_run_id": memory_run_id}


async def _remember(
    service: ServeService, store_user: str, messages: Sequence[Message], scope: dict[str, str | None]
) -> dict[str, Any]:
    stored, run = await service.remember_at_once(store_user, messages)
    return {
        "results": await run_results(service.require_store(), store_user, run, scope),
        "stored": stored,
        "event_id": run.event_id if run is not None else None,
    }


@router.get("/add-runs/{memory_run_id}")
async def add_run(memory_run_id: PathId, caller: Reader, service: Service) -> dict[str, Any]:
    """How an `add` that did not wait stands: "running", "done" (with its results) or "failed" (with
    the error). Runs are kept by the process that started them (the last 1,000)."""
    task = service.add_run(caller.store_user, memory_run_id)
    if task is None:
        raise ApiError(
            404,
            f"no add run {memory_run_id!r} of the user in this process (runs are kept by the process that started "
            "them; behind several processes, route a user's calls to one)",
            "run_not_found",
        )
    if not task.done():
        return {"memory_run_id": memory_run_id, "status": "running"}
    if task.exception() is not None:
        error = task.exception()
        return {"memory_run_id": memory_run_id, "status": "failed", "error": f"{type(error).__name__}: {error}"}
    return {"memory_run_id": memory_run_id, "status": "done", **task.result()}


@router.post("/memories/search")
async def search(body: SearchIn, caller: Reader, store: Store) -> dict[str, Any]:
    """Hybrid search over the user's memories, best first, in mem0's shape: {"results": [{"id",
    "memory", "score", ...}]}, `score` the relevance 0..1."""
    scope, metadata_filter = call_scope(
        user_id=caller.user_id,
        agent_id=split_user_id(caller.store_user)[1],
        run_id=body.run_id,
        filters=body.filters,
    )
    hits = await store.search_memories(
        caller.store_user,
        body.query,
        limit=body.top_k,
        kinds=body.kinds,
        session_id=scope["run_id"],
        metadata_filter=metadata_filter,
    )
    results = [hit_memory(hit, scope) for hit in hits]
    return {"results": [hit for hit in results if body.threshold is None or hit["score"] >= body.threshold]}


@router.get("/memories")
async def get_all(
    caller: Reader,
    store: Store,
    limit: int = Query(default=100, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
    run_id: str | None = Query(default=None, max_length=SESSION_ID_MAX_CHARS),
) -> dict[str, Any]:
    """The user's memories, most recently changed first, a page at a time: profile entries, event
    cards and the turns not remembered yet: {"results", "next_offset"}."""
    page, next_offset = await list_memories(
        store, caller.store_user, _scope(caller, run_id), limit=limit, offset=offset
    )
    return {"results": page, "next_offset": next_offset}


async def _found(store: Store, caller: Caller, memory_id: str) -> dict[str, Any]:
    memory = await get_memory(store, caller.store_user, memory_id, _scope(caller))
    if memory is None:
        raise ApiError(404, f"the user has no memory {memory_id!r}", "memory_not_found")
    return memory


@router.get("/memories/{memory_id}")
async def get(memory_id: PathId, caller: Reader, store: Store) -> dict[str, Any]:
    """One memory by id (`profile:…`, `event:…`, `message:…`), in mem0's shape."""
    return await _found(store, caller, memory_id)


@router.patch("/memories/{memory_id}")
async def update(memory_id: PathId, body: MemoryTextIn, caller: Writer, store: Store) -> dict[str, Any]:
    """Give a profile entry new content, or an event card (a note, a memory run's card) new text; the
    change is kept in its history. A turn is what was said: 422 (delete it and add what is true)."""
    await _found(store, caller, memory_id)
    updated = await update_memory(
        store, caller.store_user, memory_id, body.text, actor=caller.actor, scope=_scope(caller)
    )
    return {"message": "Memory updated successfully!", "id": memory_id, "memory": updated["memory"]}


@router.get("/memories/{memory_id}/history")
async def history(memory_id: PathId, caller: Reader, store: Store) -> dict[str, Any]:
    """How the memory came to be, oldest first, as mem0's history entries (`event` ADD / UPDATE /
    DELETE, `old_memory`, `new_memory`); empty when the user never had it."""
    return {"object": "list", "data": await memory_history(store, caller.store_user, memory_id)}
