"""`Memory` and `AsyncMemory`: mem0's calls over memlane, in your process, over the same store and
memory graph as every other door (no second implementation). mem0's documented code runs with
only its import changed:

    from memlane import Memory          # was: from mem0 import Memory

    m = Memory()                        # the model from OPENAI_API_KEY / OPENAI_BASE_URL / MEMLANE_MEMORY_MODEL
    m.add([{"role": "user", "content": "I moved to Lyon"}], user_id="alice")
    m.search("where does she live?", filters={"user_id": "alice"})   # {"results": [...]}

`add` stores the messages (idempotent on their ids) and, with `infer=True`, runs the memory graph
over the user's unremembered turns at once, answering what it added, updated and deleted
(`{"results": [{"id", "memory", "event": "ADD" | "UPDATE" | "DELETE"}]}`); `infer=False` stores
them only (searchable at once, remembered by the next run). Memory ids are the store's
search-memory ids: `profile:<entry>`, `event:<card>`, `message:<turn>`. A call that takes only a
memory id (`get`, `update`, `delete`, `history`) finds its user among those this object has acted
for; `user_id=` names it where it has not. `Memory` has `AsyncMemory`'s methods without `await`.
With relations on, `add`, `search` and `get_all` answer mem0's graph memory `relations` too
(memlane/memory_relations.py). What differs from mem0 on purpose is listed in docs/coming-from.md.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from memlane import memory_relations as graph_answers
from memlane.config import Settings, get_settings
from memlane.config_mem0 import settings_from_mem0_config
from memlane.importing import import_messages, messages_of
from memlane.memory_ops import (
    expire_results,
    get_memory,
    list_memories,
    memory_history,
    run_results,
    stored_results,
    update_memory,
)
from memlane.memory_shapes import (
    answer_count,
    call_scope,
    hit_memory,
    metadata_holds,
    refuse_options,
    require_user,
)
from memlane.store.errors import InvalidInput
from memlane.store.ids import check_id, expiry_time
from memlane.store.protocols import MemoryStore
from memlane.store.records import MemoryKind
from memlane.store.scopes import scoped_user_id, split_user_id
from memlane.sync_twin import SyncTwin
from memlane.tools import existing_note, forget_memory

NO_MODEL = (
    "add(infer=True) runs the memory graph, which needs a model: set OPENAI_API_KEY (OpenAI) or "
    "OPENAI_BASE_URL (an OpenAI-compatible server) and MEMLANE_MEMORY_MODEL, or pass model=... "
    "(any LangChain chat model), or add with infer=False"
)


class AsyncMemory:
    """mem0's calls over a memlane store: `add`, `search`, `get_all`, `get`, `update`, `delete`,
    `delete_all`, `history`, `reset`, and `get_run` for an `add(wait=False)`. `model`: the memory
    model `add(infer=True)` runs the graph with. Every call takes `agent_id`: that agent's own memory
    of the user (store/scopes.py)."""

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        settings: Settings | None = None,
        model: BaseChatModel | Sequence[BaseChatModel] | None = None,
        **store_options: Any,
    ) -> None:
        """`store`: a store to wrap (closed by its owner). Without one, as mem0's `AsyncMemory()`: the
        store the settings name (REDIS_URL, or the embedded Redis Stack) is opened at the first call,
        with the memory model they name unless `model` is given; `aclose` closes it. A list of models
        is a fallback chain: a run whose model fails runs on the next (else MEMLANE_MEMORY_MODELS')."""
        self._store = store
        self.settings = settings or get_settings()  # the store's (the protocol does not declare them)
        self.model: BaseChatModel | None = None
        self._fallbacks: list[BaseChatModel] | None = None  # None: the settings' chain (MEMLANE_MEMORY_MODELS)
        if isinstance(model, Sequence):
            self.model, self._fallbacks = (model[0] if model else None), list(model[1:])
        else:
            self.model = model
        self._owns_store = store is None
        self._store_options = store_options
        self._opening = asyncio.Lock()
        self._runs: dict[str, asyncio.Task[dict[str, Any]]] = {}  # add(wait=False)'s runs, by id
        self._locks: dict[str, asyncio.Lock] = {}  # one memory run of a user's at a time
        self._context: Any = None  # the memory graph's context (`_memory_context`), made at the first run
        self._users: dict[str, None] = {}  # the store users this object acted for, the latest last

    @property
    def store(self) -> MemoryStore:
        if self._store is None:
            raise RuntimeError("the store opens at the first call of an AsyncMemory(); await one first, or `open`")
        return self._store

    async def _opened(self) -> MemoryStore:
        """The store, opened at the first call when this object owns it."""
        if self._store is None:
            async with self._opening:
                if self._store is None:
                    from memlane.models import memory_model_from_settings
                    from memlane.store.redis.store import open_store

                    self.model = self.model or memory_model_from_settings(self.settings.models)
                    self._store = await open_store(self.settings, **self._store_options)
        return self._store

    @classmethod
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        model: BaseChatModel | Sequence[BaseChatModel] | None = None,
        **store_options: Any,
    ) -> AsyncMemory:
        """Open the store (REDIS_URL, or the embedded Redis Stack) and wrap it; `aclose` closes it.
        Without `model`, the memory model the settings name (OPENAI_API_KEY / OPENAI_BASE_URL,
        MEMLANE_MEMORY_MODEL), as `memlane import --remember` picks it; None when none is set."""
        memory = cls(settings=settings, model=model, **store_options)
        await memory._opened()
        return memory

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AsyncMemory:
        """mem0's `AsyncMemory.from_config({...})` (`llm`, `embedder`, `vector_store` ...): what has a
        memlane setting is taken, the rest is left out with a warning (memlane/config_mem0.py); the
        store opens at the first call."""
        settings, _ = settings_from_mem0_config(config, get_settings())
        return cls(settings=settings)

    async def aclose(self) -> None:
        """Wait for the memory runs `add(wait=False)` started, then close the store this object opened."""
        running = [task for task in self._runs.values() if not task.done()]
        if running:
            await asyncio.wait(running)
        if self._owns_store and self._store is not None:
            await self._store.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def add(
        self,
        messages: str | dict[str, Any] | Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        session_id: str | None = None,
        wait: bool = True,
        **mem0_options: Any,
    ) -> dict[str, Any]:
        """Store the messages (a text is one user message) and, with `infer`, remember them now:
        {"results": [{"id", "memory", "event": ADD|UPDATE|DELETE}], "stored": new messages, "event_id"}.
        agent_id: the agent's own memory of the user; run_id: the session (a run of mem0's is a
        session of memlane's); metadata: kept on each message (a message's own wins), filterable by
        its declared fields (MEMLANE_METADATA_FIELDS). infer=False: each message as a result, ADD
        when new, NONE when the store held it. wait=False: answers once the messages are stored,
        the memory run going on in the background, with its `memory_run_id` for `get_run`.
        expiration_date (mem0's): when the messages and what the run adds or updates expire (epoch
        seconds, an ISO date or datetime); from then on they are neither searched nor listed."""
        await self._opened()
        expires_at = expiry_time(mem0_options.pop("expiration_date", None))
        refuse_options("add", mem0_options)
        scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
        store_user = self._seen(scoped_user_id(require_user(scope, "add"), scope["agent_id"]))
        if infer and self.model is None:
            raise InvalidInput(NO_MODEL)
        document = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        parsed = messages_of(document, store_user, session_id=scope["run_id"] or session_id or "default")
        if metadata:
            parsed = [message.model_copy(update={"metadata": {**metadata, **message.metadata}}) for message in parsed]
        if not infer:
            new = await self.store.add_messages(parsed)
            await self._expire(store_user, parsed, expires_at)
            unchanged = graph_answers.unchanged(self.store, self.settings.graph)  # mem0's graph memory `relations`
            return {"results": stored_results(parsed, new), "stored": len(new), "event_id": None, **unchanged}
        if wait:
            answer = await self._remember(store_user, parsed, scope, expires_at)
            await self._expire(store_user, parsed, expires_at)
            return answer
        stored, _ = await import_messages(self.store, store_user, parsed)  # stored before the answer, as with wait
        await self._expire(store_user, parsed, expires_at)
        memory_run_id = uuid.uuid4().hex
        task = asyncio.create_task(
            self._remember(store_user, [], scope, expires_at), name=f"memlane-memory-run-{memory_run_id}"
        )
        self._runs[memory_run_id] = task
        return {"results": [], "stored": stored, "event_id": None, "memory_run_id": memory_run_id}

    async def _expire(self, store_user: str, messages: Sequence[Any], expires_at: float | None) -> None:
        """`add(expiration_date=)`'s messages expire then (or sooner, as they would already)."""
        if expires_at is not None:
            await self.store.expire_messages(store_user, [message.id for message in messages], expires_at)

    async def get_run(self, memory_run_id: str, *, wait: bool = False) -> dict[str, Any]:
        """How a memory run that `add(wait=False)` started stands: {"status": "running"}, or
        {"status": "done", "results", "event_id"}, or {"status": "failed", "error"}; `wait=True` waits
        for it to end. Runs are kept by this object (until it closes)."""
        task = self._runs.get(memory_run_id)
        if task is None:
            raise InvalidInput(
                f"no memory run {memory_run_id!r} was started by this Memory (add(wait=False) answers its id)"
            )
        if wait:
            await asyncio.wait({task})
        if not task.done():
            return {"memory_run_id": memory_run_id, "status": "running"}
        if task.exception() is not None:
            error = task.exception()
            return {"memory_run_id": memory_run_id, "status": "failed", "error": f"{type(error).__name__}: {error}"}
        answer = task.result()
        return {
            "memory_run_id": memory_run_id,
            "status": "done",
            "results": answer["results"],
            "event_id": answer["event_id"],
            **{key: answer[key] for key in ("relations",) if key in answer},  # with relations on
        }

    async def _remember(
        self, store_user: str, messages: Sequence[Any], scope: Mapping[str, str | None], expires_at: float | None
    ) -> dict[str, Any]:
        """Store `messages` and run the memory graph over the user's unremembered turns, one run of
        a user's at a time; what the run added, updated and deleted (given `expires_at`, until then)."""
        async with self._locks.setdefault(store_user, asyncio.Lock()):
            before = await graph_answers.before_run(self.store, self.settings.graph, store_user)
            stored, run = await import_messages(self.store, store_user, messages, context=self._memory_context())
            results = await run_results(self.store, store_user, run, scope)
            if expires_at is not None:
                await expire_results(self.store, store_user, results, expires_at)
            links = await graph_answers.after_run(
                self.store, self.settings.graph, store_user, before, str(scope["user_id"])
            )
        return {
            "results": results,
            "stored": stored,
            "event_id": run.event_id if run is not None else None,
            "model": run.model if run is not None else None,  # which model of the chain ran it
            **links,  # mem0's `relations`: the links the run added and ended (memlane/memory_relations.py)
        }

    def _memory_context(self) -> Any:
        """The memory graph's context, made once: its profile configurations are read from their
        files once, and its model breaker counts every run's failures together, as a scheduler's does."""
        if self._context is None:
            from memlane.doors import memory_context

            chain = {} if self._fallbacks is None else {"fallback_llms": self._fallbacks}
            self._context = memory_context(self.settings, self.store, self.model, **chain)  # type: ignore[arg-type]
        return self._context

    def _seen(self, store_user: str) -> str:
        self._users.pop(store_user, None)
        self._users[store_user] = None
        return store_user

    async def _owner(self, memory_id: str, user_id: str | None, agent_id: str | None) -> tuple[str, dict[str, Any]]:
        """The store user a memory id belongs to, and the scope answers name: `user_id` (with
        `agent_id`) when given; else the user this object acted for that holds it, the latest first."""
        if user_id is not None:
            scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=None)
            return self._seen(scoped_user_id(require_user(scope, "this call"), scope["agent_id"])), scope
        for store_user in reversed(list(self._users)):
            if await get_memory(self.store, store_user, memory_id, {}) is not None or await memory_history(
                self.store, store_user, memory_id
            ):
                user, agent = split_user_id(store_user)
                return store_user, {"user_id": user, "agent_id": agent}
        raise InvalidInput(
            f"no memory {memory_id!r} among the users this Memory has added for, searched or listed; "
            'memlane keeps memory per user: pass user_id="..." (and agent_id for an agent\'s memory)'
        )

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        threshold: float | None = None,
        kinds: Sequence[MemoryKind] | None = None,
        session_id: str | None = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """Hybrid search over the user's memories, best first: {"results": [{"id", "memory", "score", ...}]},
        `score` a calibrated relevance in 0..1 (`threshold` drops those below it). The user comes
        from `user_id=` or from `filters={"user_id": ...}` (mem0 2.x), with `agent_id` and `run_id`
        (a session's turns); the rest of `filters` is on metadata, mem0's operators (`eq`, `ne`,
        `gt`, `gte`, `lt`, `lte`, `in`, `nin`, `AND`, `OR`) over the declared fields.
        `rerank` is accepted and changes nothing: the ranking fuses its signals itself."""
        await self._opened()
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("search needs a query: a non-empty text")
        if threshold is not None and not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold {threshold} is outside 0..1 (scores are relevances in 0..1)")
        scope, metadata_filter = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters)
        store_user = self._seen(scoped_user_id(require_user(scope, "search"), scope["agent_id"]))
        hits = await self.store.search_memories(
            store_user,
            query,
            limit=answer_count(limit, top_k, 20),
            kinds=kinds,
            session_id=scope["run_id"] or session_id,
            metadata_filter=metadata_filter,
        )
        results = [hit_memory(hit, scope) for hit in hits]
        links = await graph_answers.searched(self.store, self.settings.graph, store_user, query, str(scope["user_id"]))
        return {"results": [hit for hit in results if threshold is None or hit["score"] >= threshold], **links}

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        offset: int = 0,
    ) -> dict[str, Any]:
        """The user's memories, most recently changed first, a page at a time: profile entries, event
        cards and the turns not remembered yet: {"results": [...], "next_offset": the next page's
        offset, or None after the last}. The user as `search` takes it; `filters` beyond the scope
        keep the memories whose metadata hold those values."""
        await self._opened()
        scope, metadata_filter = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters)
        store_user = self._seen(scoped_user_id(require_user(scope, "get_all"), scope["agent_id"]))
        page, next_offset = await list_memories(
            self.store, store_user, scope, limit=answer_count(limit, top_k, 100), offset=offset
        )
        if metadata_filter:
            page = [memory for memory in page if metadata_holds(memory.get("metadata") or {}, metadata_filter)]
        links = await graph_answers.listed(self.store, self.settings.graph, store_user, str(scope["user_id"]))
        return {"results": page, "next_offset": next_offset, **links}

    async def get(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any] | None:
        """One memory by id (`profile:…`, `event:…`, `message:…`), or None (`InvalidInput` for an
        id no memory can have: a control character in it, as every door refuses)."""
        await self._opened()
        check_id(memory_id, "the memory id")
        try:
            store_user, scope = await self._owner(memory_id, user_id, agent_id)
        except InvalidInput:
            if user_id is None and memory_id.partition(":")[0] in ("profile", "event", "message"):
                return None  # mem0 answers None for an id it does not hold
            raise
        return await get_memory(self.store, store_user, memory_id, scope)

    async def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        text: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        actor: str = "api",
    ) -> dict[str, Any]:
        """Give a profile entry new content, or an event card (a note, a memory run's card) new text,
        the change kept in its history: {"message", "id", "memory"}. `text` is mem0 2.x's name for
        `data`. A turn is what was said: delete it and add what is true."""
        await self._opened()
        if metadata is not None:
            raise InvalidInput("update changes a memory's text; its metadata stays as it was added")
        new_text = text if text is not None else data
        if new_text is None:
            raise InvalidInput("update needs the new text: update(memory_id, data)")
        store_user, scope = await self._owner(memory_id, user_id, agent_id)
        updated = await update_memory(self.store, store_user, memory_id, new_text, actor=actor, scope=scope)
        return {"message": "Memory updated successfully!", "id": memory_id, "memory": updated["memory"]}

    async def delete(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> dict[str, Any]:
        """Delete one memory; what it stated goes from the turns and summaries too. `InvalidInput`
        (a ValueError, as mem0 raises) when the user has no such memory."""
        await self._opened()
        store_user, _ = await self._owner(memory_id, user_id, agent_id)
        if not await forget_memory(self.store, store_user, memory_id, actor="api"):
            raise InvalidInput(f"no memory {memory_id!r} to delete: it is not the user's, or was deleted already")
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Delete everything of the user (with `agent_id`: that agent's memory of the user only)."""
        await self._opened()
        if run_id is not None:
            raise InvalidInput(
                "delete_all deletes a user's memory (or an agent's memory of the user) as a whole, not one run's: "
                "delete that run's memories by id, or call delete_all(user_id=...)"
            )
        scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=None)
        store_user = scoped_user_id(require_user(scope, "delete_all"), scope["agent_id"])
        removed = await self.store.delete_user(store_user)
        self._users.pop(store_user, None)
        return {"message": "Memories deleted successfully!", "keys_removed": removed}

    async def exists(
        self, text: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        """Whether the user already has `text`, as adding it would find a repeat (memlane/tools.py
        `existing_note`): the same note, a note or a profile fact with the same text (case and spacing
        aside), or a near duplicate: {"exists", "id", "memory", "similarity", "identical"}. Nothing is
        written."""
        await self._opened()
        scope, _ = call_scope(user_id=user_id, agent_id=agent_id, run_id=run_id)
        store_user = self._seen(scoped_user_id(require_user(scope, "exists"), scope["agent_id"]))
        repeat = await existing_note(self.store, store_user, text)
        if repeat is None:
            return {"exists": False, "id": None, "memory": None, "similarity": None, "identical": False}
        return {
            "exists": True,
            "id": repeat.memory.id,
            "memory": repeat.memory.text,
            "similarity": repeat.similarity,
            "identical": repeat.identical,
        }

    async def reset(self) -> dict[str, Any]:
        """Delete everything the store holds, every user's memories (mem0's `reset`)."""
        await self._opened()
        running = [task for task in self._runs.values() if not task.done()]
        if running:
            await asyncio.wait(running)
        removed = await self.store.reset()
        self._users.clear()
        return {"message": "Memory store reset successfully!", "keys_removed": removed}

    async def history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """How the memory came to be, oldest first, each change with mem0's `event` (ADD, UPDATE,
        DELETE), `old_memory` and `new_memory`: a profile entry's every revision, its deletion too;
        an event card's making and each change of its text; a turn's one making."""
        await self._opened()
        try:
            store_user, _ = await self._owner(memory_id, user_id, agent_id)
        except InvalidInput:
            if user_id is None:
                return []  # mem0 answers [] for an id it has no history of
            raise
        return await memory_history(self.store, store_user, memory_id)


class Memory(SyncTwin):
    """`AsyncMemory` without `await` (memlane/sync_twin.py): its own event loop in a thread of its
    own, so it works inside a running loop too. `Memory()` opens the store the environment names
    (REDIS_URL, or the embedded Redis Stack) with the memory model it names; `close()` (or `with`)
    closes the store."""

    twin_of = AsyncMemory

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model: BaseChatModel | Sequence[BaseChatModel] | None = None,
        **store_options: Any,
    ) -> None:
        self._start(lambda: AsyncMemory.open(settings, model=model, **store_options), "memlane-memory")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Memory:
        """mem0's `Memory.from_config({...})`: what has a memlane setting is taken, the rest left out
        with a warning (memlane/config_mem0.py)."""
        settings, _ = settings_from_mem0_config(config, get_settings())
        return cls(settings)


__all__ = ["AsyncMemory", "Memory"]
