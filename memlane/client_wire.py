"""What a `memlane serve` client (memlane/client.py) reads off the wire: the service's address and
key, an id as a path segment, and the errors it raises, each saying what the service said
(`status`, `code`, `message`), by the answer's status; a write past a user's quota is `OverQuota`,
never retried."""

from __future__ import annotations

import os
from urllib.parse import quote

import httpx

from memlane.store.errors import InvalidInput

QUOTA_CODE = "quota_exceeded"  # the error code of a write past a user's quota (429 or 413): not retried


class MemlaneError(Exception):
    """An answer of `memlane serve` that is not a success: its status, its error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class AuthenticationError(MemlaneError):
    """401: no key, or a key the service does not know."""


class PermissionDenied(MemlaneError):
    """403: the key may not do this (its scopes, its personas)."""


class NotFound(MemlaneError):
    """404: no such entry, event, memory or message for this user."""


class Conflict(MemlaneError):
    """409: the profile slot is taken (`put_profile` replaces it), or an Idempotency-Key was reused."""


class InvalidRequest(MemlaneError):
    """400, 413 or 422: what was sent is refused; the message names the field."""


class RateLimited(MemlaneError):
    """429 after every retry."""


class OverQuota(MemlaneError):
    """429 or 413 with code `quota_exceeded`: the write would take the user past a quota of the
    service (MEMLANE_RETENTION_MAX_*); nothing of it was stored. Not retried: it is not a "try again"."""


class ServiceUnavailable(MemlaneError):
    """5xx after every retry, or the service could not be reached."""


_ERRORS: dict[int, type[MemlaneError]] = {
    400: InvalidRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
}


def error_of(response: httpx.Response) -> MemlaneError:
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    kind = _ERRORS.get(response.status_code, ServiceUnavailable if response.status_code >= 500 else MemlaneError)
    if error.get("code") == QUOTA_CODE:
        kind = OverQuota
    return kind(
        response.status_code, str(error.get("code") or "error"), str(error.get("message") or response.text[:500])
    )


def over_quota(response: httpx.Response) -> bool:
    """A 429 that says a quota is full, not "slow down": retrying cannot help."""
    try:
        return (response.json().get("error") or {}).get("code") == QUOTA_CODE
    except (ValueError, AttributeError):
        return False


DEFAULT_URL = "http://127.0.0.1:8080"  # `memlane serve`'s own default address


def service_address(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """(the service's URL, the key): as given, else MEMLANE_URL (else `DEFAULT_URL`) and MEMLANE_KEY."""
    api_key = api_key or os.environ.get("MEMLANE_KEY")
    if not api_key:
        raise InvalidInput(
            "give the client a key of memlane serve (api_key=..., or MEMLANE_KEY); "
            "`memlane serve hash-key` makes one and the hash the service's configuration holds"
        )
    return base_url or os.environ.get("MEMLANE_URL") or DEFAULT_URL, api_key


def path_segment(part: str) -> str:
    """An id as one path segment (ids may hold "/", "?", "#", spaces)."""
    return quote(part, safe="")
