"""`memlane serve`: memlane as an HTTP service (FastAPI on uvicorn, one ASGI app).

    POST /v1/chat/completions       OpenAI wire format; `model` names a persona (ui/serve_chat.py)
    GET  /v1/models                 the personas
    /v1/users/{user_id}/...         the memories API: search, profile, events, notes, export, delete,
                                    remember-now and sessions/{session_id}/end (a memory run now)
    /mcp                            memlane's MCP server (ui/mcp.py), streamable HTTP
    GET  /healthz  /readyz  /metrics

Every /v1 and /mcp request carries `Authorization: Bearer <key>`. Keys come from the
configuration file (ui/serve_config.py), stored hashed; each belongs to one tenant, and a
(tenant, user) pair is one store user (`store_user_id`), so no id a caller sends can reach
another tenant's data. Errors are JSON in OpenAI's shape: `{"error": {"message", "type", "code"}}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, AsyncIterator, Awaitable, Callable, Literal

import httpx
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from starlette.exceptions import HTTPException

from memlane import Event, MemoryStore, Settings, StoreError, get_settings, open_store
from memlane.graph import MemoryContext, MemoryRunResult, MemoryScheduler
from memlane.masking import mask_secrets
from memlane.middleware import DEFAULT_SESSION, MemoryAgentContext, MemoryPersistence
from memlane.models import memory_model_from_settings
from memlane.store.base import (
    MEMORY_KINDS,
    InvalidInput,
    Memory,
    MemoryHit,
    MemoryKind,
    ProfileEntry,
    event_memory_id,
    profile_entry_id,
    profile_memory_id,
)
from memlane.tools import forget_memory, remember_fact, remember_note
from memlane.ui.serve_chat import (
    IDEMPOTENCY_HEADER,
    ChatCompletionRequest,
    JsonBody,
    ChatTurn,
    RelayedStream,
    UpstreamFailed,
    complete,
    new_completion_id,
    open_stream,
    recall_for,
    save,
)
from memlane.ui.serve_config import ApiKey, Scope, ServeConfig, ServeConfigError, load_serve_config, store_user_id
from memlane.ui.serve_metrics import MetricsMiddleware, ServeMetrics

logger = logging.getLogger(__name__)

USER_HEADER = "X-Memlane-User"
SESSION_HEADER = "X-Memlane-Session"
SESSION_ID_MAX_CHARS = 256
# a frozen Redis must not hold a health check (or a search) for the socket timeout's 30 s
READY_TIMEOUT_SECONDS = 2.0


# --- errors ------------------------------------------------------------------------------
class ApiError(HTTPException):
    """An answer other than success: the status, a sentence saying what to do, and a short code."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)
        self.code = code


_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


def error_response(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=status, headers=headers)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    code = getattr(error, "code", None) or _CODES.get(error.status_code, "error")
    message = error.detail if isinstance(error.detail, str) else str(error.detail)
    if error.status_code == 404 and not isinstance(error, ApiError):
        message = f"no route {request.method} {request.url.path}; the API is described in the README (memlane serve)"
    return error_response(error.status_code, message, code, getattr(error, "headers", None))


async def _validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    problems = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
        problems.append(f"{where}: {problem.get('msg')}" if where else str(problem.get("msg")))
    return error_response(422, "the request is not valid: " + "; ".join(problems), "invalid_request")


async def _store_error(request: Request, error: StoreError) -> JSONResponse:
    logger.warning("%s %s: the store failed: %s", request.method, request.url.path, error)
    message = mask_secrets(str(error), _service(request).settings)
    return error_response(503, f"the memory store is unavailable: {message}", "store_unavailable")


async def _upstream_error(request: Request, error: UpstreamFailed) -> JSONResponse:
    return error_response(502, str(error), "upstream_error")


async def _unexpected_error(request: Request, error: Exception) -> JSONResponse:
    # Starlette logs the traceback after this answer; the caller gets JSON, not a text page
    return error_response(500, f"memlane failed on this request ({type(error).__name__}); the server log has the details", "internal_error")


async def bounded(call: Awaitable[Any], seconds: float, what: str) -> Any:
    """`await call`, or StoreError (a 503) when Redis has not answered within `seconds`: a frozen
    Redis holds a connection for the socket timeout (30 s), longer than a health check waits."""
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        raise StoreError(f"Redis did not answer {what} within {seconds:g} s; it is overloaded, stopped or unreachable") from None


