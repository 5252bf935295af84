"""`memlane serve`: memlane as an HTTP service (FastAPI on uvicorn, one ASGI app).

    POST /v1/chat/completions       OpenAI wire format; `model` names a persona (serve/chat.py)
    GET  /v1/models                 the personas
    /v1/users/{user_id}/...         the memories API (serve/memories.py): search, profile, events, notes,
                                    export, delete, remember-now and sessions/{session_id}/end (a memory run now);
                                    mem0's calls (serve/memories_mem0.py): add, memories/search, memories, history
    /mcp                            memlane's MCP server (serve/mcp.py), streamable HTTP
    GET  /healthz  /readyz  /metrics

Every /v1 and /mcp request carries `Authorization: Bearer <key>`. Keys come from the
configuration file (serve/config.py), stored hashed; each belongs to one tenant, and a
(tenant, user) pair is one store user (`store_user_id`, serve/auth.py), so no id a caller sends
can reach another tenant's data. Errors are JSON in OpenAI's shape (serve/errors.py):
`{"error": {"message", "type", "code"}}`.

This module holds the health and chat routes (module-level `APIRouter`s; what a handler needs
comes in by dependency: the service, the key) and wires the app: the service it runs on
(serve/service.py), the error handlers and middleware, the routers (the memories API's are
serve/memories.py's and serve/memories_mem0.py's), and the MCP endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header
from fastapi.responses import JSONResponse, Response
from langchain_core.language_models.chat_models import BaseChatModel

from memlane import MemoryStore, Settings, StoreError, get_settings, scoped_user_id
from memlane.masking import mask_secrets
from memlane.persistence import MemoryAgentContext
from memlane.serve import imports, memories, memories_mem0, relations, review
from memlane.serve.auth import SESSION_HEADER, USER_HEADER, authorized, header_text, tenant_user, valid_session_id
from memlane.serve.chat import (
    IDEMPOTENCY_HEADER,
    TURN_NOT_SAVED_HEADER,
    ChatCompletionRequest,
    ChatTurn,
    RelayedStream,
    UpstreamFailed,
    complete,
    key_reused,
    new_completion_id,
    open_stream,
    recall_for,
    relevance_for,
    save,
    turn_refusal,
)
from memlane.serve.config import ApiKey, ServeConfig, ServeConfigError, load_serve_config
from memlane.serve.errors import (
    READY_TIMEOUT_SECONDS,
    ApiError,
    BodyLimitMiddleware,
    StoreDeadlineMiddleware,
    UnexpectedErrorMiddleware,
    add_error_handlers,
    bounded,
)
from memlane.serve.metrics import MetricsMiddleware
from memlane.serve.service import ServeService, Service
from memlane.tenants import shared_store_user_id


def create_app(
    config: ServeConfig | None = None,
    settings: Settings | None = None,
    *,
    store: MemoryStore | None = None,
    memory_model: BaseChatModel | None = None,
    mount_mcp: bool = True,
) -> FastAPI:
    """The ASGI app of `memlane serve`.

    config: keys and personas (default: the file `MEMLANE_SERVE_CONFIG` names). store: an open
    store on the serving event loop (default: opened at start-up). memory_model: the memory
    graph's model (default: the file's [memory], else the settings'; none: turns are stored
    and searchable, the profile is not updated).
    """
    settings = settings or get_settings()
    if config is None:
        if settings.serve.config_file is None:
            raise ServeConfigError("no configuration file: set MEMLANE_SERVE_CONFIG (see serve.example.toml)")
        config = load_serve_config(settings.serve.config_file)
    if (published := config.example_keys()) and not settings.serve.allow_example_keys:
        raise ServeConfigError(
            f"the key(s) {', '.join(map(repr, published))} are serve.example.toml's, whose tokens anyone can read: "
            "make your own with `memlane serve hash-key` and paste its hash, or, only to try memlane serve out, "
            "set MEMLANE_SERVE_ALLOW_EXAMPLE_KEYS=true"
        )
    service = ServeService(config, settings, store=store, memory_model=memory_model)
    mcp_endpoint = _mcp_endpoint(service) if mount_mcp else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            async with mcp_endpoint.running() if mcp_endpoint is not None else contextlib.nullcontext():
                yield
        finally:
            await service.aclose()

    app = FastAPI(
        title="memlane",
        summary="Long-term memory for chat models: an OpenAI-compatible chat endpoint with recall, and a memories API",
        lifespan=lifespan,
    )
    app.state.memlane = service
    service.metrics.watch_index_backlog(lambda: service.persistence.index_backlog() if service.persistence else None)
    add_error_handlers(app)
    app.add_middleware(UnexpectedErrorMiddleware)  # innermost: the metrics count its 500s
    app.add_middleware(StoreDeadlineMiddleware, service=service)  # a silent Redis: 503 in time
    app.add_middleware(
        BodyLimitMiddleware, max_bytes=settings.serve.max_body_bytes, import_max_bytes=settings.imports.max_bytes
    )
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)  # outermost: counts the 413s too
    app.include_router(health)
    app.include_router(chat)
    app.include_router(memories.router)
    app.include_router(imports.router)
    app.include_router(memories.shared)
    app.include_router(review.router)
    app.include_router(relations.router)
    app.include_router(memories_mem0.router)
    if mcp_endpoint is not None:
        app.router.routes.append(mcp_endpoint.route)
    return app


def _mcp_endpoint(service: ServeService) -> Any:
    """memlane's MCP server (serve/mcp.py) at /mcp: it checks the same bearer keys itself (read / write
    scopes per tool, the user from the X-Memlane-User header)."""
    from memlane.serve.mcp import serve_mcp_endpoint

    return serve_mcp_endpoint(service, path="/mcp")


health = APIRouter(tags=["health"])
"""/healthz, /readyz and /metrics: no key needed."""


@health.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@health.get("/readyz")
async def readyz(service: Service) -> JSONResponse:
    """Redis answers and the memory index exists (503 with the reason otherwise); either way
    with the index backlog, saved turns not searchable yet (it never makes the service unready)."""
    backlog = service.persistence.index_backlog() if service.persistence else None
    detail = {"index_backlog": dataclasses.asdict(backlog) if backlog else None}
    try:
        await bounded(service.require_store().check_ready(), READY_TIMEOUT_SECONDS, "the readiness check")
    except StoreError as error:
        reason = mask_secrets(str(error), service.settings.parts().values())
        return JSONResponse({"status": "unavailable", "reason": reason, **detail}, status_code=503)
    return JSONResponse({"status": "ready", **detail})


@health.get("/metrics")
async def metrics(service: Service) -> Response:
    """Prometheus metrics."""
    return Response(service.metrics.render(), media_type=service.metrics.content_type)


chat = APIRouter(prefix="/v1", tags=["chat"])
"""The OpenAI-compatible routes: the personas as models, and chat completions with recall."""
ChatKey = Annotated[ApiKey, Depends(authorized("chat"))]


@chat.get("/models")
async def list_models(key: ChatKey, service: Service) -> dict[str, Any]:
    """The personas this key may use, as OpenAI models."""
    return {
        "object": "list",
        "data": [
            {
                "id": persona_id,
                "object": "model",
                "created": 0,
                "owned_by": "memlane",
                "description": persona.description,
            }
            for persona_id, persona in service.config.personas.items()
            if key.may_use(persona_id)
        ],
    }


@chat.post("/chat/completions")
async def chat_completions(
    body: ChatCompletionRequest,
    key: ChatKey,
    service: Service,
    user_header: str | None = Header(default=None, alias=USER_HEADER),
    session_header: str | None = Header(default=None, alias=SESSION_HEADER),
    idempotency_header: str | None = Header(default=None, alias=IDEMPOTENCY_HEADER),
) -> Any:
    """A chat completion with the user's memories recalled into the system prompt; the turn is
    saved after the reply completes (streamed or not). With an Idempotency-Key header, retries
    of the request are saved once (serve/chat.py says what a request saves)."""
    started = time.perf_counter()
    persona = service.config.personas.get(body.model)
    if persona is None:
        raise ApiError(404, f"no persona {body.model!r}; GET /v1/models lists them", "model_not_found")
    if not key.may_use(body.model):
        raise ApiError(403, f"the API key {key.name!r} may not use the persona {body.model!r}", "persona_not_allowed")
    user_id = body.user or header_text(user_header, USER_HEADER)
    if not user_id:
        raise ApiError(422, f'name the user: the request\'s "user" field or the {USER_HEADER} header', "missing_user")
    settings = service.persona_settings[body.model]
    toggles = body.memory_config
    identity = MemoryAgentContext(  # the store user: the persona's own memory of the user, unless configured otherwise
        user_id=scoped_user_id(tenant_user(key, user_id), persona.agent_id(body.model)),
        session_id=valid_session_id(header_text(session_header, SESSION_HEADER)),
        shared_user_id=shared_store_user_id(key.tenant) if persona.read_shared else None,
        recall_enabled=settings.recall.enabled if toggles is None or toggles.enabled is None else toggles.enabled,
        auto_save_enabled=settings.turns.auto_save_enabled
        if toggles is None or toggles.auto_save is None
        else toggles.auto_save,
    )
    turn = ChatTurn(
        request=body,
        persona_id=body.model,
        persona=persona,
        settings=settings,
        identity=identity,
        completion_id=new_completion_id(),
        idempotency_key=(header_text(idempotency_header, IDEMPOTENCY_HEADER) or "").strip() or None,
    )
    reused, refusal, _ = await asyncio.gather(
        key_reused(turn, service.require_store(), READY_TIMEOUT_SECONDS),
        turn_refusal(turn, service.require_store(), READY_TIMEOUT_SECONDS),
        recall_for(turn, service.require_turns(), service.metrics),
    )
    if reused:
        raise ApiError(
            422,
            f"the {IDEMPOTENCY_HEADER} {turn.idempotency_key!r} was sent before with another request; "
            "a key names one request (send its retries with the same body): use a new key for a new request",
            "idempotency_key_reused",
        )
    headers = {"X-Memlane-Recalled-Tokens": str(turn.recalled.tokens if turn.recalled else 0)}
    if turn.recalled is not None and turn.recalled.rewrite:  # a follow-up: how it was made searchable
        headers["X-Memlane-Follow-Up-Rewrite"] = turn.recalled.rewrite.replace(" ", "-")
    if refusal is not None:  # over a quota: the reply goes out, the turn is not kept, and the caller is told
        headers[TURN_NOT_SAVED_HEADER] = f"{refusal.quota} quota: {refusal.setting}={refusal.limit}"
        turn.identity.auto_save_enabled = False  # noted as said, never stored nor tried again
        service.metrics.turns.labels("refused").inc()
    if not body.stream:  # the items' relevance (nothing the upstream is sent) is given while it answers
        service.require_turns().in_background(relevance_for(turn, service.require_turns()))
    try:  # a stream's, once its first chunk is relayed (`relay_stream`)
        if body.stream:
            response = await open_stream(service.started_upstream, turn)
        else:
            completion, reply = await complete(service.started_upstream, turn)
    except UpstreamFailed:
        service.metrics.upstream_errors.labels(body.model).inc()
        if body.stream:  # no relay to give the relevance after its first chunk
            service.require_turns().in_background(relevance_for(turn, service.require_turns()))
        raise
    if body.stream:
        return RelayedStream(
            response,
            turn,
            service.require_turns(),
            service.metrics,
            started,
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    save(turn, reply, service.require_turns())
    return JSONResponse(completion, headers=headers)
