"""Memory tools an agent can call: search memories, remember this, forget this, and (with a
scheduler) remember the conversation now.

The user comes from the run, like the middleware's (`MemoryAgentContext` or
`configurable`), so a model can never name another user.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langchain.tools import ToolRuntime
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from memlane.config import Settings, get_settings
from memlane.dates import day
from memlane.nodes.confirm_forget import forget_confirmer
from memlane.persistence import resolve_identity
from memlane.shown_ids import MEMORY_ID_PREFIXES, RecordStore, memory_id_of, shown_id  # noqa: F401  (MEMORY_ID_PREFIXES: where it was)
from memlane.store.errors import InvalidInput
from memlane.store.hits import MemoryHit
from memlane.store.ids import check_slot, clean_text, profile_memory_id, stable_id
from memlane.store.protocols import ForgetConfirm, ForgettingStore, MemoryStore, ProfileStore, SearchStore
from memlane.store.records import REMEMBERED_TAG, Event, Memory, MemoryUpdate, ProfileEntry
from memlane.store.redis.metadata import MetadataFilter
from memlane.store.text.sameness import RepeatedMemory

if TYPE_CHECKING:
    from memlane.graph.scheduler import MemoryScheduler


def memory_tools(
    store: MemoryStore,
    settings: Settings | None = None,
    *,
    scheduler: MemoryScheduler | None = None,
    memory_model: BaseChatModel | None = None,
) -> list[BaseTool]:
    """`[search_memories, remember, forget]` bound to `store`; with `scheduler`, `remember_now` too.

    memory_model (else the scheduler's): confirms what `forget` finds by meaning (see
    `MemoryStore.forget`); without one, forget takes by meaning only what is clear."""
    settings = settings or get_settings()
    context = scheduler.context if scheduler is not None else None
    confirm = forget_confirmer(
        memory_model or (context.llm if context is not None else None),
        settings.models,
        breaker=context.model_breaker if context is not None and memory_model is None else None,
    )

    @tool
    async def search_memories(query: str, runtime: ToolRuntime[Any], limit: int = 5) -> str:
        """Search what you remember about the user (profile, past events, past messages).

        Time words in the query ("yesterday", "last week", "on April 27th", "上周", "5月2日")
        favour what was said then. Returns one memory per line: its id, kind, date,
        relevance and text, with the speaker when it was not the user ("朋友A: ...").
        """
        identity = resolve_identity(runtime.context, recall=settings.recall, turns=settings.turns)
        return await answer_search(store, identity.user_id, query, limit=limit)

    @tool
    async def remember(text: str, runtime: ToolRuntime[Any], topic: str = "", subtopic: str = "") -> str:
        """Remember something about the user for later conversations.

        With a topic and subtopic (e.g. "diet", "coffee") it becomes a profile fact,
        replacing what that slot held; without them it is kept as a note.
        """
        identity = resolve_identity(runtime.context, recall=settings.recall, turns=settings.turns)
        return await answer_remember(
            store, identity.user_id, text, topic=topic, subtopic=subtopic, session_id=identity.session_id
        )

    @tool
    async def forget(what: str, runtime: ToolRuntime[Any]) -> str:
        """Forget something about the user, everywhere it is kept (profile, events, summaries,
        past messages): either one memory by the id `search_memories` showed in brackets
        ("[profile:…]"), or in words what to forget ("what I said about peanuts", "关于花生的事").
        Says what was removed."""
        identity = resolve_identity(runtime.context, recall=settings.recall, turns=settings.turns)
        return await answer_forget(store, identity.user_id, what, actor="tool", confirm=confirm)

    if scheduler is None:
        return [search_memories, remember, forget]

    @tool
    async def remember_now(runtime: ToolRuntime[Any]) -> str:
        """Remember the conversation stored so far now (profile facts, an event card), instead of
        when enough was said, the session ends or the user goes idle. It runs in the background;
        this turn itself is stored after your reply."""
        identity = resolve_identity(runtime.context, recall=settings.recall, turns=settings.turns)
        queued = await scheduler.notify(identity.user_id, flush=True)
        return (
            "remembering… (the profile and events show what was learned shortly)"
            if queued
            else "nothing new to remember"
        )

    return [search_memories, remember, forget, remember_now]


# What the tools answer, shared with the MCP server (serve/mcp.py) and `memlane serve`: the user is the caller's.


async def answer_search(
    store: SearchStore, user_id: str, query: str, *, limit: int = 5, metadata_filter: MetadataFilter | None = None
) -> str:
    """Search the user's memories; one line per hit: [id] (kind, day, relevance) text, with
    "earlier, until <day>" in the parentheses once a newer fact replaced what it says, "weak"
    after a relevance under 0.1, and the memory's metadata (JSON) after its text when it has some.

    metadata_filter: only memories whose metadata match (`memlane.store.redis.metadata`)."""
    return search_answer(await search_hits(store, user_id, query, limit=limit, metadata_filter=metadata_filter))


async def search_hits(
    store: SearchStore, user_id: str, query: str, *, limit: int = 5, metadata_filter: MetadataFilter | None = None
) -> list[MemoryHit]:
    """What the search tools search: the user's best `limit` memories (1 to 20) for `query`."""
    return await store.search_memories(user_id, query, limit=max(1, min(limit, 20)), metadata_filter=metadata_filter)


