"""Retention (store/redis/retention.py, store/redis/gc.py): each kind of record expires after its time to live
with its search entry, to the millisecond; RediSearch drops the expired entry by itself; reading
refreshes both where the settings say so; the sweep removes what expiry cannot and says what."""

from __future__ import annotations

import asyncio
import time

from test_messages import chat

from memlane.store.ids import event_memory_id, message_memory_id, profile_memory_id
from memlane.store.records import REMEMBERED_TAG, Event, MemoryUpdate, ProfileEntry, SessionSummary
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField

SECONDS = 1 / 86_400  # a time to live of one second, in the settings' days


def expiring(store: RedisMemoryStore, seconds: float = 1.5, **retention) -> RedisMemoryStore:
    """The store with messages, events, notes and profile entries living `seconds` (or as given)."""
    days = seconds * SECONDS
    values = {
        "message_ttl_days": days,
        "event_ttl_days": days,
        "note_ttl_days": days,
        "profile_ttl_days": days,
        **retention,
    }
    return store.with_settings(**{f"retention_{k}": v for k, v in values.items()})


async def indexed_count(store: RedisMemoryStore, user_id: str) -> int:
    """Documents of the user in the memory index, as RediSearch counts them (no key is read)."""
    query = f"@{MemoryField.USER}:{{{store.layout.user_tag(user_id)}}}"
    answer = await store.client.ft(store.layout.memory_index_name).search(query)
    return answer.total


async def expiry_ms(store: RedisMemoryStore, key: str, field: str | None = None) -> int:
    if field is None:
        return await store.client.pexpiretime(key)
    return (await store.client.hpexpiretime(key, field))[0]


def profile_update(user_id: str, content: str = "lives in Lyon") -> tuple[MemoryUpdate, ProfileEntry]:
    entry = ProfileEntry(user_id=user_id, topic="home", subtopic="city", content=content)
    return MemoryUpdate(user_id=user_id, upsert_profile=[entry], memories=[entry.as_memory()]), entry


def event_update(user_id: str, event_id: str, summary: str, *, note: bool = False) -> MemoryUpdate:
    event = Event(id=event_id, user_id=user_id, summary=summary, tags=[REMEMBERED_TAG] if note else [])
    return MemoryUpdate(user_id=user_id, event=event, memories=[event.as_memory()])


async def test_nothing_expires_by_default(store: RedisMemoryStore):
    await store.add_messages(chat("u", "s", "I keep bees on the roof"))
    update, entry = profile_update("u")
    await store.apply_update(update)
    assert await expiry_ms(store, store.layout.message("u", "m0")) == -1
    assert await expiry_ms(store, store.layout.memory("u", message_memory_id("m0"))) == -1
    assert await expiry_ms(store, store.layout.profile("u"), entry.id) == -1
    assert await expiry_ms(store, store.layout.memory("u", profile_memory_id(entry.id))) == -1
    assert not await store.client.exists(store.layout.owner("u"))  # nothing for the sweep to note either


async def test_a_message_and_its_search_entry_expire_together_and_leave_the_index(store: RedisMemoryStore):
    short = expiring(store)
    await short.add_messages(chat("u", "s", "I keep bees on the roof of my flat"))
    message_key, entry_key = short.layout.message("u", "m0"), short.layout.memory("u", message_memory_id("m0"))
    at = await expiry_ms(short, message_key)
    assert at > 0 and await expiry_ms(short, entry_key) == at  # the same millisecond
    assert [hit.memory.id for hit in await short.search_memories("u", "bees on the roof")] == ["message:m0"]
    await asyncio.sleep(max(0.0, at / 1000 - time.time()))
    async with asyncio.timeout(3):  # Redis deletes an expired key within ~100 ms (or when it is touched)
        while await indexed_count(short, "u"):  # RediSearch drops the expired document by itself
            await asyncio.sleep(0.05)
    assert await short.search_memories("u", "bees on the roof") == []
    assert await short.recent_messages("u", "s") == []
    assert await short.unprocessed_messages("u") == []


async def test_profile_entries_events_and_notes_expire_with_their_search_entries(store: RedisMemoryStore):
    short = expiring(store, note_ttl_days=None)  # notes kept: their own setting
    update, entry = profile_update("u")
    await short.apply_update(update)
    await short.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    await short.apply_update(event_update("u", "n1", "the gate code is 4411", note=True))
    for key, field, memory_id in [
        (short.layout.profile("u"), entry.id, profile_memory_id(entry.id)),
        (short.layout.events("u"), "e1", event_memory_id("e1")),
    ]:
        at = await expiry_ms(short, key, field)
        assert at > 0 and await expiry_ms(short, short.layout.memory("u", memory_id)) == at
    assert await expiry_ms(short, short.layout.events("u"), "n1") == -1
    assert await expiry_ms(short, short.layout.memory("u", event_memory_id("n1"))) == -1
    await asyncio.sleep(1.8)
    assert await short.get_profile("u") == []
    assert [event.id for event in await short.list_events("u")] == ["n1"]
    assert {hit.memory.id for hit in await short.search_memories("u", "Lyon hiking Alps gate code")} == {"event:n1"}
    async with asyncio.timeout(3):
        while await indexed_count(short, "u") != 1:
            await asyncio.sleep(0.05)


