"""memlane over MCP: a user's memory as tools for any MCP client (Claude Desktop, IDEs, other agents).

    memlane mcp --user ID          stdio: one user per process, for a desktop client's config
    memlane serve                  streamable HTTP at /mcp: the user comes from each request's credentials

Tools: search_memories, remember, forget, get_profile, list_events, remember_now (a memory run
now: in `memlane serve` by its scheduler; over stdio queued for the workers on the same Redis),
recall, and serve/mcp_relations.py's (list and forget entities and links). Each is a module-level
function that reads what it acts on (`McpMemory`) from its context; `build_mcp_server` wires them.

Every tool acts for the one store user that the caller resolves to (the process's `--user`, or the
HTTP request's bearer key tenant and user header); no tool takes a user id, so a model can never name
another user. The tools answer in the same words as the agent tools (`memlane.tools`).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memlane import MemoryStore, Recall, Settings, StoreError, open_store, scoped_user_id
from memlane.dates import day
from memlane.dates import earlier as earlier_value  # the profile's own `earlier` lists below
from memlane.deadlines import RedisSilent, within_budget
from memlane.doors import forget_confirmer, queue_memory_run
from memlane.models import memory_model_from_settings
from memlane.persistence import MemoryAgentContext
from memlane.recall import RecallParts
from memlane.serve.auth import valid_agent_id
from memlane.serve.config import store_user_id
from memlane.serve.errors import READY_TIMEOUT_SECONDS, ApiError
from memlane.serve.mcp_errors import store_errors
from memlane.serve.mcp_relations import add_relation_tools
from memlane.store.ids import expiry_time, profile_memory_id
from memlane.store.protocols import ForgetConfirm
from memlane.tools import answer_forget, answer_remember, search_answer, search_hits, shown_hit
from memlane.turns import TurnService

# what `remember` files its notes under (an MCP client has no chat session of ours)
MCP_SESSION = "mcp"
# the HTTP header naming the user inside the bearer key's tenant
USER_HEADER = "X-Memlane-User"
# the HTTP header naming an agent whose own memory of the user the tools act on (absent: the user's)
AGENT_HEADER = "X-Memlane-Agent"
# where the HTTP endpoint leaves the authenticated caller for the tools (request.state)
CALLER_STATE = "memlane_mcp_caller"

INSTRUCTIONS = (
    "Long-term memory of the user you are talking with. Call search_memories before answering anything "
    "that may depend on what the user told you before; call remember when they state a lasting fact or "
    'preference; forget takes an id shown in brackets, or what to forget ("what I said about my ex"). '
    'Time words in a search ("last week") are understood.'
)


@dataclass(frozen=True)
class McpCaller:
    """Who a tool call acts for: one store user, the actor profile histories name, what it may do."""

    user_id: str
    actor: str = "mcp"
    may_read: bool = True  # search_memories, get_profile, list_events
    may_write: bool = True  # remember, forget


ResolveCaller = Callable[[Context], McpCaller | Awaitable[McpCaller]]
"""The caller of a tool call, from its context; raising `ToolError` refuses the call."""

RememberNow = Callable[[str], Awaitable[str]]
# (user, message, session) -> the memory block recall would put before a model for the message
RecallBlock = Callable[[str, str, str], Awaitable[str]]
"""Queue a memory run of a store user now; returns what the `remember_now` tool answers."""

Authenticate = Callable[[Request], Awaitable[McpCaller]]
"""The HTTP caller from the request; raises `starlette.exceptions.HTTPException` (401, 403, ...)
to refuse the request before MCP sees it."""


def _version() -> str:
    try:
        return version("memlane")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0"


@dataclass(frozen=True)
class McpMemory:
    """What memlane's tools act on: the store (`store()`, read at call time: it may open late),
    who calls (`resolve_caller`), and what the door offers besides (None: the tool is not offered).

    remember_now: queues a memory run for a user (the `remember_now` tool).
    recall_block: the turn service's recall (the `recall` tool).
    confirm_forget: the memory model's confirmation of what `forget` finds by meaning.
    """

    store: Callable[[], MemoryStore]
    resolve_caller: ResolveCaller
    remember_now: RememberNow | None = None
    confirm_forget: ForgetConfirm | None = None
    recall_block: RecallBlock | None = None


class MemlaneMcpServer(MCPServer):
    """The SDK's server, holding what memlane's tools act on (`memory`); a tool reads it from its
    context (`memory_of`)."""

    def __init__(self, memory: McpMemory) -> None:
        super().__init__("memlane", instructions=INSTRUCTIONS, version=_version())
        self.memory = memory

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        """A tool call answers within READY_TIMEOUT_SECONDS while Redis is silent, as the memories
        routes do (memlane/deadlines.py): an error saying so, not a wait for the freeze's end."""
        try:
            store = self.memory.store()
        except StoreError:  # not open yet: the tool says so itself
            return await super().call_tool(name, arguments, context)
        try:
            return await within_budget(
                super().call_tool(name, arguments, context), store, READY_TIMEOUT_SECONDS, what=f"the {name} tool"
            )
        except RedisSilent as error:
            raise ToolError(f"the memory store is unavailable: {error}; try again in a moment") from None


