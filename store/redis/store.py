"""`RedisMemoryStore`: the `MemoryStore` protocol on Redis with search, through RedisVL.

History, summaries, profile and events are plain Redis structures under a per-user key
prefix (see `schema.KeyLayout`); vector memories are hashes indexed by one RedisVL index.
Hybrid search runs a KNN query and a BM25 query (both filtered on the user with RedisVL
`Tag` filters) and fuses them; it works on Redis Stack 7.4 and Redis 8 alike.

The store is a facade: each concern is a part in a module of its own, every part shares one
`StoreCore` (core.py: connection, key layout, the settings' parts, embedder), and the table in the class
says which part answers each method of the protocols (protocols.py, by role; records.py):

    messages.py     history, cursor, sessions          memories.py  search memories, their index
    profile.py      profile entries, their revisions   search.py    hybrid search and its fusion
    events.py       event cards                        updates.py   the memory graph's one write
    forgetting.py   forget, deletes that forget        items.py     LangGraph store items
    parked_runs.py  runs that failed every retry       users.py     export or delete a user
    requests.py     Idempotency-Keys seen              gc.py        the retention sweep
    review.py       facts held for review              relations.py entities and their links
    repeats.py      a repeat stored once (add_memories) item_search.py  items found by the index

and, shared by the parts: quotas.py (a user's quotas) and retention.py (expiry), one of each built
here; metadata.py (metadata and its filters), search_replies.py and search_candidates.py (reading
a search's replies), sentence_margins.py (forgetting by meaning's nearness), redisvl_private.py
(the private RedisVL and redis-py parts search relies on, tested).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import numpy as np
import redis.asyncio as aioredis
from langchain_core.embeddings import Embeddings
from redis.exceptions import RedisClusterException, RedisError

from memlane.config import (
    FLAT_NAMES,
    LimitsSettings,
    ModelSettings,
    PrivacySettings,
    RecallSettings,
    RetentionSettings,
    SearchSettings,
    Settings,
    StoreSettings,
    get_settings,
)
from memlane.store.errors import RedisUnavailable, StoreError
from memlane.store.models.breaker import BreakerStatus
from memlane.store.models.embeddings import get_embeddings, passage_backlog
from memlane.store.models.workers import EmbeddingBacklog
from memlane.store.records import Memory
from memlane.store.redis.core import StoreCore
from memlane.store.redis.events import Events
from memlane.store.redis.forgetting import Forgetting
from memlane.store.redis.gc import GarbageCollector
from memlane.store.redis.item_search import ItemSearch
from memlane.store.redis.items import Items
from memlane.store.redis.memories import Memories
from memlane.store.redis.messages import Messages
from memlane.store.redis.parked_runs import ParkedRuns
from memlane.store.redis.profile import Profile
from memlane.store.redis.quotas import Quotas
from memlane.store.redis.relations import Relations
from memlane.store.redis.repeats import Duplicates
from memlane.store.redis.requests import Requests
from memlane.store.redis.retention import Retention
from memlane.store.redis.review import Review
from memlane.store.redis.search import Search
from memlane.store.redis.search_relevances import stored_vectors
from memlane.store.redis.updates import Updates
from memlane.store.redis.users import Users

Arguments = ParamSpec("Arguments")
Answer = TypeVar("Answer")


def _answered_by(
    part: str, method: Callable[Concatenate[Any, Arguments], Answer]
) -> Callable[Concatenate[RedisMemoryStore, Arguments], Answer]:
    """A method of the store that hands its call to `method` of the part named `part`: same
    signature, same docstring, async where the part's method is."""
    name = method.__name__
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def answer_async(store: RedisMemoryStore, *args: Any, **kwargs: Any) -> Any:
            return await getattr(getattr(store, part), name)(*args, **kwargs)

        return cast("Callable[Concatenate[RedisMemoryStore, Arguments], Answer]", answer_async)

    @functools.wraps(method)
    def answer(store: RedisMemoryStore, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(store, part), name)(*args, **kwargs)

    return cast("Callable[Concatenate[RedisMemoryStore, Arguments], Answer]", answer)


# the parts of the settings a store reads, each a keyword of `RedisMemoryStore` (`store.parts` gives them back)
STORE_PARTS = ("store", "search", "privacy", "limits", "retention", "models", "recall")