async def test_a_rewrite_starts_the_time_again_and_the_entry_follows(store: RedisMemoryStore):
    short = expiring(store, seconds=60)
    update, entry = profile_update("u")
    await short.apply_update(update)
    first = await expiry_ms(short, short.layout.profile("u"), entry.id)
    await asyncio.sleep(0.05)
    await short.edit_profile_entry("u", entry.id, content="lives in Lille")
    again = await expiry_ms(short, short.layout.profile("u"), entry.id)
    assert again > first and await expiry_ms(short, short.layout.memory("u", profile_memory_id(entry.id))) == again
    kept = store  # the same Redis, no time to live any more: a write clears the field's expiry, and the entry's too
    await kept.edit_profile_entry("u", entry.id, content="lives in Lens")
    assert await expiry_ms(kept, kept.layout.profile("u"), entry.id) == -1
    assert await expiry_ms(kept, kept.layout.memory("u", profile_memory_id(entry.id))) == -1


async def test_reading_refreshes_only_where_the_settings_say_so(store: RedisMemoryStore):
    plain = expiring(store, seconds=60)
    refreshing = expiring(store, seconds=60, refresh_on_read=True)
    await plain.add_messages(chat("u", "s", "I keep bees on the roof of my flat"))
    update, entry = profile_update("u")
    await plain.apply_update(update)
    await plain.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    keys = {
        "message": (plain.layout.message("u", "m0"), None, message_memory_id("m0")),
        "profile": (plain.layout.profile("u"), entry.id, profile_memory_id(entry.id)),
        "event": (plain.layout.events("u"), "e1", event_memory_id("e1")),
    }
    before = {kind: await expiry_ms(plain, key, field) for kind, (key, field, _) in keys.items()}
    await asyncio.sleep(0.05)
    await plain.recent_messages("u", "s"), await plain.get_profile("u"), await plain.list_events("u")
    await plain.search_memories("u", "bees Lyon Alps")
    assert {kind: await expiry_ms(plain, key, field) for kind, (key, field, _) in keys.items()} == before
    await refreshing.recent_messages("u", "s")
    await refreshing.get_profile("u")
    await refreshing.search_memories("u", "hiking in the Alps", kinds=["event"])
    for kind, (key, field, memory_id) in keys.items():
        after = await expiry_ms(plain, key, field)
        assert after > before[kind], kind
        assert await expiry_ms(plain, plain.layout.memory("u", memory_id)) == after, kind


async def test_a_turn_indexed_after_its_message_expired_leaves_no_search_entry(store: RedisMemoryStore):
    short = expiring(store, seconds=60)
    stored = await short.add_messages(chat("u", "s", "I keep bees on the roof of my flat"), index_later=True)
    await short.client.delete(short.layout.message("u", "m0"))  # expired between the load and the write
    await short.messages.index_messages("u", stored, clear_pending=True)
    assert not await short.client.exists(short.layout.memory("u", message_memory_id("m0")))
    assert await indexed_count(short, "u") == 0


async def test_the_sweep_removes_what_expiry_cannot_and_says_what(store: RedisMemoryStore):
    short = expiring(store)
    await short.add_messages(chat("u", "old", "I keep bees on the roof", "and a hive in the garden"))
    await short.set_session_summary(SessionSummary(user_id="u", session_id="old", summary="bees"))
    await short.set_session_title("u", "old", "Bees")
    await short.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    await asyncio.sleep(1.8)
    kept = expiring(store, seconds=60)
    await kept.add_messages(chat("u", "new", "I moved to Lille", start=10))
    await kept.set_session_summary(SessionSummary(user_id="u", session_id="new", summary="moving"))
    await kept.set_session_title("u", "new", "Moving")
    await kept.apply_update(event_update("u", "e2", "moved house"))
    report = await kept.collect_garbage()
    assert (report.history_entries, report.sessions, report.event_entries) == (2, 1, 1)
    assert (
        report.lines()[0].startswith("1 user swept")
        and "history entries of expired messages removed: 2" in report.lines()
    )
    assert await kept.list_sessions("u") == ["new"]
    assert await kept.get_session_summary("u", "old") is None and await kept.session_titles("u") == {"new": "Moving"}
    assert await kept.client.zcard(kept.layout.timeline("u")) == 1
    assert await kept.client.zrange(kept.layout.event_times("u"), 0, -1) == [b"e2"]
    assert [m.content for m in await kept.recent_messages("u", "new")] == ["I moved to Lille"]
    again = await kept.collect_garbage("u")
    assert again.lines() == ["1 user swept, nothing to remove"]