def memory_of(ctx: Context) -> McpMemory:
    """What the tools of the server answering `ctx` act on."""
    server = ctx.mcp_server
    if not isinstance(server, MemlaneMcpServer):
        raise ToolError("this tool runs on memlane's MCP server (build_mcp_server)")
    return server.memory


async def acting_caller(ctx: Context, *, writes: bool = False) -> McpCaller:
    """Who the tool call acts for; `ToolError` when no one, or when the key lacks the scope."""
    resolved: Any = memory_of(ctx).resolve_caller(ctx)
    if inspect.isawaitable(resolved):
        resolved = await resolved
    if not resolved.user_id:
        raise ToolError("memlane does not know who is calling: no user for this connection")
    if writes and not resolved.may_write:
        raise ToolError("this key may not change memories (it lacks the 'write' scope)")
    if not writes and not resolved.may_read:
        raise ToolError("this key may not read memories (it lacks the 'read' scope)")
    return resolved


# --- the tools ------------------------------------------------------------------------------------


async def search_memories(
    query: str, ctx: Context, limit: int = 5, filter: dict[str, Any] | None = None
) -> CallToolResult:
    """Search what you remember about the user (profile, past events, past messages).

    Time words in the query ("yesterday", "last week", "on April 27th", "上周", "5月2日")
    favour what was said then. Returns one memory per line: its id in brackets, kind, date,
    relevance and text, with the speaker when it was not the user ("朋友A: ..."), then its
    metadata when it has some.
    filter: only memories whose metadata match, e.g. {"project": "apollo"},
    {"priority": {"gte": 2}}, {"project": {"in": ["a", "b"]}}, {"OR": [...]} (declared fields only).
    """
    user_id = (await acting_caller(ctx)).user_id
    async with store_errors():
        hits = await search_hits(memory_of(ctx).store(), user_id, query, limit=limit, metadata_filter=filter)
    # the lines a model reads, and each hit's id and relevance as data (`memlane search --json`'s shape)
    return CallToolResult(
        content=[TextContent(type="text", text=search_answer(hits))],
        structured_content={"results": [shown_hit(hit) for hit in hits]},
    )


async def remember(
    text: str,
    ctx: Context,
    topic: str = "",
    subtopic: str = "",
    metadata: dict[str, Any] | None = None,
    expires_at: float | str | None = None,
    importance: float | None = None,
) -> str:
    """Remember something about the user for later conversations.

    With a topic and subtopic (e.g. "diet", "coffee") it becomes a profile fact,
    replacing what that slot held; without them it is kept as a note.
    metadata: a JSON object kept with it ({"project": "apollo"}); search_memories filters notes by it.
    expires_at: when to forget it (epoch seconds or an ISO 8601 datetime, "2027-01-31T18:00:00Z").
    importance: how much it matters, 0 to 1 (0.5 neutral; higher: search and recall rank it higher).
    """
    writer = await acting_caller(ctx, writes=True)
    async with store_errors():
        return await answer_remember(
            memory_of(ctx).store(),
            writer.user_id,
            text,
            topic=topic,
            subtopic=subtopic,
            session_id=MCP_SESSION,
            actor=writer.actor,
            metadata=metadata,
            expires_at=expiry_time(expires_at),
            importance=importance,
        )


