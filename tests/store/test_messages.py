"""History (store/redis/messages.py): message ids, order per session, the cursor, session summaries,
neighbours, and the search entries of messages (their context, and the ones stored while the
embedder was down)."""

from __future__ import annotations

from memlane.store.records import Message, SessionSummary
from memlane.store.redis.store import STORE_PARTS, RedisMemoryStore
from memlane.store.schema import MemoryField


def chat(user_id: str, session_id: str, *contents: str, start: int = 0) -> list[Message]:
    return [
        Message(id=f"m{start + i}", user_id=user_id, session_id=session_id, role="user", content=text)
        for i, text in enumerate(contents)
    ]


async def test_duplicate_message_ids_are_stored_once(store: RedisMemoryStore):
    first = await store.add_messages(chat("alice", "s1", "hello", "I live in Lyon"))
    again = await store.add_messages(chat("alice", "s1", "hello (retry)", "I live in Lyon"))
    assert [message.seq for message in first] == [1, 2]
    assert again == []
    recent = await store.recent_messages("alice", "s1")
    assert [message.content for message in recent] == ["hello", "I live in Lyon"]


async def test_recent_messages_are_per_session_and_oldest_first(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "one", "two", "three"))
    await store.add_messages(chat("alice", "s2", "other session", start=10))
    assert [m.content for m in await store.recent_messages("alice", "s1", limit=2)] == ["two", "three"]
    assert [m.content for m in await store.recent_messages("alice", "s2")] == ["other session"]
    assert await store.list_sessions("alice") == ["s2", "s1"]


async def test_buffer_cursor_only_moves_forward(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "a", "b", "c"))
    assert [m.content for m in await store.unprocessed_messages("alice")] == ["a", "b", "c"]
    assert [m.content for m in await store.unprocessed_messages("alice", limit=2)] == ["a", "b"]
    assert await store.advance_cursor("alice", 2) == 2
    assert await store.advance_cursor("alice", 1) == 2  # never backwards
    assert [m.content for m in await store.unprocessed_messages("alice")] == ["c"]
    await store.add_messages(chat("alice", "s2", "d", start=5))
    assert [m.content for m in await store.unprocessed_messages("alice")] == ["c", "d"]


async def test_session_summary_roundtrip(store: RedisMemoryStore):
    assert await store.get_session_summary("alice", "s1") is None
    await store.set_session_summary(SessionSummary(user_id="alice", session_id="s1", summary="谈了咖啡"))
    summary = await store.get_session_summary("alice", "s1")
    assert summary is not None and summary.summary == "谈了咖啡"
    assert await store.get_session_summary("alice", "s2") is None


async def test_a_one_megabyte_message_is_stored_whole(store: RedisMemoryStore):
    big = "长" * 350_000  # ~1 MB of UTF-8
    stored = await store.add_messages(chat("alice", "s1", big))
    assert len(stored) == 1
    assert (await store.recent_messages("alice", "s1"))[0].content == big
    assert await store.search_memories("alice", big, limit=1)


async def test_neighbours_of_a_message_come_from_its_session_in_order(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "q1", "a1", "q2", "a2"))
    await store.add_messages(chat("alice", "s2", "other session", start=10))
    assert [m.content for m in await store.message_neighbours("alice", "m1")] == ["q1", "a1", "q2"]
    assert [m.content for m in await store.message_neighbours("alice", "m0", before=2, after=0)] == ["q1"]
    assert [m.content for m in await store.message_neighbours("alice", "m10")] == ["other session"]
    assert await store.message_neighbours("alice", "missing") == []
    assert await store.message_neighbours("bob", "m1") == []


async def test_a_message_id_reused_in_another_session_is_skipped_loudly(store: RedisMemoryStore, caplog):
    await store.add_messages(chat("alice", "s1", "first"))
    assert await store.add_messages(chat("alice", "s1", "first")) == []  # a retry: quiet
    assert "another session" not in caplog.text
    assert await store.add_messages(chat("alice", "s2", "reused id")) == []
    assert "already stored in another session" in caplog.text and "m0" in caplog.text


async def test_an_answer_is_found_through_the_question_before_it(store: RedisMemoryStore):
    turns = [
        ("user", "Any good books about volcanoes?"),
        ("assistant", "Try 'Krakatoa' by Simon Winchester."),
        ("user", "I repaired my bike today"),
        ("assistant", "Nice, a new chain?"),
        ("user", "We rented a cabin in Norway"),
        ("assistant", "Enjoy the fjords!"),
    ]
    await store.add_messages(
        [
            Message(id=f"t{i}", user_id="alice", session_id="s", role=role, content=text)
            for i, (role, text) in enumerate(turns)
        ]
    )
    answer_key = store.layout.memory("alice", "message:t1")
    assert await store.client.hget(answer_key, MemoryField.SEARCH_CONTEXT) == b"good book volcano"
    assert await store.client.hget(store.layout.memory("alice", "message:t0"), MemoryField.SEARCH_CONTEXT) == b""
    hits = await store.search_memories("alice", "which volcano book did you suggest?", limit=3)
    assert {hit.memory.id for hit in hits[:2]} == {"message:t0", "message:t1"}
    assert next(hit for hit in hits if hit.memory.id == "message:t1").memory.context is None  # never shown


