"""Who a `memlane serve` request acts for: the bearer key (stored hashed in the configuration
file), its scopes, and the tenant user and session the request names.

Each key belongs to one tenant and a (tenant, user) pair is one store user (`store_user_id`), so
no id a caller sends can reach another tenant's data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Header, Request

from memlane.persistence import DEFAULT_SESSION
from memlane.serve.config import ApiKey, Scope, ServeConfig, store_user_id
from memlane.serve.errors import ApiError
from memlane.serve.service import service_of

USER_HEADER = "X-Memlane-User"
SESSION_HEADER = "X-Memlane-Session"
SESSION_ID_MAX_CHARS = 256


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
        raise ApiError(
            403, f"the API key {key.name!r} may not {scope} (its scopes: {', '.join(key.scopes)})", "insufficient_scope"
        )
    return key


def tenant_user(key: ApiKey, user_id: str) -> str:
    """The store user id of `user_id` in the key's tenant; 422 for an id the API does not accept."""
    try:
        return store_user_id(key.tenant, user_id)
    except ValueError as error:
        raise ApiError(422, f"user id: {error}", "invalid_user_id") from None


def authorized(scope: Scope) -> Callable[..., Awaitable[ApiKey]]:
    """A dependency: the request's key, which must have `scope`."""

    async def dependency(request: Request, authorization: str | None = Header(default=None)) -> ApiKey:
        return require_scope(bearer_key(service_of(request).config, authorization), scope)

    return dependency


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


def valid_session_id(value: str | None) -> str:
    """The session id a request names (the default session when none); 422 for one too long or unprintable."""
    session_id = (value or "").strip() or DEFAULT_SESSION
    if len(session_id) > SESSION_ID_MAX_CHARS or any(ord(c) < 32 for c in session_id):
        raise ApiError(
            422,
            f"a session id ({SESSION_HEADER}) must be at most {SESSION_ID_MAX_CHARS} printable characters",
            "invalid_session_id",
        )
    return session_id


AGENT_ID_MAX_CHARS = 128


def valid_agent_id(agent_id: str | None) -> str | None:
    """The agent a request names (None: the user's own memory); 422 for one the API does not take."""
    if agent_id is None:
        return None
    if (
        not agent_id
        or len(agent_id) > AGENT_ID_MAX_CHARS
        or any(ord(char) < 32 or ord(char) == 127 for char in agent_id)
    ):
        raise ApiError(422, f"an agent id must be 1 to {AGENT_ID_MAX_CHARS} printable characters", "invalid_agent_id")
    return agent_id
