"""memlane as a LangGraph `BaseStore`: `create_agent(store=...)`, `get_store()` and LangMem's
memory tools over memlane's Redis, hybrid search and per-user isolation.

A namespace names its user in the second label, `(collection, user_id, *more)`:

    ("memories", "alice")             items (LangMem's default namespace), found by hybrid search
    ("memories", "alice", "work")     deeper namespaces hold items too
    ("memlane_profile", "alice")      alice's profile entries: read, search, delete
    ("memlane_events", "alice")       alice's event cards: read, search, delete

Every read and write goes to the keys and the index filter of that one user, so a namespace
can never reach another user's items; a namespace (or search prefix) without a user is refused.

An item is a search memory of kind "event" with the id `item:<digest of namespace and key>`
(`store.base.item_memory_id`), whose Redis hash also keeps the item's JSON: recall finds it,
the app's search table lists it, and deleting that memory there deletes the item. Its text
is the value's strings (`{"content": "..."}` gives just the content, other fields read
`field: value`), or the `index` paths given; `index=False` keeps an item out of search and recall.
A ttl (minutes) is a Redis expiry on that hash: Redis deletes the item, its vector and its
index entry itself; reads restart the clock unless `refresh_ttl=False`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from memlane.config import Settings
from memlane.store.base import (
    ITEM_MEMORY_PREFIX,
    Event,
    MemoryHit,
    MemoryKind,
    MemoryStore,
    ProfileEntry,
    StoreError,
    StoreItem,
    event_memory_id,
    item_memory_id,
)

PROFILE_COLLECTION = "memlane_profile"
EVENTS_COLLECTION = "memlane_events"
_MEMLANE_COLLECTIONS = (PROFILE_COLLECTION, EVENTS_COLLECTION)
# fields whose text stands for the whole value: LangMem stores {"content": ...}
_PLAIN_FIELDS = ("content", "text", "memory")

Namespace = tuple[str, ...]


def namespace_user(namespace: Namespace) -> str:
    """The memlane user a namespace belongs to: its second label."""
    if len(namespace) < 2:
        raise InvalidNamespaceError(
            f"memlane keeps items per user: a namespace is (collection, user_id, ...), like "
            f"('memories', 'alice'); {namespace} names no user"
        )
    return namespace[1]


def item_text(value: dict[str, Any], paths: list[str] | None = None) -> str:
    """What an item is searched (and recalled) by: the text at `paths`, or every string in the value."""
    if paths is not None:
        texts = [text for path in paths for text in get_text_at_path(value, tokenize_path(path))]
    else:
        texts = list(_value_lines(value))
    text = "\n".join(text for text in texts if text.strip())
    return text or (json.dumps(value, ensure_ascii=False) if value and paths is None else "")


def _value_lines(value: Any, field: str | None = None) -> Iterator[str]:
    if isinstance(value, dict):
        for name, inner in value.items():
            yield from _value_lines(inner, str(name))
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _value_lines(inner, field)
    elif isinstance(value, str):
        yield value if field is None or field in _PLAIN_FIELDS else f"{field}: {value}"


def matches_filter(value: Any, condition: Any) -> bool:
    """LangGraph's filter semantics (as InMemoryStore): exact match, nested dicts, $eq $ne $gt $gte $lt $lte."""
    if isinstance(condition, dict):
        if any(name.startswith("$") for name in condition):
            return all(_compare(value, operator, operand) for operator, operand in condition.items())
        return isinstance(value, dict) and all(matches_filter(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(condition)
            and all(matches_filter(v, c) for v, c in zip(value, condition))
        )
    return value == condition


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return value == operand
    if operator == "$ne":
        return value != operand
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {operator!r}: use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]


def _namespace_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(label == "*" or label == part for part, label in pairs)


def _when(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)


def _search_item(namespace: Namespace, key: str, value: dict[str, Any], created: float, updated: float,
                 score: float | None) -> SearchItem:
    return SearchItem(namespace, key, value, _when(created), _when(updated), score)


def _profile_value(entry: ProfileEntry) -> dict[str, Any]:
    return {
        "topic": entry.topic,
        "subtopic": entry.subtopic,
        "content": entry.content,
        "confidence": entry.confidence,
        "source_message_ids": entry.source_message_ids,
    }


