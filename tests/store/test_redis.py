"""RedisMemoryStore against a real Redis Stack: history, cursor, profile, events,
hybrid search (Chinese included), isolation with hostile ids, delete and export."""

from __future__ import annotations

import json

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from conftest import HOSTILE_IDS
from memlane.store.base import (
    Event,
    Memory,
    MemoryUpdate,
    Message,
    ProfileChange,
    ProfileEntry,
    RedisUnavailable,
    SessionSummary,
    StoreError,
    event_memory_id,
    profile_memory_id,
)
from memlane.store.redis import RedisMemoryStore



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


async def test_apply_update_writes_profile_event_memories_and_cursor_idempotently(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "我喜欢黑咖啡，不加糖", "我在加班"), index_for_search=False)
    entry = ProfileEntry(
        user_id="alice", topic="饮食", subtopic="咖啡", content="喜欢黑咖啡，不加糖", source_message_ids=["m0"]
    )
    event = Event(
        id="e1",
        user_id="alice",
        summary="用户说喜欢黑咖啡",
        tags=["饮食偏好"],
        profile_delta=[ProfileChange(action="add", entry_id=entry.id, topic="饮食", subtopic="咖啡", content=entry.content)],
        source_message_ids=["m0", "m1"],
    )
    update = MemoryUpdate(
        user_id="alice",
        upsert_profile=[entry],
        event=event,
        memories=[
            Memory(id=profile_memory_id(entry.id), user_id="alice", kind="profile", text="饮食/咖啡: 喜欢黑咖啡，不加糖",
                   source_message_ids=["m0"], ref_id=entry.id),
            Memory(id="event:e1", user_id="alice", kind="event", text=event.summary, source_message_ids=["m0", "m1"]),
        ],
        advance_cursor_to=2,
    )
    await store.apply_update(update)
    await store.apply_update(update)  # at-least-once delivery: a second apply changes nothing
    profile = await store.get_profile("alice")
    assert [(e.topic, e.subtopic, e.content) for e in profile] == [("饮食", "咖啡", "喜欢黑咖啡，不加糖")]
    events = await store.list_events("alice")
    assert [e.id for e in events] == ["e1"] and events[0].tags == ["饮食偏好"]
    assert await store.get_cursor("alice") == 2
    assert await store.unprocessed_messages("alice") == []
    hits = await store.search_memories("alice", "咖啡")
    assert sorted(hit.memory.kind for hit in hits) == ["event", "profile"]
    assert all(hit.memory.source_message_ids for hit in hits)

    await store.apply_update(MemoryUpdate(user_id="alice", delete_profile_ids=[entry.id]))
    assert await store.get_profile("alice") == []
    assert [hit.memory.kind for hit in await store.search_memories("alice", "咖啡")] == ["event"]


async def test_apply_update_refuses_records_of_another_user(store: RedisMemoryStore):
    entry = ProfileEntry(user_id="mallory", topic="work", subtopic="role", content="admin")
    with pytest.raises(StoreError, match="another user"):
        await store.apply_update(MemoryUpdate(user_id="alice", upsert_profile=[entry]))
    assert await store.get_profile("alice") == [] and await store.get_profile("mallory") == []


async def test_delete_profile_entry_removes_its_memory(store: RedisMemoryStore):
    entry = ProfileEntry(user_id="alice", topic="work", subtopic="title", content="nurse")
    await store.apply_update(MemoryUpdate(
        user_id="alice", upsert_profile=[entry],
        memories=[Memory(id=profile_memory_id(entry.id), user_id="alice", kind="profile", text="work/title: nurse")],
    ))
    assert await store.delete_profile_entry("alice", entry.id) is True
    assert await store.delete_profile_entry("alice", entry.id) is False
    assert await store.search_memories("alice", "nurse") == []