async def forget(what: str, ctx: Context, dry_run: bool = False) -> str:
    """Forget one memory by the id in brackets that search_memories, get_profile or list_events
    showed ("profile:…"), or everything the user said about something ("peanuts",
    "what I said about my ex"): from the profile, events, summaries and past messages.
    dry_run: change nothing, answer what would go (each record, with the clauses cut).
    """
    writer = await acting_caller(ctx, writes=True)
    memory = memory_of(ctx)
    async with store_errors():
        return await answer_forget(
            memory.store(), writer.user_id, what, actor=writer.actor, confirm=memory.confirm_forget, dry_run=dry_run
        )


async def remember_now_tool(ctx: Context) -> str:
    """Remember the conversation so far now (profile facts, an event card), instead of when
    enough was said, the session ends or the user goes idle. Runs in the background: the
    profile and events show what it learned a little later."""
    writer = await acting_caller(ctx, writes=True)
    request_run = memory_of(ctx).remember_now
    if request_run is None:
        raise ToolError("this server does not run memory on request")
    async with store_errors():
        return await request_run(writer.user_id)


async def recall_tool(message: str, ctx: Context, session_id: str = "default") -> str:
    """What you should know about the user before answering `message`: their profile, the
    conversation's rolling summary, and the memories relevant to the message, dated, within
    memlane's recall budget (the block `memlane serve` puts before its own model)."""
    reader = await acting_caller(ctx)
    recall_for = memory_of(ctx).recall_block
    if recall_for is None:
        raise ToolError("this server does not recall for a message")
    async with store_errors():
        return await recall_for(reader.user_id, message, session_id or "default")


async def get_profile(ctx: Context) -> str:
    """What you know about the user, one fact per line: [id] topic / subtopic: fact (since
    <day>), then what it held before, when it changed: "earlier: …, until <day>"."""
    user_id = (await acting_caller(ctx)).user_id
    store = memory_of(ctx).store
    async with store_errors():
        entries = await store().get_profile(user_id)
        past_values = await store().past_values(user_id)
    if not entries:
        return "no profile yet"
    earlier: dict[str, list[str]] = {}
    for value in reversed(past_values):  # newest first
        earlier.setdefault(value.entry_id, []).append(earlier_value(value.content, value.valid_until))
    return "\n".join(
        f"[{profile_memory_id(entry.id)}] {entry.line} (since {day(entry.since)})"
        + "".join(f"; {line}" for line in earlier.get(entry.id, []))
        for entry in entries
    )


async def list_events(ctx: Context, limit: int = 10) -> str:
    """The user's recent events (what past conversations were about), newest first:
    [id] date text #tags."""
    user_id = (await acting_caller(ctx)).user_id
    async with store_errors():
        events = await memory_of(ctx).store().list_events(user_id, limit=max(1, min(limit, 50)))
    if not events:
        return "no events yet"
    return "\n".join(
        f"[event:{event.id}] {day(event.created_at)} {event.summary}" + "".join(f" #{tag}" for tag in event.tags)
        for event in events
    )


READS = ToolAnnotations(read_only_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
DELETES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)


