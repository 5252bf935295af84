"""Metadata on notes, messages and items (store/redis/metadata.py): kept with the memory, returned by
search and export, and the filters search narrows by (equal, not equal, in, ranges, AND / OR) on
the declared fields; undeclared fields and values a field cannot hold are refused."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from conftest import HOSTILE_IDS, memory_store_on
from hash_embeddings import CharacterHashEmbeddings
from redisvl.query.filter import Num

from memlane.config import Settings
from memlane.recall import RecallParts, recall
from memlane.store.errors import InputTooLarge, InvalidInput
from memlane.store.records import Event, Memory, MemoryUpdate, Message, StoreItem
from memlane.store.redis.metadata import metadata_expression
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore
from memlane.store.schema import metadata_field

DECLARED = {"project": "tag", "priority": "numeric", "flag": "tag"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The test settings with metadata fields declared (the cluster store reads them too)."""
    return settings.model_copy(update={"metadata_fields": DECLARED})


@pytest_asyncio.fixture(loop_scope="session")
async def meta_store(settings: Settings):
    async with memory_store_on(settings, CharacterHashEmbeddings()) as memory_store:
        yield memory_store


def note(memory_id: str, text: str, **metadata) -> Memory:
    return Memory(id=memory_id, user_id="alice", kind="event", text=text, metadata=metadata)


async def found(store: RedisMemoryStore, metadata_filter, query: str = "launch notes", user: str = "alice") -> set[str]:
    return {
        hit.memory.id for hit in await store.search_memories(user, query, limit=50, metadata_filter=metadata_filter)
    }


async def test_filters_narrow_search_to_the_memories_whose_metadata_match(meta_store: RedisMemoryStore):
    await meta_store.add_memories(
        [
            note("a", "launch notes for apollo", project="apollo", priority=1, flag=True),
            note("b", "launch notes for gemini", project="gemini", priority=3, extra={"nested": [1, 2]}),
            note("c", "launch notes for mercury", project=["mercury", "apollo"], priority=5),
            note("d", "launch notes without metadata"),
        ]
    )
    assert await found(meta_store, None) == {"a", "b", "c", "d"}
    assert await found(meta_store, {"project": "apollo"}) == {"a", "c"}  # a list holds each of its values
    assert await found(meta_store, {"project": {"ne": "apollo"}}) == {"b", "d"}
    assert await found(meta_store, {"project": {"in": ["gemini", "mercury"]}}) == {"b", "c"}
    assert await found(meta_store, {"project": ["gemini", "mercury"]}) == {"b", "c"}
    assert await found(meta_store, {"project": {"nin": ["gemini", "mercury"]}}) == {"a", "d"}
    assert await found(meta_store, {"priority": {"gte": 3}}) == {"b", "c"}
    assert await found(meta_store, {"priority": {"gt": 1, "lt": 5}}) == {"b"}
    assert await found(meta_store, {"priority": 5}) == {"c"}
    assert await found(meta_store, {"priority": {"in": [1, 5]}}) == {"a", "c"}
    assert await found(meta_store, {"priority": {"ne": 3}}) == {"a", "c", "d"}
    assert await found(meta_store, {"priority": {"nin": [1, 3]}}) == {"c", "d"}
    assert await found(meta_store, {"flag": True}) == {"a"}
    assert await found(meta_store, {"project": "apollo", "priority": {"lt": 3}}) == {"a"}
    assert await found(meta_store, {"OR": [{"project": "gemini"}, {"priority": {"gte": 5}}]}) == {"b", "c"}
    assert await found(meta_store, {"AND": [{"project": "apollo"}, {"OR": [{"priority": 1}, {"priority": 5}]}]}) == {
        "a",
        "c",
    }
    assert await found(meta_store, {"project": "Apollo"}) == set()  # tags are exact: case counts
    assert await found(meta_store, Num(metadata_field("priority")) >= 5) == {"c"}  # a RedisVL expression as it is
    assert await found(meta_store, {}) == {"a", "b", "c", "d"}
    # the memory comes back with its metadata, whole
    [hit] = await meta_store.search_memories("alice", "gemini", limit=1, metadata_filter={"project": "gemini"})
    assert hit.memory.metadata == {"project": "gemini", "priority": 3, "extra": {"nested": [1, 2]}}
    # the filter stays inside the user
    await meta_store.add_memories(
        [Memory(id="a", user_id="bob", kind="event", text="launch notes for apollo", metadata={"project": "apollo"})]
    )
    assert await found(meta_store, {"project": "apollo"}, user="bob") == {"a"}
    assert await found(meta_store, {"project": "apollo"}) == {"a", "c"}