async def watched(call: Awaitable[Any], store: MemoryStore) -> Any:
    """`await call`; when it has not answered within READY_TIMEOUT_SECONDS, Redis is probed (with
    the same bound) and a probe that fails answers StoreError (503) at once: a frozen Redis no
    longer holds the request for the socket timeout, and a slow but healthy call is not cut."""
    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=READY_TIMEOUT_SECONDS)
        if not done:
            try:
                await bounded(store.check_ready(), READY_TIMEOUT_SECONDS, "a health probe")
            except StoreError:
                if not task.done():
                    raise
        return await task
    finally:
        if not task.done():
            task.cancel()


class BodyTooLarge(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes (MEMLANE_SERVE_MAX_BODY_BYTES)", "request_too_large")


class BodyLimitMiddleware:
    """Answers 413 to a body over `max_bytes`: by its Content-Length before reading, or while it
    streams in (chunked uploads say no length). Pure ASGI, so responses stream through."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await error_response(413, BodyTooLarge(self.max_bytes).detail, "request_too_large")(scope, receive, send)
                return
        received = 0
        started = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def watch_send(message: dict[str, Any]) -> None:
            nonlocal started
            started |= message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watch_send)
        except BodyTooLarge as error:  # raised where no handler caught it (a mounted app)
            if not started:
                await error_response(413, error.detail, "request_too_large")(scope, receive, send)


# --- the service ---------------------------------------------------------------------------
class ServeService:
    """What the app runs on: the store, the scheduler and its worker, the saver, the upstream client."""

    def __init__(
        self,
        config: ServeConfig,
        settings: Settings,
        *,
        store: MemoryStore | None = None,
        memory_model: BaseChatModel | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.store: MemoryStore | None = store
        self._owns_store = store is None
        self.memory_model = memory_model or configured_memory_model(config, settings)
        self.metrics = ServeMetrics()
        self.scheduler: MemoryScheduler | None = None
        self.persistence: MemoryPersistence | None = None
        self.upstream: httpx.AsyncClient | None = None
        self.persona_settings = {persona_id: persona.settings(settings) for persona_id, persona in config.personas.items()}
        for persona in config.personas.values():  # resolved now: each key is masked by value from the start
            persona.api_key(settings)
        for note in config.key_notes(settings):
            logger.warning("configuration: %s", note)

    async def start(self) -> None:
        if self.store is None:
            self.store = await open_store(self.settings)
        if self.memory_model is not None:
            context = MemoryContext(store=self.store, llm=self.memory_model, settings=self.settings)
            docket_url = self.settings.memory_docket_url or getattr(self.store, "url", None)
            self.scheduler = await MemoryScheduler(
                context, docket_url=docket_url, on_result=self._on_result, on_queued=self._on_queued
            ).__aenter__()
        self.persistence = MemoryPersistence(self.store, self.scheduler, on_saved=self._on_saved, on_failed=self._on_failed)
        self.upstream = httpx.AsyncClient(
            timeout=httpx.Timeout(self.settings.llm_timeout_seconds, connect=min(10.0, self.settings.llm_timeout_seconds)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def aclose(self) -> None:
        try:
            if self.persistence is not None:
                await self.persistence.wait_idle(10)
            if self.upstream is not None:
                await self.upstream.aclose()
            if self.scheduler is not None:
                await self.scheduler.__aexit__(None, None, None)
        finally:
            if self.store is not None and self._owns_store:
                await self.store.aclose()

    async def remember_now(self, user_id: str) -> bool | None:
        """Queue a memory run over the user's unprocessed messages now, whatever their size (the
        app's "Remember now"). False: nothing new to remember; None: no memory model."""
        if self.scheduler is None:
            return None
        if self.persistence is not None:  # the turns sent just before are part of the run
            await self.persistence.wait_saved(user_id, timeout=10)
        return await self.scheduler.notify(user_id, flush=True)

    async def end_session(self, user_id: str, session_id: str) -> bool | None:
        """The session ended: queue the "session ended" run and fold the session's rolling summary
        (as the app does when a new chat starts). False: nothing new; None: no memory model."""
        if self.scheduler is None:
            return None
        if self.persistence is not None:
            await self.persistence.wait_saved(user_id, timeout=10)
        queued = await self.scheduler.notify(user_id, session_ended=True)
        if queued:
            await self.scheduler.update_session_summary(user_id, session_id)
        return queued

    def require_store(self) -> MemoryStore:
        if self.store is None:
            raise StoreError("the store is not open yet; the service is starting")
        return self.store

    async def _on_saved(self, identity: MemoryAgentContext, turn: list, queued: bool) -> None:
        self.metrics.turns.labels("saved").inc()

    async def _on_queued(self, user_id: str) -> None:
        # only runs this process put on the queue: a notify folded into a run in progress is none
        self.metrics.memory_runs.labels("queued").inc()

    async def _on_failed(self, identity: MemoryAgentContext, error: BaseException) -> None:
        self.metrics.turns.labels("failed").inc()

    async def _on_result(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        self.metrics.memory_runs.labels("failed" if isinstance(outcome, BaseException) else "done").inc()


def configured_memory_model(config: ServeConfig, settings: Settings) -> BaseChatModel | None:
    """The memory graph's model: the file's [memory] upstream, else the settings' (None when neither)."""
    if config.memory is None:
        return memory_model_from_settings(settings)
    key = config.memory.api_key(settings)
    return memory_model_from_settings(
        settings.model_copy(
            update={
                "memory_model": config.memory.model,
                "openai_base_url": config.memory.resolved_base_url(settings),
                "openai_api_key": SecretStr(key or "not-needed"),
            }
        )
    )


# --- authentication --------------------------------------------------------------------------
def bearer_key(config: ServeConfig, authorization: str | None) -> ApiKey:
    """The API key of an Authorization header; raises ApiError 401 for none, a malformed or an unknown one."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if not authorization:
        raise ApiError(401, 'no API key: send the header "Authorization: Bearer <key>"', "missing_api_key", challenge)
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, 'the Authorization header must read "Bearer <key>"', "invalid_authorization", challenge)
    key = config.key_for_token(token.strip())
    if key is None:
        raise ApiError(401, "the API key is not valid", "invalid_api_key", challenge)
    return key


def require_scope(key: ApiKey, scope: Scope) -> ApiKey:
    if not key.may(scope):
        raise ApiError(403, f"the API key {key.name!r} may not {scope} (its scopes: {', '.join(key.scopes)})", "insufficient_scope")
    return key


def tenant_user(key: ApiKey, user_id: str) -> str:
    """The store user id of `user_id` in the key's tenant; 422 for an id the API does not accept."""
    try:
        return store_user_id(key.tenant, user_id)
    except ValueError as error:
        raise ApiError(422, f"user id: {error}", "invalid_user_id") from None


def _service(request: Request) -> ServeService:
    return request.app.state.memlane


def authorized(scope: Scope) -> Callable[..., ApiKey]:
    """A dependency: the request's key, which must have `scope`."""

    async def dependency(request: Request, authorization: str | None = Header(default=None)) -> ApiKey:
        return require_scope(bearer_key(_service(request).config, authorization), scope)

    return dependency


# --- request and response models --------------------------------------------------------------
def _not_blank(text: str | None) -> str | None:
    if text is not None and not text.strip():
        raise ValueError("must hold some text, not only spaces")
    return text


class SearchRequest(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    query: str = Field(min_length=1, max_length=4000)
    limit: int = Field(default=10, ge=1, le=50)
    kinds: list[MemoryKind] | None = None
    session_id: str | None = Field(default=None, min_length=1, max_length=SESSION_ID_MAX_CHARS)
    since: float | None = None
    until: float | None = None


class MemoryOut(BaseModel):
    id: str
    kind: MemoryKind
    text: str
    attributed_text: str
    speaker: str | None
    speaker_role: str
    session_id: str | None
    created_at: float
    ref_id: str | None
    source_message_ids: list[str]

    @classmethod
    def of(cls, memory: Memory) -> "MemoryOut":
        return cls(attributed_text=memory.attributed_text, **memory.model_dump(exclude={"user_id", "context"}))


class SearchHitOut(BaseModel):
    memory: MemoryOut
    score: float = Field(description="relevance 0..1")
    vector_similarity: float
    text_score: float
    time_match: bool

    @classmethod
    def of(cls, hit: MemoryHit) -> "SearchHitOut":
        return cls(
            memory=MemoryOut.of(hit.memory),
            score=hit.score,
            vector_similarity=hit.vector_similarity,
            text_score=hit.text_score,
            time_match=hit.time_match,
        )


class ProfileEntryOut(BaseModel):
    id: str
    memory_id: str = Field(description="id of its search memory (DELETE /memories/{id} deletes the entry too)")
    topic: str
    subtopic: str
    content: str
    confidence: float
    created_at: float
    updated_at: float
    source_message_ids: list[str]

    @classmethod
    def of(cls, entry: ProfileEntry) -> "ProfileEntryOut":
        return cls(id=entry.id, memory_id=profile_memory_id(entry.id), **entry.model_dump(exclude={"user_id", "metadata"}))


class ProfileEntryIn(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    topic: str = Field(min_length=1, max_length=64)
    subtopic: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1, max_length=4000)
    confidence: float = Field(default=0.9, ge=0, le=1)

    check_blank = field_validator("topic", "subtopic", "content")(_not_blank)


class ProfileEntryEdit(JsonBody):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    content: str | None = Field(default=None, min_length=1, max_length=4000)
    confidence: float | None = Field(default=None, ge=0, le=1)

    check_blank = field_validator("content")(_not_blank)


class EventOut(BaseModel):
    id: str
    memory_id: str
    created_at: float
    summary: str
    tags: list[str]
    profile_delta: list[dict[str, Any]]
    session_ids: list[str]
    source_message_ids: list[str]

    @classmethod
    def of(cls, event: Event) -> "EventOut":
        return cls(memory_id=event_memory_id(event.id), **event.model_dump(exclude={"user_id"}))


class NoteIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4000)
    session_id: str = Field(default="api", min_length=1, max_length=SESSION_ID_MAX_CHARS)

    check_blank = field_validator("text", "session_id")(_not_blank)


class ForgetIn(JsonBody):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=1000, description='what to forget: "peanuts", "forget what I said about my ex"')

    check_blank = field_validator("query")(_not_blank)


class RunRequested(BaseModel):
    user_id: str
    session_id: str | None = Field(description="the session that ended (sessions/{session_id}/end), else null")
    queued: bool = Field(description="a memory run is queued, or follows the one in progress; false: nothing new to remember")


class Deleted(BaseModel):
    id: str
    deleted: Literal[True] = True


def _public(value: Any, store_user: str, user_id: str) -> Any:
    """A dumped record with each `user_id` shown as the caller's id (not the tenant-qualified store id)."""
    if isinstance(value, dict):
        return {k: (user_id if k == "user_id" and v == store_user else _public(v, store_user, user_id)) for k, v in value.items()}
    if isinstance(value, list):
        return [_public(item, store_user, user_id) for item in value]
    return value


def header_text(value: str | None, name: str) -> str | None:
    """A header's value as the client wrote it: HTTP carries bytes, which Starlette reads as
    Latin-1; memlane reads them as UTF-8 (so "张伟" in X-Memlane-User is the user "张伟" of the
    body and the path). 422 for bytes that are not UTF-8."""
    if value is None or value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise ApiError(
            422,
            f"the {name} header is not UTF-8: send the id as UTF-8 bytes, or in the request body "
            '("user" of a chat request) or the URL path, percent-encoded',
            "invalid_header",
        ) from None


def _session_header(value: str | None) -> str:
    session_id = (value or "").strip() or DEFAULT_SESSION
    if len(session_id) > SESSION_ID_MAX_CHARS or any(ord(c) < 32 for c in session_id):
        raise ApiError(422, f"a session id ({SESSION_HEADER}) must be at most {SESSION_ID_MAX_CHARS} printable characters", "invalid_session_id")
    return session_id


# --- the app ---------------------------------------------------------------------------------
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
        if settings.serve_config is None:
            raise ServeConfigError("no configuration file: set MEMLANE_SERVE_CONFIG (see serve.example.toml)")
        config = load_serve_config(settings.serve_config)
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
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StoreError, _store_error)
    app.add_exception_handler(UpstreamFailed, _upstream_error)
    app.add_exception_handler(Exception, _unexpected_error)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.serve_max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)  # outermost: counts the 413s too
    _add_health_routes(app, service)
    _add_chat_routes(app, service)
    _add_memory_routes(app, service)
    if mcp_endpoint is not None:
        app.router.routes.append(mcp_endpoint.route)
    return app