def build_mcp_server(
    store: Callable[[], MemoryStore],
    resolve_caller: ResolveCaller,
    *,
    remember_now: RememberNow | None = None,
    confirm_forget: ForgetConfirm | None = None,
    recall_block: RecallBlock | None = None,
) -> MCPServer:
    """The MCP server with memlane's tools (module-level functions; see `McpMemory` for the
    arguments). `remember_now` and `recall` are offered only when their door is given."""
    memory = McpMemory(
        store, resolve_caller, remember_now=remember_now, confirm_forget=confirm_forget, recall_block=recall_block
    )
    server = MemlaneMcpServer(memory)
    server.add_tool(search_memories, annotations=READS)
    server.add_tool(remember, annotations=WRITES)
    server.add_tool(forget, annotations=DELETES)
    if memory.remember_now is not None:
        server.add_tool(remember_now_tool, name="remember_now", annotations=WRITES)
    if memory.recall_block is not None:
        server.add_tool(recall_tool, name="recall", annotations=READS)
    server.add_tool(get_profile, annotations=READS)
    server.add_tool(list_events, annotations=READS)
    add_relation_tools(server)  # list_entities, list_relations, forget_entity, forget_relation
    return server


def caller_from_request(ctx: Context) -> McpCaller:
    """The caller `mcp_http_endpoint` authenticated for this HTTP request."""
    request = ctx.request_context.request
    caller = getattr(getattr(request, "state", None), CALLER_STATE, None)
    if not isinstance(caller, McpCaller):
        raise ToolError("this MCP request was not authenticated")
    return caller


@dataclass(frozen=True)
class McpHttpEndpoint:
    """MCP over streamable HTTP, to add to an ASGI app.

    `route` serves `path` (add it to the app's routes); `running()` must be entered in the
    app's lifespan (it runs the SDK's session manager). Stateless: any worker answers any
    request, and every request is authenticated on its own.
    """

    server: MCPServer
    route: Route

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.server.session_manager.run()

    def app(self) -> Starlette:
        """A standalone app serving just this endpoint (tests, or running it alone)."""

        @contextlib.asynccontextmanager
        async def lifespan(_: Starlette) -> AsyncIterator[None]:
            async with self.running():
                yield

        return Starlette(routes=[self.route], lifespan=lifespan)


def mcp_http_endpoint(
    store: Callable[[], MemoryStore],
    authenticate: Authenticate,
    *,
    path: str = "/mcp",
    transport_security: TransportSecuritySettings | None = None,
    remember_now: RememberNow | None = None,
    confirm_forget: ForgetConfirm | None = None,
    recall_block: RecallBlock | None = None,
) -> McpHttpEndpoint:
    """memlane's MCP server at `path`, each request's user from `authenticate(request)`.

    transport_security: the SDK's Host / Origin checks; off by default because every request
    must carry credentials (a DNS-rebinding page has none), and a deployment's host names vary.
    """
    server = build_mcp_server(
        store, caller_from_request, remember_now=remember_now, confirm_forget=confirm_forget, recall_block=recall_block
    )
    transport = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security or TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    (sdk_route,) = [route for route in transport.routes if isinstance(route, Route)]
    endpoint = _Authenticated(authenticate, sdk_route.endpoint)
    return McpHttpEndpoint(server=server, route=Route(path, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))


@dataclass(frozen=True)
class _Authenticated:
    """An ASGI app (a class, so that Starlette's `Route` passes it the raw scope): authenticate, then MCP."""

    authenticate: Authenticate
    transport: Callable[[Scope, Receive, Send], Awaitable[None]]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = await self.authenticate(Request(scope, receive))
        scope.setdefault("state", {})[CALLER_STATE] = caller
        await self.transport(scope, receive, send)


