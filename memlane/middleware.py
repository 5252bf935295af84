"""`MemoryMiddleware`: long-term memory for a LangChain 1.x `create_agent` agent, an adapter
over the turn service (memlane/turns.py) that `memlane serve` and the app use too.

Before each model call it recalls what matters for the user's last message and appends it
to the system prompt. After the agent finishes it hands the turn to a background task that
stores it (indexed for search at once) and asks the `MemoryScheduler` whether a memory-graph
run is due, then checks for a topic shift and titles the session, so the reply, streamed or
not, never waits for memory work. When Redis is away the reply goes out without memory, and
the turn's save is tried again until Redis is back (`MEMLANE_SAVE_RETRY_SECONDS`).

Who is talking comes from the run's context (`context=MemoryAgentContext(user_id=..., session_id=...)`,
or any object / dict with those fields) or from `config={"configurable": {"user_id": ..., "session_id": ...}}`.
The hooks are async: run the agent with `ainvoke` / `astream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from memlane.config import Settings, get_settings
from memlane.graph import MemoryScheduler
from memlane.persistence import (  # noqa: F401  (importable from here, where they were first)
    DEFAULT_SESSION,
    FailureCallback,
    IndexBacklog,
    MemoryAgentContext,
    MemoryPersistence,
    MissingUser,
    SaveCallback,
    message_text,
    resolve_identity,
    turn_messages,
)
from memlane.recall import Recall, RecallParts, recall_system_prompt
from memlane.store.ids import clean_text  # noqa: F401  (importable from here, where it was first)
from memlane.store.protocols import MemoryStore
from memlane.turns import TurnService


class MemoryMiddleware(AgentMiddleware):
    """Recall before each model call; store the turn and schedule the memory graph after the agent."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        scheduler: MemoryScheduler | None = None,
        settings: Settings | None = None,
        on_recall: Callable[[Recall], None] | None = None,
        on_saved: SaveCallback | None = None,
        on_failed: FailureCallback | None = None,
        rewrite_model: BaseChatModel | None = None,
        turns: TurnService | None = None,
    ) -> None:
        """rewrite_model: rewrites follow-up questions before recall; default: the scheduler's
        memory model (without either, the cheap rewrite: memlane/query.py). turns: the turn
        service to adapt (the app shares its own), whose parts the toggles default to; by default
        one of its own over the store, with the parts of `settings` (default: the environment's)."""
        super().__init__()
        self.store = store
        if turns is None:
            settings = settings or get_settings()
            turns = TurnService(
                store,
                recall_parts=RecallParts.of(settings),
                turns=settings.turns,
                scheduler=scheduler,
                rewrite_model=rewrite_model,
                on_saved=on_saved,
                on_failed=on_failed,
            )
        self.turns = turns
        self.on_recall = on_recall

    def _identity(self, context: Any) -> MemoryAgentContext:
        """Who the run is for (`resolve_identity`); toggles it leaves unset are the turn service's."""
        return resolve_identity(context, recall=self.turns.recall_parts.recall, turns=self.turns.turn_settings)

    @property
    def persistence(self) -> MemoryPersistence:
        return self.turns.persistence

    @property
    def last_recall(self) -> dict[str, Recall]:
        """Per user: the latest recall, for inspection."""
        return self.turns.last_recall

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        identity = self._identity(request.runtime.context if request.runtime else None)
        if not identity.recall_enabled:
            return await handler(request)
        humans = [m for m in request.messages if isinstance(m, HumanMessage)]
        query = message_text(humans[-1]) if humans else ""
        recalled = await self.turns.recall(identity, query, exclude_texts=[message_text(m) for m in request.messages])
        if recalled is None:
            return await handler(request)
        if self.on_recall is not None:
            self.on_recall(recalled)
        if not recalled.text:
            return await handler(request)
        prompt = recall_system_prompt(request.system_prompt, recalled)
        return await handler(request.override(system_message=SystemMessage(content=prompt)))

    async def aafter_agent(self, state: Any, runtime: Runtime) -> dict[str, Any] | None:
        identity = self._identity(runtime.context)
        self.turns.save(identity, turn_messages(state["messages"], identity))
        return None

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Wait until the turns handed over so far are stored, the scheduler notified and their
        after-reply hooks done."""
        await self.turns.wait_idle(timeout)

    def index_backlog(self) -> IndexBacklog:
        """The turns handed over and not searchable yet (see `MemoryPersistence.index_backlog`)."""
        return self.persistence.index_backlog()
