"""Memory scopes (store/scopes.py): an agent's own memory of a user is a store user of its own,
isolated on every read, in the user's hash slot, exported and deleted with the user; a shared
scope is read beside a user's memories only when recall is asked to."""

from __future__ import annotations

import pytest
from conftest import HOSTILE_IDS
from redis.cluster import key_slot
from test_messages import chat

from memlane import SHARED_USER_ID, scoped_user_id
from memlane.recall import RecallParts, recall
from memlane.store.errors import InvalidInput
from memlane.store.records import Event, Memory, MemoryUpdate, ProfileEntry
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.scopes import split_user_id


async def fill(store: RedisMemoryStore, owner: str, fact: str) -> None:
    """A message, a note, a profile entry and an event, each stating `fact`, under `owner`."""
    await store.add_messages(chat(owner, "s", fact))
    await store.add_memories([Memory(id="note", user_id=owner, kind="event", text=fact)])
    await store.apply_update(
        MemoryUpdate(
            user_id=owner,
            upsert_profile=[ProfileEntry(user_id=owner, topic="fact", subtopic="one", content=fact)],
            event=Event(id="event", user_id=owner, summary=fact),
        )
    )


def texts(hits) -> set[str]:
    return {hit.memory.text for hit in hits}


def test_scoped_ids_round_trip_and_refuse_nesting():
    coach = scoped_user_id("alice", "coach")
    assert split_user_id(coach) == ("alice", "coach") and split_user_id("alice") == ("alice", None)
    assert scoped_user_id("alice", None) == "alice"
    with pytest.raises(InvalidInput):
        scoped_user_id(coach, "other")
    with pytest.raises(InvalidInput):
        scoped_user_id("alice", "a\x00b")


@pytest.mark.parametrize("agent", ["coach", *HOSTILE_IDS[:6]])
async def test_an_agents_memory_is_its_own_on_every_read(store: RedisMemoryStore, agent: str):
    user, scoped = "alice", scoped_user_id("alice", agent)
    await fill(store, user, "I live in Lyon")
    await fill(store, scoped, "I run 5k every Tuesday")
    for owner, mine, theirs in [
        (user, "I live in Lyon", "I run 5k every Tuesday"),
        (scoped, "I run 5k every Tuesday", "I live in Lyon"),
    ]:
        found = texts(await store.search_memories(owner, "Lyon Tuesday run live", limit=50))
        assert mine in found and theirs not in found
        assert [entry.content for entry in await store.get_profile(owner)] == [mine]
        assert [event.summary for event in await store.list_events(owner)] == [mine]
        assert [m.content for m in await store.recent_messages(owner, "s")] == [mine]
        assert [m.content for m in await store.unprocessed_messages(owner)] == [mine]
    assert await store.agents(user) == [agent]


async def test_the_user_export_holds_each_agent_and_the_delete_takes_them(store: RedisMemoryStore):
    await fill(store, "bob", "I live in Oslo")
    await fill(store, scoped_user_id("bob", "coach"), "I run on Tuesdays")
    await fill(store, scoped_user_id("bob", "tutor"), "I learn Spanish")
    await fill(store, "bobby", "another user")  # a user whose id starts with bob's
    exported = await store.export_user("bob")
    assert [m.content for m in exported.messages] == ["I live in Oslo"]
    assert {agent: [m.content for m in part.messages] for agent, part in exported.agents.items()} == {
        "coach": ["I run on Tuesdays"],
        "tutor": ["I learn Spanish"],
    }
    # one agent's scope alone
    assert await store.delete_user(scoped_user_id("bob", "tutor")) > 0
    assert await store.agents("bob") == ["coach"] and await store.get_profile(scoped_user_id("bob", "tutor")) == []
    assert [e.content for e in await store.get_profile("bob")] == ["I live in Oslo"]
    # the user: every scope
    assert await store.delete_user("bob") > 0
    for owner in ("bob", scoped_user_id("bob", "coach")):
        assert await store.get_profile(owner) == [] and await store.search_memories(owner, "Oslo Tuesdays") == []
    assert await store.agents("bob") == []
    assert [e.content for e in await store.get_profile("bobby")] == ["another user"]
    bob = store.layout.user_tag("bob").encode()
    assert [key async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*") if bob in key] == []


async def test_recall_reads_the_shared_scope_only_when_asked(store: RedisMemoryStore, settings):
    await fill(store, "carol", "I prefer window seats")
    await store.add_memories(
        [Memory(id="policy", user_id=SHARED_USER_ID, kind="event", text="Refunds for flights take 14 days")]
    )
    alone = await recall(store, "carol", "s", "how long do flight refunds take?", parts=RecallParts.of(settings))
    assert "14 days" not in alone.text
    with_shared = await recall(
        store,
        "carol",
        "s",
        "how long do flight refunds take?",
        parts=RecallParts.of(settings),
        shared_user_id=SHARED_USER_ID,
    )
    assert "Refunds for flights take 14 days" in with_shared.text
    # the shared scope never shows one user's memories to another
    assert (
        "window seats"
        not in (
            await recall(
                store, "dave", "s", "window seats?", parts=RecallParts.of(settings), shared_user_id=SHARED_USER_ID
            )
        ).text
    )


def test_every_key_of_an_agents_scope_is_in_the_users_slot(store: RedisMemoryStore):
    layout = store.layout
    for user in ["alice", *HOSTILE_IDS]:
        slot = key_slot(layout.slot_key(user).encode())
        scoped = scoped_user_id(user, "coach")
        keys = [
            layout.message(scoped, "m1"),
            layout.profile(scoped),
            layout.memory(scoped, "note"),
            layout.timeline(scoped),
            layout.scopes(scoped),
            layout.parked_runs(layout.user_tag(scoped)),
        ]
        assert {key_slot(key.encode()) for key in keys} == {slot}
        assert layout.digest_of_user_key(layout.profile(scoped)) == layout.user_tag(scoped)
    assert key_slot(layout.slot_key(SHARED_USER_ID).encode()) != key_slot(layout.slot_key("alice").encode())


async def test_scopes_on_a_cluster(cluster_store: RedisMemoryStore, settings):
    """On a cluster: an agent's memory beside its user's on one primary, the shared scope read from another shard."""
    await fill(cluster_store, "erin", "I live in Porto")
    await fill(cluster_store, scoped_user_id("erin", "coach"), "I swim on Fridays")
    await cluster_store.add_memories(
        [Memory(id="policy", user_id=SHARED_USER_ID, kind="event", text="The pool opens at 7 am")]
    )
    assert texts(await cluster_store.search_memories(scoped_user_id("erin", "coach"), "swim Fridays Porto")) >= {
        "I swim on Fridays"
    }
    assert "I live in Porto" not in texts(
        await cluster_store.search_memories(scoped_user_id("erin", "coach"), "Porto live")
    )
    recalled = await recall(
        cluster_store,
        scoped_user_id("erin", "coach"),
        "s",
        "when does the pool open?",
        parts=RecallParts.of(settings),
        shared_user_id=SHARED_USER_ID,
    )
    assert "7 am" in recalled.text and not recalled.search_incomplete
    exported = await cluster_store.export_user("erin")
    assert list(exported.agents) == ["coach"]
    await cluster_store.delete_user("erin")
    assert await cluster_store.get_profile(scoped_user_id("erin", "coach")) == []