def _mcp_endpoint(service: ServeService) -> Any:
    """memlane's MCP server (ui/mcp.py) at /mcp: it checks the same bearer keys itself (read / write
    scopes per tool, the user from the X-Memlane-User header)."""
    from memlane.ui.mcp import serve_mcp_endpoint

    return serve_mcp_endpoint(service, path="/mcp")


def _add_health_routes(app: FastAPI, service: ServeService) -> None:
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        """Redis answers and the memory index exists (503 with the reason otherwise)."""
        try:
            await bounded(service.require_store().check_ready(), READY_TIMEOUT_SECONDS, "the readiness check")
        except StoreError as error:
            return JSONResponse({"status": "unavailable", "reason": mask_secrets(str(error), service.settings)}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", tags=["health"])
    async def metrics() -> Response:
        """Prometheus metrics."""
        return Response(service.metrics.render(), media_type=service.metrics.content_type)


def _add_chat_routes(app: FastAPI, service: ServeService) -> None:
    @app.get("/v1/models", tags=["chat"])
    async def list_models(key: ApiKey = Depends(authorized("chat"))) -> dict[str, Any]:
        """The personas this key may use, as OpenAI models."""
        return {
            "object": "list",
            "data": [
                {"id": persona_id, "object": "model", "created": 0, "owned_by": "memlane", "description": persona.description}
                for persona_id, persona in service.config.personas.items()
                if key.may_use(persona_id)
            ],
        }

    @app.post("/v1/chat/completions", tags=["chat"])
    async def chat_completions(
        body: ChatCompletionRequest,
        key: ApiKey = Depends(authorized("chat")),
        user_header: str | None = Header(default=None, alias=USER_HEADER),
        session_header: str | None = Header(default=None, alias=SESSION_HEADER),
        idempotency_header: str | None = Header(default=None, alias=IDEMPOTENCY_HEADER),
    ) -> Any:
        """A chat completion with the user's memories recalled into the system prompt; the turn is
        saved after the reply completes (streamed or not). With an Idempotency-Key header, retries
        of the request are saved once (ui/serve_chat.py says what a request saves)."""
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
        identity = MemoryAgentContext(
            user_id=tenant_user(key, user_id),
            session_id=_session_header(header_text(session_header, SESSION_HEADER)),
            recall_enabled=settings.recall_enabled if toggles is None or toggles.enabled is None else toggles.enabled,
            auto_save_enabled=settings.auto_save_enabled if toggles is None or toggles.auto_save is None else toggles.auto_save,
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
        breaker = service.scheduler.context.model_breaker if service.scheduler is not None else None
        await recall_for(turn, service.require_store(), service.persistence, service.metrics, service.memory_model, breaker)
        headers = {"X-Memlane-Recalled-Tokens": str(turn.recalled.tokens if turn.recalled else 0)}
        try:
            if body.stream:
                response = await open_stream(service.upstream, turn)
            else:
                completion, reply = await complete(service.upstream, turn)
        except UpstreamFailed:
            service.metrics.upstream_errors.labels(body.model).inc()
            raise
        if body.stream:
            return RelayedStream(
                response, turn, service.persistence, service.metrics, started,
                headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        save(turn, reply, service.persistence)
        return JSONResponse(completion, headers=headers)


def _add_memory_routes(app: FastAPI, service: ServeService) -> None:
    read = Depends(authorized("read"))
    write = Depends(authorized("write"))
    users = "/v1/users/{user_id}"

    @app.post(users + "/search", tags=["memories"])
    async def search(user_id: str, body: SearchRequest, key: ApiKey = read) -> dict[str, Any]:
        """Hybrid search over the user's memories (profile, events, notes, messages), best first."""
        hits = await watched(
            service.require_store().search_memories(
                tenant_user(key, user_id),
                body.query,
                kinds=body.kinds or list(MEMORY_KINDS),
                session_id=body.session_id,
                since=body.since,
                until=body.until,
                limit=body.limit,
            ),
            service.require_store(),
        )
        return {"object": "list", "data": [SearchHitOut.of(hit).model_dump() for hit in hits]}

    @app.get(users + "/profile", tags=["memories"])
    async def list_profile(user_id: str, key: ApiKey = read) -> dict[str, Any]:
        """The user's profile entries, by topic and subtopic."""
        entries = await service.require_store().get_profile(tenant_user(key, user_id))
        return {"object": "list", "data": [ProfileEntryOut.of(entry).model_dump() for entry in entries]}

    async def find_entry(store_user: str, entry_id: str) -> ProfileEntry:
        entry = next((e for e in await service.require_store().get_profile(store_user) if e.id == entry_id), None)
        if entry is None:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return entry

    @app.get(users + "/profile/{entry_id}", tags=["memories"])
    async def get_entry(user_id: str, entry_id: str, key: ApiKey = read) -> ProfileEntryOut:
        """One profile entry."""
        return ProfileEntryOut.of(await find_entry(tenant_user(key, user_id), entry_id))

    @app.post(users + "/profile", tags=["memories"], status_code=201)
    async def add_entry(user_id: str, body: ProfileEntryIn, key: ApiKey = write) -> ProfileEntryOut:
        """Add a profile entry (409 when its topic / subtopic slot is taken: PATCH that entry)."""
        store_user = tenant_user(key, user_id)
        store = service.require_store()
        entry_id = profile_entry_id(store_user, body.topic, body.subtopic)
        if any(e.id == entry_id for e in await store.get_profile(store_user)):
            raise ApiError(409, f"the user already has an entry {body.topic} / {body.subtopic} ({entry_id}); PATCH it", "entry_exists")
        await remember_fact(
            store, store_user, body.topic, body.subtopic, body.content, confidence=body.confidence, actor=key.actor
        )
        return ProfileEntryOut.of(await find_entry(store_user, entry_id))  # as stored (private data masked)

    @app.patch(users + "/profile/{entry_id}", tags=["memories"])
    async def edit_entry(user_id: str, entry_id: str, body: ProfileEntryEdit, key: ApiKey = write) -> ProfileEntryOut:
        """Change an entry's content and / or confidence; the change is kept in its history."""
        if body.content is None and body.confidence is None:
            raise ApiError(422, "send content, confidence or both", "nothing_to_change")
        try:
            edited = await service.require_store().edit_profile_entry(
                tenant_user(key, user_id), entry_id, content=body.content, confidence=body.confidence, actor=key.actor
            )
        except InvalidInput as error:
            raise ApiError(422, str(error), "invalid_edit") from None
        if edited is None:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return ProfileEntryOut.of(edited)

    @app.delete(users + "/profile/{entry_id}", tags=["memories"])
    async def delete_entry(user_id: str, entry_id: str, key: ApiKey = write) -> Deleted:
        """Delete a profile entry (its history keeps the deletion)."""
        if not await service.require_store().delete_profile_entry(tenant_user(key, user_id), entry_id, actor=key.actor):
            raise ApiError(404, f"the user has no profile entry {entry_id!r}", "entry_not_found")
        return Deleted(id=entry_id)

    @app.get(users + "/profile/{entry_id}/history", tags=["memories"])
    async def entry_history(user_id: str, entry_id: str, key: ApiKey = read) -> dict[str, Any]:
        """Every change of the entry, oldest first: who or what made it, before / after, when."""
        store_user = tenant_user(key, user_id)
        revisions = await service.require_store().profile_history(store_user, entry_id)
        if not revisions:
            raise ApiError(404, f"the user has no profile entry {entry_id!r}, now or before", "entry_not_found")
        return {"object": "list", "data": [_public(r.model_dump(mode="json"), store_user, user_id) for r in revisions]}

    @app.get(users + "/events", tags=["memories"])
    async def list_events(
        user_id: str,
        key: ApiKey = read,
        limit: int = Query(default=50, ge=1, le=1000),
        since: float | None = Query(default=None, allow_inf_nan=False),
        until: float | None = Query(default=None, allow_inf_nan=False),
    ) -> dict[str, Any]:
        """The user's event cards, newest first."""
        events = await service.require_store().list_events(tenant_user(key, user_id), limit=limit, since=since, until=until)
        return {"object": "list", "data": [EventOut.of(event).model_dump() for event in events]}

    @app.delete(users + "/events/{event_id}", tags=["memories"])
    async def delete_event(user_id: str, event_id: str, key: ApiKey = write) -> Deleted:
        """Delete an event card and its search memory."""
        if not await service.require_store().delete_event(tenant_user(key, user_id), event_id):
            raise ApiError(404, f"the user has no event {event_id!r}", "event_not_found")
        return Deleted(id=event_id)

    @app.post(users + "/memories", tags=["memories"], status_code=201)
    async def add_note(user_id: str, body: NoteIn, key: ApiKey = write) -> dict[str, Any]:
        """Remember a note about the user (an event card tagged "remembered", found by search and recall)."""
        memory = await remember_note(service.require_store(), tenant_user(key, user_id), body.text.strip(), session_id=body.session_id)
        return MemoryOut.of(memory).model_dump()

    @app.delete(users + "/memories/{memory_id}", tags=["memories"])
    async def delete_memory(user_id: str, memory_id: str, key: ApiKey = write) -> Deleted:
        """Delete one search memory by id; a profile or event memory takes its entry or card with it."""
        if not await forget_memory(service.require_store(), tenant_user(key, user_id), memory_id, actor=key.actor):
            raise ApiError(404, f"the user has no memory {memory_id!r}", "memory_not_found")
        return Deleted(id=memory_id)

    @app.delete(users + "/messages/{message_id}", tags=["memories"])
    async def delete_message(user_id: str, message_id: str, key: ApiKey = write) -> Deleted:
        """Drop one message from history and search, and what it states from the summaries."""
        if not await service.require_store().delete_message(tenant_user(key, user_id), message_id):
            raise ApiError(404, f"the user has no message {message_id!r}", "message_not_found")
        return Deleted(id=message_id)

    @app.post(users + "/forget", tags=["memories"])
    async def forget(user_id: str, body: ForgetIn, key: ApiKey = write) -> dict[str, Any]:
        """Forget what the user said about something, everywhere recall reads (profile, events,
        messages, summaries). Says what was removed."""
        store_user = tenant_user(key, user_id)
        report = await service.require_store().forget(store_user, body.query, actor=key.actor)
        return {**_public(report.model_dump(mode="json"), store_user, user_id), "description": report.describe()}

    def requested(user_id: str, session_id: str | None, queued: bool | None) -> RunRequested:
        if queued is None:
            raise ApiError(
                409,
                "memlane serve has no memory model, so turns are stored but nothing is remembered: "
                "add a [memory] section to the configuration file, or set MEMLANE_MEMORY_MODEL / OPENAI_BASE_URL",
                "no_memory_model",
            )
        return RunRequested(user_id=user_id, session_id=session_id, queued=queued)

    @app.post(users + "/remember-now", tags=["memories"], status_code=202)
    async def remember_now(user_id: str, key: ApiKey = write) -> RunRequested:
        """Remember the user's unprocessed messages now, without waiting for the token threshold,
        the session's end or the idle flush. The run is queued: poll the profile and events."""
        return requested(user_id, None, await service.remember_now(tenant_user(key, user_id)))

    @app.post(users + "/sessions/{session_id}/end", tags=["memories"], status_code=202)
    async def end_session(user_id: str, session_id: str, key: ApiKey = write) -> RunRequested:
        """The session (the X-Memlane-Session of its chats) ended: remember its messages now and fold
        its rolling summary."""
        session_id = _session_header(session_id)
        return requested(user_id, session_id, await service.end_session(tenant_user(key, user_id), session_id))

    @app.get(users + "/export", tags=["memories"])
    async def export_user(user_id: str, key: ApiKey = read) -> dict[str, Any]:
        """Everything stored about the user, as JSON."""
        store_user = tenant_user(key, user_id)
        exported = await service.require_store().export_user(store_user)
        return _public(exported.model_dump(mode="json"), store_user, user_id)

    @app.delete(users, tags=["memories"])
    async def delete_user(user_id: str, key: ApiKey = write) -> dict[str, Any]:
        """Delete everything of the user (after their pending saves)."""
        store_user = tenant_user(key, user_id)
        if service.persistence is not None:
            await service.persistence.wait_saved(store_user, timeout=10)
        if service.scheduler is not None:  # a run in progress would write the user back
            deadline = time.monotonic() + 30
            while await service.scheduler.user_busy(store_user):  # queued or running in any process
                if time.monotonic() > deadline:
                    raise ApiError(409, "a memory run of the user is still working; try again in a moment", "user_busy")
                await asyncio.sleep(0.1)
        removed = await service.require_store().delete_user(store_user)
        return {"id": user_id, "deleted": True, "keys_removed": removed}

