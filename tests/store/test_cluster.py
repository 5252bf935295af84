"""The store on a real Redis Cluster of 3 primaries (store/cluster/client.py, store/embedded/cluster.py):
every key of a user in one hash slot, the index on every primary, a user's search sent to the
primary that owns the user, and the store's behaviour the same as on one Redis (a set of the
standalone tests run again on the cluster)."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from typing import Any

import pytest
import test_forget as forget_tests
import test_langgraph_index_search as index_search_tests
import test_langgraph_store as langgraph_store_tests
import test_messages as message_tests
import test_parked_runs as parked_run_tests
import test_updates as update_tests
import test_users as user_tests
from conftest import HOSTILE_IDS, close_dropping_everything
from redis.crc import key_slot
from test_messages import chat

from memlane import MemlaneStore
from memlane.config import Settings
from memlane.graph.queue import docket_spelling
from memlane.store.cluster.client import first_node_url, wants_cluster
from memlane.store.errors import StoreError
from memlane.store.records import (
    Event,
    Memory,
    MemoryUpdate,
    ParkedRun,
    ProfileEntry,
    SessionSummary,
    StoreItem,
)
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import KeyLayout

USERS = ["alice", "bob", "carol", "dave", "erin", "frank", *HOSTILE_IDS[:4]]


def _slot(key: str) -> int:
    return key_slot(key.encode())


@pytest.mark.parametrize("user_id", ["alice", *HOSTILE_IDS])
def test_every_key_of_a_user_is_in_the_users_slot(user_id: str):
    layout = KeyLayout("memlane")
    digest = layout.user_tag(user_id)
    keys = [
        layout.memory(user_id, "message:m1"),
        layout.message(user_id, "m1"),
        layout.timeline(user_id),
        layout.session_messages(user_id, "s"),
        layout.sessions(user_id),
        layout.unindexed_messages(user_id),
        layout.profile_history(user_id, "entry"),
        layout.profile_history_entries(user_id),
        layout.seq(user_id),
        layout.cursor(user_id),
        layout.summary(user_id, "s"),
        layout.session_titles(user_id),
        layout.profile(user_id),
        layout.events(user_id),
        layout.event_times(user_id),
        layout.items(user_id),
        layout.parked_runs(digest),
        layout.slot_key(user_id),
    ]
    assert {_slot(key) for key in keys} == {_slot("{" + digest + "}")}
    assert keys[0].startswith(layout.memory_key_prefix)  # the index's prefix still covers the memories


def test_a_key_prefix_is_matched_literally_in_scans():
    from memlane.store.schema import glob_escaped

    assert glob_escaped("a*b?[c]\\d{e}") == "a\\*b\\?\\[c\\]\\\\d{e}"


def test_a_cluster_is_asked_for_as_redisvl_spells_it_or_by_the_setting():
    assert wants_cluster("redis://:pw@127.0.0.1:7000/0?cluster=true", store=Settings().store)
    assert wants_cluster("redis://127.0.0.1:7000,127.0.0.1:7001", store=Settings().store)
    assert wants_cluster("redis://127.0.0.1:7000", store=Settings(redis_cluster=True).store)
    assert not wants_cluster("redis://127.0.0.1:7000/0", store=Settings().store)
    assert first_node_url("redis://:p%40w@h1:7000,h2:7001/0?cluster=true&x=1") == "redis://:p%40w@h1:7000/0?x=1"


async def test_the_index_is_on_every_primary_and_users_spread_over_them(cluster_store: RedisMemoryStore):
    indexes = await cluster_store.core.shards.every_index()
    assert len(indexes) == 3 and len({index.name for index in indexes}) == 3
    owners = {cluster_store.client.get_node_from_key(cluster_store.layout.slot_key(user)).name for user in USERS}
    assert len(owners) == 3
    await cluster_store.check_ready()


async def test_users_are_isolated_and_searched_on_their_own_primary(cluster_store: RedisMemoryStore):
    for user in USERS:
        await cluster_store.add_messages(chat(user, "s1", f"my favourite city is Lyon and my code is {user}"))
    for user in USERS:
        hits = await cluster_store.search_memories(user, "favourite city Lyon", limit=50)
        assert [hit.memory.user_id for hit in hits] == [user]
        assert hits[0].memory.text.endswith(user) and hits[0].vector_similarity > 0


async def test_every_key_a_users_operations_write_is_in_one_slot(cluster_store: RedisMemoryStore):
    """A real run of each kind of write on the cluster (a transaction or script across slots would
    fail with CROSSSLOT), then every key under the prefix checked: one slot per user."""
    store = cluster_store
    for user in ("alice", "a|b"):
        await store.add_messages(chat(user, "s1", "I am a nurse in Lyon", "I run marathons"))
        entry = ProfileEntry(user_id=user, topic="work", subtopic="title", content="nurse", source_message_ids=["m0"])
        event = Event(id="e1", user_id=user, summary="ran a marathon in Berlin")
        await store.apply_update(
            MemoryUpdate(
                user_id=user,
                upsert_profile=[entry],
                event=event,
                advance_cursor_to=2,
                memories=[Memory(id="fact", user_id=user, kind="profile", text="works as a nurse")],
            )
        )
        await store.edit_profile_entry(user, entry.id, content="head nurse")
        await store.set_session_summary(SessionSummary(user_id=user, session_id="s1", summary="nurse"))
        await store.set_session_title(user, "s1", "Work")
        await store.put_items(
            [StoreItem(user_id=user, namespace=["notes", user], key="k", value={"text": "likes tea"}, text="likes tea")]
        )
        await store.park_run(ParkedRun(id="run1", user_id=user, error="boom", attempts=1))
        await store.delete_message(user, "m1")
        await store.forget(user, "forget that I am a nurse")
    await store.put_items(
        [  # one batch, two users: one transaction each
            StoreItem(user_id=user, namespace=["notes", user], key="k2", value={"text": "x"}, text="x")
            for user in ("bob", "carol")
        ]
    )
    keys = [key.decode() async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*", count=1000)]
    by_user: dict[str, set[int]] = {}
    for key in keys:
        if key in (
            store.layout.parked_users,
            store.layout.key_layout_marker,
            store.layout.item_owners,
            store.layout.item_owners_adopted,
            store.layout.item_fields_adopted,
        ):
            continue
        tag = key[key.index("{") + 1 : key.index("}")]
        by_user.setdefault(tag, set()).add(_slot(key))
    assert len(by_user) == 4 and all(len(slots) == 1 for slots in by_user.values())
    assert {store.layout.user_tag(user) for user in ("alice", "a|b", "bob", "carol")} == set(by_user)
    assert len(await store.parked_runs()) == 2
    assert await store.drop_parked_run("run1") is not None


def _fixtures(cluster_store: RedisMemoryStore, settings: Settings) -> dict[str, Any]:
    return {
        "store": cluster_store,
        "settings": settings,
        "lg": MemlaneStore(cluster_store, user_of=1),
        "hostile": HOSTILE_IDS[0],
    }


# standalone tests that run again, unchanged, on the cluster
SAME_ON_A_CLUSTER = [
    user_tests.test_hostile_ids_work_and_never_see_other_users,
    user_tests.test_delete_user_removes_everything_and_export_holds_everything,
    parked_run_tests.test_parked_runs_are_listed_per_user_or_all_oldest_first_and_dropped_by_id,
    parked_run_tests.test_forgetting_a_user_forgets_their_parked_runs,
    update_tests.test_apply_update_writes_profile_event_memories_and_cursor_idempotently,
    message_tests.test_duplicate_message_ids_are_stored_once,
    message_tests.test_buffer_cursor_only_moves_forward,
    message_tests.test_an_answer_is_found_through_the_question_before_it,
    message_tests.test_neighbours_of_a_message_come_from_its_session_in_order,
    message_tests.test_index_later_stores_at_once_and_reindex_pending_makes_it_searchable,
    forget_tests.test_delete_event_removes_its_card_and_memory_for_that_user_only,
    forget_tests.test_deleting_an_english_profile_entry_forgets_the_fact_everywhere,
    forget_tests.test_forget_what_i_said_about_x_in_english,
    forget_tests.test_deleting_a_message_drops_it_from_history_and_search_for_good,
    forget_tests.test_forget_deletes_langgraph_items_stating_it,
    langgraph_store_tests.test_basic_ops,
    langgraph_store_tests.test_search_by_namespace_filter_and_pages,
    langgraph_store_tests.test_batch_put_search_and_order,
    langgraph_store_tests.test_list_namespaces,
    langgraph_store_tests.test_items_of_an_older_memlane_keep_their_user_and_are_found_after_the_upgrade,
    index_search_tests.test_searches_and_listings_match_the_brute_force_whatever_the_user_mapping,
    index_search_tests.test_index_config_vectors_rank_the_items_under_the_prefix,
]


@pytest.mark.parametrize("check", SAME_ON_A_CLUSTER, ids=lambda check: f"{check.__module__}.{check.__name__}")
async def test_the_store_behaves_the_same_on_a_cluster(check, cluster_store: RedisMemoryStore, settings: Settings):
    fixtures = _fixtures(cluster_store, settings)
    await check(**{name: fixtures[name] for name in inspect.signature(check).parameters})


@pytest.mark.usefixtures("cluster_slots_kept")
async def test_a_search_follows_its_user_to_another_primary_after_a_reshard(
    cluster_store: RedisMemoryStore, redis_cluster
):
    store, (_, cluster) = cluster_store, redis_cluster
    await store.add_messages(chat("alice", "s1", "my favourite city is Lyon"))
    assert len(await store.search_memories("alice", "favourite city")) == 1
    slot = store.client.keyslot(store.layout.slot_key("alice"))
    source = store.client.get_node_from_key(store.layout.slot_key("alice"))
    target = next(node for node in store.client.get_primaries() if node.name != source.name)
    assert cluster.move_slot(slot, source.port, target.port) > 0
    # the client's slot map is now stale: the search must notice and go to the new owner
    hits = await store.search_memories("alice", "favourite city")
    assert [hit.memory.text for hit in hits] == ["my favourite city is Lyon"]
    assert store.client.get_node_from_key(store.layout.slot_key("alice")).name == target.name


@pytest.mark.usefixtures("cluster_slots_kept")
async def test_a_primary_whose_index_name_moves_away_gets_a_new_index(cluster_store: RedisMemoryStore, redis_cluster):
    store, (_, cluster) = cluster_store, redis_cluster
    await store.add_messages(chat("alice", "s1", "my favourite city is Lyon"))
    node = store.client.get_node_from_key(store.layout.slot_key("alice"))
    old_name = (await store.core.shards.index_of(node)).name
    other = next(primary for primary in store.client.get_primaries() if primary.name != node.name)
    cluster.move_slot(store.client.keyslot(old_name), node.port, other.port)  # the node can no longer name its index
    for _ in range(100):  # the new index reads the node's memories in the background
        hits = await store.search_memories("alice", "favourite city")
        if hits:
            break
        await asyncio.sleep(0.05)
    assert [hit.memory.text for hit in hits] == ["my favourite city is Lyon"]
    new_name = (await store.core.shards.index_of(store.client.get_node_from_key(store.layout.slot_key("alice")))).name
    assert new_name != old_name


async def test_a_cluster_url_that_answers_nothing_says_what_to_do(settings: Settings):
    from memlane.store.redis.store import open_store

    with pytest.raises(StoreError, match="memlane redis start --cluster 3"):
        await open_store(settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0?cluster=true"}))


def test_the_queue_gets_pydockets_spelling_of_a_cluster_url():
    assert docket_spelling("redis://:pw@h1:7000/0?cluster=true", cluster=False) == "redis+cluster://:pw@h1:7000"
    assert docket_spelling("redis://h1:7000,h2:7001/0", cluster=False) == "redis+cluster://h1:7000"
    assert docket_spelling("rediss://h1:7000", cluster=True) == "rediss+cluster://h1:7000"
    assert docket_spelling("redis://h1:6379/1", cluster=False) == "redis://h1:6379/1"  # a standalone queue as it was
    assert docket_spelling("redis+cluster://h1:7000", cluster=True) == "redis+cluster://h1:7000"


async def test_memory_runs_queue_on_the_cluster_and_write_there(cluster_store: RedisMemoryStore, settings: Settings):
    """pydocket on the cluster (its keys share one hash tag): a run queued by the scheduler is taken
    by its worker, and the memory graph's write lands in the user's slot."""
    from memory_graph_helpers import CHINESE_CHAT, add_chat, memory_rules
    from scripted import ScriptedChatModel

    from memlane.graph import CONTEXT_PARTS, MemoryContext, MemoryRunResult, MemoryScheduler
    from memlane.nodes.profile_config import default_profile_config

    context = MemoryContext(
        store=cluster_store,
        llm=ScriptedChatModel(rules=memory_rules()),
        **settings.model_copy(update={"memory_buffer_tokens": 1}).parts(*CONTEXT_PARTS),
        profile_config=default_profile_config(),
    )
    async with MemoryScheduler(context) as scheduler:
        assert scheduler.docket_url.startswith("redis+cluster://")
        await add_chat(cluster_store, "u|1", CHINESE_CHAT)
        assert await scheduler.notify("u|1", flush=True) is True
        await scheduler.wait_idle(30)
        result = scheduler.last_result("u|1")
    assert isinstance(result, MemoryRunResult) and result.added
    assert await cluster_store.unprocessed_messages("u|1") == [] and await cluster_store.get_profile("u|1")


@pytest.fixture
def served_on_the_cluster(redis_cluster, settings: Settings):
    """`memlane serve`'s app (one persona, a fake upstream) with its store on the test cluster."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))  # test_serve, when this file runs alone
    from fake_upstream import FakeUpstream, Served
    from memory_graph_helpers import memory_rules
    from test_serve import Env, GatedMemoryModel, api_key, reply_for

    from memlane.serve.app import create_app
    from memlane.serve.config import ServeConfig

    cluster_settings = settings.model_copy(update={"redis_url": redis_cluster[0], "memory_buffer_tokens": 150})
    memory_model = GatedMemoryModel(rules=memory_rules(), default="{}")
    with FakeUpstream(reply=reply_for) as upstream:
        config = ServeConfig(
            keys=[api_key("acme", "acme")],
            personas={
                "assistant": {
                    "model": "fake-model",
                    "base_url": upstream.url,
                    "system_prompt": "You are the test assistant.",
                    "memory_scope": "user",
                }
            },
        )
        with Served(create_app(config, cluster_settings, memory_model=memory_model)) as served:
            yield Env(served.url, upstream, upstream, memory_model, cluster_settings)