async def test_delete_event_removes_its_card_and_memory_for_that_user_only(store: RedisMemoryStore):
    for user in ("alice", "a|b"):
        event = Event(id="e1", user_id=user, summary="ran a marathon in Berlin", tags=["sport"])
        await store.apply_update(MemoryUpdate(
            user_id=user, event=event,
            memories=[Memory(id=event_memory_id(event.id), user_id=user, kind="event", text=event.summary)],
        ))
    assert await store.delete_event("alice", "e1") is True
    assert await store.delete_event("alice", "e1") is False
    assert await store.list_events("alice") == []
    assert await store.search_memories("alice", "marathon Berlin") == []
    assert [event.id for event in await store.list_events("a|b")] == ["e1"]
    assert len(await store.search_memories("a|b", "marathon Berlin")) == 1


async def test_hybrid_search_ranks_an_exact_name_first_where_vector_search_does_not(store: RedisMemoryStore):
    texts = [
        "My neighbor Marco Morelli bakes sourdough loaves every morning",
        "Alicia Moretti lives in Lyon",
        "I enjoy hiking on weekends",
        "My favourite pastry shop closed",
        "I like black coffee without sugar",
    ]
    await store.add_memories([Memory(id=str(i), user_id="alice", kind="profile", text=t) for i, t in enumerate(texts)])
    query = "Moretti bread baker"
    vector = await store.embeddings.aembed_query(query)
    vector_only = await store.index.query(store.vector_query(vector, store._filter("alice", None, None, None, None), 3))
    assert vector_only[0]["text"] != "Alicia Moretti lives in Lyon"
    hits = await store.search_memories("alice", query, limit=3)
    assert hits[0].memory.text == "Alicia Moretti lives in Lyon"
    assert hits[0].text_score == 1.0 and 0 < hits[0].score <= 1


async def test_chinese_full_text_search_finds_words_inside_sentences(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "我最近总是凌晨 2 点才睡，白天困得不行。", "是的，连续两周都在加班。",
                                  "顺便，我喜欢黑咖啡，不加糖。", "I also like green tea"))
    for query, expected in [("咖啡", "黑咖啡"), ("加班", "加班"), ("我喜欢喝什么咖啡", "黑咖啡"), ("green tea", "green tea")]:
        hits = await store.search_memories("alice", query, limit=4)
        best_text = max(hits, key=lambda hit: hit.text_score)
        assert expected in best_text.memory.text and best_text.text_score == 1.0, query
        assert hits[0].memory.source_message_ids


async def test_search_filters_on_kind_session_and_time(store: RedisMemoryStore):
    await store.add_memories([
        Memory(id="1", user_id="alice", kind="message", text="coffee in session one", session_id="s1", created_at=100.0),
        Memory(id="2", user_id="alice", kind="message", text="coffee in session two", session_id="s2", created_at=200.0),
        Memory(id="3", user_id="alice", kind="profile", text="likes coffee", created_at=300.0),
    ])
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", kinds=["profile"])} == {"3"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", session_id="s2")} == {"2"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", since=150, until=250)} == {"2"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", kinds=["message", "event"])} == {"1", "2"}


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_hostile_ids_work_and_never_see_other_users(store: RedisMemoryStore, hostile: str):
    await store.add_messages(chat("victim", "s", "victim secret coffee order"))
    await store.add_messages(chat(hostile, hostile, "my own coffee note"))
    await store.add_memories([Memory(id=hostile, user_id=hostile, kind="profile", text="coffee lover", session_id=hostile)])
    await store.apply_update(MemoryUpdate(
        user_id=hostile,
        upsert_profile=[ProfileEntry(user_id=hostile, topic=hostile, subtopic=hostile, content="x")],
        event=Event(id=hostile, user_id=hostile, summary="coffee event"),
    ))
    hits = await store.search_memories(hostile, "coffee", session_id=None, limit=50)
    assert hits and all(hit.memory.user_id == hostile for hit in hits)
    assert {h.memory.id for h in await store.search_memories(hostile, "coffee", session_id=hostile)} == {
        hostile, f"message:m0"}
    assert [m.content for m in await store.recent_messages(hostile, hostile)] == ["my own coffee note"]
    assert len(await store.get_profile(hostile)) == 1 and len(await store.list_events(hostile)) == 1
    assert await store.list_sessions(hostile) == [hostile]
    export = await store.export_user(hostile)
    assert export.user_id == hostile and len(export.memories) == 2
    assert await store.delete_user(hostile) > 0
    assert await store.search_memories(hostile, "coffee") == []
    victim_hits = await store.search_memories("victim", "coffee")
    assert [hit.memory.text for hit in victim_hits] == ["victim secret coffee order"]


