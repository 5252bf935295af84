"""memlane as a LangGraph BaseStore (memlane/langgraph_store.py): what memlane adds to the
contract, with users mapped from a namespace's second label (`user_of=1`) unless a test says
otherwise: a user's items in recall, export and the app, isolation between users, memlane's
profile and events collections, Redis expiry, the sync API, LangMem's tools.

The contract itself is proved against LangGraph's InMemoryStore in
tests/test_langgraph_differential.py and tests/test_langgraph_conformance.py.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading

import pytest
import pytest_asyncio
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from scripted import ScriptedChatModel

from memlane import MemlaneStore
from memlane.recall import RecallParts, recall
from memlane.store.errors import StoreError
from memlane.store.ids import event_memory_id, item_memory_id, profile_memory_id
from memlane.store.item_fields import item_index_row
from memlane.store.records import Event, Memory, MemoryUpdate, ProfileEntry, StoreItem
from memlane.tools import forget_memory


@pytest_asyncio.fixture(loop_scope="session")
async def lg(store) -> MemlaneStore:
    return MemlaneStore(store, user_of=1)  # created in the loop that runs the store


async def test_basic_ops(lg):
    await lg.aput(("test", "alice"), "key1", {"data": "value1"})
    item = await lg.aget(("test", "alice"), "key1")
    assert item is not None and item.value == {"data": "value1"} and item.namespace == ("test", "alice")

    await lg.aput(("test", "alice"), "key1", {"data": "updated"})
    updated = await lg.aget(("test", "alice"), "key1")
    assert updated.value == {"data": "updated"}
    assert updated.updated_at > item.updated_at and updated.created_at == item.created_at

    await lg.adelete(("test", "alice"), "key1")
    assert await lg.aget(("test", "alice"), "key1") is None

    await lg.aput(("test", "alice", "ns1"), "key1", {"data": "ns1"})
    await lg.aput(("test", "alice", "ns2"), "key1", {"data": "ns2"})
    assert (await lg.aget(("test", "alice", "ns1"), "key1")).value == {"data": "ns1"}
    assert (await lg.aget(("test", "alice", "ns2"), "key1")).value == {"data": "ns2"}
    assert await lg.aget(("test", "alice"), "key1") is None


async def test_search_by_namespace_filter_and_pages(lg):
    data = [
        (
            ("test", "alice", "docs"),
            "doc1",
            {"title": "First Doc", "author": "Alice", "tags": ["important"], "stars": 5},
        ),
        (("test", "alice", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"], "stars": 2}),
        (("test", "alice", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"], "stars": 4}),
    ]
    for namespace, key, value in data:
        await lg.aput(namespace, key, value)

    assert len(await lg.asearch(("test", "alice"))) == 3
    docs = await lg.asearch(("test", "alice", "docs"))
    assert {item.key for item in docs} == {"doc1", "doc2"} and all(
        i.namespace == ("test", "alice", "docs") for i in docs
    )
    assert {i.key for i in await lg.asearch(("test", "alice"), filter={"author": "Alice"})} == {"doc1", "img1"}
    assert {
        i.key for i in await lg.asearch(("test", "alice"), filter={"stars": {"$gte": 4}, "author": {"$ne": "Bob"}})
    } == {"doc1", "img1"}
    assert [i.key for i in await lg.asearch(("test", "alice"), filter={"tags": ["draft"]})] == ["doc2"]
    assert len(await lg.asearch(("test", "alice"), limit=2)) == 2
    assert len(await lg.asearch(("test", "alice"), offset=2)) == 1
    newest_first = [i.key for i in await lg.asearch(("test", "alice"))]
    assert newest_first == ["img1", "doc2", "doc1"]


async def test_batch_put_search_and_order(lg):
    results = await lg.abatch(
        [
            PutOp(("test", "alice"), "key1", {"data": "value1"}),
            PutOp(("test", "alice"), "key2", {"data": "value2"}),
            PutOp(("test", "alice"), "key3", None),
        ]
    )
    assert results == [None, None, None]
    assert len(await lg.asearch(("test", "alice"), limit=10)) == 2

    await lg.aput(("test", "alice", "foo"), "key1", {"data": "value1"})
    await lg.aput(("test", "alice", "bar"), "key2", {"data": "value2"})
    results = await lg.abatch(
        [
            GetOp(("test", "alice", "foo"), "key1"),
            PutOp(("test", "alice", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test", "alice"), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", ("test", "alice")),), max_depth=None, limit=10, offset=0
            ),
            GetOp(("test", "alice"), "key9"),
            SearchOp(("test", "alice", "foo"), limit=10),
        ]
    )
    assert results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert sorted(i.key for i in results[2]) == ["key1", "key1"]  # ("test","alice") and ("test","alice","foo")
    assert ("test", "alice", "foo") in results[3] and ("test", "alice", "bar") in results[3]
    assert results[4] is None
    assert [i.namespace for i in results[5]] == [("test", "alice", "foo")]


async def test_list_namespaces(lg):
    namespaces = [
        ("test", "alice", "documents", "public"),
        ("test", "alice", "documents", "private"),
        ("test", "alice", "images", "public"),
        ("prod", "alice", "documents", "public"),
        ("test", "bob", "documents", "public"),
    ]
    for namespace in namespaces:
        await lg.aput(namespace, "dummy", {"content": "dummy"})
    assert await lg.alist_namespaces(prefix=("test", "alice")) == sorted(namespaces[:3])
    assert len(await lg.alist_namespaces(prefix=("*", "alice"))) == 4
    assert await lg.alist_namespaces(prefix=("*", "alice"), suffix=("public",)) == [
        ("prod", "alice", "documents", "public"),
        ("test", "alice", "documents", "public"),
        ("test", "alice", "images", "public"),
    ]
    assert await lg.alist_namespaces(prefix=("*", "alice"), max_depth=3) == [
        ("prod", "alice", "documents"),
        ("test", "alice", "documents"),
        ("test", "alice", "images"),
    ]
    assert len(await lg.alist_namespaces(prefix=("*", "alice"), limit=3)) == 3
    # no user named: every owner's namespaces, as InMemoryStore lists them
    everything = await lg.alist_namespaces(prefix=("test", "*"), limit=100)
    assert set(namespaces) - {("prod", "alice", "documents", "public")} <= set(everything)
    assert ("prod", "alice", "documents", "public") not in everything


async def test_query_search_ranks_by_similarity_in_both_languages(lg, store):
    memories = ("memories", "alice")
    await lg.aput(memories, "coffee", {"content": "我最喜欢的咖啡是燕麦拿铁"})
    await lg.aput(memories, "sister", {"content": "My sister lives in Lyon and teaches chemistry"})
    await lg.aput(memories, "cat", {"content": "Her cat is called Miso", "kind": "pet"})
    await lg.aput(memories, "hidden", {"content": "My sister moved to Lyon last spring"}, index=False)

    coffee = await lg.asearch(memories, query="我喜欢喝什么咖啡？")
    assert coffee[0].key == "coffee" and 0 < coffee[0].score <= 1
    scored = [item.score for item in coffee if item.score is not None]
    assert scored == sorted(scored, reverse=True) and len(scored) == 3
    assert [(item.key, item.score) for item in coffee[3:]] == [("hidden", None)]  # unembedded: last, unscored
    sister = await lg.asearch(memories, query="where does my sister live?")
    assert sister[0].key == "sister"
    assert "hidden" not in [i.key for i in await lg.asearch(memories, query="sister", limit=3)]  # index=False ...
    assert (await lg.aget(memories, "hidden")).value["content"].startswith("My sister")  # ... but kept
    assert [i.key for i in await lg.asearch(memories, query="cat", filter={"kind": "pet"})] == ["cat"]
    page = await lg.asearch(memories, query="sister Lyon", limit=1, offset=1)
    assert len(page) == 1 and page[0].key != sister[0].key

    first = next(i for i in await lg.asearch(memories, query="Lyon chemistry teacher") if i.key == "sister")
    await lg.aput(memories, "sister", {"content": "My sister plays the cello in Vienna"})
    after = [i for i in await lg.asearch(memories, query="Lyon chemistry teacher") if i.key == "sister"]
    assert not after or after[0].score < first.score
    assert (await lg.asearch(memories, query="cello Vienna"))[0].key == "sister"


async def test_a_namespace_never_reaches_another_user(lg, store):
    await lg.aput(("memories", "alice"), "secret", {"content": "alice loves opera"})
    assert await lg.aget(("memories", "bob"), "secret") is None
    assert await lg.asearch(("memories", "bob"), query="opera") == []
    assert await lg.asearch(("memories", "bob")) == []
    assert await store.search_memories("bob", "opera") == []
    await lg.aput(("memories", "a,b"), "k", {"content": "a comma in the user id"})  # tags split on ","
    for other in ("a", "b", "a|b", "ab"):
        assert await lg.asearch(("memories", other), query="comma user id") == []
        assert await lg.alist_namespaces(prefix=("*", other)) == []
    assert [i.key for i in await lg.asearch(("memories", "a,b"), query="comma user id")] == ["k"]
    # a namespace that names no user is stored and found like any other, in no user's memories
    await lg.aput(("memories",), "x", {"content": "opera tickets for the team"})
    assert (await lg.aget(("memories",), "x")).value == {"content": "opera tickets for the team"}
    assert {i.key for i in await lg.asearch(("memories",), query="opera")} == {"secret", "x", "k"}
    assert [i.key for i in await lg.asearch(("memories", "alice"), query="opera")] == ["secret"]
    assert await store.search_memories("bob", "opera tickets") == []
    assert "x" not in [item.key for item in (await store.export_user("alice")).items]


async def test_items_are_memories_in_recall_and_the_panel(lg, store, settings):
    await lg.aput(("memories", "alice"), "k", {"content": "我对花生过敏"})
    memory_id = item_memory_id(("memories", "alice"), "k")
    hits = await store.search_memories("alice", "花生过敏")
    assert [(h.memory.id, h.memory.kind, h.memory.text) for h in hits] == [(memory_id, "event", "我对花生过敏")]
    found = await recall(store, "alice", None, "我对什么过敏？", parts=RecallParts.of(settings))
    assert any(item.memory_id == memory_id for item in found.memories)

    # the app's panel and the forget tool delete by memory id: the item goes with it
    assert await forget_memory(store, "alice", memory_id)
    assert await lg.aget(("memories", "alice"), "k") is None
    assert await lg.asearch(("memories", "alice")) == []
    assert await lg.alist_namespaces(prefix=("*", "alice")) == []


async def test_profile_entries_and_events_are_readable_through_the_store(lg, store):
    entry = ProfileEntry(user_id="alice", topic="diet", subtopic="coffee", content="喜欢黑咖啡，不加糖")
    event = Event(id="e1", user_id="alice", summary="Alice started training for a marathon", tags=["sport"])
    await store.apply_update(
        MemoryUpdate(
            user_id="alice",
            upsert_profile=[entry],
            event=event,
            memories=[
                Memory(
                    id=profile_memory_id(entry.id),
                    user_id="alice",
                    kind="profile",
                    text="diet / coffee: 喜欢黑咖啡，不加糖",
                    ref_id=entry.id,
                ),
                Memory(
                    id=event_memory_id(event.id), user_id="alice", kind="event", text=event.summary, ref_id=event.id
                ),
            ],
        )
    )
    profile = await lg.aget(("memlane_profile", "alice"), entry.id)
    assert profile.value["content"] == "喜欢黑咖啡，不加糖" and profile.value["topic"] == "diet"
    assert [i.key for i in await lg.asearch(("memlane_profile", "alice"), query="我喜欢什么咖啡")] == [entry.id]
    assert [i.key for i in await lg.asearch(("memlane_profile", "alice"), filter={"topic": "diet"})] == [entry.id]
    assert (await lg.aget(("memlane_events", "alice"), "e1")).value["tags"] == ["sport"]
    assert [i.key for i in await lg.asearch(("memlane_events", "alice"), query="marathon training")] == ["e1"]
    assert await lg.alist_namespaces(prefix=("*", "alice")) == [
        ("memlane_events", "alice"),
        ("memlane_profile", "alice"),
    ]
    assert await lg.aget(("memlane_profile", "bob"), entry.id) is None

    with pytest.raises(StoreError, match="memory graph"):
        await lg.aput(("memlane_profile", "alice"), "x", {"content": "not through here"})
    await lg.adelete(("memlane_profile", "alice"), entry.id)
    await lg.adelete(("memlane_events", "alice"), "e1")
    assert await store.get_profile("alice") == [] and await store.list_events("alice") == []
    assert await store.search_memories("alice", "coffee marathon") == []


async def test_ttl_is_a_redis_expiry_that_reads_refresh(store):
    lg = MemlaneStore(store, user_of=1, ttl={"default_ttl": 5.0})
    await lg.aput(("memories", "alice"), "soon", {"content": "parked on level 3"}, ttl=1.0)
    await lg.aput(("memories", "alice"), "default", {"content": "umbrella in the car"})
    await lg.aput(("memories", "alice"), "kept", {"content": "born in 1990"}, ttl=None)
    key = store.layout.memory("alice", item_memory_id(("memories", "alice"), "soon"))
    assert 0 < await store.client.pttl(key) <= 60_000
    assert (
        60_000
        < await store.client.pttl(store.layout.memory("alice", item_memory_id(("memories", "alice"), "default")))
        <= 300_000
    )
    assert await store.client.pttl(store.layout.memory("alice", item_memory_id(("memories", "alice"), "kept"))) == -1

    await store.client.pexpire(key, 20_000)  # as if 40 s had passed
    await lg.aget(("memories", "alice"), "soon", refresh_ttl=False)
    assert await store.client.pttl(key) <= 20_000
    await lg.asearch(("memories", "alice"), query="where did I park?")
    assert await store.client.pttl(key) > 20_000  # a read restarts the clock

    # Redis deletes an expired item itself: value, vector and index entry
    await lg.aput(("memories", "alice"), "soon", {"content": "parked on level 3"}, ttl=0.001)
    async with asyncio.timeout(10):
        while await store.client.exists(key):
            await asyncio.sleep(0.02)
    assert await lg.aget(("memories", "alice"), "soon") is None
    assert "soon" not in [i.key for i in await lg.asearch(("memories", "alice"), query="parked level 3")]
    assert [i.key for i in await lg.asearch(("memories", "alice"))] == ["kept", "default"]


async def test_sync_methods_from_a_thread_and_never_in_the_loop(lg):
    await asyncio.to_thread(lg.put, ("memories", "alice"), "k", {"content": "likes green tea"})
    item = await asyncio.to_thread(lg.get, ("memories", "alice"), "k")
    assert item.value == {"content": "likes green tea"}
    assert [i.key for i in await asyncio.to_thread(lg.search, ("memories", "alice"), query="tea")] == ["k"]
    with pytest.raises(asyncio.InvalidStateError, match="await store.asearch"):
        lg.search(("memories", "alice"), query="tea")


def test_open_serves_code_without_an_event_loop(store, settings, embeddings):
    with pytest.raises(StoreError, match="MemlaneStore.open"):
        MemlaneStore(store).get(("memories", "alice"), "k")  # no loop runs the fixture's store now
    lg = MemlaneStore.open(settings, embeddings=embeddings, user_of=1)
    try:
        lg.put(("memories", "alice"), "k", {"content": "我在学吉他"})
        assert [i.key for i in lg.search(("memories", "alice"), query="学什么乐器")] == ["k"]
        assert lg.list_namespaces(prefix=("memories", "alice")) == [("memories", "alice")]
        lg.delete(("memories", "alice"), "k")
        assert lg.get(("memories", "alice"), "k") is None
    finally:
        lg.close()


def test_close_during_sync_calls_is_quiet(settings, capfd, caplog, monkeypatch):
    # close() under ten threads' calls printed 10-20 tracebacks ("Event loop is closed", "Task was
    # destroyed but it is pending!", "coroutine ignored GeneratorExit"); the callers got
    # "event loop stopped" or a CancelledError
    from conftest import drop_prefix_sync
    from hash_embeddings import CharacterHashEmbeddings

    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda failure: unraisable.append(repr(failure.exc_value)))
    lg = MemlaneStore.open(settings, embeddings=CharacterHashEmbeddings(), user_of=1)
    lg.put(("memories", "alice"), "k", {"content": "likes green tea"})
    calls_made = threading.Semaphore(0)
    ended: list[BaseException] = []

    def keep_calling() -> None:
        try:
            while True:
                assert lg.get(("memories", "alice"), "k") is not None
                lg.search(("memories", "alice"), query="green tea")
                calls_made.release()
        except StoreError as error:
            ended.append(error)

    callers = [threading.Thread(target=keep_calling) for _ in range(10)]
    try:
        for caller in callers:
            caller.start()
        for _ in range(30):  # every caller is under way
            assert calls_made.acquire(timeout=30)
        lg.close()
        for caller in callers:
            caller.join(timeout=10)
        assert not any(caller.is_alive() for caller in callers)
        with pytest.raises(StoreError, match="MemlaneStore was closed"):
            lg.get(("memories", "alice"), "k")
        lg.close()  # a second close does nothing
        gc.collect()  # a task the loop dropped would say so now
    finally:
        drop_prefix_sync(settings.redis_url, settings.key_prefix)
    assert len(ended) == 10
    assert {str(error) for error in ended} == {
        "MemlaneStore was closed while this call was made or waited; open it again to use it"
    }
    noise = capfd.readouterr().err + caplog.text + "".join(unraisable)
    for line in ("Traceback", "Event loop is closed", "Task was destroyed", "GeneratorExit", "never awaited"):
        assert line not in noise


class ToolCallingModel(ScriptedChatModel):
    """Answers with the scripted tool calls first, then with text."""

    tool_calls: list[list[dict]] = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._calls.append(list(messages))
        if self.tool_calls:
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage(content="", tool_calls=self.tool_calls.pop(0)))]
            )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])


def call(name: str, call_id: str, **args) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


async def test_langmem_agent_stores_and_finds_memories_through_memlane(store):
    model = ToolCallingModel(
        tool_calls=[
            [
                call("manage_memory", "1", content="我最喜欢的咖啡是燕麦拿铁", action="create"),
                call("manage_memory", "2", content="My sister lives in Lyon", action="create"),
            ],
            [
                call("search_memory", "3", query="我喜欢喝什么咖啡？"),
                call("search_memory", "4", query="Where does my sister live?"),
            ],
        ]
    )
    from langmem import create_manage_memory_tool, create_search_memory_tool

    from memlane import MemlaneStore

    agent = create_agent(
        model,
        tools=[
            create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}")),
            create_search_memory_tool(namespace=("memories", "{langgraph_user_id}")),
        ],
        store=MemlaneStore(store, user_of=1),  # ("memories", user): items land in alice's memlane memories
    )
    result = await agent.ainvoke(
        {"messages": [HumanMessage("remember this")]}, {"configurable": {"langgraph_user_id": "alice"}}
    )
    outputs = [m.content for m in result["messages"] if m.type == "tool"]
    assert outputs[0].startswith("created memory") and outputs[1].startswith("created memory")
    assert json.loads(outputs[2])[0]["value"] == {"content": "我最喜欢的咖啡是燕麦拿铁"}
    assert json.loads(outputs[3])[0]["value"] == {"content": "My sister lives in Lyon"}
    # the same memories are memlane's: recall's search finds them, and no other user does
    assert (await store.search_memories("alice", "燕麦拿铁"))[0].memory.text == "我最喜欢的咖啡是燕麦拿铁"
    assert await store.search_memories("bob", "Lyon") == []


async def test_items_are_exported_and_shown_on_the_app_timeline(lg, store, settings):
    from memlane.ui.service import ChatService

    await lg.aput(("memories", "alice"), "coffee", {"content": "我最喜欢的咖啡是燕麦拿铁"})
    await lg.aput(("prefs", "alice", "ui"), "theme", {"dark": True}, index=False)
    exported = await store.export_user("alice")
    assert {(tuple(item.namespace), item.key) for item in exported.items} == {
        (("memories", "alice"), "coffee"),
        (("prefs", "alice", "ui"), "theme"),
    }
    assert next(item for item in exported.items if item.key == "theme").value == {"dark": True}

    timeline = await ChatService(settings, store=store).timeline_markdown("alice")
    assert "No events yet" in timeline and "Saved by your agent" in timeline
    assert "`memories / coffee`: 我最喜欢的咖啡是燕麦拿铁" in timeline
    assert '`prefs / ui / theme`: {"dark": true}' in timeline


async def test_items_of_an_older_memlane_keep_their_user_and_are_found_after_the_upgrade(store):
    """Items put under the old rule (the second label was the user) are where `user_of=1` looks,
    and `ensure_indexes` gives items put before the items' index fields those fields once (issue
    52), so searches and listings, which are index queries, find them, whatever names the user."""
    old = StoreItem(
        user_id="alice",
        namespace=["memories", "alice"],
        key="k",
        value={"content": "window seats", "tag": "red"},
        text="window seats",
    )
    await store.put_items([old])
    key = store.layout.memory("alice", old.memory_id)  # as an older memlane left it: no index fields
    await store.client.hdel(key, *item_index_row(old.namespace, old.value, 0.0))
    await store.client.delete(
        store.layout.item_owners, store.layout.item_owners_adopted, store.layout.item_fields_adopted
    )
    for user_of in (1, None):
        lg = MemlaneStore(store, user_of=user_of)
        assert await lg.asearch(("memories",)) == []  # not in the index's item fields yet
    lg = MemlaneStore(store, user_of=1)
    assert (await lg.aget(("memories", "alice"), "k")).value == {"content": "window seats", "tag": "red"}
    await store.ensure_indexes()
    assert [i.key for i in await lg.asearch(("memories",), query="seats")] == ["k"]
    assert [i.key for i in await lg.asearch(("memories", "alice"), filter={"tag": "red"})] == ["k"]
    assert await lg.alist_namespaces(prefix=("memories",)) == [("memories", "alice")]
    assert await store.client.exists(store.layout.item_fields_adopted)


async def test_langmem_tools_with_the_layout_of_langgraphs_docs(store):
    """(user_id, "memories"), as LangGraph's docs write it, with user_of=0: each user's memories
    are theirs in recall, and neither user's search reaches the other's."""
    from langmem import create_manage_memory_tool, create_search_memory_tool

    lg = MemlaneStore(store, user_of=0)
    for user, fact in (("alice", "我对花生过敏"), ("bob", "I am allergic to cats")):
        model = ToolCallingModel(
            tool_calls=[
                [call("manage_memory", "1", content=fact, action="create")],
                [call("search_memory", "2", query="allergic 过敏")],
            ]
        )
        agent = create_agent(
            model,
            store=lg,
            tools=[
                create_manage_memory_tool(namespace=("{langgraph_user_id}", "memories")),
                create_search_memory_tool(namespace=("{langgraph_user_id}", "memories")),
            ],
        )
        result = await agent.ainvoke(
            {"messages": [HumanMessage("remember")]}, {"configurable": {"langgraph_user_id": user}}
        )
        found = json.loads([m.content for m in result["messages"] if m.type == "tool"][-1])
        assert [hit["value"]["content"] for hit in found] == [fact]
        assert [h.memory.text for h in await store.search_memories(user, "allergic 过敏")] == [fact]


async def test_memlanes_own_relevance_is_there_under_its_own_name(store):
    lg = MemlaneStore(store, user_of=1, relevance=True)
    await lg.aput(("memories", "alice"), "tea", {"content": "我每天早上喝龙井茶"})
    await lg.aput(("memories", "alice"), "car", {"content": "My car is a blue Volvo"})
    hits = await lg.asearch(("memories", "alice"), query="我早上喝什么茶？")
    assert hits[0].key == "tea" and hits[0].score is not None  # LangGraph's similarity, as without the option
    assert 0 < hits[0].relevance <= 1 and (hits[1].relevance or 0) < hits[0].relevance  # memlane's, beside it
    assert hits[0].dict()["relevance"] == hits[0].relevance
    assert not hasattr(
        (await MemlaneStore(store, user_of=1).asearch(("memories", "alice"), query="茶"))[0], "relevance"
    )


async def test_a_user_position_that_mixes_users_is_said_at_once_with_the_fix(store, caplog):
    """Issue 50, item 9: user_of=1 over LangGraph's documented (user_id, "memories") makes every
    user the one memlane user "memories", their items mixed, and said nothing. Once the labels
    before the user's position change under one user, a warning names the position to use; the
    layout user_of=1 is for, ("memories", user_id), says nothing."""
    import logging

    mixed = MemlaneStore(store, user_of=1)
    with caplog.at_level(logging.WARNING, logger="memlane.langgraph_rules"):
        for user in ("alice", "bob", "carol", "dave"):
            await mixed.aput((user, "memories"), "k", {"text": f"{user} likes tea"}, index=False)
    said = [record.getMessage() for record in caplog.records if record.name == "memlane.langgraph_rules"]
    assert len(said) == 1 and "'memories'" in said[0] and "user_of=0" in said[0], said

    caplog.clear()
    fitting = MemlaneStore(store, user_of=1)
    with caplog.at_level(logging.WARNING, logger="memlane.langgraph_rules"):
        for user in ("erin", "frank", "gina", "hank"):
            await fitting.aput(("memories", user), "k", {"text": f"{user} likes tea"}, index=False)
    assert not [record for record in caplog.records if record.name == "memlane.langgraph_rules"]