def serve_mcp_endpoint(service: Any, *, path: str = "/mcp") -> McpHttpEndpoint:
    """The MCP endpoint of `memlane serve`: the bearer key (`service.config`, a `ServeConfig`) names
    the tenant and the scopes, the `X-Memlane-User` header the user; `service.store` is read per call;
    `service.memory_model` (with `service.settings`), where there is one, confirms what `forget`
    finds by meaning."""

    async def authenticate(request: Request) -> McpCaller:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        key = service.config.key_for_token(token.strip()) if scheme.lower() == "bearer" else None
        if key is None:
            raise HTTPException(
                401, "send an API key as 'Authorization: Bearer <key>'", headers={"WWW-Authenticate": "Bearer"}
            )
        if not (key.may("read") or key.may("write")):
            raise HTTPException(
                403, f"key {key.name!r} may not use memories (it has neither the 'read' nor the 'write' scope)"
            )
        try:
            # HTTP carries the header's bytes, which Starlette reads as Latin-1: the id is their UTF-8
            user_id = store_user_id(key.tenant, request.headers.get(USER_HEADER, "").encode("latin-1").decode("utf-8"))
            agent = request.headers.get(AGENT_HEADER)
            user_id = scoped_user_id(
                user_id, valid_agent_id(agent.encode("latin-1").decode("utf-8") if agent is not None else None)
            )
        except UnicodeDecodeError:
            raise HTTPException(
                400, f"{USER_HEADER} and {AGENT_HEADER} must be UTF-8: send the ids as UTF-8 bytes"
            ) from None
        except ApiError as error:
            raise HTTPException(400, f"{AGENT_HEADER}: {error.detail}") from None
        except ValueError as error:
            raise HTTPException(400, f"{USER_HEADER} must name the user: {error}") from None
        return McpCaller(user_id=user_id, actor=key.actor, may_read=key.may("read"), may_write=key.may("write"))

    async def remember_now(user_id: str) -> str:
        return run_requested(await service.remember_now(user_id))

    async def recall_block(user_id: str, message: str, session_id: str) -> str:
        return recall_answer(await service.require_turns().recall(MemoryAgentContext(user_id, session_id), message))

    memory_model = getattr(service, "memory_model", None)  # a ServeService's, when one is configured
    return mcp_http_endpoint(
        lambda: service.store,
        authenticate,
        path=path,
        remember_now=remember_now,
        recall_block=recall_block,
        confirm_forget=forget_confirmer(memory_model, service.settings.models) if memory_model is not None else None,
    )


def recall_answer(recalled: Recall | None) -> str:
    """What the `recall` tool answers: the block, or why there is none."""
    if recalled is None:
        return "memory is unavailable right now (the store did not answer); answer without it"
    return recalled.text or "nothing is known about the user that bears on this message yet"


def run_requested(queued: bool | None) -> str:
    """What `remember_now` answers for a scheduler's verdict (None: no memory model)."""
    if queued is None:
        return "no memory model is configured: turns are stored and searchable, but nothing is remembered from them"
    return (
        "remembering… (the profile and events show what was learned shortly)" if queued else "nothing new to remember"
    )


async def run_stdio(settings: Settings, user_id: str, *, agent_id: str | None = None) -> None:
    """`memlane mcp`: serve one user's memory (`agent_id`: that agent's own memory of the user) over
    stdin/stdout until the client closes it."""
    opened = await open_store(settings)
    try:
        caller = McpCaller(user_id=scoped_user_id(user_id, agent_id), actor="mcp")

        async def remember_now(run_user: str) -> str:  # no scheduler here: queued for the deployment's workers
            try:
                await queue_memory_run(opened, run_user, store=settings.store, scheduler=settings.scheduler)
            except RuntimeError as error:
                return str(error)
            return "remembering… (queued: a memlane app, `memlane serve` or `memlane worker` on this Redis runs it)"

        confirm = forget_confirmer(memory_model_from_settings(settings.models), settings.models)
        turns = TurnService(  # recall only: the deployment's workers remember
            opened, recall_parts=RecallParts.of(settings), turns=settings.turns
        )

        async def recall_block(run_user: str, message: str, session_id: str) -> str:
            return recall_answer(await turns.recall(MemoryAgentContext(run_user, session_id), message))

        await build_mcp_server(
            lambda: opened,
            lambda _ctx: caller,
            remember_now=remember_now,
            confirm_forget=confirm,
            recall_block=recall_block,
        ).run_stdio_async()
    finally:
        await opened.aclose()