# settings a store is built on: changing them on an open store would do nothing, so it is refused
BUILT_ON = (
    "key_prefix",
    "max_id_chars",
    "timezone",
    "circuit_failure_threshold",
    "circuit_reset_seconds",
    "embedding_provider",
    "openai_embedding_model",
    "metadata_fields",
)


class RedisMemoryStore:
    """The RedisVL implementation of `MemoryStore`. Create it with `open_store()`."""

    def __init__(
        self,
        client: aioredis.Redis,
        embeddings: Embeddings,
        *,
        store: StoreSettings,
        search: SearchSettings,
        privacy: PrivacySettings,
        limits: LimitsSettings,
        retention: RetentionSettings,
        models: ModelSettings,
        recall: RecallSettings,
        key_prefix: str | None = None,
    ) -> None:
        core = self.core = StoreCore(
            client, embeddings, store, search, privacy, limits, retention, models, recall, key_prefix
        )
        self.client, self.embeddings, self.embedder_breaker = core.client, core.embeddings, core.embedder_breaker
        self.layout, self.dims, self.schema, self.index, self.zone = (
            core.layout,
            core.dims,
            core.schema,
            core.index,
            core.zone,
        )
        self.url: str | None = None  # set by open_store: where background tasks can share this Redis
        # one of each, handed to the parts that write records (no part makes its own)
        self.quotas, self.retention = Quotas(core), Retention(core)
        kept = {"retention": self.retention}
        self.memories = Memories(core, **kept)
        self.search = Search(core, **kept)
        self.duplicates = Duplicates(core, self.memories, self.search, quotas=self.quotas)
        self.messages = Messages(core, self.memories, quotas=self.quotas, **kept)
        self.profile = Profile(core, self.memories, **kept)
        self.events = Events(core, self.memories, **kept)
        self.items = Items(core, self.memories, quotas=self.quotas, **kept)
        self.item_search = ItemSearch(core)
        self.updates = Updates(
            core, self.memories, self.messages, self.profile, self.events, quotas=self.quotas, **kept
        )
        self.review = Review(core, self.updates)
        self.relations = Relations(core)  # entities and the links between them (store/relations.py)
        self.forgetting = Forgetting(core, self.search, self.messages, self.profile, self.events, self.items)
        self.runs = ParkedRuns(core)  # the dead-letter list
        self.requests = Requests(core)  # Idempotency-Keys seen
        self.users = Users(core, self.memories, self.messages, self.profile, self.events, self.items, self.relations)
        self.gc = GarbageCollector(core, quotas=self.quotas, **kept)  # what expiry cannot remove (retention)

    @property
    def parts(self) -> dict[str, Any]:
        """The settings' parts the store was built with (`STORE_PARTS`; fixed: `with_settings` gives a
        store with others)."""
        return {part: getattr(self.core, part) for part in STORE_PARTS}

    def with_settings(self, **changes: Any) -> RedisMemoryStore:
        """This store's Redis and embedder under other settings (search weights, limits, privacy: what
        the parts read on each call), for a caller that needs another setting than the deployment's:
        whole parts (`search=SearchSettings(...)`) or single settings by flat name (`search_rrf_k=40`).
        A store's own settings are fixed once it is built. Those it is built on (`BUILT_ON`: its key
        layout, time zone, circuit breaker, embeddings) cannot differ, and naming them is refused:
        open a new store for those."""
        parts = self.parts
        for key, value in changes.items():
            if key in STORE_PARTS:
                parts[key] = value
            elif key in FLAT_NAMES and FLAT_NAMES[key][0] in STORE_PARTS:
                part, name = FLAT_NAMES[key]
                parts[part] = parts[part].model_copy(update={name: value})
            else:
                raise TypeError(f"{key!r} is no setting the store reads (its parts: {', '.join(STORE_PARTS)})")
        changed = [
            name
            for name in BUILT_ON
            if getattr(parts[FLAT_NAMES[name][0]], FLAT_NAMES[name][1])
            != getattr(getattr(self.core, FLAT_NAMES[name][0]), FLAT_NAMES[name][1])
        ]
        if changed:
            raise StoreError(
                f"{', '.join(changed)} cannot change on an open store (its key layout, time zone, breaker and "
                "embeddings were made from them): open a new store with these settings"
            )
        other = RedisMemoryStore(self.client, self.embeddings, **parts, key_prefix=self.core.layout.prefix)
        other.url = self.url
        other.core.shards = self.core.shards  # one set of connections to the primaries (closing either closes them)
        return other

    async def check_cluster_indexes(self, *, fix: bool = False) -> list[Any]:
        """Every memory index on every primary of the cluster, with its documents and state (in use,
        duplicate, stale); with `fix`, the duplicate and stale ones dropped and a missing one made
        (`memlane redis cluster-check`). Each is a `store.shard_indexes.IndexReport`."""
        if self.core.shards is None:
            raise StoreError(
                "this store is on one Redis, not a Redis Cluster: `cluster-check` is for a REDIS_URL "
                "ending in ?cluster=true (or MEMLANE_REDIS_CLUSTER=true)"
            )
        reports: list[Any] = await self.core.run(self.core.shards.check(fix=fix))
        return reports

    async def aclose(self) -> None:
        if self.core.shards is not None:
            await self.core.shards.aclose()
        await self.client.aclose()

    def health(self) -> list[BreakerStatus]:
        return [self.embedder_breaker.status()]

    def answered_within(self, seconds: float) -> bool:
        return self.core.answered_within(seconds)

    def embedding_backlog(self) -> EmbeddingBacklog | None:
        return passage_backlog(self.embeddings)

    # which part answers what ---------------------------------------------------------------
    async def ensure_indexes(self) -> None:
        """Create the memory index unless it exists; rebuild one made by an older memlane; rename
        the keys of an older key layout in place (standalone Redis); list the owners of items put
        by an older memlane and give its items their index fields. On a cluster, the index on every primary."""
        await self.memories.ensure_indexes()
        await self.items.adopt_item_owners()
        await self.item_search.adopt_item_fields()

    check_ready = _answered_by("memories", Memories.check_ready)
    quota_refusal = _answered_by("quotas", Quotas.refusal)

    add_messages = _answered_by("messages", Messages.add_messages)
    add_new_messages = _answered_by("messages", Messages.add_new_messages)
    reindex_pending = _answered_by("messages", Messages.reindex_pending)
    users_with_unindexed_messages = _answered_by("messages", Messages.users_with_unindexed_messages)
    recent_messages = _answered_by("messages", Messages.recent_messages)
    message_neighbours = _answered_by("messages", Messages.message_neighbours)
    messages_around = _answered_by("messages", Messages.messages_around)
    unprocessed_messages = _answered_by("messages", Messages.unprocessed_messages)
    get_cursor = _answered_by("messages", Messages.get_cursor)
    advance_cursor = _answered_by("messages", Messages.advance_cursor)
    get_session_summary = _answered_by("messages", Messages.get_session_summary)
    set_session_summary = _answered_by("messages", Messages.set_session_summary)
    list_sessions = _answered_by("messages", Messages.list_sessions)
    set_session_title = _answered_by("messages", Messages.set_session_title)
    session_titles = _answered_by("messages", Messages.session_titles)
    expire_messages = _answered_by("retention", Retention.expire_messages)

    get_profile = _answered_by("profile", Profile.get_profile)
    edit_profile_entry = _answered_by("profile", Profile.edit_profile_entry)
    profile_history = _answered_by("profile", Profile.profile_history)
    past_values = _answered_by("profile", Profile.past_values)

    list_events = _answered_by("events", Events.list_events)
    get_events = _answered_by("events", Events.get_events)

    # deleting a profile entry, an event or a message forgets what it stated
    forget = _answered_by("forgetting", Forgetting.forget)
    delete_profile_entry = _answered_by("forgetting", Forgetting.delete_profile_entry)
    delete_event = _answered_by("forgetting", Forgetting.delete_event)
    delete_message = _answered_by("forgetting", Forgetting.delete_message)

    apply_update = _answered_by("updates", Updates.apply_update)

    held_facts = _answered_by("review", Review.held_facts)
    confirm_held_fact = _answered_by("review", Review.confirm_held_fact)
    drop_held_fact = _answered_by("review", Review.drop_held_fact)

    record_relations = _answered_by("relations", Relations.record_relations)
    remember_entity = _answered_by("relations", Relations.remember_entity)
    find_entity = _answered_by("relations", Relations.find_entity)
    list_entities = _answered_by("relations", Relations.list_entities)
    list_relations = _answered_by("relations", Relations.list_relations)
    forget_entity = _answered_by("relations", Relations.forget_entity)
    forget_relation = _answered_by("relations", Relations.forget_relation)
    neighbourhood = _answered_by("relations", Relations.neighbourhood)

    add_memories = _answered_by("duplicates", Duplicates.add_memories)
    repeated_memory = _answered_by("duplicates", Duplicates.repeated_memory)
    delete_memory = _answered_by("memories", Memories.delete_memory)

    search_memories = _answered_by("search", Search.search_memories)
    relevances = _answered_by("search", Search.relevances)

    put_items = _answered_by("items", Items.put_items)
    get_items = _answered_by("items", Items.get_items)
    list_items = _answered_by("items", Items.list_items)
    refresh_items = _answered_by("items", Items.refresh_items)
    delete_items = _answered_by("items", Items.delete_items)
    list_items_with_vectors = _answered_by("items", Items.list_items_with_vectors)
    item_owners = _answered_by("items", Items.item_owners)
    newest_items = _answered_by("item_search", ItemSearch.newest_items)
    nearest_items = _answered_by("item_search", ItemSearch.nearest_items)
    item_namespaces = _answered_by("item_search", ItemSearch.item_namespaces)
    embed_query = _answered_by("core", StoreCore.embed_query)

    park_run = _answered_by("runs", ParkedRuns.park_run)
    parked_runs = _answered_by("runs", ParkedRuns.parked_runs)
    drop_parked_run = _answered_by("runs", ParkedRuns.drop_parked_run)

    claim_request_key = _answered_by("requests", Requests.claim_request_key)

    collect_garbage = _answered_by("gc", GarbageCollector.collect_garbage)

    delete_user = _answered_by("users", Users.delete_user)
    export_user = _answered_by("users", Users.export_user)
    agents = _answered_by("users", Users.agents)

    async def memory_vectors(self, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
        """The stored vectors of `memories` (store/redis/search_relevances.py `stored_vectors`); those
        a search just returned, as it read them."""
        known = self.search.found_vectors(memories)
        return {**known, **await stored_vectors(self.core, [memory for memory in memories if memory.id not in known])}

    async def reset(self) -> int:
        removed = await self.users.reset()
        await self.ensure_indexes()  # the key-layout marker again, so this store's next start sees its layout
        return removed


async def open_store(
    settings: Settings | None = None,
    *,
    embeddings: Embeddings | None = None,
    key_prefix: str | None = None,
) -> RedisMemoryStore:
    """Connect to REDIS_URL (or start the embedded Redis Stack) and return a ready store."""
    from memlane.store.cluster.client import CLUSTER_HELP, cluster_client, wants_cluster
    from memlane.store.embedded.server import resolve_redis_url
    from memlane.store.redis.connections import connection_pool

    settings = settings or get_settings()
    url = await asyncio.to_thread(resolve_redis_url, settings.store)
    if wants_cluster(url, store=settings.store):
        client: Any = cluster_client(url, store=settings.store)
        try:
            await client.initialize()  # reads the slot map: fails here when no node answers
            await client.ping()
        except (RedisError, RedisClusterException, OSError) as error:
            await client.aclose()
            raise RedisUnavailable(
                f"the Redis Cluster at {url.split('@')[-1]} did not answer ({error}); {CLUSTER_HELP}"
            ) from error
    else:
        # a blocking pool: a burst of chats waits for a free connection instead of failing at once
        client = aioredis.Redis.from_pool(connection_pool(url, store=settings.store))
        try:
            await client.ping()
        except (RedisError, OSError) as error:
            await client.aclose()
            raise RedisUnavailable(
                f"Redis at {url.split('@')[-1]} did not answer ({error}); set REDIS_URL to a running Redis 8 "
                "or Redis Stack, or unset it to use the embedded Redis Stack (`memlane redis start`)"
            ) from error
    embeddings = embeddings or get_embeddings(store=settings.store, models=settings.models)
    store = RedisMemoryStore(
        client,
        embeddings,
        store=settings.store,
        search=settings.search,
        privacy=settings.privacy,
        limits=settings.limits,
        retention=settings.retention,
        models=settings.models,
        recall=settings.recall,
        key_prefix=key_prefix,
    )
    store.url = url
    await store.ensure_indexes()
    return store
