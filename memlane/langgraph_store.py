"""memlane as a LangGraph `BaseStore`: `create_agent(store=...)`, `get_store()` and LangMem's
memory tools over memlane's Redis, behaving as LangGraph's reference `InMemoryStore` does.

Namespaces of any shape work: put, get, search, delete and list with prefix, suffix, wildcards,
`max_depth`, limit and offset. Which memlane user an item belongs to is said explicitly, by
`MemlaneStore(store, user_of=...)` (memlane/langgraph_rules.py, `UserMapping`):

    user_of=None       (default) no namespace is a user's: items behave as in InMemoryStore and
                       are in no user's export, panel or recall
    user_of=1          ("memories", user_id, ...): LangMem's `("memories", "{langgraph_user_id}")`
    user_of=0          (user_id, "memories"): the layout of LangGraph's docs
    user_of=callable   namespace -> user id or None
    user_of="config"   the calling run's `config["configurable"]["user_id"]`

An item of a user is one of that user's search memories (kind "event", id `item:<digest>`): recall
finds it, the app lists it, export and delete take it. Collections show memlane's own records of
a user: `("memlane_profile", user_id)`, `("memlane_events", user_id)`, `("memlane_entities",
user_id)` and `("memlane_relations", user_id)` (memlane/langgraph_collections.py).

`SearchItem.score` is LangGraph's: the similarity the index config's `distance_type` gives
(cosine by default) between the query and the item's best-matching vector. With no `index`
config, items are embedded by memlane's own embedder (one vector of `langgraph_rules.item_text`,
shared with recall); with one, by its `embed` and `fields` exactly as InMemoryStore embeds them.
A ttl (minutes) is a Redis expiry on the item's hash; reads restart it unless `refresh_ttl=False`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Generator, Iterable
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import ensure_embeddings

from memlane.config import Settings
from memlane.langgraph_collections import (  # noqa: F401  (MemlaneSearchItem: where it was)
    MemlaneCollections,
    MemlaneSearchItem,
    check_collection_put,
    is_collection,
    search_item_at,
)
from memlane.langgraph_rules import Namespace, UserMapping, UserOf, select_namespaces
from memlane.langgraph_search import listing_prefix, search_page
from memlane.langgraph_writes import ItemWriter, ResolvedPut
from memlane.loop_thread import LoopThread
from memlane.store.errors import StoreError
from memlane.store.ids import item_memory_id
from memlane.store.protocols import MemoryStore
from memlane.store.records import StoreItem

_DISTANCES = ("cosine", "inner_product", "l2")
# how long a synchronous caller waits between checks that the store's loop still runs
_LIVENESS_SECONDS = 0.25
# how long close() lets the calls under way finish before it ends them
_CLOSE_GRACE_SECONDS = 2.0

Value = TypeVar("Value")


class _Answered(concurrent.futures.Future[Value], Generic[Value]):
    """A finished future that `await` accepts too, for the TTL sweeper methods that sync and async
    LangGraph stores spell alike (`store.stop_ttl_sweeper()`, `await store.stop_ttl_sweeper()`)."""

    def __init__(self, value: Value) -> None:
        super().__init__()
        self.set_result(value)

    def __await__(self) -> Generator[None, None, Value]:
        return self.result()
        yield  # a generator: `await` gets the result without suspending

    def __bool__(self) -> bool:
        return bool(self.result())


def _when(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


class MemlaneStore(BaseStore):
    """A LangGraph `BaseStore` over a memlane `MemoryStore` (see the module docstring).

    Create it inside the event loop that opened the store (`MemlaneStore(await open_store())`);
    the async methods are the native ones. The sync methods work from other threads while that
    loop runs (LangGraph's sync tools run so), and refuse to block the loop's own thread. Code
    with no event loop at all uses `MemlaneStore.open()`, which runs the store on its own loop.

    user_of: which user an item belongs to (module docstring); None keeps every item userless.
    index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`, and `distance_type`: "cosine",
    "inner_product" or "l2"); without it memlane's embedder reads `fields` (default: every string).
    ttl: LangGraph's `TTLConfig` (`default_ttl` minutes, `refresh_on_read`); Redis itself deletes
    what expired, so there is nothing to sweep.
    relevance: query searches also give memlane's own relevance, as `MemlaneSearchItem.relevance`
    (one more search per call; the order and `score` stay LangGraph's).
    """

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        user_of: UserOf = None,
        index: IndexConfig | None = None,
        fields: list[str] | None = None,
        ttl: TTLConfig | None = None,
        relevance: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.store = store
        self.users = UserMapping(user_of)
        self.relevance = relevance
        self.ttl_config = ttl
        self._index: dict[str, Any] | None = dict(index) if index else None
        if self._index is not None:
            distance = self._index.get("distance_type", "cosine")
            if distance not in _DISTANCES:
                raise ValueError(f"distance_type {distance!r}: use one of {', '.join(_DISTANCES)}")
            self._index.setdefault("distance_type", distance)
            # "text_fields" is the SQL stores' spelling of "fields"
            self._index["fields"] = list(self._index.get("fields") or self._index.get("text_fields") or ["$"])
            self.embeddings = ensure_embeddings(self._index.get("embed"))
        else:
            self.embeddings = store.embeddings  # memlane's own embedder
        self.fields = fields if self._index is None else self._index["fields"]
        self._loop: asyncio.AbstractEventLoop | None
        try:
            self._loop = loop or asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # bound by the first async call
        self._private: LoopThread | None = None  # the loop thread `open()` made
        self._collections = MemlaneCollections(store, relevance=relevance)
        self._writer = ItemWriter(
            store, self._collections, index=self._index, fields=self.fields, embeddings=self.embeddings
        )

    @property
    def index_config(self) -> dict[str, Any]:
        """The index config searches follow: the one given, or memlane's embedder over `fields`."""
        if self._index is not None:
            return self._index
        from memlane.store.models.embeddings import embedding_dims

        embeddings = self.embeddings
        return {
            "dims": embedding_dims(embeddings) if embeddings else None,
            "embed": embeddings,
            "fields": self.fields,
            "distance_type": "cosine",
        }

    # running on the store's loop ---------------------------------------------------------
    @classmethod
    def open(cls, settings: Settings | None = None, **kwargs: Any) -> MemlaneStore:
        """For code without an event loop: open memlane's store on a private loop thread.

        kwargs: `user_of`, `index`, `fields`, `ttl`, `relevance`, and `open_store`'s `embeddings` / `key_prefix`.
        Call `close()` at the end.
        """
        from memlane.store.redis.store import open_store

        options = {
            name: kwargs.pop(name) for name in ("user_of", "index", "fields", "ttl", "relevance") if name in kwargs
        }
        private = LoopThread("memlane-store", owner="MemlaneStore")
        try:
            store = private.run(open_store(settings, **kwargs))
        except BaseException:
            private.close()
            raise
        instance = cls(store, loop=private.loop, **options)
        instance._private = private
        return instance

    def close(self) -> None:
        """Close a store made by `open()`: the calls under way get a moment to finish (the rest,
        and any call made from now on, fail with a StoreError saying the store was closed), then
        its Redis connections, then its loop thread; quietly."""
        if self._private is not None:
            self._private.close(self.store.aclose, grace=_CLOSE_GRACE_SECONDS)

    def _ended(self) -> StoreError:
        """The error of a call that close() ended while it waited."""
        if self._private is not None:
            return self._private.closed()
        return StoreError("MemlaneStore's call was cancelled on its event loop while it waited")

    def _loop_gone(self, call: concurrent.futures.Future[Any]) -> StoreError:
        if self._loop is not None and not self._loop.is_closed():
            call.cancel()  # a closed loop cannot take the cancel: the call is gone with it
        return StoreError(
            "MemlaneStore's event loop stopped while a call waited on it; create the store with "
            "MemlaneStore.open() in code without an event loop, or keep its loop running"
        )

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
        if self._private is not None:  # refused once close began
            future = self._private.submit(self._execute(ops, self.users.context_user()))
        elif not self._loop.is_running():
            raise StoreError(
                "MemlaneStore's event loop is not running, so a synchronous call cannot reach Redis; in code "
                "without an event loop create it with MemlaneStore.open(), or use the async methods"
            )
        else:
            future = asyncio.run_coroutine_threadsafe(self._execute(ops, self.users.context_user()), self._loop)
        while True:
            try:
                return future.result(timeout=_LIVENESS_SECONDS)
            except concurrent.futures.CancelledError:
                raise self._ended() from None
            except TimeoutError:
                if self._loop is None or self._loop.is_closed() or not self._loop.is_running():
                    raise self._loop_gone(future) from None

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        context_user = self.users.context_user()
        running = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = running
        if running is self._loop:
            return await self._execute(ops, context_user)
        if self._private is None and not self._loop.is_running():
            raise StoreError(
                "MemlaneStore was created in an event loop that no longer runs; create it in the loop that "
                "uses it, or with MemlaneStore.open()"
            )
        # another loop's caller: the Redis connections live on the store's loop
        call = (
            self._private.submit(self._execute(ops, context_user))
            if self._private is not None
            else asyncio.run_coroutine_threadsafe(self._execute(ops, context_user), self._loop)
        )
        future = asyncio.wrap_future(call)
        while True:
            done, _ = await asyncio.wait({future}, timeout=_LIVENESS_SECONDS)
            if done:
                if future.cancelled():  # ended by close(), not by this caller
                    raise self._ended()
                return future.result()
            if self._loop is None or self._loop.is_closed() or not self._loop.is_running():
                raise self._loop_gone(call)

    async def _execute(self, ops: list[Op], context_user: str | None) -> list[Result]:
        """Reads first (concurrently), then the writes, last one per (namespace, key) winning:
        a read in a batch sees the store as it was before the batch, like LangGraph's stores.
        Every op is checked before anything is written."""
        puts: list[ResolvedPut] = []
        for op in ops:
            if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
                raise ValueError(f"unknown store operation {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                puts.append(self._resolved_put(op, context_user))
        reads = [
            (
                position,
                self._get(op, context_user)
                if isinstance(op, GetOp)
                else self._search(op, context_user)
                if isinstance(op, SearchOp)
                else self._list_namespaces(op, context_user),
            )
            for position, op in enumerate(ops)
            if not isinstance(op, PutOp)
        ]
        results: list[Result] = [None] * len(ops)
        values = await asyncio.gather(*(read for _, read in reads))
        for (position, _), value in zip(reads, values):
            results[position] = value
        if puts:
            await self._writer.write(puts)
        return results

    # get ------------------------------------------------------------------------------------
    async def _get(self, op: GetOp, context_user: str | None) -> Item | None:
        namespace, key = tuple(op.namespace), str(op.key)
        if is_collection(namespace):
            return await self._collections.get(namespace, key)
        owner = self.users.owner(namespace, context_user)
        (stored,) = await self.store.get_items(owner, [item_memory_id(namespace, key)])
        if stored is None or tuple(stored.namespace) != namespace or stored.key != key:
            return None
        if op.refresh_ttl:
            await self.store.refresh_items([stored])
        return Item(
            value=stored.value,
            key=key,
            namespace=namespace,
            created_at=_when(stored.created_at),
            updated_at=_when(stored.updated_at),
        )

    # search ---------------------------------------------------------------------------------
    async def _search(self, op: SearchOp, context_user: str | None) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit <= 0:
            return []
        if is_collection(prefix):
            return await self._collections.search(prefix, op)
        owner = self.users.prefix_owner(prefix, context_user)
        own = self._index is not None
        query_vector = None
        if op.query:
            embedded = await (self.embeddings.aembed_query(op.query) if own else self.store.embed_query(op.query))
            query_vector = np.asarray(embedded, dtype=np.float32)
        page = await search_page(
            self.store,
            owner,
            prefix,
            op.filter,
            query=query_vector,
            own=own,
            distance=self.index_config["distance_type"] if own else "cosine",
            dims=int(self._index.get("dims") or 0) if self._index is not None else 0,
            offset=op.offset,
            limit=op.limit,
        )
        if op.refresh_ttl:
            await self.store.refresh_items([item for item, _ in page])
        if self.relevance:  # MemlaneSearchItems throughout; a search without a query has no relevance
            relevances = await self._relevances(op.query, [item for item, _ in page]) if op.query else {}
            return [
                MemlaneSearchItem(
                    tuple(item.namespace),
                    item.key,
                    item.value,
                    _when(item.created_at),
                    _when(item.updated_at),
                    score,
                    relevance=relevances.get((item.user_id, item.memory_id)),
                )
                for item, score in page
            ]
        return [self._search_item(item, score) for item, score in page]

    async def _relevances(self, query: str, items: list[StoreItem]) -> dict[tuple[str, str], float]:
        """memlane's relevance of each item for `query` (store/relevance.py: of the pair alone, as
        every door shows it), whether or not memlane's search would rank the item."""
        owners = sorted({item.user_id for item in items})
        found = await asyncio.gather(
            *(
                self.store.relevances(owner, query, [item.memory_id for item in items if item.user_id == owner])
                for owner in owners
            )
        )
        return {
            (owner, memory_id): relevance
            for owner, relevances in zip(owners, found)
            for memory_id, relevance in relevances.items()
        }

    @staticmethod
    def _search_item(item: StoreItem, score: float | None) -> SearchItem:
        return search_item_at(tuple(item.namespace), item.key, item.value, item.created_at, item.updated_at, score)

    # list namespaces --------------------------------------------------------------------------
    async def _list_namespaces(self, op: ListNamespacesOp, context_user: str | None) -> list[Namespace]:
        conditions = tuple(op.match_conditions or ())
        owner = self.users.conditions_owner(conditions, context_user)
        namespaces = await self.store.item_namespaces(owner, listing_prefix(conditions))
        namespaces |= await self._collections.namespaces(conditions)
        return select_namespaces(namespaces, conditions, op.max_depth, op.offset, op.limit)

    # put and delete (written by memlane/langgraph_writes.py) ----------------------------
    def _resolved_put(self, op: PutOp, context_user: str | None) -> ResolvedPut:
        """The put with its owner, refused here (before anything is written) when it cannot be done."""
        namespace = tuple(op.namespace)
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if is_collection(namespace):
            return ResolvedPut(op, check_collection_put(namespace, op.value))
        owner = self.users.owner(namespace, context_user)
        return ResolvedPut(op, owner)

    # TTL: Redis expires items itself ---------------------------------------------------------
    def sweep_ttl(self) -> _Answered[int]:
        """0: Redis deletes an expired item itself (its hash expires), so there is nothing to sweep."""
        return _Answered(0)

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> _Answered[None]:
        """A finished future: no sweeper runs, as Redis expiry deletes items on time by itself.
        Works with and without `await`, as the sync and async LangGraph stores spell it."""
        return _Answered(None)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> _Answered[bool]:
        """True (there is no sweeper to stop); with or without `await`."""
        return _Answered(True)
