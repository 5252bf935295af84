"""A Python client for `memlane serve`: mem0's calls over its memories API, sync and async, and chat
through the `openai` client.

    from memlane import MemoryClient   # mem0's name; MemlaneClient is the same class
    client = MemoryClient("http://127.0.0.1:8080", api_key="ml-...")
    client.add([{"role": "user", "content": "I moved to Lyon"}], user_id="alice")   # {"results": [... "event": "ADD"]}
    client.search("where does she live?", filters={"user_id": "alice"})           # {"results": [...]}
    chat = client.openai()            # openai.OpenAI on the service's /v1: streaming chat with memory

The parameters and answers are the in-process facade's (memlane/memory.py; what differs from mem0
on purpose: docs/coming-from.md). `AsyncMemlaneClient` has the same methods, awaited. Every call
names its user (or finds it among those the client called for); the key decides the tenant. A
write is sent with an `Idempotency-Key` that its retries reuse, and a call is retried (with
backoff, `Retry-After` honoured) when the service or the network says "try again": a connection
that failed, 429, 502, 503, 504 (a 429 for a full quota is not: `OverQuota`). Other answers raise
a `MemlaneError` subclass that says what the service said (`status`, `code`, `message`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from memlane.client_wire import (  # noqa: F401  (the client's errors, importable from here as before)
    AuthenticationError,
    Conflict,
    InvalidRequest,
    MemlaneError,
    NotFound,
    OverQuota,
    PermissionDenied,
    RateLimited,
    ServiceUnavailable,
    error_of,
    over_quota,
    service_address,
)
from memlane.client_wire import (
    path_segment as _path,
)
from memlane.memory_shapes import answer_count, call_scope, metadata_holds, refuse_options, require_user
from memlane.store.errors import InvalidInput
from memlane.sync_twin import SyncTwin

RETRIED_STATUSES = frozenset({429, 502, 503, 504})


class AsyncMemlaneClient:
    """The memories API of a `memlane serve` at `base_url`, for the key `api_key`; use as `async with`
    or call `aclose()`. agent_id: every call acts on that agent's own memory of the user (the
    routes' `?agent_id=`; a persona's memory is under its id)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        host: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        agent_id: str | None = None,
        add_timeout: float = 300.0,
    ) -> None:
        """base_url (or `host`, mem0's name): the service, else MEMLANE_URL, else http://127.0.0.1:8080;
        api_key: a key of the service, else MEMLANE_KEY. add_timeout: how long an `add` that waits for
        its memory run (a model's calls) may take."""
        base_url, api_key = service_address(base_url or host, api_key)
        self.base_url = base_url.rstrip("/")
        self.add_timeout = add_timeout
        self.agent_id = agent_id
        self._users: dict[tuple[str, str | None], None] = {}  # (user, agent) this client acted for, the latest last
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

    # mem0's calls, with mem0's answers (serve/memories_mem0.py) --------------------------------------
    async def add(
        self,
        messages: str | dict[str, Any] | Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        wait: bool = True,
        session_id: str | None = None,
        **mem0_options: Any,
    ) -> dict[str, Any]:
        """Store the messages (a text is one user message; ids make a repeated add store nothing new)
        and learn from them: {"results": [{"id", "memory", "event": ADD|UPDATE|DELETE}], "stored",
        "event_id"} once the memory run ends. wait=False: at once, with a `memory_run_id` for
        `add_run`; infer=False: stored only, each message a result (ADD, or NONE when held already).
        run_id (or session_id): the session; agent_id: the agent's own memory of the user."""
        refuse_options("add", mem0_options)
        scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id or session_id)
        user, agent = self._seen(require_user(scope, "add"), scope["agent_id"])
        listed: Any = messages if isinstance(messages, (str, dict)) else list(messages)
        body: dict[str, Any] = {"messages": listed, "infer": infer, "wait": wait}
        if scope["run_id"] is not None:
            body["run_id"] = scope["run_id"]
        if metadata is not None:
            body["metadata"] = metadata
        return await self._object(
            "POST",
            self._user(user, "/add"),
            json=body,
            params=self._agent(agent),
            timeout=self.add_timeout if infer and wait else httpx.USE_CLIENT_DEFAULT,
        )

    async def add_run(
        self,
        memory_run_id: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        wait: bool = False,
        poll_seconds: float = 0.2,
        timeout_seconds: float = 600.0,
    ) -> dict[str, Any]:
        """How an `add(wait=False)` stands: {"status": "running"}, or "done" with its results, or
        "failed" with the error; `wait=True` polls until it ends (the answer says "running" still
        after `timeout_seconds`)."""
        path = self._user(user_id, f"/add-runs/{_path(memory_run_id)}")
        deadline = time.monotonic() + timeout_seconds
        answer = await self._object("GET", path, params=self._agent(agent_id))
        while wait and answer["status"] == "running" and time.monotonic() < deadline:
            await asyncio.sleep(poll_seconds)
            answer = await self._object("GET", path, params=self._agent(agent_id))
        return answer

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        threshold: float | None = None,
        kinds: Iterable[str] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Hybrid search over the user's memories, best first: {"results": [{"id", "memory", "score",
        ...}]}. The user from `user_id=` or `filters={"user_id": ...}`; the rest of `filters` is on
        metadata (mem0's operators, over the service's declared fields); `threshold` drops results
        below that relevance."""
        scope, metadata_filter = call_scope(
            user_id=user_id, agent_id=agent_id, run_id=run_id or session_id, filters=filters
        )
        user, agent = self._seen(require_user(scope, "search"), scope["agent_id"])
        body: dict[str, Any] = {"query": query, "top_k": answer_count(limit, top_k, 20)}
        for name, value in (
            ("filters", metadata_filter),
            ("threshold", threshold),
            ("run_id", scope["run_id"]),
            ("kinds", list(kinds) if kinds is not None else None),
        ):
            if value is not None:
                body[name] = value
        return await self._object("POST", self._user(user, "/memories/search"), json=body, params=self._agent(agent))

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        offset: int = 0,
    ) -> dict[str, Any]:
        """The user's memories, most recently changed first, a page at a time: profile entries, event
        cards and the turns not remembered yet: {"results": [...], "next_offset"}."""
        scope, metadata_filter = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters)
        user, agent = self._seen(require_user(scope, "get_all"), scope["agent_id"])
        params = {**self._agent(agent), "limit": answer_count(limit, top_k, 100), "offset": offset}
        if scope["run_id"] is not None:
            params["run_id"] = scope["run_id"]
        answer = await self._object("GET", self._user(user, "/memories"), params=params)
        if metadata_filter:
            answer["results"] = [
                m for m in answer["results"] if metadata_holds(m.get("metadata") or {}, metadata_filter)
            ]
        return answer

    async def get(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any] | None:
        """One memory by id (`profile:…`, `event:…`, `message:…`), or None."""
        owner = await self._owner(memory_id, user_id, agent_id)
        if owner is None:
            return None
        try:
            return await self._object("GET", self._memory(owner[0], memory_id), params=self._agent(owner[1]))
        except NotFound:
            return None

    async def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        text: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Give a profile entry new content, or an event card (a note, a memory run's card) new text,
        the change kept in its history: {"message", "id", "memory"}."""
        if metadata is not None:
            raise InvalidInput("update changes a memory's text; its metadata stays as it was added")
        new_text = text if text is not None else data
        if new_text is None:
            raise InvalidInput("update needs the new text: update(memory_id, data)")
        user, agent = await self._required_owner(memory_id, user_id, agent_id)
        return await self._object(
            "PATCH", self._memory(user, memory_id), json={"text": new_text}, params=self._agent(agent)
        )

    async def history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """How the memory came to be, oldest first (`event` ADD / UPDATE / DELETE, `old_memory`,
        `new_memory`): a profile entry's, a note's or a card's changes, a turn's making."""
        owner = await self._owner(memory_id, user_id, agent_id)
        if owner is None:
            return []
        return await self._data("GET", self._memory(owner[0], memory_id) + "/history", params=self._agent(owner[1]))

    async def delete(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any]:
        """Delete any memory by its id (a profile entry's, an event's, a note's, a message's); what it
        stated goes from the turns and summaries too. `NotFound` when the user has none of that id."""
        user, agent = await self._required_owner(memory_id, user_id, agent_id)
        await self._call("DELETE", self._memory(user, memory_id), params=self._agent(agent))
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Delete everything of the user (with `agent_id`: that agent's memory of the user only)."""
        if run_id is not None:
            raise InvalidInput(
                "delete_all deletes a user's memory (or an agent's memory of the user) as a whole, not one run's: "
                "delete that run's memories by id, or call delete_all(user_id=...)"
            )
        scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=None)
        user = require_user(scope, "delete_all")
        agent = scope["agent_id"] or self.agent_id
        answer = await self._object("DELETE", self._user(user, ""), params=self._agent(agent))
        self._users.pop((user, agent), None)
        return {"message": "Memories deleted successfully!", "keys_removed": answer["keys_removed"]}

    async def reset(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Delete everything of `user_id`; without one, of every user this client has acted for
        (a tenant's memory as a whole is its operator's to delete)."""
        users = [user_id] if user_id is not None else list(dict.fromkeys(user for user, _ in self._users))
        removed = 0
        for user in users:
            removed += (await self._object("DELETE", self._user(user, "")))["keys_removed"]
        self._users = {key: None for key in self._users if key[0] not in users}
        return {"message": "Memory store reset successfully!", "keys_removed": removed}

    # the rest of the memories API -------------------------------------------------------------------
    async def note(self, text: str, *, user_id: str, session_id: str = "api") -> dict[str, Any]:
        """Keep a note about the user (an event card and its search memory). A note the user has already
        (the same text, or a near duplicate) is not stored again: the answer is the stored one, with
        `repeat_of` naming it."""
        self._seen(user_id, None)
        return await self._object(
            "POST", self._user(user_id, "/memories"), json={"text": text, "session_id": session_id}
        )

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
        self._seen(user_id, None)
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
        self._seen(user_id, None)
        return await self._object("POST", self._user(user_id, "/profile"), json=body)

    async def edit_profile(
        self, entry_id: str, *, user_id: str, content: str | None = None, confidence: float | None = None
    ) -> dict[str, Any]:
        """Change a profile entry's content and / or confidence (kept in its history); `entry_id` is
        the entry's own id (its memory id without `profile:`)."""
        body = {name: value for name, value in (("content", content), ("confidence", confidence)) if value is not None}
        return await self._object("PATCH", self._user(user_id, f"/profile/{_path(entry_id)}"), json=body)

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

    def openai(self, **options: Any) -> Any:
        """An `openai.AsyncOpenAI` on the service's OpenAI-compatible chat (`model` is a persona,
        `user` the memlane user): streaming chat with memory, recalled and saved by the service."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(base_url=self.base_url + "/v1", api_key=self.api_key, **options)

    # one call, retried while the answer says "try again" ----------------------------------------
    def _user(self, user_id: str, tail: str) -> str:
        return f"/v1/users/{_path(user_id)}{tail}"

    def _memory(self, user_id: str, memory_id: str) -> str:
        return self._user(user_id, f"/memories/{_path(memory_id)}")

    def _agent(self, agent_id: str | None) -> dict[str, str]:
        """The `?agent_id=` of a call: its own, else the client's."""
        agent = agent_id or self.agent_id
        return {"agent_id": agent} if agent else {}

    def _seen(self, user_id: str, agent_id: str | None) -> tuple[str, str | None]:
        """(user, agent) of a call, noted as one this client acted for, the latest last."""
        key = (user_id, agent_id or self.agent_id)
        self._users.pop(key, None)
        self._users[key] = None
        return key

    async def _owner(self, memory_id: str, user_id: str | None, agent_id: str | None) -> tuple[str, str | None] | None:
        """(user, agent) a memory id belongs to: `user_id` when given; else the user this client acted
        for that holds it, or held it (its history), the latest first; None when none does."""
        if user_id is not None:
            return self._seen(user_id, agent_id)
        for user, agent in reversed(list(self._users)):
            path = self._memory(user, memory_id) + "/history"
            if await self._data("GET", path, params=self._agent(agent)):
                return user, agent
        return None

    async def _required_owner(
        self, memory_id: str, user_id: str | None, agent_id: str | None
    ) -> tuple[str, str | None]:
        owner = await self._owner(memory_id, user_id, agent_id)
        if owner is None:
            raise InvalidInput(
                f"no memory {memory_id!r} among the users this client has added for, searched or listed; "
                'memlane keeps memory per user: pass user_id="..." (and agent_id for an agent\'s memory)'
            )
        return owner

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
            request["params"] = {"agent_id": self.agent_id, **request.get("params", {})}
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = await self._http.request(method, path, headers=headers, **request)
            except httpx.TransportError as error:
                if last:
                    raise ServiceUnavailable(0, "unreachable", f"{self.base_url} did not answer: {error}") from error
                await asyncio.sleep(self._delay(attempt, None))
                continue
            if response.status_code in RETRIED_STATUSES and not last and not over_quota(response):
                await asyncio.sleep(self._delay(attempt, response.headers.get("Retry-After")))
                continue
            if response.status_code >= 400:
                raise error_of(response)
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

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, host: str | None = None, **options: Any
    ) -> None:
        """As `AsyncMemlaneClient`'s: `MemoryClient(api_key=...)` with MEMLANE_URL set, as mem0's."""
        base_url, api_key = service_address(base_url or host, api_key)
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
