"""The MCP tools over a user's people, places and things and the links between them (issue 53):
list_entities, list_relations (now, `as_of` a time, or every link with `include_past`),
forget_entity and forget_relation. Module-level functions, wired by `add_relation_tools`; each
acts for the caller's one store user, as every memlane tool does (serve/mcp.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from memlane.dates import day
from memlane.recall_relations import relation_text
from memlane.serve.mcp_errors import store_errors
from memlane.store.errors import InvalidInput
from memlane.store.ids import check_id
from memlane.store.relations import Relation, RelationStore

RELATION_PREFIX = "relation:"  # how a link's id is shown in brackets (recall's items say it so too)


def _relations_of(ctx: Context) -> RelationStore:
    from memlane.serve.mcp import memory_of  # the server's own reader of what its tools act on

    store = memory_of(ctx).store()
    if not isinstance(store, RelationStore):
        raise ToolError("this memory store keeps no relations (a RedisMemoryStore does)")
    return store


async def _user(ctx: Context, *, writes: bool = False) -> str:
    from memlane.serve.mcp import acting_caller

    return (await acting_caller(ctx, writes=writes)).user_id


def as_of_time(value: float | str | None) -> float | None:
    """`as_of` as epoch seconds: a number, its digits, or an ISO 8601 date or datetime (UTC when
    naive); None for None or ""; `InvalidInput` for anything else."""
    if value is None or value == "":
        return None
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            try:
                moment = datetime.fromisoformat(value.strip())
            except ValueError:
                seconds = None
            else:
                seconds = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        shown = repr(value)[:60]
        raise InvalidInput(f"as_of must be epoch seconds or an ISO 8601 date (2026-05-01), not {shown}")
    return seconds


def relation_line(relation: Relation, names: dict[str, str]) -> str:
    """[relation:<id>] Bea → lives in → Porto (since 2026-05-01[, until 2026-09-01])"""
    until = f", until {day(relation.valid_until)}" if relation.valid_until is not None else ""
    dated = f"(since {day(relation.valid_from)}{until})"
    return f"[{RELATION_PREFIX}{relation.id}] {relation_text(relation, names, 'en')} {dated}"


async def list_entities(ctx: Context) -> str:
    """The people, places and things of the user's life you know of, one per line:
    [id] name (type; also: other names, in any language). "user" is the user themself."""
    user_id = await _user(ctx)
    async with store_errors():
        entities = await _relations_of(ctx).list_entities(user_id)
    if not entities:
        return "no people, places or things known yet"
    return "\n".join(
        f"[{entity.id}] {entity.name} ({entity.type}"
        + (f"; also: {', '.join(entity.aliases)}" if entity.aliases else "")
        + ")"
        for entity in entities
    )


async def list_relations(ctx: Context, as_of: float | str | None = None, include_past: bool = False) -> CallToolResult:
    """The links between the people, places and things of the user's life that hold now, one per
    line, oldest first: [relation:id] Bea → lives in → Porto (since <day>).
    as_of: the links that held then (epoch seconds or an ISO date, "2026-05-01").
    include_past: every link, those that ended too (", until <day>")."""
    user_id = await _user(ctx)
    async with store_errors():
        when = as_of_time(as_of)
        store = _relations_of(ctx)
        names = {entity.id: entity.name for entity in await store.list_entities(user_id)}
        links = await store.list_relations(user_id, as_of=when, include_past=include_past)
    shown: list[dict[str, Any]] = [
        {
            **link.model_dump(exclude={"exclusive"}),
            "subject_name": names.get(link.subject, ""),
            "object_name": names.get(link.object, ""),
        }
        for link in links
    ]
    answer = "\n".join(relation_line(link, names) for link in links) or "no relations"
    return CallToolResult(content=[TextContent(type="text", text=answer)], structured_content={"results": shown})


async def forget_entity(entity: str, ctx: Context) -> str:
    """Forget a person, place or thing (by the id list_entities shows in brackets, or by any of its
    names) and every link touching it."""
    user_id = await _user(ctx, writes=True)
    async with store_errors():
        check_id(entity.strip("[] "), "the entity")
        removed = await _relations_of(ctx).forget_entity(user_id, entity.strip("[] "))
    if not removed:
        return f"no person, place or thing {entity!r} is known (list_entities shows them)"
    links = removed - 1
    return f"forgot {entity.strip('[] ')} and {links} link{'s' if links != 1 else ''}"


async def forget_relation(relation_id: str, ctx: Context) -> str:
    """Forget one link, by the id list_relations shows in brackets ("relation:…")."""
    user_id = await _user(ctx, writes=True)
    bare = relation_id.strip("[] ").removeprefix(RELATION_PREFIX)
    async with store_errors():
        check_id(bare, "the relation id")
        forgotten = await _relations_of(ctx).forget_relation(user_id, bare)
    return (
        f"forgot {RELATION_PREFIX}{bare}" if forgotten else f"no relation {relation_id!r} (list_relations shows them)"
    )


READS = ToolAnnotations(read_only_hint=True)
DELETES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)


def add_relation_tools(server: MCPServer) -> None:
    """Offer the relation tools on `server` (memlane's, built by `build_mcp_server`)."""
    server.add_tool(list_entities, annotations=READS)
    server.add_tool(list_relations, annotations=READS)
    server.add_tool(forget_entity, annotations=DELETES)
    server.add_tool(forget_relation, annotations=DELETES)
