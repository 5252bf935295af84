"""`AsyncMemory` and `Memory`: memlane in mem0's shape, in your process, over the same store and
memory graph as every other door (no second implementation).

    memory = await AsyncMemory.open(model=ChatOpenAI(model="gpt-4o-mini"))
    added = await memory.add([{"role": "user", "content": "I moved to Lyon"}], user_id="alice")
    added["results"]   # [{"id": "profile:…", "memory": "home / city: Lyon", "event": "ADD"}, …]
    await memory.search("where does she live?", user_id="alice")

`add` stores the messages (idempotent on their ids) and, with `infer=True` (a memory model is
needed), runs the memory graph over the user's unremembered turns at once, answering what it
added, updated and deleted; `infer=False` stores them only (searchable at once, remembered by the
next run). Memory ids are the store's search-memory ids: `profile:<entry>`, `event:<card>`,
`message:<turn>`. `Memory` has the same methods without `await`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import Settings, get_settings
from memlane.importing import import_messages, messages_of
from memlane.store.errors import InvalidInput
from memlane.store.hits import MemoryHit
from memlane.store.ids import event_memory_id, profile_memory_id
from memlane.store.protocols import MemoryStore
from memlane.store.records import REMEMBERED_TAG, Event, MemoryKind, MemoryUpdate, NoteRevision, ProfileEntry
from memlane.store.redis.metadata import MetadataFilter
from memlane.store.scopes import scoped_user_id
from memlane.sync_twin import SyncTwin
from memlane.tools import forget_memory

_ACTIONS = {"added": "ADD", "updated": "UPDATE", "deleted": "DELETE"}


def _entry(entry: ProfileEntry) -> dict[str, Any]:
    return {
        "id": profile_memory_id(entry.id),
        "memory": f"{entry.topic} / {entry.subtopic}: {entry.content}",
        "kind": "profile",
        "confidence": entry.confidence,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "metadata": entry.metadata,
        "source_message_ids": entry.source_message_ids,
    }


def _event(event: Event) -> dict[str, Any]:
    return {
        "id": event_memory_id(event.id),
        "memory": event.summary,
        "kind": "event",
        "tags": event.tags,
        "created_at": event.created_at,
        "updated_at": event.created_at,
        "source_message_ids": event.source_message_ids,
    }


def _hit(hit: MemoryHit) -> dict[str, Any]:
    memory = hit.memory
    return {
        "id": memory.id,
        "memory": memory.text,
        "kind": memory.kind,
        "score": hit.score,
        "weak": hit.weak,
        "created_at": memory.created_at,
        "session_id": memory.session_id,
        "source_message_ids": memory.source_message_ids,
        "metadata": memory.metadata,
    }


class AsyncMemory:
    """mem0's calls over a memlane store: `add`, `search`, `get_all`, `get`, `update`, `delete`,
    `delete_all`, `history`, `reset`, and `get_run` for an `add(wait=False)`. `model`: the memory
    model `add(infer=True)` runs the graph with. Every call takes `agent_id`: that agent's own memory
    of the user (store/scopes.py)."""

    def __init__(self, store: MemoryStore, *, settings: Settings, model: BaseChatModel | None = None) -> None:
        self.store = store
        self.settings = settings  # the store's (the protocol does not declare them): `open` passes them
        self.model = model
        self._owns_store = False
        self._runs: dict[str, asyncio.Task[dict[str, Any]]] = {}  # add(wait=False)'s runs, by id
        self._locks: dict[str, asyncio.Lock] = {}  # one memory run of a user's at a time
        self._context: Any = None  # the memory graph's context (`_memory_context`), made at the first run

    @classmethod
    async def open(
        cls, settings: Settings | None = None, *, model: BaseChatModel | None = None, **store_options: Any
    ) -> AsyncMemory:
        """Open the store (REDIS_URL, or the embedded Redis Stack) and wrap it; `aclose` closes it."""
        from memlane.store.redis.store import open_store

        settings = settings or get_settings()
        store = await open_store(settings, **store_options)
        memory = cls(store, model=model, settings=settings)
        memory._owns_store = True
        return memory

    async def aclose(self) -> None:
        """Wait for the memory runs `add(wait=False)` started, then close the store `open` opened."""
        running = [task for task in self._runs.values() if not task.done()]
        if running:
            await asyncio.wait(running)
        if self._owns_store:
            await self.store.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def add(
        self,
        messages: str | dict[str, Any] | Sequence[dict[str, Any]],
        *,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        session_id: str = "default",
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Store the messages (a text is one user message) and, with `infer`, remember them now:
        {"stored": new messages, "results": [{"id", "memory", "event": ADD|UPDATE|DELETE}], "event_id"}.
        agent_id: the agent's own memory of the user (`scoped_user_id`); run_id: the session (a run
        of mem0's is a session of memlane's, so `search(run_id=...)` finds its turns); metadata: kept
        on each message (a message's own wins), filterable by its declared fields (MEMLANE_METADATA_FIELDS).
        wait=False: answers once the messages are stored, the memory run going on in the background:
        {"stored", "results": [], "event_id": None, "memory_run_id"}; `get_run(memory_run_id)` says how it ends."""
        user_id = scoped_user_id(user_id, agent_id)
        session_id = run_id or session_id
        if infer and self.model is None:
            raise InvalidInput(
                "add(infer=True) runs the memory graph: give AsyncMemory a model (model=...), or add with infer=False"
            )
        document = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        parsed = messages_of(document, user_id, session_id=session_id, source="add")
        if metadata:
            parsed = [message.model_copy(update={"metadata": {**metadata, **message.metadata}}) for message in parsed]
        if not infer:
            stored, _ = await import_messages(self.store, user_id, parsed)
            return {"stored": stored, "results": [], "event_id": None}
        if wait:
            return await self._remember(user_id, parsed)
        stored, _ = await import_messages(self.store, user_id, parsed)  # stored before the answer, as with wait
        memory_run_id = uuid.uuid4().hex
        task = asyncio.create_task(self._remember(user_id, []), name=f"memlane-memory-run-{memory_run_id}")
        self._runs[memory_run_id] = task
        return {"stored": stored, "results": [], "event_id": None, "memory_run_id": memory_run_id}

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
        }

    async def _remember(self, user_id: str, messages: Sequence[Any]) -> dict[str, Any]:
        """Store `messages` and run the memory graph over the user's unremembered turns, one run of
        a user's at a time; what the run added, updated and deleted."""
        async with self._user_lock(user_id):
            stored, run = await import_messages(self.store, user_id, messages, context=self._memory_context())
        results: list[dict[str, Any]] = []
        if run is not None:
            profile = {entry.id: entry for entry in await self.store.get_profile(user_id)}
            for field, action in _ACTIONS.items():
                for entry_id in getattr(run, field):
                    shown = _entry(profile[entry_id])["memory"] if entry_id in profile else ""
                    results.append({"id": profile_memory_id(entry_id), "memory": shown, "event": action})
            for event_id in run.event_ids or ([run.event_id] if run.event_id else []):
                results.append({"id": event_memory_id(event_id), "memory": run.summary, "event": "ADD"})
        return {"stored": stored, "results": results, "event_id": run.event_id if run is not None else None}

    def _memory_context(self) -> Any:
        """The memory graph's context, made once: its profile configurations are read from their
        files once, and its model breaker counts every run's failures together, as a scheduler's does."""
        if self._context is None:
            from memlane.doors import memory_context

            self._context = memory_context(self.settings, self.store, self.model)  # type: ignore[arg-type]
        return self._context

    def _user_lock(self, user_id: str) -> asyncio.Lock:
        return self._locks.setdefault(user_id, asyncio.Lock())

    async def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        kinds: Sequence[MemoryKind] | None = None,
        session_id: str | None = None,
        filters: MetadataFilter | None = None,
    ) -> list[dict[str, Any]]:
        """Hybrid search over the user's memories (an agent's own, with `agent_id`; one session's,
        with `run_id` or `session_id`), best first, each with its calibrated relevance. filters: on
        the memories' metadata, mem0's shape (`{"project": "apollo"}`, `{"priority": {"gte": 2}}`,
        `in`, `nin`, `ne`, `AND`, `OR`; memlane.store.redis.metadata), over the declared fields."""
        user_id = scoped_user_id(user_id, agent_id)
        session_id = run_id or session_id
        hits = await self.store.search_memories(
            user_id,
            query,
            limit=limit,
            kinds=kinds,
            session_id=session_id,
            metadata_filter=filters,
        )
        return [_hit(hit) for hit in hits]

    async def get_all(
        self, *, user_id: str, agent_id: str | None = None, limit: int = 100, offset: int = 0
    ) -> dict[str, Any]:
        """The user's profile entries and event cards, most recently changed first, a page at a time:
        {"results": [...], "next_offset": the next page's offset, or None after the last}."""
        user_id = scoped_user_id(user_id, agent_id)
        if limit < 1 or offset < 0:
            raise InvalidInput("limit must be 1 or more and offset 0 or more")
        events = await self.store.list_events(user_id, limit=offset + limit + 1)
        everything = [_entry(entry) for entry in await self.store.get_profile(user_id)] + [
            _event(event) for event in events
        ]
        everything.sort(key=lambda memory: memory["updated_at"], reverse=True)
        page = everything[offset : offset + limit]
        more = len(everything) > offset + limit
        return {"results": page, "next_offset": offset + limit if more else None}

    async def get(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> dict[str, Any] | None:
        """One memory by id (`profile:…`, `event:…`, `message:…`), or None."""
        user_id = scoped_user_id(user_id, agent_id)
        kind, _, ref = memory_id.partition(":")
        if kind == "profile":
            return next((_entry(entry) for entry in await self.store.get_profile(user_id) if entry.id == ref), None)
        if kind == "event":
            event = (await self.store.get_events(user_id, [ref]))[0]
            return _event(event) if event is not None else None
        if kind == "message":
            around = await self.store.message_neighbours(user_id, ref, before=0, after=0)
            return next(
                (
                    {
                        "id": memory_id,
                        "memory": m.content,
                        "kind": "message",
                        "role": m.role,
                        "session_id": m.session_id,
                        "created_at": m.created_at,
                    }
                    for m in around
                    if m.id == ref
                ),
                None,
            )
        raise InvalidInput(f"{memory_id!r} is not a memory id: they start with profile:, event: or message:")

    async def update(
        self, memory_id: str, data: str, *, user_id: str, agent_id: str | None = None, actor: str = "api"
    ) -> dict[str, Any]:
        """Change a profile entry's content or a note's text, the change kept in its history. An
        event card of a memory run and a turn are what happened: delete one and add what is true."""
        user_id = scoped_user_id(user_id, agent_id)
        kind, _, ref = memory_id.partition(":")
        if kind == "event":
            return await self._update_note(user_id, ref, data, actor)
        if kind != "profile":
            raise InvalidInput(
                f"only profile entries and notes change in place; {memory_id!r} is a record of what happened: "
                "delete it and add anew"
            )
        entry = await self.store.edit_profile_entry(user_id, ref, content=data, actor=actor)
        if entry is None:
            raise InvalidInput(f"the user has no profile entry {ref!r}")
        return _entry(entry)

    async def _update_note(self, user_id: str, event_id: str, text: str, actor: str) -> dict[str, Any]:
        """A note (a card tagged "remembered") with its new text and the change in its revisions,
        in one write with its search memory (same id, same time)."""
        (event,) = await self.store.get_events(user_id, [event_id])
        if event is None:
            raise InvalidInput(f"the user has no memory 'event:{event_id}'")
        if REMEMBERED_TAG not in event.tags:
            raise InvalidInput(
                f"'event:{event_id}' is a memory run's card, a record of what happened: delete it and add anew"
            )
        text = text.strip()
        if not text:
            raise InvalidInput("a note's new text is empty; delete the note instead")
        if text == event.summary:
            return _event(event)
        revision = NoteRevision(actor=actor, before=event.summary, after=text)
        edited = event.model_copy(update={"summary": text, "revisions": [*event.revisions, revision]})
        await self.store.apply_update(
            MemoryUpdate(user_id=user_id, event=edited, memories=[edited.as_memory()], actor=actor)
        )
        return _event(edited)

    async def delete(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> bool:
        """Delete one memory; what it stated goes from the turns and summaries too."""
        user_id = scoped_user_id(user_id, agent_id)
        return await forget_memory(self.store, user_id, memory_id, actor="api")

    async def delete_all(self, *, user_id: str, agent_id: str | None = None) -> int:
        """Delete everything of the user; returns the keys removed."""
        user_id = scoped_user_id(user_id, agent_id)
        return await self.store.delete_user(user_id)

    async def reset(self) -> int:
        """Delete everything the store holds, every user's memories (mem0's `reset`); returns the keys removed."""
        running = [task for task in self._runs.values() if not task.done()]
        if running:
            await asyncio.wait(running)
        return await self.store.reset()

    async def history(self, memory_id: str, *, user_id: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        """How the memory came to be, oldest first: a profile entry's every revision (who, before,
        after, when, source and metadata); a note's making and each change of its text; a card's or
        a turn's one making (they do not change)."""
        user_id = scoped_user_id(user_id, agent_id)
        kind, _, ref = memory_id.partition(":")
        if kind == "profile":
            return [revision.model_dump(mode="json") for revision in await self.store.profile_history(user_id, ref)]
        if kind == "event":
            (event,) = await self.store.get_events(user_id, [ref])
            if event is None:
                return []
            first = event.revisions[0].before if event.revisions else event.summary
            made = {
                "action": "add",
                "at": event.created_at,
                "after_content": first,
                "source_message_ids": event.source_message_ids,
            }
            changes = [
                {"action": "update", "at": r.at, "actor": r.actor, "before_content": r.before, "after_content": r.after}
                for r in event.revisions
            ]
            return [made, *changes]
        memory = await self.get(memory_id, user_id=user_id)  # already scoped: no agent_id again
        if memory is None:
            return []
        return [
            {
                "action": "add",
                "at": memory["created_at"],
                "after_content": memory["memory"],
                "source_message_ids": memory.get("source_message_ids", []),
            }
        ]


class Memory(SyncTwin):
    """`AsyncMemory` without `await` (memlane/sync_twin.py): its own event loop in a thread of its
    own, so it works inside a running loop too. `close()` (or `with`) closes the store."""

    twin_of = AsyncMemory

    def __init__(
        self, settings: Settings | None = None, *, model: BaseChatModel | None = None, **store_options: Any
    ) -> None:
        self._start(lambda: AsyncMemory.open(settings, model=model, **store_options), "memlane-memory")


__all__ = ["AsyncMemory", "Memory"]