# `memlane serve` tests that run again, unchanged, with the service's store on the cluster
SERVED_THE_SAME_ON_A_CLUSTER = [
    "test_replies_streamed_and_not_carry_the_recalled_memory_upstream",
    "test_notes_events_search_export_and_deleting_a_user",
]


@pytest.mark.parametrize("name", SERVED_THE_SAME_ON_A_CLUSTER)
def test_memlane_serve_behaves_the_same_on_a_cluster(name: str, served_on_the_cluster):
    import test_serve

    getattr(test_serve, name)(served_on_the_cluster)


async def test_the_setting_makes_a_plain_node_url_a_cluster(redis_cluster, settings: Settings, embeddings):
    from memlane.store.redis.store import open_store

    plain = redis_cluster[0].replace("?cluster=true", "")
    store = await open_store(
        settings.model_copy(update={"redis_url": plain, "redis_cluster": True}), embeddings=embeddings
    )
    try:
        assert store.core.shards is not None and len(await store.core.shards.every_index()) == 3
        await store.add_messages(chat("alice", "s1", "my favourite city is Lyon"))
        assert [hit.memory.user_id for hit in await store.search_memories("alice", "favourite city")] == ["alice"]
    finally:
        await close_dropping_everything(store)


async def assert_said_as_redis_unavailable(
    store: RedisMemoryStore, source: str, module: str, ours: Any, said: str, package: str = "asyncio"
) -> None:
    """The one function `source` defines fails with an AttributeError. Compiled as if it were in
    redis-py's `redis/<package>/<module>`, that failure is a connection race, and a store call
    running it says `RedisUnavailable` (`said`); `ours`, the same fault in our own code, stays a
    bug. Both are called with None."""
    from memlane.store.cluster.client import is_connection_race
    from memlane.store.errors import RedisUnavailable

    where: dict[str, Any] = {}
    exec(compile(source, f"/x/redis/{package}/{module}", "exec"), where)
    [redis_pys] = [value for name, value in where.items() if name != "__builtins__"]
    with pytest.raises(AttributeError) as raised:
        await redis_pys(None)
    assert is_connection_race(raised.value)
    with pytest.raises(RedisUnavailable, match=said):
        await store.core.run(redis_pys(None))
    with pytest.raises(AttributeError):
        await store.core.run(ours(None))