def shown_hit(hit: MemoryHit) -> dict[str, Any]:
    """A search hit as `memlane search --json` prints it and the MCP search tool gives it (its
    structured content): the memory id `forget` takes, its text, and its relevance (`score` too,
    as mem0 names it)."""
    memory = hit.memory
    return {
        "id": memory.id,
        "memory": memory.attributed_text,
        "kind": memory.kind,
        "relevance": hit.relevance,
        "score": hit.relevance,
        "weak": hit.weak,
        "created_at": memory.created_at,
        "session_id": memory.session_id,
        "ref_id": memory.ref_id,
        "source_message_ids": memory.source_message_ids,
        "metadata": memory.metadata,
    }


def search_answer(hits: Sequence[MemoryHit]) -> str:
    """The search tools' answer for `hits` (see `answer_search`)."""
    if not hits:
        return "no memories found"
    return "\n".join(
        f"[{hit.memory.id}] ({hit.memory.kind}, {day(hit.memory.created_at)}, "
        + (f"earlier, until {day(hit.memory.valid_until)}, " if hit.memory.valid_until is not None else "")
        + f"{hit.relevance:.2f}{', weak' if hit.weak else ''}) {hit.memory.attributed_text}"
        + (f" {json.dumps(hit.memory.metadata, ensure_ascii=False)}" if hit.memory.metadata else "")
        for hit in hits
    )


class NoteStore(SearchStore, ProfileStore, Protocol):
    """What keeping a note or a fact reads and writes: whether the user has it already (search), and the
    one write of an event card or a profile entry (`apply_update`)."""


async def answer_remember(
    store: NoteStore,
    user_id: str,
    text: str,
    *,
    topic: str = "",
    subtopic: str = "",
    session_id: str,
    actor: str = "tool",
    metadata: dict[str, Any] | None = None,
    expires_at: float | None = None,
    importance: float | None = None,
) -> str:
    """Keep `text` as a profile fact (with topic and subtopic) or as a note (an event card).

    actor: who profile history names for the change ("tool", "mcp", "api:<key name>").
    metadata: a JSON object kept with it (a note's is searchable by the declared fields).
    expires_at: when it expires (epoch seconds); unset, it is kept.
    importance: how much it matters, 0..1 (`checked_importance`); unset: neutral, 0.5.
    """
    text = text.strip()
    if not clean_text(text).strip():  # only spaces, or NUL bytes, which are not stored
        return "nothing to remember: the text is empty"
    topic, subtopic = clean_text(topic), clean_text(subtopic)  # a tool's texts are cleaned, as the store cleans them
    if topic.strip() and subtopic.strip():
        check_slot(topic)  # the slot rule of every door: at most 64 characters
        check_slot(subtopic)
        entry = await remember_fact(
            store,
            user_id,
            topic,
            subtopic,
            text,
            actor=actor,
            metadata=metadata,
            expires_at=expires_at,
            importance=checked_importance(importance),
        )
        return f"remembered as profile {entry.topic} / {entry.subtopic} [{profile_memory_id(entry.id)}]"
    written = await write_note(
        store, user_id, text, session_id=session_id, metadata=metadata, expires_at=expires_at, importance=importance
    )
    return f"remembered [{written.memory.id}]" if written.repeat_of is None else repeat_answer(written.repeat_of)


def repeat_answer(repeat: RepeatedMemory) -> str:
    """What `remember` answers for a note the user has already: the stored memory it matched."""
    how = "already remembered" if repeat.identical else f"a near duplicate (similarity {repeat.similarity:.2f}) of"
    return f"not stored again: {how} [{repeat.memory.id}] {repeat.memory.text}"


