"""The store's Redis connection pool: bounded, and calls wait for a free connection.

redis-py's default pool fails a call at once ("Too many connections") when every
connection is busy; with one recall holding about five connections, a few dozen chats
at once used to fail while Redis itself was idle. The pool here holds at most
`redis_max_connections`; a call beyond them waits up to `redis_pool_timeout_seconds`,
and only then fails, with `RedisPoolExhausted` saying which setting to raise.

A call that meets a broken connection is tried once more on a new one. After Redis restarts,
every connection the pool kept points at the dead server, and redis-py given a pool retries
nothing (the client's default retry applies only to the pool it makes itself): the first call
on each kept connection answered 503 until the pool had cycled through them (issue 34, item 7).
Only `ConnectionError` is retried: a `TimeoutError` (a frozen Redis) would hold the call for
twice the socket timeout.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import BlockingConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memlane.config import StoreSettings
from memlane.store.errors import RedisUnavailable, StoreError

# redis-py's BlockingConnectionPool raises a plain ConnectionError with this text when its wait ends
_NO_FREE_CONNECTION = "No connection available"


class RedisPoolExhausted(StoreError):
    """Every connection of the store's pool stayed busy for the whole wait: Redis is up, this process is busy."""


class WaitingConnectionPool(BlockingConnectionPool):
    """A blocking pool whose "no free connection" is a `MaxConnectionsError`, not a broken-Redis error."""

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]  # untyped upstream
        except RedisConnectionError as error:
            if isinstance(error, MaxConnectionsError) or _NO_FREE_CONNECTION not in str(error):
                raise
            raise MaxConnectionsError(
                f"all {self.max_connections} connections stayed busy for {self.timeout:g} s"
            ) from error


def connection_pool(url: str, *, store: StoreSettings) -> WaitingConnectionPool:
    """The store's pool for `url`, sized and timed by the store's settings."""
    return WaitingConnectionPool.from_url(
        url,
        max_connections=store.redis_max_connections,
        timeout=store.redis_pool_timeout_seconds,
        socket_timeout=30,
        socket_connect_timeout=5,
        health_check_interval=30,
        retry=stale_connection_retry(),
    )


def stale_connection_retry() -> Retry:
    """One more try, at once, on a new connection, for a call whose connection broke (a Redis that
    restarted closed it); not for a timeout. Reconnecting happens inside the retry (redis-py
    disconnects the failed connection before trying again), so no backoff is needed."""
    return Retry(NoBackoff(), retries=1, supported_errors=(RedisConnectionError,))


def pool_exhausted(error: MaxConnectionsError) -> RedisPoolExhausted:
    return RedisPoolExhausted(
        f"every Redis connection of this process is busy ({error}); Redis itself answers. Raise "
        "MEMLANE_REDIS_MAX_CONNECTIONS (more connections) or MEMLANE_REDIS_POOL_TIMEOUT_SECONDS "
        "(a longer wait), or spread the chats over more processes"
    )


def redis_is_away(error: BaseException) -> bool:
    """Whether `error` says Redis cannot be reached now (restarting, loading its data, every
    connection busy, or a cluster failing over or moving slots), so the same call may succeed a
    little later."""
    from memlane.store.cluster.client import cluster_is_away

    return isinstance(
        error, (RedisUnavailable, RedisPoolExhausted, RedisConnectionError, RedisTimeoutError, OSError)
    ) or cluster_is_away(error)