async def test_approximate_vector_search_for_users_with_many_memories_stays_per_user(store: RedisMemoryStore):
    store.settings = store.settings.model_copy(update={"search_exact_max_memories": 3})
    texts = ["drinks black coffee", "runs marathons", "lives in Lyon", "plays chess", "learns Japanese"]
    await store.add_memories([Memory(id=f"a{i}", user_id="a|b", kind="profile", text=t) for i, t in enumerate(texts)])
    await store.add_memories([Memory(id="v", user_id="a", kind="profile", text="drinks black coffee")])
    assert await store.memory_count("a|b") == 5 and await store.memory_count("a") == 1
    hits = await store.search_memories("a|b", "what coffee do I drink", limit=3)  # HNSW (BATCHES)
    assert hits[0].memory.id == "a0" and {hit.memory.user_id for hit in hits} == {"a|b"}
    exact = await store.search_memories("a", "what coffee do I drink")  # brute force over one memory
    assert [hit.memory.id for hit in exact] == ["v"]


async def test_delete_user_removes_everything_and_export_holds_everything(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s1", "I am a nurse in Lyon", "我喜欢黑咖啡"))
    await store.set_session_summary(SessionSummary(user_id="alice", session_id="s1", summary="nurse, coffee"))
    entry = ProfileEntry(user_id="alice", topic="work", subtopic="title", content="nurse", source_message_ids=["m0"])
    await store.apply_update(MemoryUpdate(
        user_id="alice", upsert_profile=[entry], event=Event(id="e", user_id="alice", summary="work"),
        advance_cursor_to=1,
    ))
    await store.add_messages(chat("bob", "s1", "bob's message"))

    exported = json.loads((await store.export_user("alice")).model_dump_json())
    assert [m["content"] for m in exported["messages"]] == ["I am a nurse in Lyon", "我喜欢黑咖啡"]
    assert exported["profile"][0]["content"] == "nurse"
    assert exported["events"][0]["id"] == "e"
    assert exported["session_summaries"][0]["summary"] == "nurse, coffee"
    assert len(exported["memories"]) == 2 and exported["cursor"] == 1

    assert await store.delete_user("alice") > 0
    empty = await store.export_user("alice")
    assert (empty.messages, empty.profile, empty.events, empty.memories, empty.cursor) == ([], [], [], [], 0)
    assert [m.content for m in await store.recent_messages("bob", "s1")] == ["bob's message"]


async def test_a_one_megabyte_message_is_stored_whole(store: RedisMemoryStore):
    big = "长" * 350_000  # ~1 MB of UTF-8
    stored = await store.add_messages(chat("alice", "s1", big))
    assert len(stored) == 1
    assert (await store.recent_messages("alice", "s1"))[0].content == big
    assert await store.search_memories("alice", big, limit=1)


async def test_blank_and_punctuation_queries_do_not_fail(store: RedisMemoryStore):
    await store.add_memories([Memory(id="1", user_id="alice", kind="profile", text="likes coffee")])
    assert await store.search_memories("alice", "   ") == []
    assert len(await store.search_memories("alice", "?!*|{}@:")) == 1  # vector search still answers


async def test_a_redis_that_goes_away_gives_a_clear_error(settings, embeddings):
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    dead = RedisMemoryStore(client, embeddings, settings=settings)
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await dead.add_messages(chat("alice", "s1", "hello"))
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await dead.search_memories("alice", "hello")
    await client.aclose()


# bilingual full text, speakers, fusion, time expressions, neighbours (issue 12) -----------------

async def test_english_words_are_found_by_their_stem(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s", "We hiked up the Ventoux last summer", "I bought a new phone"))
    text_only = await store.index.query(store.text_query(["hike"], store._filter("alice", None, None, None, None), 5))
    assert [doc["text"] for doc in text_only] == ["We hiked up the Ventoux last summer"]
    hits = await store.search_memories("alice", "hiking trips", limit=2)
    assert hits[0].memory.text.startswith("We hiked") and hits[0].text_score == 1.0


async def test_chinese_and_english_in_one_message_are_both_searchable(store: RedisMemoryStore):
    await store.add_messages(chat("alice", "s", "我在用Python写一个running app", "今天天气不错", "I like jazz"))
    for query in ["Python", "跑步 running", "写一个", "apps that run"]:
        hits = await store.search_memories("alice", query, limit=3)
        assert hits[0].memory.text == "我在用Python写一个running app", query
        assert hits[0].text_score == 1.0


async def test_a_friends_words_keep_their_speaker_and_can_be_filtered(store: RedisMemoryStore):
    await store.add_messages([
        Message(id="m1", user_id="alice", session_id="g", role="user", name="朋友A", content="我最喜欢的电影是《星际穿越》"),
        Message(id="m2", user_id="alice", session_id="g", role="user", content="我最喜欢的电影是《千与千寻》"),
        Message(id="m3", user_id="alice", session_id="g", role="user", name="Alice", speaker_is_owner=True, content="我也喜欢看纪录片"),
    ])
    hits = {hit.memory.source_message_ids[0]: hit.memory for hit in await store.search_memories("alice", "最喜欢的电影", limit=5)}
    assert hits["m1"].speaker == "朋友A" and hits["m1"].speaker_role == "other"
    assert hits["m1"].attributed_text == "朋友A: 我最喜欢的电影是《星际穿越》"
    assert hits["m2"].speaker_role == "owner" and hits["m2"].attributed_text == "我最喜欢的电影是《千与千寻》"
    assert hits["m3"].speaker_role == "owner"  # named, but explicitly the user
    # the speaker's name is searchable text, and a filter
    assert (await store.search_memories("alice", "朋友A", limit=1))[0].memory.source_message_ids == ["m1"]
    only_friend = await store.search_memories("alice", "电影", speaker="朋友A")
    assert [hit.memory.source_message_ids for hit in only_friend] == [["m1"]]
    owner_only = await store.search_memories("alice", "电影", speaker_roles=["owner"])
    assert {hit.memory.source_message_ids[0] for hit in owner_only} == {"m2", "m3"}
    history = await store.recent_messages("alice", "g")
    assert [m.speaker_role for m in history] == ["other", "owner", "owner"]


async def test_fusion_ranks_what_either_side_ranks_first(store: RedisMemoryStore):
    texts = ["Bought oat milk for the office", "My dentist is Dr. Okonkwo on Rue Pasteur",
             "Feeling tired after the long week", "The dentist appointment is on Friday"]
    await store.add_memories([Memory(id=str(i), user_id="alice", kind="event", text=t) for i, t in enumerate(texts)])
    hits = await store.search_memories("alice", "Okonkwo", limit=4)
    assert hits[0].memory.id == "1"
    assert all(a.rank_score >= b.rank_score for a, b in zip(hits, hits[1:]))
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)


async def test_a_time_expression_in_the_query_favours_memories_of_that_time(store: RedisMemoryStore):
    day = 86_400.0
    reference = 1_700_000_000.0  # 2023-11-14, a Tuesday
    await store.add_memories([
        Memory(id="old", user_id="alice", kind="message", text="I went running in the park", created_at=reference - 30 * day),
        Memory(id="yesterday", user_id="alice", kind="message", text="I went swimming at the pool", created_at=reference - day),
        Memory(id="older", user_id="alice", kind="message", text="I went running by the river", created_at=reference - 60 * day),
    ])
    hits = await store.search_memories("alice", "what sport did I do yesterday?", reference_time=reference)
    assert hits[0].memory.id == "yesterday" and hits[0].time_match
    assert not any(hit.time_match for hit in hits[1:])
    plain = await store.search_memories("alice", "what sport did I do yesterday?", reference_time=reference, understand_time=False)
    assert {hit.memory.id for hit in plain} == {"old", "yesterday", "older"}


async def test_a_date_without_a_year_finds_that_day_in_any_year(store: RedisMemoryStore):
    from datetime import datetime

    def at(year: int, month: int, day: int) -> float:
        return datetime(year, month, day, 12, tzinfo=store.zone).timestamp()

    await store.add_memories([
        Memory(id="apr27", user_id="alice", kind="message", text="我今天在公园跑了五公里", created_at=at(2023, 4, 27)),
        Memory(id="may01", user_id="alice", kind="message", text="我今天在公园跑了十公里", created_at=at(2023, 5, 1)),
    ])
    for query in ["4月27号我在公园跑了多久？", "How far did I run on April 27th?"]:
        hits = await store.search_memories("alice", query, reference_time=at(2026, 11, 23))
        assert hits[0].memory.id == "apr27" and hits[0].time_match, query


async def test_reindexing_unchanged_memories_keeps_text_scores(store: RedisMemoryStore):
    memories = [Memory(id=str(i), user_id="alice", kind="event", text=f"note {i} about coffee beans") for i in range(20)]
    memories.append(Memory(id="tea", user_id="alice", kind="event", text="green tea from Kyoto"))
    await store.add_memories(memories)

    async def scores() -> dict[str, float]:
        docs = await store.index.query(store.text_query(["kyoto", "coffe"], store._filter("alice", None, None, None, None), 30))
        return {doc["memory_id"]: round(float(doc["score"]), 6) for doc in docs}

    before = await scores()
    info_before = await store.client.ft(store.layout.memory_index_name).info()
    for _ in range(3):
        await store.add_memories(memories)  # bulk re-indexing of the same memories
    assert await scores() == before
    info_after = await store.client.ft(store.layout.memory_index_name).info()
    assert int(info_after["max_doc_id"]) == int(info_before["max_doc_id"])  # nothing was rewritten
    changed = memories[0].model_copy(update={"text": "note 0 about tea"})
    await store.add_memories([changed])
    assert {hit.memory.text for hit in await store.search_memories("alice", "note 0 about tea", limit=3)} >= {"note 0 about tea"}


async def test_an_index_from_an_older_memlane_is_rebuilt_with_its_memories(store: RedisMemoryStore):
    await store.add_memories([Memory(id="1", user_id="alice", kind="event", text="我喜欢黑咖啡", session_id="s")])
    key = store.layout.memory("alice", "1")
    await store.client.hdel(key, "search_text", "month_day", "speaker_role", "content_digest")
    await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=False)
    old_fields = [field for field in store.schema.redis_fields if field.name in ("user", "kind", "session", "created_at", "embedding")]
    from redis.commands.search.field import TextField
    from redis.commands.search.index_definition import IndexDefinition

    await store.client.ft(store.layout.memory_index_name).create_index(
        [*old_fields, TextField("text")], definition=IndexDefinition(prefix=[store.layout.memory_key_prefix], language="chinese")
    )
    await store.ensure_indexes()
    for _ in range(50):  # the rebuilt index scans the existing hashes in the background
        hits = await store.search_memories("alice", "咖啡", limit=1)
        if hits and hits[0].text_score == 1.0:
            break
        import asyncio

        await asyncio.sleep(0.1)
    assert hits[0].memory.text == "我喜欢黑咖啡" and hits[0].text_score == 1.0


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


