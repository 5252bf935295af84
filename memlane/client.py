"""A Python client for `memlane serve`: the memories API by name, sync and async, and chat through
the `openai` client.

    from memlane.client import MemlaneClient
    memory = MemlaneClient("http://127.0.0.1:8080", api_key="ml-...")
    memory.add([{"role": "user", "content": "I moved to Lyon"}], user_id="alice", remember=True)
    hits = memory.search("where does she live?", user_id="alice")
    chat = memory.openai()            # openai.OpenAI on the service's /v1: streaming chat with memory

`AsyncMemlaneClient` has the same methods, awaited. Every call names its user; the key decides the
tenant. A write is sent with an `Idempotency-Key` that its retries reuse, and a call is retried
(with backoff, `Retry-After` honoured) when the service or the network says "try again": a
connection that failed, 429, 502, 503, 504 (a 429 for a full quota is not: `OverQuota`). Other
answers raise a `MemlaneError` subclass that says what the service said (`status`, `code`, `message`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from memlane.sync_twin import SyncTwin

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
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


def _error(response: httpx.Response) -> MemlaneError:
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


def _over_quota(response: httpx.Response) -> bool:
    """A 429 that says a quota is full, not "slow down": retrying cannot help."""
    try:
        return (response.json().get("error") or {}).get("code") == QUOTA_CODE
    except (ValueError, AttributeError):
        return False


def _path(part: str) -> str:
    """An id as one path segment (ids may hold "/", "?", "#", spaces)."""
    return quote(part, safe="")


class AsyncMemlaneClient:
    """The memories API of a `memlane serve` at `base_url`, for the key `api_key`; use as `async with`
    or call `aclose()`. agent_id: every call acts on that agent's own memory of the user (the
    routes' `?agent_id=`; a persona's memory is under its id)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        agent_id: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.agent_id = agent_id
        self.api_key = api_key
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "memlane-client"},
        )

    async def __aenter__(self) -> AsyncMemlaneClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # the memories, by the names mem0 and Agent Memory Server users reach for ----------------------
    async def add(
        self,
        messages: str | Sequence[dict[str, Any]],
        *,
        user_id: str,
        session_id: str = "import",
        remember: bool = False,
    ) -> dict[str, Any]:
        """Store messages (a text is one user message); ids make a repeated add store nothing new.
        `remember=True` queues a memory run over them now. Answers {"received", "stored", "queued"}."""
        listed = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        body: dict[str, Any] = {"messages": listed, "session_id": session_id}
        if remember:
            body["remember"] = "now"
        return await self._object("POST", self._user(user_id, "/messages"), json=body)

    async def note(self, text: str, *, user_id: str, session_id: str = "api") -> dict[str, Any]:
        """Keep a note about the user (an event card and its search memory). A note the user has already
        (the same text, or a near duplicate) is not stored again: the answer is the stored one, with
        `repeat_of` naming it."""
        return await self._object(
            "POST", self._user(user_id, "/memories"), json={"text": text, "session_id": session_id}
        )

    async def search(
        self,
        query: str,
        *,
        user_id: str,
        limit: int = 10,
        kinds: Iterable[str] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[dict[str, Any]]:
        """Hybrid search over the user's memories, best first: each hit {"memory", "score"}."""
        body: dict[str, Any] = {"query": query, "limit": limit}
        for name, value in (
            ("kinds", list(kinds) if kinds is not None else None),
            ("session_id", session_id),
            ("since", since),
            ("until", until),
        ):
            if value is not None:
                body[name] = value
        return await self._data("POST", self._user(user_id, "/search"), json=body)

    async def get_all(self, *, user_id: str, events_limit: int = 1000) -> dict[str, list[dict[str, Any]]]:
        """The user's profile entries and event cards (newest first): {"profile": [...], "events": [...]}."""
        profile = await self._object("GET", self._user(user_id, "/profile"))
        events = await self._object("GET", self._user(user_id, "/events"), params={"limit": events_limit})
        return {"profile": profile["data"], "events": events["data"]}

    async def get(self, entry_id: str, *, user_id: str) -> dict[str, Any]:
        """One profile entry, with what it held before."""
        return await self._object("GET", self._user(user_id, f"/profile/{_path(entry_id)}"))

    async def put_profile(
        self,
        topic: str,
        subtopic: str,
        content: str,
        *,
        user_id: str,
        confidence: float = 0.9,
        source_message_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write the user's one entry of this topic / subtopic (created or replaced)."""
        body: dict[str, Any] = {"content": content, "confidence": confidence}
        if source_message_id is not None:
            body["source_message_id"] = source_message_id
        if meta is not None:
            body["meta"] = meta
        return await self._object("PUT", self._user(user_id, f"/profile/{_path(topic)}/{_path(subtopic)}"), json=body)

    async def add_profile(
        self,
        topic: str,
        subtopic: str,
        content: str,
        *,
        user_id: str,
        confidence: float = 0.9,
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Add the user's entry of this topic / subtopic; `Conflict` when the slot is taken (`put_profile`
        replaces it)."""
        body: dict[str, Any] = {"topic": topic, "subtopic": subtopic, "content": content, "confidence": confidence}
        if meta is not None:
            body["meta"] = meta
        return await self._object("POST", self._user(user_id, "/profile"), json=body)

    async def update(
        self, entry_id: str, *, user_id: str, content: str | None = None, confidence: float | None = None
    ) -> dict[str, Any]:
        """Change a profile entry's content and / or confidence (kept in its history)."""
        body = {name: value for name, value in (("content", content), ("confidence", confidence)) if value is not None}
        return await self._object("PATCH", self._user(user_id, f"/profile/{_path(entry_id)}"), json=body)

    async def history(self, entry_id: str, *, user_id: str) -> list[dict[str, Any]]:
        """Every change of a profile entry, oldest first: who made it, before and after, when."""
        return await self._data("GET", self._user(user_id, f"/profile/{_path(entry_id)}/history"))

    async def delete(self, memory_id: str, *, user_id: str) -> bool:
        """Delete any memory by its id (a profile entry's, an event's, a note's, a message's); False
        when the user has none of that id."""
        try:
            await self._call("DELETE", self._user(user_id, f"/memories/{_path(memory_id)}"))
        except NotFound:
            return False
        return True

    async def forget(self, what: str, *, user_id: str, dry_run: bool = False) -> dict[str, Any]:
        """Forget what the user said about something, everywhere recall reads (`dry_run`: what would go)."""
        return await self._object("POST", self._user(user_id, "/forget"), json={"query": what, "dry_run": dry_run})

    async def recall(self, message: str, *, user_id: str, session_id: str | None = None) -> dict[str, Any]:
        """The memory block for `message`, for a client that calls its own model: {"text", "items", ...}."""
        body: dict[str, Any] = {"message": message}
        if session_id is not None:
            body["session_id"] = session_id
        return await self._object("POST", self._user(user_id, "/recall"), json=body)

    async def remember_now(self, *, user_id: str) -> dict[str, Any]:
        """Queue a memory run over what the user said and was not remembered yet."""
        return await self._object("POST", self._user(user_id, "/remember-now"))

    async def end_session(self, session_id: str, *, user_id: str) -> dict[str, Any]:
        """The session is over: its turns are remembered now."""
        return await self._object("POST", self._user(user_id, f"/sessions/{_path(session_id)}/end"))

    async def export(self, *, user_id: str) -> dict[str, Any]:
        """Everything the service holds of the user, as JSON."""
        return await self._object("GET", self._user(user_id, "/export"))

    async def reset(self, *, user_id: str) -> dict[str, Any]:
        """Delete everything of the user."""
        return await self._object("DELETE", self._user(user_id, ""))

    def openai(self, **options: Any) -> Any:
        """An `openai.AsyncOpenAI` on the service's OpenAI-compatible chat (`model` is a persona,
        `user` the memlane user): streaming chat with memory, recalled and saved by the service."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(base_url=self.base_url + "/v1", api_key=self.api_key, **options)

    # one call, retried while the answer says "try again" ----------------------------------------
    def _user(self, user_id: str, tail: str) -> str:
        return f"/v1/users/{_path(user_id)}{tail}"

    async def _object(self, method: str, path: str, **request: Any) -> dict[str, Any]:
        """The service's answer, a JSON object."""
        answer: dict[str, Any] = await self._call(method, path, **request)
        return answer

    async def _data(self, method: str, path: str, **request: Any) -> list[dict[str, Any]]:
        """The `data` list of the service's answer to a listing."""
        data: list[dict[str, Any]] = (await self._object(method, path, **request))["data"]
        return data

    async def _call(self, method: str, path: str, **request: Any) -> Any:
        """The service's answer as JSON (None when it has no body), retried while it says "try again"."""
        headers = {"Idempotency-Key": uuid.uuid4().hex} if method != "GET" else {}
        if self.agent_id is not None and path.startswith("/v1/users/"):
            request["params"] = {**request.get("params", {}), "agent_id": self.agent_id}
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = await self._http.request(method, path, headers=headers, **request)
            except httpx.TransportError as error:
                if last:
                    raise ServiceUnavailable(0, "unreachable", f"{self.base_url} did not answer: {error}") from error
                await asyncio.sleep(self._delay(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last and not _over_quota(response):
                await asyncio.sleep(self._delay(attempt, response.headers.get("Retry-After")))
                continue
            if response.status_code >= 400:
                raise _error(response)
            return response.json() if response.content else None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        try:
            asked = float(retry_after) if retry_after is not None else 0.0
        except ValueError:
            asked = 0.0
        return max(asked, self.backoff_seconds * 2.0**attempt)


class MemlaneClient(SyncTwin):
    """`AsyncMemlaneClient`, called without `await` (memlane/sync_twin.py): its own event loop in a
    thread of its own, so it works inside a running loop (a notebook) too. Close it (or use `with`)."""

    twin_of = AsyncMemlaneClient

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        self._start(lambda: self._made(base_url, api_key, options), "memlane-client")
        self.base_url, self.api_key = self._async.base_url, api_key

    @staticmethod
    async def _made(base_url: str, api_key: str, options: dict[str, Any]) -> AsyncMemlaneClient:
        return AsyncMemlaneClient(base_url, api_key, **options)

    def openai(self, **options: Any) -> Any:
        """An `openai.OpenAI` on the service's OpenAI-compatible chat (streaming chat with memory)."""
        from openai import OpenAI

        return OpenAI(base_url=self.base_url + "/v1", api_key=self.api_key, **options)


MemoryClient = MemlaneClient  # mem0's name for its client: `from memlane import MemoryClient`

__all__ = [
    "AsyncMemlaneClient",
    "AuthenticationError",
    "Conflict",
    "InvalidRequest",
    "MemlaneClient",
    "MemlaneError",
    "MemoryClient",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "ServiceUnavailable",
]