async def remember_fact(
    store: ProfileStore,
    user_id: str,
    topic: str,
    subtopic: str,
    content: str,
    *,
    confidence: float = 0.9,
    actor: str = "tool",
    source_message_ids: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
    expires_at: float | None = None,
    importance: float = 0.5,
) -> ProfileEntry:
    """Write a profile entry (replacing what its topic / subtopic slot held: one entry per user and
    slot) with its search memory; its history records the write with its source and metadata."""
    entry = ProfileEntry(
        user_id=user_id,
        topic=topic,
        subtopic=subtopic,
        content=content,
        confidence=confidence,
        source_message_ids=list(source_message_ids),
        metadata=dict(metadata or {}),
        expires_at=expires_at,
        importance=checked_importance(importance),
    )
    await store.apply_update(
        MemoryUpdate(user_id=user_id, upsert_profile=[entry], memories=[entry.as_memory()], actor=actor)
    )
    return entry


class NoteWritten(BaseModel):
    """What remembering a note did: the memory that holds it, and the stored memory it repeated
    (then nothing was written, and `memory` is that stored one, under its own id)."""

    memory: Memory
    repeat_of: RepeatedMemory | None = None


def checked_importance(importance: float | None) -> float:
    """`importance` (None: the neutral 0.5), or `InvalidInput` when it is not a number from 0 to 1."""
    if importance is None:
        return 0.5
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0.0 <= importance <= 1.0:
        raise InvalidInput(
            f"importance must be a number from 0 to 1 (0.5: neutral; higher ranks it higher), not {importance!r}"
        )
    return float(importance)


def _note_event(
    user_id: str,
    text: str,
    session_id: str,
    metadata: dict[str, Any] | None,
    expires_at: float | None = None,
    importance: float | None = None,
) -> Event:
    """The event card a note is kept as: its id made from its text."""
    if not clean_text(text).strip():
        raise InvalidInput("a note must hold some text; this one holds only spaces or NUL bytes")
    return Event(
        id=stable_id("remember", user_id, text),
        user_id=user_id,
        summary=text,
        tags=[REMEMBERED_TAG],
        session_ids=[session_id],
        metadata=dict(metadata or {}),
        expires_at=expires_at,
        importance=checked_importance(importance),
    )


async def existing_note(store: NoteStore, user_id: str, text: str) -> RepeatedMemory | None:
    """What the user already has that `text` would repeat, as `write_note` reads a repeat, and
    nothing written: the same note (its id is made from its text), a note or a profile fact with
    the same text (case and spacing aside), or a near duplicate above `near_duplicate_similarity`;
    None when it is new. The door behind `exists` (the facade, `POST …/memories/exists`)."""
    event = _note_event(user_id, text, "exists", None)
    [noted] = await store.get_events(user_id, [event.id])
    if noted is not None:
        return RepeatedMemory(memory=noted.as_memory(), similarity=1.0, identical=True)
    found = [
        await store.repeated_memory(event.as_memory()),
        await store.repeated_memory(
            Memory(id=f"exists:{event.id}", user_id=user_id, kind="profile", text=text, created_at=event.created_at)
        ),
    ]
    repeats = [repeat for repeat in found if repeat is not None]
    return max(repeats, key=lambda repeat: (repeat.identical, repeat.similarity)) if repeats else None


