"""The errors of `memlane serve`: JSON answers in OpenAI's shape, the request body limit, and the
time bounds that make a frozen Redis a 503 (with Retry-After) rather than a 30 s wait: the
readiness check's (`bounded`), and every memories route's (`StoreDeadlineMiddleware`).

Every error is `{"error": {"message", "type", "code"}}`: a sentence saying what to do and a short code.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.responses import Response

from memlane import QuotaExceeded, StoreError
from memlane.deadlines import RedisSilent, within_budget
from memlane.masking import mask_secrets
from memlane.serve.chat import UpstreamFailed
from memlane.serve.service import ServeService, service_of
from memlane.store.errors import InputTooLarge, InvalidInput

logger = logging.getLogger(__name__)

# a frozen Redis must not hold a health check, nor a memories route, for the socket timeout's 30 s
READY_TIMEOUT_SECONDS = 2.0
# when a client may try again after a 503 of the store (memlane's own client honours it)
RETRY_AFTER_SECONDS = 2
# the routes a silent Redis answers 503 within READY_TIMEOUT_SECONDS: the memories API (its mem0
# spelling too). Not the chat, which answers without memory within its recall budget, nor MCP
_STORE_ROUTES = ("/v1/users/", "/v1/shared/")


class ApiError(HTTPException):
    """An answer other than success: the status, a sentence saying what to do, and a short code."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)
        self.code = code


_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


def error_response(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": code}}, status_code=status, headers=headers
    )


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
    return store_unavailable(error, service_of(request).settings.parts().values())