async def test_memories_without_a_user_are_refused(store: RedisMemoryStore):
    with pytest.raises(StoreError, match="empty user_id"):
        await store.add_memories([Memory(id="1", user_id="", kind="event", text="orphan")])
    with pytest.raises(StoreError, match="empty user_id"):
        await store.apply_update(MemoryUpdate(user_id="", advance_cursor_to=3))


async def test_an_answer_is_found_through_the_question_before_it(store: RedisMemoryStore):
    turns = [
        ("user", "Any good books about volcanoes?"), ("assistant", "Try 'Krakatoa' by Simon Winchester."),
        ("user", "I repaired my bike today"), ("assistant", "Nice, a new chain?"),
        ("user", "We rented a cabin in Norway"), ("assistant", "Enjoy the fjords!"),
    ]
    await store.add_messages([
        Message(id=f"t{i}", user_id="alice", session_id="s", role=role, content=text) for i, (role, text) in enumerate(turns)
    ])
    answer_key = store.layout.memory("alice", "message:t1")
    assert await store.client.hget(answer_key, "search_context") == b"good book volcano"
    assert await store.client.hget(store.layout.memory("alice", "message:t0"), "search_context") == b""
    hits = await store.search_memories("alice", "which volcano book did you suggest?", limit=3)
    assert {hit.memory.id for hit in hits[:2]} == {"message:t0", "message:t1"}
    assert next(hit for hit in hits if hit.memory.id == "message:t1").memory.context is None  # never shown