async def write_note(
    store: NoteStore,
    user_id: str,
    text: str,
    *,
    session_id: str,
    metadata: dict[str, Any] | None = None,
    expires_at: float | None = None,
    importance: float | None = None,
) -> NoteWritten:
    """Keep a note about the user: an event card tagged "remembered" and its search memory,
    unless the user has that note already (`MemoryStore.repeated_memory`: the same text, case and
    spacing aside, or a near duplicate above `near_duplicate_similarity`); then the stored one is
    answered, with `repeat_of` naming it.

    metadata: a JSON object kept with the note; search filters on its declared fields
    (`StoreSettings.metadata_fields`). The same text noted again is a repeat of the stored note, and
    its metadata is merged into the stored one's: the keys it gives take their new values, the
    others keep theirs (nothing given or stored is dropped). A text with nothing left to store (only
    spaces and NUL bytes): `InvalidInput`. expires_at: when the note expires (epoch seconds; given
    again with the same text, the stored note takes it). importance: how much it matters, 0..1
    (`checked_importance`; unset: 0.5, or what the stored note has; given again, the note takes it)."""
    event = _note_event(user_id, text, session_id, metadata, expires_at, importance)
    [noted] = await store.get_events(user_id, [event.id])
    # the same text again (a note's id is made from its text; the stored summary may be masked, or
    # edited in place since): a repeat, its metadata merged
    if noted is not None:
        merged = {**noted.metadata, **event.metadata}
        expiry = noted.expires_at if expires_at is None else expires_at
        weight = noted.importance if importance is None else event.importance
        if merged != noted.metadata or expiry != noted.expires_at or weight != noted.importance:
            noted = noted.model_copy(update={"metadata": merged, "expires_at": expiry, "importance": weight})
            await store.apply_update(MemoryUpdate(user_id=user_id, event=noted, memories=[noted.as_memory()]))
        kept = noted.as_memory()
        return NoteWritten(memory=kept, repeat_of=RepeatedMemory(memory=kept, similarity=1.0, identical=True))
    memory = event.as_memory()
    repeat = await store.repeated_memory(memory)
    if repeat is not None:
        return NoteWritten(memory=repeat.memory, repeat_of=repeat)
    await store.apply_update(MemoryUpdate(user_id=user_id, event=event, memories=[memory]))
    return NoteWritten(memory=memory)


async def remember_note(
    store: NoteStore,
    user_id: str,
    text: str,
    *,
    session_id: str,
    metadata: dict[str, Any] | None = None,
    expires_at: float | None = None,
    importance: float | None = None,
) -> Memory:
    """`write_note`, answering the memory that holds the note (the stored one for a repeat)."""
    written = await write_note(
        store, user_id, text, session_id=session_id, metadata=metadata, expires_at=expires_at, importance=importance
    )
    return written.memory


class DeletingStore(ForgettingStore, SearchStore, RecordStore, Protocol):
    """What forgetting reads of the store: its forgetting, its search memories (one deleted by id),
    and its records (an id a door showed names one)."""


async def forget_memory(store: DeletingStore, user_id: str, memory_id: str, *, actor: str = "user") -> bool:
    """Forget one memory: a profile or event memory takes its entry or event card with it, a
    message memory its turn in history; what they stated goes from turns and summaries too
    (the store's `delete_profile_entry`, `delete_event`, `delete_message`). `memory_id`: any id a
    door shows of it (`memlane.shown_ids`), its record's own id too; a profile entry's past value
    (`profile:<entry>:earlier:…`) goes alone.

    actor: who profile history names for a deleted entry.
    """
    resolved = await memory_id_of(store, user_id, memory_id)
    if resolved is None:
        return False
    memory_id = resolved
    if memory_id.startswith("profile:") and ":earlier:" not in memory_id:
        return await store.delete_profile_entry(user_id, memory_id.removeprefix("profile:"), actor=actor)
    if memory_id.startswith("event:"):
        return await store.delete_event(user_id, memory_id.removeprefix("event:"))
    if memory_id.startswith("message:"):
        return await store.delete_message(user_id, memory_id.removeprefix("message:"))
    return await store.delete_memory(user_id, memory_id)


async def answer_forget(
    store: DeletingStore,
    user_id: str,
    what: str,
    *,
    actor: str,
    confirm: ForgetConfirm | None = None,
    dry_run: bool = False,
) -> str:
    """Forget one memory by the id search showed ("[profile:…]"), or everything the user said
    about something ("peanuts", "what I said about my ex") through the store's `forget`.

    confirm: the memory model's confirmation of what forget finds by meaning
    (`memlane.nodes.confirm_forget.forget_confirmer`), where the caller has a memory model.
    dry_run: change nothing, answer what would go, record by record, with the clauses cut."""
    # an id a door showed (a memory id, or a record's own id the user has), not words to forget by
    memory_id = await memory_id_of(store, user_id, what)
    if memory_id is not None:
        if dry_run:
            return f"dry run: [{memory_id}] names one memory; forgetting it removes it and what it stated, nothing else"
        removed = await forget_memory(store, user_id, memory_id, actor=actor)
        return f"forgot [{memory_id}]" if removed else f"no memory [{memory_id}] to forget"
    if not shown_id(what):
        return "nothing to forget: say what (an id in brackets, or what it was about)"
    report = await store.forget(user_id, what.strip(), actor=actor, confirm=confirm, dry_run=dry_run)
    return report.details() if dry_run else report.describe()
