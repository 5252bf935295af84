"""The store's Redis connection pool: bounded, and calls wait for a free connection.

redis-py's default pool fails a call at once ("Too many connections") when every
connection is busy; with one recall holding about five connections, a few dozen chats
at once used to fail while Redis itself was idle. The pool here holds at most
`redis_max_connections`; a call beyond them waits up to `redis_pool_timeout_seconds`,
and only then fails, with `RedisPoolExhausted` saying which setting to raise.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import BlockingConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError

from memlane.config import Settings
from memlane.store.base import StoreError

# redis-py's BlockingConnectionPool raises a plain ConnectionError with this text when its wait ends
_NO_FREE_CONNECTION = "No connection available"


class RedisPoolExhausted(StoreError):
    """Every connection of the store's pool stayed busy for the whole wait: Redis is up, this process is busy."""


class WaitingConnectionPool(BlockingConnectionPool):
    """A blocking pool whose "no free connection" is a `MaxConnectionsError`, not a broken-Redis error."""

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().get_connection(*args, **kwargs)
        except RedisConnectionError as error:
            if isinstance(error, MaxConnectionsError) or _NO_FREE_CONNECTION not in str(error):
                raise
            raise MaxConnectionsError(
                f"all {self.max_connections} connections stayed busy for {self.timeout:g} s"
            ) from error


def connection_pool(url: str, settings: Settings) -> WaitingConnectionPool:
    """The store's pool for `url`, sized and timed by the settings."""
    return WaitingConnectionPool.from_url(
        url,
        max_connections=settings.redis_max_connections,
        timeout=settings.redis_pool_timeout_seconds,
        socket_timeout=30,
        socket_connect_timeout=5,
        health_check_interval=30,
    )


def pool_exhausted(error: MaxConnectionsError) -> RedisPoolExhausted:
    return RedisPoolExhausted(
        f"every Redis connection of this process is busy ({error}); Redis itself answers. Raise "
        "MEMLANE_REDIS_MAX_CONNECTIONS (more connections) or MEMLANE_REDIS_POOL_TIMEOUT_SECONDS "
        "(a longer wait), or spread the chats over more processes"
    )