# --- the embedder down: keyword-only search, and nothing stored left unindexed ----------------
def flaky_store(store: RedisMemoryStore, settings, embeddings, **overrides):
    """A second store on the same Redis and key prefix whose embedder can be taken down."""
    from scripted import FlakyEmbeddings

    flaky = FlakyEmbeddings(embeddings)
    return RedisMemoryStore(store.client, flaky, settings=settings.model_copy(update=overrides)), flaky


async def test_search_falls_back_to_keywords_when_the_embedder_is_down(store: RedisMemoryStore, settings, embeddings):
    await store.add_messages(chat("alice", "s1", "I live in Lyon", "my sister lives in Berlin", "我养了一只猫"))
    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    hits = await degraded.search_memories("alice", "Lyon")
    assert hits and hits[0].memory.text == "I live in Lyon"
    assert hits[0].vector_similarity == 0.0 and hits[0].score == pytest.approx(1.0)  # relevance from the text score
    chinese = await degraded.search_memories("alice", "我的那只猫")
    assert [hit.memory.text for hit in chinese] == ["我养了一只猫"]
    assert await degraded.search_memories("bob", "Lyon") == []  # still the user's own memories only


async def test_a_turn_said_while_the_embedder_was_down_is_found_after_recovery(store: RedisMemoryStore, settings, embeddings):
    from memlane.store.base import message_memory_id
    from memlane.store.schema import MemoryField

    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    question = Message(id="q", user_id="alice", session_id="s1", role="assistant", content="Which city do you call home?")
    answer = Message(id="a", user_id="alice", session_id="s1", role="user", content="Lyon, by the Rhône")
    stored = await degraded.add_messages([question, answer])  # stored, not raised
    assert [m.id for m in stored] == ["q", "a"]
    assert [m.content for m in await degraded.recent_messages("alice", "s1")] == [question.content, answer.content]
    assert await degraded.search_memories("alice", "Rhône") == []  # kept, but not indexed yet

    flaky.down = False  # the embedder is back: the next save indexes the kept turn first
    await degraded.add_messages(chat("alice", "s1", "I also like Paris", start=10))
    hits = await degraded.search_memories("alice", "Lyon Rhône")
    assert hits[0].memory.text == "Lyon, by the Rhône" and hits[0].vector_similarity > 0
    # the repaired message keeps its search context (the message before it in its session)
    context = await store.client.hget(store.layout.memory("alice", message_memory_id("a")), MemoryField.SEARCH_CONTEXT)
    assert context and b"citi" in context
    assert await degraded.reindex_pending("alice") == 0  # nothing left pending


async def test_reindex_pending_indexes_what_failed_and_keeps_what_fails_again(store: RedisMemoryStore, settings, embeddings):
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
    assert [hit.memory.text for hit in await store.search_memories("alice", "成都出差", kinds=["message"])][:1] == ["我下周去成都出差"]
    assert await store.reindex_pending("alice") == 0