async def test_the_sweep_deletes_search_entries_whose_record_is_gone_and_retimes_the_others(store: RedisMemoryStore):
    short = expiring(store, seconds=60)
    update, entry = profile_update("u")
    await short.apply_update(update)
    await short.add_messages(chat("u", "s", "I keep bees on the roof"))
    entry_memory = short.layout.memory("u", profile_memory_id(entry.id))
    await short.client.hdel(
        short.layout.profile("u"), entry.id
    )  # a record gone, its entry left (a crash, an older memlane)
    message_memory = short.layout.memory("u", message_memory_id("m0"))
    await short.client.persist(message_memory)  # an entry that would outlive its record
    report = await short.collect_garbage()
    assert (report.search_entries, report.search_entries_retimed) == (1, 1)
    assert not await short.client.exists(entry_memory)
    assert await expiry_ms(short, message_memory) == await expiry_ms(short, short.layout.message("u", "m0")) > 0
    assert (await short.collect_garbage()).lines() == ["1 user swept, nothing to remove"]


async def test_the_sweep_leaves_a_store_without_retention_alone(store: RedisMemoryStore):
    await store.add_messages(chat("u", "s", "I keep bees on the roof"))
    await store.client.delete(store.layout.message("u", "m0"))
    report = await store.collect_garbage()
    assert report.lines() == ["0 users swept, nothing to remove"]  # no user noted: nothing expires here
    assert await store.client.zcard(store.layout.timeline("u")) == 1


async def test_on_a_cluster_records_expire_with_their_entries_and_the_sweep_finds_them(cluster_store: RedisMemoryStore):
    short = expiring(cluster_store, seconds=1.5, max_memories_per_user=100)
    await short.add_messages(chat("u", "s", "I keep bees on the roof of my flat"))
    update, entry = profile_update("u")
    await short.apply_update(update)
    await short.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    assert (
        await expiry_ms(short, short.layout.message("u", "m0"))
        == await expiry_ms(short, short.layout.memory("u", message_memory_id("m0")))
        > 0
    )
    assert (
        await expiry_ms(short, short.layout.profile("u"), entry.id)
        == await expiry_ms(short, short.layout.memory("u", profile_memory_id(entry.id)))
        > 0
    )
    await asyncio.sleep(1.8)
    report = await short.collect_garbage()
    assert (report.users, report.history_entries, report.sessions, report.event_entries) == (1, 1, 1, 1)
    assert await short.search_memories("u", "bees Lyon Alps") == [] and await short.list_sessions("u") == []
    assert await short.messages.quotas.usage("u") == (0, 0)


async def test_writing_an_unchanged_record_again_moves_its_entry_with_it(store: RedisMemoryStore):
    """A redelivered run restates an entry, a client sends a turn again: the record's time starts
    again though its search entry is not rewritten (unchanged), and the entry follows."""
    short = expiring(store, seconds=60)
    update, entry = profile_update("u")
    await short.apply_update(update)
    await short.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    await short.add_messages(chat("u", "s", "I keep bees on the roof"))
    records = [
        (short.layout.profile("u"), entry.id, profile_memory_id(entry.id)),
        (short.layout.events("u"), "e1", event_memory_id("e1")),
        (short.layout.message("u", "m0"), None, message_memory_id("m0")),
    ]
    before = [await expiry_ms(short, key, field) for key, field, _ in records]
    await asyncio.sleep(0.05)
    await short.apply_update(update)
    await short.apply_update(event_update("u", "e1", "went hiking in the Alps"))
    await short.add_messages(chat("u", "s", "I keep bees on the roof"))
    for (key, field, memory_id), first in zip(records, before):
        again = await expiry_ms(short, key, field)
        assert again > first and await expiry_ms(short, short.layout.memory("u", memory_id)) == again, memory_id


async def test_an_agents_scope_expires_and_is_swept_on_its_own(store: RedisMemoryStore):
    from memlane.store.scopes import scoped_user_id

    short = expiring(store)
    coach = scoped_user_id("u", "coach")
    await short.add_messages(chat(coach, "s", "I run on Sundays"))
    await short.add_messages(chat("u", "s", "I keep bees"))
    await asyncio.sleep(1.8)
    report = await short.collect_garbage()
    assert (report.users, report.history_entries, report.sessions) == (2, 2, 2)  # the user's and the coach's scope
    assert await short.list_sessions(coach) == [] and await short.list_sessions("u") == []
