"""The store's Redis connections: bounded, and calls wait their turn for one.

redis-py's default pool fails a call at once ("Too many connections") when every
connection is busy; with one recall holding about five connections, a few dozen chats
at once used to fail while Redis itself was idle. A store holds at most
`redis_max_connections` connections at once (`ConnectionGate`; on a cluster, that many calls
in flight, each holding at most one connection per node). A call beyond them waits its turn,
first come first served, and fails (`RedisPoolExhausted`, saying which setting to raise) only
when no call let go of a connection for `redis_pool_timeout_seconds`: a burst of 60,000 calls
waits behind the calls before it, however long the queue, while a pool held by calls that
never end is said.

A new connection's connect timeout counts only time the event loop was free to hear the
answer (`patient`): when thousands of calls start at once, the loop spends
seconds starting them all before it reads the first socket, and every connection a cold
pool was opening used to fail with "Timeout connecting to server" (49 of 60,000 gets on an
idle machine; on a busy one the queue behind them ran past the pool timeout, 42,538).

A call that meets a broken connection is tried once more on a new one. After Redis restarts,
every connection the pool kept points at the dead server, and redis-py given a pool retries
nothing (the client's default retry applies only to the pool it makes itself): the first call
on each kept connection answered 503 until the pool had cycled through them (issue 34, item 7).
Only `ConnectionError` is retried: a `TimeoutError` (a frozen Redis) would hold the call for
twice the socket timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

from redis.asyncio import BlockingConnectionPool
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError
from redis.exceptions import TimeoutError as RedisTimeoutError

from memlane.config import StoreSettings
from memlane.store.errors import RedisUnavailable, StoreError

Deployment = Literal["standalone", "cluster"]
Answer = TypeVar("Answer")
# how often a connect under way checks its time: a check that comes later than this was the loop's delay
_LISTENING_SLICE_SECONDS = 0.1


class RedisPoolExhausted(StoreError):
    """No call let go of a Redis connection for the whole wait: Redis is up, this process is busy."""


class NoFreeConnection(MaxConnectionsError):
    """`ConnectionGate`'s wait ended: no connection was let go of for its timeout."""

    def __init__(self, message: str, *, deployment: Deployment) -> None:
        super().__init__(message)
        self.deployment = deployment


class ConnectionGate:
    """At most `limit` calls hold a Redis connection at once; the others wait their turn, first
    come first served, and fail (`NoFreeConnection`) only when no holder let go for `timeout`
    seconds of time the event loop was free to hear it (as `within_listening_time` counts: a
    burst that keeps the loop busy starting its calls is not a stuck pool). One gate per event
    loop's client: its futures belong to that loop."""

    def __init__(self, limit: int, timeout: float | None, *, deployment: Deployment) -> None:
        self.limit = limit
        self.timeout = timeout
        self.deployment = deployment
        self._holders = 0
        # each waiting call's turn, and the listening clock when it began to wait
        self._turns: deque[tuple[asyncio.Future[None], float]] = deque()
        self._listening = 0.0  # seconds the loop could hear a release while calls waited
        self._released_at = 0.0  # the listening clock at the last release
        self._watch: asyncio.Task[None] | None = None

    async def acquire(self) -> None:
        if self._holders < self.limit and not self._turns:
            self._holders += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns.append((turn, self._listening))
        if self.timeout is not None and self._watch is None:
            self._watch = asyncio.ensure_future(self._watch_the_wait(self.timeout))
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self.release()  # the turn came as this call gave up: it goes to the next in line
            raise

    def release(self) -> None:
        self._released_at = self._listening
        while self._turns:
            turn, _ = self._turns.popleft()
            if not turn.done():
                turn.set_result(None)  # the holder's place passes straight to the next in line
                return
        self._holders = max(0, self._holders - 1)

    async def _watch_the_wait(self, timeout: float) -> None:
        """While calls wait: the listening clock, and the calls whose wait saw no release for `timeout`."""
        try:
            while self._turns:
                began = time.monotonic()
                await asyncio.sleep(_LISTENING_SLICE_SECONDS)
                self._listening += min(time.monotonic() - began, _LISTENING_SLICE_SECONDS)
                while self._turns:  # oldest first: once one has time left, the later ones have too
                    turn, since = self._turns[0]
                    if not turn.done() and self._listening - max(since, self._released_at) < timeout:
                        break
                    self._turns.popleft()
                    if not turn.done():
                        turn.set_exception(NoFreeConnection(self._stuck(timeout), deployment=self.deployment))
        finally:
            self._watch = None

    def _stuck(self, timeout: float) -> str:
        if self.deployment == "cluster":
            return f"all {self.limit} calls in flight on the cluster held their connections for {timeout:g} s"
        return f"all {self.limit} connections stayed busy for {timeout:g} s"