async def test_a_call_whose_connection_redis_py_closed_under_it_is_redis_unavailable(cluster_store: RedisMemoryStore):
    """redis-py 8.1 closes a failed node's connections under the calls using them, which then fail
    with an AttributeError inside redis.asyncio.connection: a lost connection, said as one."""

    async def ours(writer):
        return writer.upper  # a bug of ours stays a bug

    await assert_said_as_redis_unavailable(
        cluster_store,
        "async def send(writer):\n    writer.writelines([b'PING'])\n",
        "connection.py",
        ours,
        "connection was closed under the call",
    )


async def test_a_reply_read_through_a_parser_never_told_of_its_socket_is_redis_unavailable(
    cluster_store: RedisMemoryStore,
):
    """A connection whose socket opened for a caller that gave up before the handshake (the
    readiness probe's slot-map refresh cut by its budget, in a failover drill) fails its next
    user inside redis._parsers: "'_AsyncHiredisParser' object has no attribute '_connected'". A
    lost connection, said as one (store/redis/connections.py closes such sockets now)."""

    class NeverConnected:
        __slots__ = ()

    async def ours(_):
        return NeverConnected()._connected  # type: ignore[attr-defined]  # a bug of ours stays a bug

    await assert_said_as_redis_unavailable(
        cluster_store,
        "async def read(_):\n"
        "    class _AsyncHiredisParser:\n        __slots__ = ()\n"
        "    return _AsyncHiredisParser()._connected\n",
        "hiredis.py",
        ours,
        "connection was closed under the call",
        package="_parsers",
    )


async def test_an_ask_to_a_primary_the_client_does_not_know_yet_is_redis_unavailable(cluster_store: RedisMemoryStore):
    """While slots migrate onto a primary just added, redis-py 8.1 follows an ASK to a node its map
    does not hold: it looks the node up, gets None, and fails on it inside redis.asyncio.cluster.
    The store says the cluster is moving slots (the save is tried again), not a bug of its own."""

    async def ours(node):
        return await node.execute_command("ASKING")  # the same mistake in our own code stays a bug

    await assert_said_as_redis_unavailable(
        cluster_store,
        "async def follow(node):\n    return await node.execute_command('ASKING')\n",
        "cluster.py",
        ours,
        "a node the client does not know yet",
    )
