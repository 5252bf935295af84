"""Search memories and their index (store/redis/memories.py): an unchanged memory is not rewritten, an
index from an older memlane is rebuilt with its memories, a memory belongs to a user."""

from __future__ import annotations

import pytest
from redis.commands.search.index_definition import IndexDefinition, IndexType

from memlane.store.errors import StoreError
from memlane.store.records import Memory, MemoryUpdate
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField


async def test_reindexing_unchanged_memories_keeps_text_scores(store: RedisMemoryStore):
    memories = [
        Memory(id=str(i), user_id="alice", kind="event", text=f"note {i} about coffee beans") for i in range(20)
    ]
    memories.append(Memory(id="tea", user_id="alice", kind="event", text="green tea from Kyoto"))
    await store.add_memories(memories)

    async def scores() -> dict[str, float]:
        docs = await store.index.query(
            store.search.text_query(["kyoto", "coffe"], store.search.user_filter("alice", None, None, None, None), 30)
        )
        return {doc[MemoryField.ID]: round(float(doc["score"]), 6) for doc in docs}

    before = await scores()
    info_before = await store.client.ft(store.layout.memory_index_name).info()
    for _ in range(3):
        await store.add_memories(memories)  # bulk re-indexing of the same memories
    assert await scores() == before
    info_after = await store.client.ft(store.layout.memory_index_name).info()
    assert int(info_after["max_doc_id"]) == int(info_before["max_doc_id"])  # nothing was rewritten
    changed = memories[0].model_copy(update={"text": "note 0 about tea"})
    await store.add_memories([changed])
    assert {hit.memory.text for hit in await store.search_memories("alice", "note 0 about tea", limit=3)} >= {
        "note 0 about tea"
    }


async def test_an_index_from_an_older_memlane_is_rebuilt_with_its_memories(store: RedisMemoryStore):
    await store.add_memories([Memory(id="1", user_id="alice", kind="event", text="我喜欢黑咖啡", session_id="s")])
    key = store.layout.memory("alice", "1")
    await store.client.hdel(
        key, MemoryField.SEARCH_TEXT, MemoryField.MONTH_DAY, MemoryField.SPEAKER_ROLE, MemoryField.CONTENT_DIGEST
    )
    await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=False)
    old_fields = [
        field
        for field in store.schema.redis_fields
        if field.name
        in (MemoryField.USER, MemoryField.KIND, MemoryField.SESSION, MemoryField.CREATED_AT, MemoryField.EMBEDDING)
    ]
    from redis.commands.search.field import TextField
    from redis.commands.search.index_definition import IndexDefinition

    await store.client.ft(store.layout.memory_index_name).create_index(
        [*old_fields, TextField(MemoryField.TEXT)],
        definition=IndexDefinition(prefix=[store.layout.memory_key_prefix], language="chinese"),
    )
    await store.ensure_indexes()
    for _ in range(50):  # the rebuilt index scans the existing hashes in the background
        hits = await store.search_memories("alice", "咖啡", limit=1)
        if hits and hits[0].text_score == 1.0:
            break
        import asyncio

        await asyncio.sleep(0.1)
    assert hits[0].memory.text == "我喜欢黑咖啡" and hits[0].text_score == 1.0


async def test_memories_without_a_user_are_refused(store: RedisMemoryStore):
    with pytest.raises(StoreError, match="empty user_id"):
        await store.add_memories([Memory(id="1", user_id="", kind="event", text="orphan")])
    with pytest.raises(StoreError, match="empty user_id"):
        await store.apply_update(MemoryUpdate(user_id="", advance_cursor_to=3))


async def test_an_index_made_before_valid_until_gets_the_field_in_place(store: RedisMemoryStore):
    await store.add_memories([Memory(id="m", user_id="ann", kind="message", text="我住在北京")])
    name = store.layout.memory_index_name
    await store.client.ft(name).dropindex(delete_documents=False)
    fields = [field for field in store.core.schema.redis_fields if field.name != MemoryField.VALID_UNTIL]
    await store.client.ft(name).create_index(
        fields, definition=IndexDefinition(prefix=[store.layout.memory_key_prefix], index_type=IndexType.HASH)
    )
    await store.memories.ensure_indexes()
    info = await store.client.ft(name).info()
    assert MemoryField.VALID_UNTIL in {
        str(item, "utf-8") if isinstance(item, bytes) else item
        for attribute in info["attributes"]
        for item in attribute
    }
    [hit] = await store.search_memories("ann", "北京", limit=1)
    assert hit.memory.id == "m" and hit.memory.status == "current"  # kept, not rewritten


