"""`StoreCore`: what every part of the Redis store shares.

One connection, one key layout (`schema.KeyLayout`), the settings' parts it reads, the embedder behind its
circuit breaker, the memory index and the zone dates are read in; and the helpers every
part calls through: a Redis call whose failure becomes a store error that says what to do,
an embedding call through the breaker, and the masking and size check of what enters.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import InitVar, dataclass, field
from datetime import tzinfo
from typing import Any, TypeVar

import redis.asyncio as aioredis
from langchain_core.embeddings import Embeddings
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redisvl.exceptions import RedisSearchError
from redisvl.index import AsyncSearchIndex
from redisvl.schema import IndexSchema

from memlane.config import (
    LimitsSettings,
    ModelSettings,
    PrivacySettings,
    RecallSettings,
    RetentionSettings,
    SearchSettings,
    StoreSettings,
    similarity_floor,
)
from memlane.store.cluster.client import cluster_is_away, is_cluster, is_connection_race
from memlane.store.cluster.indexes import SearchNotes, ShardIndexes
from memlane.store.errors import EmbeddingsUnavailable, InputTooLarge, RedisUnavailable, StoreError
from memlane.store.models.breaker import CircuitBreaker, CircuitOpen
from memlane.store.models.embeddings import embed_passages, embedding_dims
from memlane.store.schema import KeyLayout, memory_schema
from memlane.store.scopes import split_user_id
from memlane.store.text.private_data import redact
from memlane.store.text.time_words import resolve_timezone

T = TypeVar("T")


def as_text(value: Any) -> str:
    """A Redis reply value as text (bytes decoded, None as "")."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def unavailable(error: Exception) -> StoreError:
    """The store error for a failed Redis call: a busy connection pool is not a Redis that went away."""
    from redis.exceptions import MaxConnectionsError

    from memlane.store.redis.connections import pool_exhausted

    if isinstance(error, MaxConnectionsError):
        return pool_exhausted(error)
    if cluster_is_away(error):
        return RedisUnavailable(
            f"the Redis Cluster is failing over or moving slots ({type(error).__name__}: {error}); "
            "try again in a few seconds (a save is tried again by itself)"
        )
    return RedisUnavailable(
        f"Redis stopped answering ({error}); check that it runs and REDIS_URL points at it, "
        "or unset REDIS_URL to use the embedded Redis Stack"
    )