@pytest.mark.parametrize("value", [*HOSTILE_IDS, "a*b|c{d}", "x -@user:{*}", "\\", 'a"b'])
async def test_a_value_with_query_syntax_matches_only_itself(meta_store: RedisMemoryStore, value: str):
    await meta_store.add_memories(
        [note("hostile", "launch notes hostile", project=value), note("other", "launch notes other", project="zzz")]
    )
    assert await found(meta_store, {"project": value}) == {"hostile"}
    assert await found(meta_store, {"project": {"ne": value}}) == {"other"}
    assert await found(meta_store, {"project": {"in": [value, "nothing"]}}) == {"hostile"}
    # the same text as a user id and a memory id: the filter and the user's tag both hold
    await meta_store.add_memories(
        [
            Memory(
                id=value,
                user_id=value,
                kind="event",
                text="launch notes of a hostile user",
                metadata={"project": value},
            )
        ]
    )
    assert await found(meta_store, {"project": value}, user=value) == {value}


@pytest.mark.parametrize("char", ["\x00", "\x01", "\t", "\n", "\x1b", "\x7f"], ids=repr)
async def test_a_filter_value_with_a_control_character_is_refused(meta_store: RedisMemoryStore, char: str):
    """A NUL made RediSearch answer a syntax error (a 500 at the doors); any other control character
    never matched: both are refused with what to give instead (a 422 at the doors)."""
    for condition in (f"a{char}b", {"ne": f"a{char}b"}, {"in": ["x", f"a{char}b"]}):
        with pytest.raises(InvalidInput, match="no control characters"):
            await meta_store.search_memories("alice", "x", metadata_filter={"project": condition})


async def test_a_declared_tag_holding_a_control_character_is_refused_when_written(meta_store: RedisMemoryStore):
    """It could never be found by a filter: refused, saying so, rather than kept unfindable."""
    with pytest.raises(InvalidInput, match="no control characters"):
        await meta_store.add_memories([note("ctl", "a note", project="a\x01b")])
    await meta_store.add_memories([note("undeclared", "a note", colour="a\x01b")])  # not a tag: kept as given


async def test_rewriting_a_memory_without_a_key_takes_it_out_of_the_filter(meta_store: RedisMemoryStore):
    await meta_store.add_memories([note("a", "launch notes", project="apollo", priority=2)])
    assert await found(meta_store, {"priority": 2}) == {"a"}
    await meta_store.add_memories([note("a", "launch notes", project="gemini")])
    assert await found(meta_store, {"priority": 2}) == set()
    assert await found(meta_store, {"project": "apollo"}) == set()
    assert await found(meta_store, {"project": "gemini"}) == {"a"}
    assert await meta_store.client.hget(meta_store.layout.memory("alice", "a"), metadata_field("priority")) is None


