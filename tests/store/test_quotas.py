"""Per-user quotas (store/redis/quotas.py): a write past a quota is refused whole with QuotaExceeded
naming the quota and its setting, nothing stored changes, and what was deleted or expired no
longer counts."""

from __future__ import annotations

import asyncio

import pytest
from test_messages import chat
from test_retention import SECONDS, event_update, profile_update

from memlane.store.errors import QuotaExceeded
from memlane.store.records import Memory, StoreItem
from memlane.store.redis.store import RedisMemoryStore


def limited(store: RedisMemoryStore, **retention) -> RedisMemoryStore:
    return store.with_settings(**{f"retention_{k}": v for k, v in retention.items()})


async def test_a_write_past_the_records_quota_is_refused_whole_and_nothing_stored_is_lost(store: RedisMemoryStore):
    capped = limited(store, max_memories_per_user=3)
    await capped.add_messages(chat("u", "s", "one", "two"))
    with pytest.raises(QuotaExceeded) as refused:
        await capped.add_messages(chat("u", "s", "three", "four", start=2))  # two more: one past
    assert refused.value.quota == "memories" and refused.value.setting == "MEMLANE_RETENTION_MAX_MEMORIES_PER_USER"
    assert "MEMLANE_RETENTION_MAX_MEMORIES_PER_USER (3)" in str(refused.value) and refused.value.used == 2
    assert [m.content for m in await capped.recent_messages("u", "s")] == [
        "one",
        "two",
    ]  # the refused write: none of it
    await capped.add_messages(chat("u", "s", "three", start=2))
    assert await capped.add_messages(chat("u", "s", "three (sent again)", start=2)) == []  # a resend adds no record
    with pytest.raises(QuotaExceeded):
        await capped.apply_update(event_update("u", "e1", "went hiking"))
    assert await capped.list_events("u") == []
    assert await capped.messages.quotas.usage("u") == (3, len("onetwothree"))
    await capped.delete_message(
        "u", "m0"
    )  # what was deleted no longer counts: the count is taken again before refusing
    await capped.apply_update(event_update("u", "e1", "went hiking"))
    assert [event.id for event in await capped.list_events("u")] == ["e1"]
    assert (await capped.messages.quotas.usage("u"))[0] == 3
    assert [m.content for m in await capped.recent_messages("u", "s")] == ["two", "three"]


async def test_a_write_past_the_bytes_quota_is_refused_and_a_smaller_rewrite_passes(store: RedisMemoryStore):
    capped = limited(store, max_bytes_per_user=20)
    update, entry = profile_update("u", "lives in Lyon")  # 13 bytes
    await capped.apply_update(update)
    longer, _ = profile_update("u", "lives in Lyon, by the Rhône, near the old town")
    with pytest.raises(QuotaExceeded) as refused:
        await capped.apply_update(longer)
    assert refused.value.quota == "bytes" and "MEMLANE_RETENTION_MAX_BYTES_PER_USER (20)" in str(refused.value)
    assert [e.content for e in await capped.get_profile("u")] == ["lives in Lyon"]
    with pytest.raises(QuotaExceeded):
        await capped.add_memories([Memory(id="n1", user_id="u", kind="summary", text="a memory added directly")])
    with pytest.raises(QuotaExceeded):
        await capped.put_items(
            [StoreItem(user_id="u", namespace=["notes"], key="k", value={"text": "a long item value"})]
        )
    shorter, _ = profile_update("u", "Lyon")
    await capped.apply_update(shorter)  # the slot rewritten smaller: fewer bytes, it passes
    assert await capped.messages.quotas.usage("u") == (1, 4)
    await capped.add_memories([Memory(id="n1", user_id="u", kind="summary", text="short note")])
    assert await capped.messages.quotas.usage("u") == (2, 14)


async def test_the_first_write_under_a_quota_counts_what_the_user_has(store: RedisMemoryStore):
    await store.add_messages(chat("u", "s", "one", "two", "three"))  # before any quota: not counted as written
    await store.apply_update(event_update("u", "e1", "went hiking"))
    capped = limited(store, max_memories_per_user=4)
    with pytest.raises(QuotaExceeded) as refused:
        await capped.add_messages(chat("u", "s", "four", start=3))
    assert refused.value.used == 4
    assert len(await capped.recent_messages("u", "s")) == 3


async def test_expired_records_leave_the_count(store: RedisMemoryStore):
    capped = limited(store, max_memories_per_user=2, message_ttl_days=1 * SECONDS)
    await capped.add_messages(chat("u", "s", "one", "two"))
    await asyncio.sleep(1.3)
    await capped.add_messages(chat("u", "s", "three", "four", start=2))  # the first two expired: room again
    report = await capped.collect_garbage("u")
    assert (
        report.history_entries == 2 and report.quota_entries == 0
    )  # the refused-then-recounted write already dropped them
    assert await capped.messages.quotas.usage("u") == (2, len("threefour"))


async def test_the_sweep_recounts_usage(store: RedisMemoryStore):
    capped = limited(store, max_memories_per_user=10)
    await capped.add_messages(chat("u", "s", "one", "two", "three"))
    await store.client.delete(store.layout.message("u", "m1"))  # gone without its count knowing
    report = await capped.collect_garbage()
    assert report.quota_entries == 1 and await capped.messages.quotas.usage("u") == (2, len("onethree"))
    await capped.client.hset(capped.layout.usage("u"), "message:phantom", 99)
    assert (await capped.collect_garbage("u", recount=True)).quota_entries == 1
    assert await capped.messages.quotas.usage("u") == (2, len("onethree"))


async def test_the_quota_is_the_users_across_every_agents_memory_of_the_user(store: RedisMemoryStore):
    from memlane import scoped_user_id

    capped = limited(store, max_memories_per_user=3)
    await capped.add_messages(chat("q", "s", "one"))
    await capped.add_messages(chat(scoped_user_id("q", "coach"), "s", "two"))
    await capped.apply_update(event_update(scoped_user_id("q", "tutor"), "e1", "three"))
    for agent in ("coach", "made-up-1", "made-up-2"):  # no agent id adds room
        with pytest.raises(QuotaExceeded):
            await capped.add_messages(chat(scoped_user_id("q", agent), "s", "four", start=5))
    assert await capped.messages.quotas.usage(scoped_user_id("q", "coach")) == (3, len("onetwothree"))
    assert await capped.messages.quotas.recount("q", full=True) == 0  # counted from scratch, every scope: the same
    assert await capped.messages.quotas.usage("q") == (3, len("onetwothree"))
    await capped.delete_event(scoped_user_id("q", "tutor"), "e1")  # gone from one scope: room for another's
    await capped.add_messages(chat(scoped_user_id("q", "coach"), "s", "four", start=5))
    assert await capped.messages.quotas.usage("q") == (3, len("onetwofour"))
    await capped.add_messages(chat("other", "s", "a", "b", "c"))  # another user: a quota of their own
