"""Per-memory expiry (issue 54): a note's or a profile entry's own `expires_at` is Redis expiry of
its record and search entry, and a query-time filter on the index, so an expired memory is neither
searched nor listed even before Redis deletes it; `expiry_time` reads what the doors are sent."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timezone

import pytest
from test_retention import expiring, expiry_ms, indexed_count

from memlane.store.errors import InvalidInput
from memlane.store.ids import event_memory_id, expiry_time, profile_memory_id
from memlane.store.redis.store import RedisMemoryStore
from memlane.tools import remember_fact, write_note


def test_expiry_time_reads_seconds_and_iso_datetimes_and_refuses_the_rest():
    at = 1_800_000_000.0
    assert expiry_time(None) is None and expiry_time("") is None
    assert expiry_time(at + 60, at=at) == at + 60
    assert expiry_time(str(int(at + 60)), at=at) == at + 60
    assert expiry_time("2027-01-31T18:00:00Z", at=at) == datetime(2027, 1, 31, 18, tzinfo=UTC).timestamp()
    assert expiry_time("2027-01-31T18:00:00", at=at) == expiry_time("2027-01-31T18:00:00+00:00", at=at)
    assert expiry_time("2027-01-31T20:00:00+02:00", at=at) == expiry_time("2027-01-31T18:00:00Z", at=at)
    assert expiry_time(datetime(2027, 1, 31, 18), at=at) == expiry_time("2027-01-31T18:00:00Z", at=at)
    for nonsense, says in [
        ("next tuesday", "ISO 8601"),
        ("nan", "ISO 8601"),
        (float("inf"), "ISO 8601"),
        (True, "ISO 8601"),
        ([1], "ISO 8601"),
        (-5, "ISO 8601"),
        (at * 1000, "milliseconds"),
        (at - 1, "in the past"),
        ("2020-01-01", "in the past"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            expiry_time(nonsense, at=at)


async def test_a_note_expires_at_its_own_time_with_its_search_entry(store: RedisMemoryStore):
    soon = time.time() + 1.5
    written = await write_note(store, "u", "the gate code is 4411", session_id="s", expires_at=soon)
    await write_note(store, "u", "my sister lives in Porto", session_id="s")
    note_id = written.memory.ref_id
    at = await expiry_ms(store, store.layout.events("u"), note_id)
    assert at == int(soon * 1000)
    assert await expiry_ms(store, store.layout.memory("u", event_memory_id(note_id))) == at
    assert [hit.memory.expires_at for hit in await store.search_memories("u", "gate code 4411")][:1] == [soon]
    await asyncio.sleep(max(0.0, soon - time.time()) + 0.05)
    assert "gate code" not in " ".join(hit.memory.text for hit in await store.search_memories("u", "gate code 4411"))
    assert [event.summary for event in await store.list_events("u")] == ["my sister lives in Porto"]
    assert await store.get_events("u", [note_id]) == [None]
    async with asyncio.timeout(3):  # and the bytes go: Redis drops the entry, RediSearch its document
        while await indexed_count(store, "u") != 1:
            await asyncio.sleep(0.05)


async def test_an_expired_memory_is_not_found_even_while_redis_still_holds_it(store: RedisMemoryStore):
    soon = time.time() + 1.0
    written = await write_note(store, "u", "the wifi password is plum-77", session_id="s", expires_at=soon)
    entry = await remember_fact(store, "u", "travel", "now", "in Kyoto this week", expires_at=soon)
    note_id = written.memory.ref_id
    # Redis has not deleted them (as when its expiry cycle lags): the query-time filter still holds
    await store.client.hpersist(store.layout.events("u"), note_id)
    await store.client.hpersist(store.layout.profile("u"), entry.id)
    for memory_id in (event_memory_id(note_id), profile_memory_id(entry.id)):
        await store.client.persist(store.layout.memory("u", memory_id))
    assert len(await store.search_memories("u", "wifi password plum Kyoto")) == 2
    await asyncio.sleep(max(0.0, soon - time.time()) + 0.05)
    assert await indexed_count(store, "u") == 2  # still indexed
    assert await store.search_memories("u", "wifi password plum Kyoto") == []
    assert await store.get_profile("u") == [] and await store.list_events("u") == []


async def test_the_earlier_of_its_own_expiry_and_its_kind_time_to_live_holds(store: RedisMemoryStore):
    short = expiring(store, seconds=60, refresh_on_read=True)
    near, far = time.time() + 30, time.time() + 3600
    kept = await remember_fact(short, "u", "home", "city", "lives in Lyon", expires_at=near)
    capped = await remember_fact(short, "u", "work", "job", "teaches maths", expires_at=far)
    plain = await remember_fact(short, "u", "pets", "cat", "has a cat called Miso")
    profile = short.layout.profile("u")
    assert await expiry_ms(short, profile, kept.id) == int(near * 1000)
    ttl_end = await expiry_ms(short, profile, plain.id)
    assert abs(await expiry_ms(short, profile, capped.id) - ttl_end) < 1000  # the kind's 60 s, not an hour
    await asyncio.sleep(0.05)
    await short.get_profile("u")  # a refresh starts the kind's time again, never past the entry's own
    assert await expiry_ms(short, profile, kept.id) == int(near * 1000)
    assert await expiry_ms(short, short.layout.memory("u", profile_memory_id(kept.id))) == int(near * 1000)
    assert await expiry_ms(short, profile, plain.id) > ttl_end


async def test_noting_the_same_text_again_sets_its_expiry(store: RedisMemoryStore):
    written = await write_note(store, "u", "the gate code is 4411", session_id="s")
    later = time.time() + 600
    again = await write_note(store, "u", "the gate code is 4411", session_id="s", expires_at=later)
    assert again.repeat_of is not None and again.memory.expires_at == later
    assert await expiry_ms(store, store.layout.events("u"), written.memory.ref_id) == int(later * 1000)


async def test_an_expired_note_is_left_out_on_a_cluster_too(cluster_store: RedisMemoryStore):
    soon = time.time() + 1.0
    written = await write_note(cluster_store, "u", "the wifi password is plum-77", session_id="s", expires_at=soon)
    await write_note(cluster_store, "u", "my sister lives in Porto", session_id="s")
    await cluster_store.client.hpersist(cluster_store.layout.events("u"), written.memory.ref_id)  # Redis lags
    await cluster_store.client.persist(cluster_store.layout.memory("u", written.memory.id))
    assert "plum" in (await cluster_store.search_memories("u", "wifi password plum"))[0].memory.text
    await asyncio.sleep(max(0.0, soon - time.time()) + 0.05)
    texts = [hit.memory.text for hit in await cluster_store.search_memories("u", "wifi password plum sister")]
    assert texts == ["my sister lives in Porto"]
    assert [event.summary for event in await cluster_store.list_events("u")] == ["my sister lives in Porto"]


def test_a_huge_expires_at_is_refused_without_being_echoed():
    with pytest.raises(InvalidInput) as refused:
        expiry_time("9" * 1_000_000 + "x")
    assert len(str(refused.value)) < 200