async def test_filters_on_undeclared_fields_and_wrong_operators_are_refused(meta_store: RedisMemoryStore):
    with pytest.raises(InvalidInput, match=r"'colour' is not a declared field.*MEMLANE_METADATA_FIELDS"):
        await meta_store.search_memories("alice", "x", metadata_filter={"colour": "red"})
    with pytest.raises(InvalidInput, match="'project' is a tag field.*ranges need a field declared numeric"):
        await meta_store.search_memories("alice", "x", metadata_filter={"project": {"gte": "a"}})
    with pytest.raises(InvalidInput, match="numeric field: compare it with numbers"):
        await meta_store.search_memories("alice", "x", metadata_filter={"priority": "high"})
    with pytest.raises(InvalidInput, match="non-empty strings"):
        await meta_store.search_memories("alice", "x", metadata_filter={"project": ""})  # RedisVL reads "" as anything
    with pytest.raises(InvalidInput, match="non-empty list"):
        await meta_store.search_memories("alice", "x", metadata_filter={"project": {"in": []}})
    with pytest.raises(InvalidInput, match="OR in a metadata filter"):
        await meta_store.search_memories("alice", "x", metadata_filter={"OR": {"project": "a"}})
    with pytest.raises(InvalidInput, match="use eq, ne, in, nin, not 'like'"):
        metadata_expression({"project": {"like": "a"}}, DECLARED)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="more than 64 conditions"):
        metadata_expression({"OR": [{"priority": index} for index in range(70)]}, DECLARED)  # type: ignore[arg-type]


async def test_metadata_a_declared_field_cannot_hold_is_refused_before_anything_is_written(
    meta_store: RedisMemoryStore,
):
    with pytest.raises(InvalidInput, match=r"'priority' is declared numeric in MEMLANE_METADATA_FIELDS.*give a number"):
        await meta_store.add_memories([note("a", "launch notes", priority="high")])
    with pytest.raises(InvalidInput, match="'project' is declared tag"):
        await meta_store.add_messages(
            [
                Message(
                    id="m1", user_id="alice", session_id="s", role="user", content="hi", metadata={"project": {"a": 1}}
                )
            ]
        )
    with pytest.raises(InputTooLarge, match="MEMLANE_MAX_METADATA_BYTES"):
        await meta_store.add_memories([note("a", "launch notes", blob="x" * 5000)])
    with pytest.raises(InvalidInput, match="is declared numeric"):
        await meta_store.put_items(
            [
                StoreItem(
                    user_id="alice",
                    namespace=["notes"],
                    key="k",
                    value={"a": 1},
                    text="launch notes",
                    metadata={"priority": [1]},
                )
            ]
        )
    assert await meta_store.recent_messages("alice", "s") == []
    assert await found(meta_store, None) == set()


async def test_messages_notes_and_items_keep_their_metadata_through_search_and_export(meta_store: RedisMemoryStore):
    await meta_store.add_messages(
        [
            Message(
                id="m1",
                user_id="alice",
                session_id="s",
                role="user",
                content="launch notes from the call",
                metadata={"project": "apollo", "source": "zoom"},
            ),
            Message(id="m2", user_id="alice", session_id="s", role="user", content="launch notes from lunch"),
        ]
    )
    event = Event(
        id="n1",
        user_id="alice",
        summary="launch notes remembered",
        tags=["remembered"],
        metadata={"project": "apollo", "priority": 4},
    )
    await meta_store.apply_update(MemoryUpdate(user_id="alice", event=event, memories=[event.as_memory()]))
    item = StoreItem(
        user_id="alice",
        namespace=["docs"],
        key="k1",
        value={"v": 1},
        text="launch notes item",
        metadata={"project": "apollo"},
    )
    await meta_store.put_items([item])
    assert await found(meta_store, {"project": "apollo"}) == {"message:m1", "event:n1", item.memory_id}
    assert await found(meta_store, {"priority": {"gt": 3}}) == {"event:n1"}
    [message] = [m for m in await meta_store.recent_messages("alice", "s") if m.id == "m1"]
    assert message.metadata == {"project": "apollo", "source": "zoom"}
    exported = await meta_store.export_user("alice")
    assert next(m for m in exported.messages if m.id == "m1").metadata == {"project": "apollo", "source": "zoom"}
    assert exported.events[0].metadata == {"project": "apollo", "priority": 4}
    assert exported.items[0].metadata == {"project": "apollo"}
    assert {m.id: m.metadata for m in exported.memories}["event:n1"] == {"project": "apollo", "priority": 4}