def store_unavailable(error: StoreError, secrets: Iterable[Any]) -> JSONResponse:
    """503 for a store that cannot answer now, the error's sentence (secrets masked) and Retry-After."""
    return error_response(
        503,
        f"the memory store is unavailable: {mask_secrets(str(error), secrets)}",
        "store_unavailable",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


async def _quota_exceeded(request: Request, error: QuotaExceeded) -> JSONResponse:
    # a write past one of the user's quotas: refused whole, nothing stored changed; the message
    # names the quota and its setting. Too many records is 429, too many bytes 413
    status = 413 if error.quota == "bytes" else 429
    return error_response(status, f"over the user's {error.quota} quota: {error}", "quota_exceeded")


async def _invalid_input(request: Request, error: InvalidInput) -> JSONResponse:
    # the store refused an id or a record (a NUL byte in a path id, an id past MEMLANE_MAX_ID_CHARS):
    # its message names the id and what to change; nothing was read or written
    code = "input_too_large" if isinstance(error, InputTooLarge) else "invalid_input"
    return error_response(422, f"the request is not valid: {error}", code)


async def _upstream_error(request: Request, error: UpstreamFailed) -> JSONResponse:
    return error_response(502, str(error), "upstream_error")


def _internal_error(error: BaseException) -> JSONResponse:
    return error_response(
        500,
        f"memlane failed on this request ({type(error).__name__}); the server log has the details",
        "internal_error",
    )


async def _unexpected_error(request: Request, error: Exception) -> JSONResponse:
    # reached only for what UnexpectedErrorMiddleware lets through (it answers a bug itself)
    return _internal_error(error)


class AnswerWatch:
    """An ASGI `send` that notes whether the answer has begun: a middleware can still answer an
    error before that, not after."""

    def __init__(self, send: Any) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        self.started |= message["type"] == "http.response.start"
        await self.send(message)


class UnexpectedErrorMiddleware:
    """Answers a bug with a 500 in JSON and keeps the connection. Starlette's own last handler
    answers too, then raises again, and uvicorn closes a connection whose app raised: the client's
    next request on it failed with ECONNRESET. A failure after the answer began (a stream cut
    mid-way) still goes up: that connection cannot carry a clean answer any more."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        watched_send = AnswerWatch(send)
        try:
            await self.app(scope, receive, watched_send)
        except Exception as error:
            if watched_send.started or isinstance(
                error, HTTPException
            ):  # (an HTTP error from a mounted app: the outer handlers answer it)
                raise
            logger.exception("%s %s failed", scope.get("method", ""), scope.get("path", ""))
            await _internal_error(error)(scope, receive, send)


async def bounded(call: Awaitable[Any], seconds: float, what: str) -> Any:
    """`await call`, or StoreError (a 503) when Redis has not answered within `seconds`: a frozen
    Redis holds a connection for the socket timeout (30 s), longer than a health check waits."""
    try:
        return await asyncio.wait_for(call, seconds)
    except TimeoutError:
        raise StoreError(
            f"Redis did not answer {what} within {seconds:g} s; it is overloaded, stopped or unreachable"
        ) from None


class StoreDeadlineMiddleware:
    """Every memories route answers within READY_TIMEOUT_SECONDS while Redis is silent: a request
    that outlives it while Redis answers nothing (memlane/deadlines.py) is ended and answered 503
    with Retry-After. A search used to answer after 4.1 s (its wait, then a probe's), a note and
    an export waited out the whole freeze. A slow request Redis keeps answering around (a large
    export, a forget the memory model confirms) is not cut."""

    def __init__(self, app: Any, service: ServeService, seconds: float = READY_TIMEOUT_SECONDS) -> None:
        self.app = app
        self.service = service
        self.seconds = seconds

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        store = self.service.store
        if scope["type"] != "http" or store is None or not scope["path"].startswith(_STORE_ROUTES):
            await self.app(scope, receive, send)
            return
        watched_send = AnswerWatch(send)
        try:
            await within_budget(self.app(scope, receive, watched_send), store, self.seconds, what="the request")
        except RedisSilent as error:
            if watched_send.started:  # the answer began (it cannot become a 503 now)
                raise
            logger.warning("%s %s: %s", scope.get("method", ""), scope["path"], error)
            await store_unavailable(error, self.service.settings.parts().values())(scope, receive, send)


class BodyTooLarge(ApiError):
    def __init__(self, limit: int, setting: str = "MEMLANE_SERVE_MAX_BODY_BYTES", advice: str = "") -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes ({setting}){advice}", "request_too_large")


IMPORT_PATH = re.compile(r"/v1/users/[^/]+/messages")  # an import: its own, larger cap


class BodyLimitMiddleware:
    """Answers 413 to a body over `max_bytes` (`import_max_bytes` for an import, `POST
    /v1/users/{user_id}/messages`): by its Content-Length before reading, or while it streams in
    (chunked uploads say no length). Pure ASGI, so responses stream through."""

    def __init__(self, app: Any, max_bytes: int, import_max_bytes: int | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.import_max_bytes = import_max_bytes

    def _limit(self, scope: dict[str, Any]) -> tuple[int, BodyTooLarge]:
        """This request's limit, and its refusal of a body past it."""
        if (
            self.import_max_bytes is not None
            and scope.get("method") == "POST"
            and IMPORT_PATH.fullmatch(scope.get("path", ""))
        ):
            return self.import_max_bytes, BodyTooLarge(
                self.import_max_bytes,
                "MEMLANE_IMPORT_MAX_BYTES",
                "; send the import in parts (a message already stored is skipped) or raise the setting",
            )
        return self.max_bytes, BodyTooLarge(self.max_bytes)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, refusal = self._limit(scope)
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await error_response(413, str(refusal.detail), "request_too_large")(scope, receive, send)
                return
        received = 0
        watched_send = AnswerWatch(send)

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise refusal
            return message

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge as error:  # raised where no handler caught it (a mounted app)
            if not watched_send.started:
                await error_response(413, error.detail, "request_too_large")(scope, receive, send)


def add_error_handlers(app: FastAPI) -> None:
    """Every failure the app can meet answers JSON: HTTP errors, invalid requests, the store, the upstream, a bug."""
    handlers: list[tuple[type[Exception], Callable[[Request, Any], Awaitable[Response]]]] = [
        (HTTPException, _http_error),
        (RequestValidationError, _validation_error),
        (StoreError, _store_error),
        (QuotaExceeded, _quota_exceeded),  # a StoreError: Starlette answers the most specific handler
        (InvalidInput, _invalid_input),
        (UpstreamFailed, _upstream_error),
        (Exception, _unexpected_error),
    ]
    for error_type, handler in handlers:
        app.add_exception_handler(error_type, handler)