async def within_listening_time(work: Awaitable[Answer], seconds: float) -> Answer:
    """`work`'s answer, or TimeoutError once `seconds` passed during which the event loop was free to
    hear it. A stretch the loop spent on other work in one go (thousands of calls starting at once)
    does not count: a check that comes late counts as on time."""
    task = asyncio.ensure_future(work)
    counted = 0.0
    try:
        while counted < seconds:
            wait = min(_LISTENING_SLICE_SECONDS, seconds - counted)
            began = time.monotonic()
            await asyncio.wait({task}, timeout=wait)
            if task.done():
                return task.result()
            counted += min(time.monotonic() - began, wait)
        raise TimeoutError(f"no answer within {seconds:g} s")
    finally:
        if not task.done():
            task.cancel()


# the patient class made of each connection class (one class each, not one per pool)
_PATIENT_CLASSES: dict[type[AbstractConnection], type[AbstractConnection]] = {}


class _PatientConnect:
    """Mixed into a redis-py connection class: its connect timeout counts listening time only.

    The socket is opened in a task of its own (`within_listening_time`), so a caller cancelled
    while it waits (a readiness probe's or a recall's budget ending) may leave behind a socket the
    task opened after all, without the handshake that follows it in the caller (AUTH, and the
    parser's `on_connect`). redis-py takes a connection with a socket for a connected one: its
    next user sent its command unauthenticated and read the reply through a parser never told of
    the socket, "AttributeError: '_AsyncHiredisParser' object has no attribute '_connected'"
    (287 turns of bench/cluster.py's failover drill). Such a socket is closed at once, and the
    connection connects again, whole, on its next use."""

    socket_connect_timeout: float | None
    _reader: Any
    _writer: Any

    async def _connect(self) -> None:
        limit = self.socket_connect_timeout
        connect = super()._connect  # type: ignore[misc]  # the connection class this is mixed into
        if limit is None:
            await connect()
            return
        self.socket_connect_timeout = None  # redis-py's own timeout is wall-clock time
        try:
            await within_listening_time(connect(), limit)
        except BaseException:
            self._drop_a_socket_left_behind()
            raise
        finally:
            self.socket_connect_timeout = limit

    def _drop_a_socket_left_behind(self) -> None:
        """Close the socket the connect task opened after its caller gave up (none: nothing to do)."""
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()


def patient(connection_class: type[AbstractConnection]) -> type[AbstractConnection]:
    """`connection_class` (TCP, TLS or a Unix socket) whose connect timeout counts listening time only."""
    if issubclass(connection_class, _PatientConnect):
        return connection_class
    made = _PATIENT_CLASSES.get(connection_class)
    if made is None:
        made = _PATIENT_CLASSES[connection_class] = type(
            f"Patient{connection_class.__name__}", (_PatientConnect, connection_class), {}
        )
    return made


class WaitingConnectionPool(BlockingConnectionPool):
    """A pool whose calls wait their turn at a `ConnectionGate` (its own, or a cluster client's,
    shared by the cluster's per-node search clients), with patient connects."""

    def __init__(self, *, gate: ConnectionGate | None = None, **kwargs: Any) -> None:
        connection_class: type[AbstractConnection] = kwargs.get("connection_class") or _default_connection_class()
        kwargs["connection_class"] = patient(connection_class)
        super().__init__(**kwargs)
        self.gate = gate or ConnectionGate(self.max_connections, self.timeout, deployment="standalone")
        self.timeout = self.gate.timeout
        self.max_connections = min(self.max_connections, self.gate.limit)

    async def get_connection(self, *args: Any, **kwargs: Any) -> AbstractConnection:
        await self.gate.acquire()
        try:
            async with self._lock:
                connection: AbstractConnection = self.get_available_connection()  # type: ignore[no-untyped-call]
        except BaseException:
            self.gate.release()
            raise
        try:
            await self.ensure_connection(connection)
        except BaseException:
            await self.release(connection)
            raise
        return connection

    async def release(self, connection: AbstractConnection) -> None:
        try:
            # the plain pool's release: nobody waits on BlockingConnectionPool's condition here
            await super(BlockingConnectionPool, self).release(connection)
        finally:
            self.gate.release()


def _default_connection_class() -> type[AbstractConnection]:
    from redis.asyncio.connection import Connection

    return Connection


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
    """The store error for a call that found no free connection, with the advice for its deployment."""
    if isinstance(error, NoFreeConnection) and error.deployment == "cluster":
        return RedisPoolExhausted(
            f"every Redis Cluster connection this process may use is busy ({error}); the cluster itself "
            "answers. Raise MEMLANE_REDIS_MAX_CONNECTIONS (more calls at once, each holding at most one "
            "connection per node) or MEMLANE_REDIS_POOL_TIMEOUT_SECONDS (a longer wait), or spread the "
            "chats over more processes"
        )
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