# --- the embedder down: nothing stored is left unindexed ----------------------------------------
def flaky_store(store: RedisMemoryStore, settings, embeddings, **overrides):
    """A second store on the same Redis and key prefix whose embedder can be taken down."""
    from scripted import FlakyEmbeddings

    flaky = FlakyEmbeddings(embeddings)
    return RedisMemoryStore(store.client, flaky, **settings.model_copy(update=overrides).parts(*STORE_PARTS)), flaky


async def test_a_turn_said_while_the_embedder_was_down_is_found_after_recovery(
    store: RedisMemoryStore, settings, embeddings
):
    from memlane.store.ids import message_memory_id
    from memlane.store.schema import MemoryField

    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    question = Message(
        id="q", user_id="alice", session_id="s1", role="assistant", content="Which city do you call home?"
    )
    answer = Message(id="a", user_id="alice", session_id="s1", role="user", content="Lyon, by the Rhône")
    stored = await degraded.add_messages([question, answer])  # stored, not raised
    assert [m.id for m in stored] == ["q", "a"]
    assert [m.content for m in await degraded.recent_messages("alice", "s1")] == [question.content, answer.content]
    [found] = await degraded.search_memories("alice", "Rhône")  # found by its words before it is embedded
    assert found.memory.text == "Lyon, by the Rhône" and found.vector_similarity == 0

    flaky.down = False  # the embedder is back: the next save indexes the kept turn first
    await degraded.add_messages(chat("alice", "s1", "I also like Paris", start=10))
    hits = await degraded.search_memories("alice", "Lyon Rhône")
    assert hits[0].memory.text == "Lyon, by the Rhône" and hits[0].vector_similarity > 0
    # the repaired message keeps its search context (the message before it in its session)
    context = await store.client.hget(store.layout.memory("alice", message_memory_id("a")), MemoryField.SEARCH_CONTEXT)
    assert context and b"citi" in context
    assert await degraded.reindex_pending("alice") == 0  # nothing left pending


async def test_reindex_pending_indexes_what_failed_and_keeps_what_fails_again(
    store: RedisMemoryStore, settings, embeddings
):
    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    await degraded.add_messages(chat("alice", "s1", "我下周去成都出差", "I left my keys at the office"))
    assert await degraded.reindex_pending("alice") == 0  # still down: still pending
    flaky.down = False
    assert await degraded.reindex_pending("alice") == 2
    assert [hit.memory.text for hit in await degraded.search_memories("alice", "成都出差")][:1] == ["我下周去成都出差"]
    assert (await degraded.search_memories("alice", "keys office"))[0].memory.text == "I left my keys at the office"
    assert await degraded.reindex_pending("alice") == 0


async def test_a_save_tried_again_indexes_what_its_first_try_only_stored(store: RedisMemoryStore):
    # the first try wrote the history, then Redis went away before the search entries
    turn = chat("alice", "s", "my sister lives in Lyon", "noted")
    await store.add_messages(turn, index_for_search=False)
    assert await store.search_memories("alice", "sister Lyon", kinds=["message"]) == []
    assert await store.add_messages(turn) == []  # the retry: nothing new stored ...
    hits = await store.search_memories("alice", "sister Lyon", kinds=["message"])
    assert [hit.memory.text for hit in hits][:1] == ["my sister lives in Lyon"]  # ... but indexed
    assert len(await store.recent_messages("alice", "s")) == 2


async def test_index_later_stores_at_once_and_reindex_pending_makes_it_searchable(store: RedisMemoryStore):
    turn = chat("alice", "s", "我下周去成都出差", "My sister lives in Lyon")
    stored = await store.add_messages(turn, index_later=True)
    assert [m.content for m in stored] == ["我下周去成都出差", "My sister lives in Lyon"]
    assert len(await store.recent_messages("alice", "s")) == 2  # history answers at once
    assert await store.search_memories("alice", "成都出差", kinds=["message"]) == []
    assert await store.reindex_pending("alice") == 2
    assert [hit.memory.text for hit in await store.search_memories("alice", "成都出差", kinds=["message"])][:1] == [
        "我下周去成都出差"
    ]
    assert await store.reindex_pending("alice") == 0