def _event_value(event: Event) -> dict[str, Any]:
    return {
        "summary": event.summary,
        "tags": event.tags,
        "profile_delta": [change.model_dump() for change in event.profile_delta],
        "session_ids": event.session_ids,
        "source_message_ids": event.source_message_ids,
    }


class MemlaneStore(BaseStore):
    """A LangGraph `BaseStore` over a memlane `MemoryStore` (see the module docstring for the mapping).

    Create it inside the event loop that opened the store (`MemlaneStore(await open_store())`);
    the async methods are the native ones. The sync methods work from other threads while that
    loop runs (LangGraph's sync tools run so), and refuse to block the loop's own thread. Code
    with no event loop at all uses `MemlaneStore.open()`, which runs the store on its own loop.

    fields: paths of the value to search by (default: every string, see `item_text`);
    `put(..., index=[...])` overrides them per item.
    ttl: LangGraph's `TTLConfig` (`default_ttl` minutes, `refresh_on_read`); Redis itself
    deletes what expired, so `sweep_interval_minutes` has nothing to do.
    """

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        fields: list[str] | None = None,
        ttl: TTLConfig | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.store = store
        self.fields = fields
        self.ttl_config = ttl
        try:
            self._loop = loop or asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # bound by the first async call
        self._loop_thread: threading.Thread | None = None

    # running on the store's loop ---------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings | None = None, **kwargs: Any) -> MemlaneStore:
        """For code without an event loop: open memlane's store on a private loop thread.

        kwargs: `fields`, `ttl`, and `open_store`'s `embeddings` / `key_prefix`. Call `close()` at the end.
        """
        from memlane.store.redis import open_store

        options = {name: kwargs.pop(name) for name in ("fields", "ttl") if name in kwargs}
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="memlane-store", daemon=True)
        thread.start()
        try:
            store = asyncio.run_coroutine_threadsafe(open_store(settings, **kwargs), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        instance = cls(store, loop=loop, **options)
        instance._loop_thread = thread
        return instance

    def close(self) -> None:
        """Close a store made by `open()`: its Redis connections, then its loop thread."""
        if self._loop_thread is None or self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.store.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join()
        self._loop.close()
        self._loop_thread = None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is self._loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to MemlaneStore detected in the main event loop: they would block the "
                "loop that runs the store's Redis connections. Use the async methods there, e.g. replace "
                "`store.search(...)` with `await store.asearch(...)`."
            )
        if self._loop is None:
            raise StoreError(
                "MemlaneStore does not know its event loop yet: create it inside the loop that opened the "
                "store (or make one async call first); in code without an event loop use MemlaneStore.open()"
            )
        if not self._loop.is_running():
            raise StoreError(
                "MemlaneStore's event loop is not running, so a synchronous call cannot reach Redis; in code "
                "without an event loop create it with MemlaneStore.open(), or use the async methods"
            )
        return asyncio.run_coroutine_threadsafe(self._execute(ops), self._loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        running = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = running
        if running is self._loop:
            return await self._execute(ops)
        if self._loop.is_running():  # another loop's caller: the Redis connections live on the store's loop
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._execute(ops), self._loop))
        raise StoreError(
            "MemlaneStore was created in an event loop that no longer runs; create it in the loop that "
            "uses it, or with MemlaneStore.open()"
        )

    async def _execute(self, ops: list[Op]) -> list[Result]:
        """Reads first (concurrently), then the puts, last one per (namespace, key) winning:
        a read in a batch sees the store as it was before the batch, like LangGraph's stores."""
        for op in ops:
            if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
                raise ValueError(f"unknown store operation {type(op).__name__}")
            validate_op_namespace(op)
        results: list[Result] = [None] * len(ops)
        reads: list[tuple[int, Callable[[], Awaitable[Result]]]] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for position, op in enumerate(ops):
            if isinstance(op, GetOp):
                reads.append((position, lambda op=op: self._get(op)))
            elif isinstance(op, SearchOp):
                reads.append((position, lambda op=op: self._search(op)))
            elif isinstance(op, ListNamespacesOp):
                reads.append((position, lambda op=op: self._list_namespaces(op)))
            else:
                puts[(tuple(op.namespace), str(op.key))] = op
        values = await asyncio.gather(*(read() for _, read in reads))
        for (position, _), value in zip(reads, values):
            results[position] = value
        if puts:
            await self._apply_puts(list(puts.values()))
        return results

    # get ------------------------------------------------------------------------------------
    async def _get(self, op: GetOp) -> Item | None:
        namespace, key = tuple(op.namespace), str(op.key)
        user_id = namespace_user(namespace)
        if namespace[0] in _MEMLANE_COLLECTIONS:
            if namespace == (PROFILE_COLLECTION, user_id):
                entry = next((e for e in await self.store.get_profile(user_id) if e.id == key), None)
                return self._profile_item(entry, None) if entry else None
            if namespace == (EVENTS_COLLECTION, user_id):
                (event,) = await self.store.get_events(user_id, [key])
                return self._event_item(event, None) if event else None
            return None
        (stored,) = await self.store.get_items(user_id, [item_memory_id(namespace, key)])
        if stored is None or tuple(stored.namespace) != namespace or stored.key != key:
            return None
        if op.refresh_ttl:
            await self.store.refresh_items([stored])
        return Item(value=stored.value, key=key, namespace=namespace,
                    created_at=_when(stored.created_at), updated_at=_when(stored.updated_at))

    # search ---------------------------------------------------------------------------------
    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user_id = namespace_user(prefix)
        if op.limit <= 0:
            return []
        collection = prefix[0]
        if collection in _MEMLANE_COLLECTIONS:
            if len(prefix) > 2:
                return []
            if collection == PROFILE_COLLECTION:
                return await self._search_profile(user_id, op)
            return await self._search_events(user_id, op)
        loaded: dict[tuple[Namespace, str], StoreItem] = {}
        if op.query:
            async def resolve(hits: list[MemoryHit]) -> list[SearchItem]:
                hits = [hit for hit in hits if hit.memory.id.startswith(ITEM_MEMORY_PREFIX)]
                stored = await self.store.get_items(user_id, [hit.memory.id for hit in hits])
                found = []
                for hit, item in zip(hits, stored):
                    if item is not None and self._wanted(item.namespace, item.value, prefix, op):
                        loaded[(tuple(item.namespace), item.key)] = item
                        found.append(self._stored_item(item, hit.score))
                return found

            found = await self._hybrid(user_id, op, ["event"], resolve)
        else:
            items = [
                item for item in await self.store.list_items(user_id)
                if self._wanted(item.namespace, item.value, prefix, op)
            ]
            items.sort(key=lambda item: item.updated_at, reverse=True)  # newest first, like PostgresStore
            loaded = {(tuple(item.namespace), item.key): item for item in items}
            found = [self._stored_item(item, None) for item in items[op.offset : op.offset + op.limit]]
        if op.refresh_ttl:
            await self.store.refresh_items([loaded[(item.namespace, item.key)] for item in found])
        return found

    async def _search_profile(self, user_id: str, op: SearchOp) -> list[SearchItem]:
        entries = {entry.id: entry for entry in await self.store.get_profile(user_id)}
        prefix = (PROFILE_COLLECTION, user_id)
        if not op.query:
            kept = [e for e in entries.values() if self._wanted(prefix, _profile_value(e), prefix, op)]
            return [self._profile_item(e, None) for e in kept[op.offset : op.offset + op.limit]]

        async def resolve(hits: list[MemoryHit]) -> list[SearchItem]:
            found = []
            for hit in hits:
                entry = entries.get(hit.memory.ref_id or "")
                if entry is not None and self._wanted(prefix, _profile_value(entry), prefix, op):
                    found.append(self._profile_item(entry, hit.score))
            return found

        return await self._hybrid(user_id, op, ["profile"], resolve)

    async def _search_events(self, user_id: str, op: SearchOp) -> list[SearchItem]:
        prefix = (EVENTS_COLLECTION, user_id)
        if not op.query:
            events = await self.store.list_events(user_id, limit=op.offset + op.limit if not op.filter else 1_000_000)
            kept = [e for e in events if self._wanted(prefix, _event_value(e), prefix, op)]
            return [self._event_item(e, None) for e in kept[op.offset : op.offset + op.limit]]

        async def resolve(hits: list[MemoryHit]) -> list[SearchItem]:
            hits = [hit for hit in hits if hit.memory.id == event_memory_id(hit.memory.ref_id or "")]
            events = await self.store.get_events(user_id, [hit.memory.ref_id or "" for hit in hits])
            return [
                self._event_item(event, hit.score)
                for hit, event in zip(hits, events)
                if event is not None and self._wanted(prefix, _event_value(event), prefix, op)
            ]

        return await self._hybrid(user_id, op, ["event"], resolve)

    async def _hybrid(
        self,
        user_id: str,
        op: SearchOp,
        kinds: list[MemoryKind],
        resolve: Callable[[list[MemoryHit]], Awaitable[list[SearchItem]]],
    ) -> list[SearchItem]:
        """memlane's hybrid search, in rank-fusion order, kept to the namespace and the filter.

        It asks for as many hits as the page needs. The user's other memories of these kinds
        share the ranking, so when too few hits survive it asks for four times as many; it stops
        once a search returns fewer hits than asked for, which means every memory of the user
        under the filter has been ranked.
        """
        wanted = op.offset + op.limit
        requested = wanted
        while True:
            hits = await self.store.search_memories(user_id, op.query or "", kinds=kinds, limit=requested)
            found = await resolve(hits)
            if len(found) >= wanted or len(hits) < requested:
                return found[op.offset : wanted]
            requested *= 4

    @staticmethod
    def _wanted(namespace: Iterable[str], value: dict[str, Any], prefix: Namespace, op: SearchOp) -> bool:
        return tuple(namespace)[: len(prefix)] == prefix and (
            not op.filter or all(matches_filter(value.get(k), v) for k, v in op.filter.items())
        )

    @staticmethod
    def _stored_item(item: StoreItem, score: float | None) -> SearchItem:
        return _search_item(tuple(item.namespace), item.key, item.value, item.created_at, item.updated_at, score)

    @staticmethod
    def _profile_item(entry: ProfileEntry, score: float | None) -> SearchItem:
        return _search_item((PROFILE_COLLECTION, entry.user_id), entry.id, _profile_value(entry),
                            entry.created_at, entry.updated_at, score)

    @staticmethod
    def _event_item(event: Event, score: float | None) -> SearchItem:
        return _search_item((EVENTS_COLLECTION, event.user_id), event.id, _event_value(event),
                            event.created_at, event.created_at, score)

    # list namespaces --------------------------------------------------------------------------
    async def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        users = {
            condition.path[1]
            for condition in conditions
            if condition.match_type == "prefix" and len(condition.path) >= 2 and condition.path[1] != "*"
        }
        if len(users) != 1:
            raise InvalidNamespaceError(
                "memlane lists one user's namespaces: pass prefix=(collection, user_id), or "
                "prefix=('*', user_id) for all of the user's collections"
            )
        (user_id,) = users
        namespaces = {tuple(item.namespace) for item in await self.store.list_items(user_id)}
        if await self.store.get_profile(user_id):
            namespaces.add((PROFILE_COLLECTION, user_id))
        if await self.store.list_events(user_id, limit=1):
            namespaces.add((EVENTS_COLLECTION, user_id))
        kept = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        return sorted(kept)[op.offset : op.offset + op.limit]

    # put and delete ---------------------------------------------------------------------------
    async def _apply_puts(self, ops: list[PutOp]) -> None:
        upserts: list[StoreItem] = []
        deletions: dict[str, list[str]] = {}
        for op in ops:
            namespace, key = tuple(op.namespace), str(op.key)
            user_id = namespace_user(namespace)
            if namespace[0] == "langgraph":
                raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
            if namespace[0] in _MEMLANE_COLLECTIONS:
                await self._delete_memlane_record(namespace, key, op.value)
            elif op.value is None:
                deletions.setdefault(user_id, []).append(item_memory_id(namespace, key))
            else:
                value = dict(op.value)
                paths = self.fields if op.index is None else op.index
                upserts.append(
                    StoreItem(
                        user_id=user_id,
                        namespace=list(namespace),
                        key=key,
                        value=value,
                        text="" if paths is False else item_text(value, paths),
                        ttl_minutes=op.ttl,
                    )
                )
        for user_id, memory_ids in deletions.items():
            await self.store.delete_items(user_id, memory_ids)
        await self.store.put_items(upserts)

    async def _delete_memlane_record(self, namespace: Namespace, key: str, value: Any) -> None:
        user_id = namespace[1]
        if value is not None or len(namespace) != 2:
            raise StoreError(
                f"{namespace} is memlane's own {namespace[0].removeprefix('memlane_')}, written by its memory "
                f"graph: it can be read, searched and deleted from; put items in a namespace of your own, "
                f"like ('memories', {user_id!r})"
            )
        if namespace[0] == PROFILE_COLLECTION:
            await self.store.delete_profile_entry(user_id, key)
        else:
            await self.store.delete_event(user_id, key)