@dataclass(eq=False, repr=False)
class StoreCore:
    """The connection and keyspace the store's parts share, and the settings they read: the parts
    read `search`, `privacy`, `limits` and `retention` on each call; what is derived from `store`,
    `models` (the embedder's breaker) and `limits.max_id_chars` is fixed when the store is made."""

    client: aioredis.Redis  # or a `redis.asyncio.RedisCluster` (store/cluster/client.py)
    embeddings: Embeddings
    store: StoreSettings
    search: SearchSettings
    privacy: PrivacySettings
    limits: LimitsSettings
    retention: RetentionSettings
    models: ModelSettings
    recall: RecallSettings  # its similarity floor: what a search's relevance is rescaled from
    key_prefix: InitVar[str | None] = None
    layout: KeyLayout = field(init=False)
    # shared by every embedding call of this store: a down embedder is not waited on each time
    embedder_breaker: CircuitBreaker = field(init=False)
    dims: int = field(init=False)
    schema: IndexSchema = field(init=False)
    index: AsyncSearchIndex = field(init=False)
    zone: tzinfo = field(init=False)  # what "April 27th" and "昨天" are read in
    # on a cluster: the index on each primary (a user's search goes to the owner of the user's slot)
    shards: ShardIndexes | None = field(init=False)
    # when a call last got its reply (time.monotonic()): see `answered_within`
    last_answer: float = field(init=False, default=float("-inf"))

    def __post_init__(self, key_prefix: str | None) -> None:
        self.embedder_breaker = CircuitBreaker.from_settings("the embedder", models=self.models)
        self.layout = KeyLayout(key_prefix or self.store.key_prefix, max_id_chars=self.limits.max_id_chars)
        self.dims = embedding_dims(self.embeddings)
        self.schema = memory_schema(
            self.layout,
            self.dims,
            self.store.metadata_fields,
            datatype=self.store.vector_datatype,
            algorithm=self.store.vector_index,
        )
        self.index = AsyncSearchIndex(self.schema, redis_client=self.client)
        self.zone = resolve_timezone(self.store.timezone)
        self.shards = (
            ShardIndexes(
                self.client,
                self.schema,
                self.layout,
                wait_seconds=self.store.redis_cluster_index_wait_seconds,
                rebuild_batch=self.store.redis_cluster_rebuild_batch,
                rebuild_pause_seconds=self.store.redis_cluster_rebuild_pause_seconds,
            )
            if is_cluster(self.client)
            else None
        )

    @property
    def similarity_floor(self) -> float:
        """Cosine similarity of unrelated texts for this store's embeddings (recall_similarity_floor)."""
        return similarity_floor(recall=self.recall, store=self.store)

    async def on_user_index(
        self,
        user_id: str,
        call: Callable[[AsyncSearchIndex], Awaitable[T]],
        notes: SearchNotes | None = None,
        *,
        reads_index: bool = True,
        both: Callable[[AsyncSearchIndex, AsyncSearchIndex | None], Awaitable[T]] | None = None,
    ) -> T:
        """`call` with the memory index that holds the user's memories: the one index of a
        standalone Redis, or the index on the primary that owns the user's slot on a cluster (what
        it could not search in full is added to `notes`). `reads_index=False`: the call reads only
        the user's keys through the index's client, and need not wait for an index still reading.
        `both`: the call over the two nodes' indexes while the user's slot migrates between them
        (store/cluster/moving_slot.py; without it such a call waits for the move)."""
        if self.shards is None:
            answer: T = await self.run(call(self.index))
        else:
            answer = await self.run(
                self.shards.on_owner(self.layout.slot_key(user_id), call, notes, reads_index=reads_index, both=both)
            )
        return answer

    # Redis calls -------------------------------------------------------------------------
    def answered_within(self, seconds: float) -> bool:
        """Whether a call got its reply in the last `seconds`: a process whose calls queue for a
        connection still hears from Redis, a frozen Redis says nothing."""
        return time.monotonic() - self.last_answer <= seconds

    async def run(self, coro: Any) -> Any:
        try:
            result = await coro
            self.last_answer = time.monotonic()
            return result
        except (RedisConnectionError, RedisTimeoutError, OSError) as error:
            raise unavailable(error) from error
        except RedisSearchError as error:  # RedisVL wraps the connection error
            if isinstance(error.__cause__, (RedisConnectionError, RedisTimeoutError, OSError)):
                raise unavailable(error.__cause__) from error
            if self.shards is not None and error.__cause__ is not None and cluster_is_away(error.__cause__):
                raise unavailable(error.__cause__) from error
            raise
        except AttributeError as error:
            if self.shards is not None and is_connection_race(error):
                raise unavailable(
                    RedisConnectionError(
                        f"a cluster node's connection was closed under the call, or the call was sent on to a node "
                        f"the client does not know yet ({error})"
                    )
                ) from error
            raise
        except Exception as error:  # a cluster failing over or resharding: Redis away, try again shortly
            if self.shards is not None and cluster_is_away(error):
                raise unavailable(error) from error
            raise

    async def queue_script(self, pipe: Any, script: AsyncScript, keys: list[str], args: list[Any]) -> None:
        """Queue `script` on `pipe`: by its SHA on a standalone Redis (loaded before the pipeline
        runs), whole (EVAL) on a cluster, whose client refuses scripts in pipelines and whose nodes
        may not hold it (a promoted replica's script cache starts empty). Its keys share one slot."""
        if self.shards is None:
            await script(keys=keys, args=args, client=pipe)
        else:
            pipe.execute_command("EVAL", script.script, len(keys), *keys, *args)

    async def execute_with_scripts(self, pipe: Any) -> list[Any]:
        """`pipe.execute()` for a pipeline carrying Lua scripts, its connection always given back:
        redis-py (8.1) keeps it when the SCRIPT EXISTS that precedes such a pipeline fails (Redis
        went away), and every connection the pool held at that moment would leak for good."""
        try:
            replies: list[Any] = await self.run(pipe.execute())
            return replies
        finally:
            await pipe.reset()

    # embedding calls -----------------------------------------------------------------------
    async def _embed(self, make_call: Callable[[], Awaitable[T]]) -> T:
        """An embedding call through the embedder's circuit breaker; any failure of it becomes
        `EmbeddingsUnavailable` (a store error the callers degrade on)."""
        try:
            return await self.embedder_breaker.call(make_call)
        except CircuitOpen as error:
            raise EmbeddingsUnavailable(str(error)) from error
        except Exception as error:
            raise EmbeddingsUnavailable(
                f"the embedder failed ({type(error).__name__}: {error}); search uses keywords only "
                "and new messages are indexed once it answers again"
            ) from error

    async def embed_documents(self, texts: list[str], owner: str = "") -> list[list[float]]:
        """Stored texts embedded; `owner` (the user they belong to) takes its turn among owners."""
        return await self._embed(lambda: embed_passages(self.embeddings, texts, owner))

    async def embed_query(self, text: str) -> list[float]:
        return await self._embed(lambda: self.embeddings.aembed_query(text))

    async def note_scopes(self, user_ids: Any) -> None:
        """Add the agents' scopes among `user_ids` (store users) to their users' `layout.scopes`
        sets, before their records are written: exporting a user then finds every scope."""
        pipe = None
        for user_id in dict.fromkeys(user_ids):
            _, agent = split_user_id(user_id)
            if agent is not None:
                pipe = pipe or self.client.pipeline(transaction=False)
                pipe.sadd(self.layout.scopes(user_id), agent)
        if pipe is not None:
            await self.run(pipe.execute())

    # what enters the store: private data masked, sizes checked -------------------------------
    def redact(self, text: str) -> str:
        """`text` with private data masked (`privacy_redaction`; see store/text/private_data.py)."""
        return redact(text, self.privacy.redaction)

    def redact_value(self, value: Any) -> Any:
        """A JSON value with every string inside it masked as a text is (metadata, an item's value):
        private data is kept out of whatever is stored, not only out of a record's text."""
        if self.privacy.redaction == "off":
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self.redact_value(inner) for key, inner in value.items()}
        if isinstance(value, list):
            return [self.redact_value(inner) for inner in value]
        return value

    def check_text_size(self, text: str, what: str) -> None:
        limit = self.limits.max_message_chars
        if len(text) > limit:
            raise InputTooLarge(
                f"{what} has {len(text):,} characters, more than MEMLANE_MAX_MESSAGE_CHARS ({limit:,}); "
                "shorten it or raise the setting"
            )


@dataclass(eq=False, repr=False)
class StorePart:
    """One part of the store (messages, profile, search …): it reaches Redis, the settings' parts
    and the key layout through the shared core, and other parts' records through those parts."""

    core: StoreCore

    @property
    def client(self) -> aioredis.Redis:
        return self.core.client

    @property
    def layout(self) -> KeyLayout:
        return self.core.layout

    async def _run(self, coro: Any) -> Any:
        return await self.core.run(coro)