async def test_a_keyspace_of_the_layout_before_hash_tags_is_renamed_in_place(store: RedisMemoryStore):
    """Keys written by memlane before hash tags (`memlane:u:<digest>:…`) are renamed at start to
    `memlane:u:{<digest>}:…`; every message, profile entry and memory stays readable and searchable,
    and starting again changes nothing."""
    from test_messages import chat

    from memlane.store.records import Event, ProfileEntry

    for user in ("alice", "a|b"):
        await store.add_messages(chat(user, "s1", "I moved to Lyon last spring", "我喜欢黑咖啡"))
        await store.apply_update(
            MemoryUpdate(
                user_id=user,
                advance_cursor_to=1,
                upsert_profile=[ProfileEntry(user_id=user, topic="home", subtopic="city", content="Lyon")],
                event=Event(id="e1", user_id=user, summary="moved to Lyon"),
                memories=[Memory(id="fact", user_id=user, kind="profile", text="lives in Lyon")],
            )
        )
    before = {user: await store.export_user(user) for user in ("alice", "a|b")}
    # back to the older layout: the same names without the braces, and no layout marker
    new_keys = [key.decode() async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*")]
    for key in new_keys:
        if "{" in key:
            await store.client.rename(key, key.replace("{", "").replace("}", ""))
    await store.client.delete(store.layout.key_layout_marker)
    assert await store.export_user("alice") != before["alice"]  # the new names find nothing

    for _ in range(2):  # migrated once; the second start has nothing left to do
        await store.ensure_indexes()
        keys = sorted([key.decode() async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*")])
        assert keys == sorted(new_keys)
    for user in ("alice", "a|b"):
        after = await store.export_user(user)
        assert after.model_dump(exclude={"memories", "exported_at"}) == before[user].model_dump(
            exclude={"memories", "exported_at"}
        )
        assert {m.id for m in after.memories} == {m.id for m in before[user].memories}
        hits = await store.search_memories(user, "Lyon", limit=10)
        assert {hit.memory.user_id for hit in hits} == {user}
        assert {"message:m0", "fact"} <= {hit.memory.id for hit in hits}
        assert [hit.memory.text for hit in await store.search_memories(user, "咖啡", limit=1)] == ["我喜欢黑咖啡"]
    assert await store.get_cursor("alice") == 1 and [e.id for e in await store.list_events("a|b")] == ["e1"]


async def test_the_same_text_added_twice_is_stored_once_whatever_its_ids(store: RedisMemoryStore):
    """Issue 31, item 6: two add_memories calls with the same text (ids of their own) stored it
    twice. Now the second answers the first's id; a turn that says the same is its own turn; a
    deleted or rewritten memory frees its text."""

    def note(memory_id: str, text: str, kind: str = "event") -> Memory:
        return Memory(id=memory_id, user_id="u", kind=kind, text=text)

    assert await store.add_memories([note("n1", "Her sister lives in Porto")]) == ["n1"]
    assert await store.add_memories(
        [note("n2", "her sister  lives in porto"), note("n3", "Allergic to peanuts"), note("n4", "Allergic to peanuts")]
    ) == ["n1", "n3", "n3"]
    assert await store.add_memories([note("n1", "Her sister lives in Porto")]) == ["n1"]  # its own id: an upsert
    hits = await store.search_memories("u", "sister Porto")
    assert [hit.memory.id for hit in hits if "Porto" in hit.memory.text] == ["n1"]
    assert await store.add_memories([note("m1", "ok", "message"), note("m2", "ok", "message")]) == ["m1", "m2"]
    assert await store.add_memories([note("n1", "Her sister moved to Lisbon")]) == [
        "n1"
    ]  # rewritten: Porto is free again
    assert await store.add_memories([note("n5", "Her sister lives in Porto")]) == ["n5"]
    assert await store.delete_memory("u", "n3")
    assert await store.add_memories([note("n6", "Allergic to peanuts")]) == ["n6"]
    assert await store.add_memories([note("n7", "Allergic to peanuts", "summary")]) == ["n7"]  # another kind


async def test_a_large_call_is_written_in_chunks_and_every_memory_is_kept(store: RedisMemoryStore, monkeypatch):
    """add_memories and store_memories write `WRITE_CHUNK` memories per pipeline (100,000 in one held Redis
    until the socket timed out): every memory is stored, found, and its repeat still answers its id."""
    from memlane.store.redis import memories as memories_module

    monkeypatch.setattr(memories_module, "WRITE_CHUNK", 3)
    executed: list[int] = []
    pipeline = store.client.pipeline

    def counting(*args, **kwargs):
        pipe = pipeline(*args, **kwargs)
        execute = pipe.execute

        async def counted(*a, **k):
            executed.append(len(pipe.command_stack))
            return await execute(*a, **k)

        pipe.execute = counted
        return pipe

    monkeypatch.setattr(store.client, "pipeline", counting)
    notes = [
        Memory(id=f"c{i}", user_id="chunky", kind="event", text=f"chunk note number {i} about otters")
        for i in range(10)
    ]
    assert await store.add_memories(notes) == [f"c{i}" for i in range(10)]
    assert len([size for size in executed if size]) >= 4  # 10 rows 3 at a time, besides the reads
    turns = [Memory(id=f"t{i}", user_id="chunky", kind="message", text=f"turn {i} about beavers") for i in range(7)]
    await store.memories.store_memories(turns)
    assert await store.search.memory_count("chunky") == 17
    assert await store.add_memories([Memory(id="again", user_id="chunky", kind="event", text=notes[9].text)]) == ["c9"]
    hits = await store.search_memories("chunky", "chunk note number 7 about otters", limit=3)
    assert hits[0].memory.id == "c7"