async def test_declaring_a_field_later_indexes_the_memories_already_stored(settings: Settings):
    plain = settings.model_copy(update={"metadata_fields": {}})
    embeddings = CharacterHashEmbeddings()
    async with memory_store_on(plain, embeddings) as before:
        await before.add_memories(
            [note("a", "launch notes a", project="apollo", priority="high"), note("b", "launch notes b", priority=7)]
        )
        with pytest.raises(InvalidInput, match="not a declared field"):
            await before.search_memories("alice", "launch", metadata_filter={"project": "apollo"})
        after = RedisMemoryStore(
            before.client,
            embeddings,
            **settings.model_copy(update={"metadata_fields": {"project": "tag", "priority": "tag"}}).parts(
                *STORE_PARTS
            ),
        )
        await after.ensure_indexes()  # the new fields are added in place and the stored memories written to them
        assert await _eventually(lambda: found(after, {"project": "apollo"}), {"a"})
        assert await found(after, {"priority": "high"}) == {"a"}
        retyped = RedisMemoryStore(
            before.client,
            embeddings,
            **settings.model_copy(update={"metadata_fields": {"project": "tag", "priority": "numeric"}}).parts(
                *STORE_PARTS
            ),
        )
        await retyped.ensure_indexes()  # tag -> numeric rebuilds the index; "high" is no number and is left out
        assert await _eventually(lambda: found(retyped, {"priority": {"gte": 7}}), {"b"})
        assert await found(retyped, None) == {"a", "b"}  # the memory whose value is no number is still searchable
        assert await found(retyped, {"project": "apollo"}) == {"a"}


async def _eventually(probe, expected, tries: int = 50):
    for _ in range(tries):  # a rebuilt index reads the stored hashes in the background
        if (got := await probe()) == expected:
            return True
        await asyncio.sleep(0.1)
    return got == expected


async def test_recall_searches_only_the_memories_whose_metadata_match(store: RedisMemoryStore, settings: Settings):
    await store.add_memories(
        [
            note("apollo", "the apollo launch moved to friday", project="apollo"),
            note("gemini", "the gemini launch moved to monday", project="gemini"),
        ]
    )
    everything = await recall(store, "alice", None, "when is the launch?", parts=RecallParts.of(settings))
    assert {item.text for item in everything.items} >= {
        "the apollo launch moved to friday",
        "the gemini launch moved to monday",
    }
    narrowed = await recall(
        store,
        "alice",
        None,
        "when is the launch?",
        parts=RecallParts.of(settings),
        metadata_filter={"project": "gemini"},
    )
    assert [item.text for item in narrowed.items] == ["the gemini launch moved to monday"]
    with pytest.raises(InvalidInput, match="not a declared field"):
        await recall(
            store, "alice", None, "when is the launch?", parts=RecallParts.of(settings), metadata_filter={"team": "x"}
        )


async def test_filters_work_on_a_cluster(cluster_store: RedisMemoryStore):
    users = ["alice", "bob", "carol", "dave"]  # spread over the primaries
    await cluster_store.add_memories(
        [
            Memory(
                id=f"{user}-{index}",
                user_id=user,
                kind="event",
                text=f"launch notes {index}",
                metadata={"project": f"p{index % 2}", "priority": index},
            )
            for user in users
            for index in range(4)
        ]
    )
    for user in users:
        assert await found(cluster_store, {"project": "p1"}, user=user) == {f"{user}-1", f"{user}-3"}
        assert await found(cluster_store, {"priority": {"lt": 2}}, user=user) == {f"{user}-0", f"{user}-1"}
    [hit] = await cluster_store.search_memories("bob", "launch notes 3", limit=1, metadata_filter={"priority": 3})
    assert hit.memory.metadata == {"project": "p1", "priority": 3}
