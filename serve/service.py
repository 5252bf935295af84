"""What `memlane serve` runs on: the store, the memory scheduler and its worker, the saver of
turns, the upstream HTTP client, and the metrics they feed."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, cast

import httpx
from fastapi import Depends, Request
from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import SecretStr

from memlane import (
    MemoryRunResult,
    MemoryScheduler,
    MemoryStore,
    Settings,
    StoreError,
    load_profile_configs,
    open_store,
)
from memlane.change_events import ChangeEventStore
from memlane.doors import ProfileConfigs, memory_context
from memlane.import_jobs import ImportJobs
from memlane.importing import import_messages
from memlane.models import memory_model_from_settings
from memlane.persistence import MemoryAgentContext, MemoryPersistence
from memlane.recall import RecallParts
from memlane.serve.config import ServeConfig, ServeConfigError
from memlane.serve.metrics import ServeMetrics
from memlane.store.records import Message
from memlane.turns import RecallTimedOut, TurnService
from memlane.webhooks import WebhookOutbox, open_outbox

logger = logging.getLogger(__name__)


class ServeService:
    """What the app runs on: the store, the scheduler and its worker, the saver, the upstream client."""

    def __init__(
        self,
        config: ServeConfig,
        settings: Settings,
        *,
        store: MemoryStore | None = None,
        memory_model: BaseChatModel | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.store: MemoryStore | None = store
        self._owns_store = store is None
        self.memory_model = memory_model or configured_memory_model(config, settings)
        self.metrics = ServeMetrics()
        self.scheduler: MemoryScheduler | None = None
        self.turns: TurnService | None = None
        self.upstream: httpx.AsyncClient | None = None
        self.persona_settings = {
            persona_id: persona.settings(settings) for persona_id, persona in config.personas.items()
        }
        # checked now, at start-up: a bad key of the settings' file or of this file's sections is named
        try:
            self.profile_configs = config.profile_configs(
                load_profile_configs(settings.graph.profile_config)
                if settings.graph.profile_config
                else ProfileConfigs()
            )
        except ValueError as error:
            raise ServeConfigError(f"{settings.serve.config_file or 'the configuration'}: {error}") from None
        for persona in config.personas.values():  # resolved now: each key is masked by value from the start
            persona.api_key(settings)
        for note in config.key_notes(settings):
            logger.warning("configuration: %s", note)
        self._add_context: Any = None  # the memory graph's context for `remember_at_once`, made at its first run
        self._run_locks: dict[str, asyncio.Lock] = {}  # one run at once per user, in this process
        self.add_runs: dict[str, tuple[str, asyncio.Task[Any]]] = {}  # add(wait=False)'s runs: id → (user, task)
        self.imports = ImportJobs(self.require_store, batch_messages=settings.imports.batch_messages)
        self.webhooks: WebhookOutbox | None = None  # when a tenant configures webhooks (`start`)

    async def start(self) -> None:
        if self.store is None:
            self.store = await open_store(self.settings)
        targets = {tenant: config.webhooks for tenant, config in self.config.tenants.items() if config.webhooks}
        if targets:  # every door's changes, the memory runs' too, go through the store that tells them
            self.webhooks = await open_outbox(self.store, targets, settings=self.settings)
            self.store = cast(MemoryStore, ChangeEventStore(self.store, self.webhooks.emit))
        self.turns = await TurnService.started(
            self.store,
            recall_parts=RecallParts.of(self.settings),
            turns=self.settings.turns,
            context=memory_context(self.settings, self.store, self.memory_model, profile_configs=self.profile_configs)
            if self.memory_model is not None
            else None,
            on_result=self._on_result,
            on_queued=self._on_queued,
            on_saved=self._on_saved,
            on_failed=self._on_failed,
        )
        self.scheduler = self.turns.scheduler
        self.upstream = httpx.AsyncClient(
            timeout=httpx.Timeout(
                self.settings.models.llm_timeout_seconds, connect=min(10.0, self.settings.models.llm_timeout_seconds)
            ),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    @property
    def started_upstream(self) -> httpx.AsyncClient:
        """The upstream HTTP client, once the service has started."""
        if self.upstream is None:
            raise RuntimeError("memlane serve's service is not started: its lifespan starts it")
        return self.upstream

    async def remember_at_once(
        self, store_user: str, messages: Sequence[Message]
    ) -> tuple[int, MemoryRunResult | None]:
        """Store `messages` and run the memory graph over the user's unremembered turns in this
        process (mem0's `add`), once no queued run of the user's is under way; one run of a user's
        at a time. (new messages, the run's result or None when nothing was left to remember)."""
        if self.memory_model is None:
            raise StoreError("no memory model")  # the route says what to configure first
        deadline = time.monotonic() + 60
        while self.scheduler is not None and await self.scheduler.user_busy(store_user):
            if time.monotonic() > deadline:
                raise StoreError("a memory run of the user has been working for a minute; try again in a moment")
            await asyncio.sleep(0.1)
        if self._add_context is None:  # one context: its model breaker counts every add's failures together
            self._add_context = memory_context(
                self.settings, self.require_store(), self.memory_model, profile_configs=self.profile_configs
            )
        async with self._run_locks.setdefault(store_user, asyncio.Lock()):
            stored, run = await import_messages(self.require_store(), store_user, messages, context=self._add_context)
        return stored, run

    def start_add_run(self, store_user: str, work: Any) -> str:
        """Run `work` (a coroutine) in the background for an `add` that does not wait; its id, for
        `add_run`. The last 1,000 runs are kept, by this process."""
        run_id = uuid.uuid4().hex
        self.add_runs[run_id] = (store_user, asyncio.create_task(work, name=f"memlane-add-{run_id}"))
        for old in list(self.add_runs)[:-1000]:
            if self.add_runs[old][1].done():
                del self.add_runs[old]
        return run_id

    def add_run(self, store_user: str, run_id: str) -> asyncio.Task[Any] | None:
        """The task of an `add` run this process started for the user, or None."""
        owner, task = self.add_runs.get(run_id, ("", None))
        return task if owner == store_user else None

    async def aclose(self) -> None:
        running = [task for _, task in self.add_runs.values() if not task.done()]
        if running:
            await asyncio.wait(running, timeout=10)
        await self.imports.close()  # what a stopped job stored stays; the reindex sweep indexes the rest
        try:
            if self.upstream is not None:
                await self.upstream.aclose()
            if self.turns is not None:
                await self.turns.aclose(10)
        finally:
            if self.webhooks is not None:  # what is still queued waits on the queue for the next start
                await self.webhooks.__aexit__(None, None, None)
            if self.store is not None and self._owns_store:
                await self.store.aclose()

    @property
    def persistence(self) -> MemoryPersistence | None:
        return self.turns.persistence if self.turns is not None else None

    async def remember_now(self, user_id: str) -> bool | None:
        """Queue a memory run over the user's unprocessed messages now (`TurnService.remember_now`)."""
        return await self.require_turns().remember_now(user_id)

    async def end_session(self, user_id: str, session_id: str) -> bool | None:
        """The session ended (`TurnService.end_session`)."""
        return await self.require_turns().end_session(user_id, session_id)

    def require_turns(self) -> TurnService:
        if self.turns is None:
            raise StoreError("the service is starting; try again in a moment")
        return self.turns

    def require_store(self) -> MemoryStore:
        if self.store is None:
            raise StoreError("the store is not open yet; the service is starting")
        return self.store

    async def _on_saved(self, identity: MemoryAgentContext, turn: list, queued: bool) -> None:
        self.metrics.turns.labels("saved").inc()

    async def _on_queued(self, user_id: str) -> None:
        # only runs this process put on the queue: a notify folded into a run in progress is none
        self.metrics.memory_runs.labels("queued").inc()

    async def _on_failed(self, identity: MemoryAgentContext, error: BaseException) -> None:
        if isinstance(error, RecallTimedOut):  # a reply without memory, not a turn lost
            self.metrics.recall_timeouts.inc()
            return
        self.metrics.turns.labels("failed").inc()

    async def _on_result(self, user_id: str, outcome: MemoryRunResult | BaseException) -> None:
        self.metrics.memory_runs.labels("failed" if isinstance(outcome, BaseException) else "done").inc()


def configured_memory_model(config: ServeConfig, settings: Settings) -> BaseChatModel | None:
    """The memory graph's model: the file's [memory] upstream, else the settings' (None when neither)."""
    if config.memory is None:
        return memory_model_from_settings(settings.models)
    key = config.memory.api_key(settings)
    return memory_model_from_settings(
        settings.models.model_copy(
            update={
                "memory_model": config.memory.model,
                "openai_base_url": config.memory.resolved_base_url(settings),
                "openai_api_key": SecretStr(key or "not-needed"),
            }
        )
    )


def service_of(request: Request) -> ServeService:
    """The service of the app answering `request` (create_app keeps it in the app's state)."""
    return request.app.state.memlane


def store_of(request: Request) -> MemoryStore:
    """The store of the service answering `request` (503 while it is starting)."""
    return service_of(request).require_store()


async def _service_dependency(request: Request) -> ServeService:
    return service_of(request)


async def _store_dependency(request: Request) -> MemoryStore:
    return store_of(request)


# what a route takes by dependency (`service: Service`, `store: Store`): called alone, a handler is
# given them. The dependencies are coroutines: FastAPI runs a plain function's in its thread pool,
# two thread hand-offs a request for a lookup (about a tenth of serve's event loop at 10 searching
# clients, profiled)
Service = Annotated[ServeService, Depends(_service_dependency)]
Store = Annotated[MemoryStore, Depends(_store_dependency)]
