"""The `BaseStore` contract as LangGraph documents it (langgraph/store/base/__init__.py), on
MemlaneStore: what the random differential test (tests/test_langgraph_differential.py) does not
reach, i.e. expiry, distance types, the "langgraph" root, label rules, the sweeper methods, the
user mapping's isolation, and the sync API from many threads.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor

import pytest
from hash_embeddings import CharacterHashEmbeddings
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from test_langgraph_store import ToolCallingModel, call

from memlane import MemlaneStore
from memlane.langgraph_rules import NO_USER
from memlane.store.errors import StoreError

EMBED = CharacterHashEmbeddings()


def indexed(store, **options) -> MemlaneStore:
    index = {"dims": EMBED.dims, "embed": EMBED, **options.pop("index", {})}
    return MemlaneStore(store, index=index, **options)


# namespaces ------------------------------------------------------------------------------------
async def test_namespaces_of_any_shape_and_the_reserved_root(hashed_store):
    lg = MemlaneStore(hashed_store)
    for namespace in [("test",), ("documents",), ("a", "b", "c", "d", "e"), ("中文", "{x}", "a|b*")]:
        await lg.aput(namespace, "k", {"v": namespace[0]})
        assert (await lg.aget(namespace, "k")).value == {"v": namespace[0]}
    assert {ns for ns in await lg.alist_namespaces(limit=100)} >= {("test",), ("documents",), ("a", "b", "c", "d", "e")}
    assert await lg.alist_namespaces(prefix=("a",), max_depth=2) == [("a", "b")]
    assert await lg.alist_namespaces(suffix=("e",)) == [("a", "b", "c", "d", "e")]
    assert [i.namespace for i in await lg.asearch(())] and len(await lg.asearch((), limit=100)) == 4

    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        await lg.aput(("langgraph", "x"), "k", {"v": 1})  # put() reserves the root ...
    await lg.abatch([PutOp(("langgraph", "x"), "k", {"v": 1})])  # ... a raw batch does not (as InMemoryStore)
    assert (await lg.aget(("langgraph", "x"), "k")).value == {"v": 1}
    for bad in [("a.b",), ("a", ""), ()]:
        with pytest.raises(InvalidNamespaceError):
            await lg.abatch([PutOp(bad, "k", {"v": 1})])
    assert await lg.aget(("a",), "k") is None  # nothing of a refused batch was written


async def test_a_refused_op_leaves_the_rest_of_its_batch_unwritten(hashed_store):
    lg = MemlaneStore(hashed_store, user_of=1)
    with pytest.raises(StoreError, match="memory graph"):
        await lg.abatch([PutOp(("notes", "alice"), "k", {"v": 1}), PutOp(("memlane_profile", "alice"), "x", {"v": 2})])
    assert await lg.aget(("notes", "alice"), "k") is None


# filters ---------------------------------------------------------------------------------------
async def test_filters_compare_as_documented(hashed_store):
    lg = MemlaneStore(hashed_store)
    await lg.abatch(
        [
            PutOp(("docs",), "a", {"n": 1, "tag": "red", "user": {"access-level": "public"}, "on": True}),
            PutOp(("docs",), "b", {"n": 5, "tag": "blue", "user": {"access-level": "nested"}, "on": False}),
            PutOp(("docs",), "c", {"n": 9, "tag": "red", "user.access-level": "literal", "list": [1, 2]}),
        ]
    )

    async def keys(filter):
        return sorted(i.key for i in await lg.asearch(("docs",), filter=filter))

    assert await keys({"n": {"$gt": 1}}) == ["b", "c"]
    assert await keys({"n": {"$gte": 1, "$lt": 9}}) == ["a", "b"]
    assert await keys({"n": {"$lte": 5}, "tag": "red"}) == ["a"]
    assert await keys({"tag": {"$ne": "red"}}) == ["b"]
    assert await keys({"tag": {"$eq": "blue"}}) == ["b"]
    assert await keys({"on": True}) == ["a"] and await keys({"on": False}) == ["b"]
    assert await keys({"user": {"access-level": "nested"}}) == ["b"]
    assert await keys({"user.access-level": "nested"}) == ["b"]  # a dotted path, as the SQL stores read it
    assert await keys({"user.access-level": "literal"}) == ["c"]  # a key with a dot, as InMemoryStore reads it
    assert await keys({"list": [1, 2]}) == ["c"]
    assert await keys({"n": {"$gt": "not a number"}}) == []
    with pytest.raises(ValueError, match="unsupported filter operator"):
        await keys({"n": {"$in": [1]}})


# scores ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
async def test_scores_follow_the_distance_type(hashed_store, distance):
    lg = indexed(hashed_store, index={"distance_type": distance, "fields": ["text"]})
    await lg.aput(("s",), "near", {"text": "green tea"})
    await lg.aput(("s",), "far", {"text": "北京上海"})
    await lg.aput(("s",), "twin", {"text": "green tea"})
    hits = await lg.asearch(("s",), query="green tea")
    query, stored = EMBED.embed_query("green tea"), EMBED.embed_documents(["green tea", "北京上海"])
    expected = {
        "cosine": [sum(a * b for a, b in zip(query, v)) for v in stored],  # unit vectors: the dot product
        "inner_product": [sum(a * b for a, b in zip(query, v)) for v in stored],
        "l2": [-math.dist(query, v) for v in stored],
    }[distance]
    assert [i.key for i in hits][-1] == "far" and {i.key for i in hits[:2]} == {"near", "twin"}
    assert hits[0].score == hits[1].score  # equally good matches score equally
    assert [i.score for i in hits] == pytest.approx([expected[0], expected[0], expected[1]], abs=1e-5)
    assert lg.index_config["distance_type"] == distance and lg.embeddings is EMBED


async def test_memlanes_own_embedder_scores_by_cosine_similarity(store):
    lg = MemlaneStore(store)
    await lg.aput(("m",), "a", {"content": "我对花生过敏"})
    await lg.aput(("m",), "b", {"content": "我对花生过敏"})
    await lg.aput(("m",), "c", {"content": "I play the cello on Sundays"})
    hits = await lg.asearch(("m",), query="我对什么过敏？")
    assert [i.key for i in hits][-1] == "c" and hits[0].score == hits[1].score
    query = await store.embed_query("我对什么过敏？")
    (document,) = await store.embeddings.aembed_documents(["我对花生过敏"])
    cosine = sum(a * b for a, b in zip(query, document)) / math.sqrt(
        sum(a * a for a in query) * sum(b * b for b in document)
    )
    assert hits[0].score == pytest.approx(cosine, abs=1e-4)
    assert lg.index_config["dims"] == len(query) and lg.index_config["distance_type"] == "cosine"


async def test_index_paths_per_store_and_per_put(hashed_store):
    lg = indexed(hashed_store, index={"fields": ["title", "body.summary"]})
    await lg.aput(("p",), "one", {"title": "zebra", "body": {"summary": "quiet"}, "other": "北京"})
    await lg.aput(("p",), "two", {"title": "quiet", "other": "zebra"}, index=["other"])
    await lg.aput(("p",), "off", {"title": "zebra"}, index=False)
    hits = await lg.asearch(("p",), query="zebra")
    assert [i.key for i in hits][:2] in (["one", "two"], ["two", "one"]) and hits[0].score == pytest.approx(
        hits[1].score
    )
    assert hits[2].key == "off" and hits[2].score is None  # kept and listed last, never scored
    assert [i.key for i in await lg.asearch(("p",), query="zebra", limit=2)] == [i.key for i in hits[:2]]


# expiry ----------------------------------------------------------------------------------------
async def test_ttl_expires_items_refreshes_on_read_and_needs_no_sweeper(hashed_store):
    lg = MemlaneStore(hashed_store, ttl={"default_ttl": 0.02, "refresh_on_read": False})  # 1.2 s
    assert await lg.start_ttl_sweeper() is None and lg.start_ttl_sweeper().done()
    await lg.aput(("t",), "short", {"v": 1})
    await lg.aput(("t",), "kept", {"v": 2}, ttl=None)
    await lg.aput(("t",), "read", {"v": 3}, ttl=0.02)
    for _ in range(4):  # 4 x 0.4 s: an explicit refresh keeps "read" alive past its ttl
        await asyncio.sleep(0.4)
        assert await lg.aget(("t",), "read", refresh_ttl=True) is not None
    assert await lg.aget(("t",), "short") is None  # refresh_on_read=False: a plain read did not refresh it
    assert {i.key for i in await lg.asearch(("t",))} == {"kept", "read"}
    assert await lg.sweep_ttl() == 0 and await lg.stop_ttl_sweeper() is True and lg.stop_ttl_sweeper()


# the user mapping --------------------------------------------------------------------------------
@pytest.mark.parametrize("user_of, layout", [(1, ("memories", "{user}")), (0, ("{user}", "memories"))])
async def test_a_configured_mapping_keeps_users_apart_in_either_layout(store, user_of, layout):
    lg = MemlaneStore(store, user_of=user_of)
    alice, bob = (tuple(label.format(user=user) for label in layout) for user in ("alice", "bob"))
    await lg.aput(alice, "k", {"content": "alice is allergic to peanuts"})
    await lg.aput(bob, "k", {"content": "bob plays the cello"})
    assert [i.value["content"] for i in await lg.asearch(bob, query="allergic")] == ["bob plays the cello"]
    assert [item.key for item in (await store.export_user("alice")).items] == ["k"]
    assert [h.memory.text for h in await store.search_memories("alice", "peanuts")] == ["alice is allergic to peanuts"]
    assert "peanut" not in " ".join(h.memory.text for h in await store.search_memories("bob", "peanuts"))
    await store.delete_user("alice")
    assert await lg.aget(alice, "k") is None and (await lg.aget(bob, "k")) is not None


async def test_an_unconfigured_store_never_takes_a_label_for_a_user(store):
    lg = MemlaneStore(store)
    await lg.aput(("alice", "memories"), "k", {"content": "alice is allergic to peanuts"})
    await lg.aput(("memories", "bob"), "k", {"content": "bob plays the cello"})
    assert [i.namespace for i in await lg.asearch(("alice",), query="cello")] == [("alice", "memories")]
    assert [i.namespace for i in await lg.asearch(("memories",), query="peanuts")] == [("memories", "bob")]
    for user in ("alice", "memories", "bob"):
        assert (await store.export_user(user)).items == []
        assert await store.search_memories(user, "peanuts cello") == []
    with pytest.raises(InvalidNamespaceError, match="reserved"):
        await MemlaneStore(store, user_of=0).aput((NO_USER, "x"), "k", {"v": 1})


async def test_users_from_the_runs_config(store):
    lg = MemlaneStore(store, user_of="config")

    @tool
    def remember(fact: str) -> str:
        """Remember a fact about the user."""
        get_store().put(("memories",), "fact", {"content": fact})
        return "saved"

    model = ToolCallingModel(tool_calls=[[call("remember", "1", fact="我住在上海")]])
    agent = create_agent(model, tools=[remember], store=lg)
    await agent.ainvoke({"messages": [HumanMessage("remember")]}, {"configurable": {"user_id": "mei"}})
    assert [h.memory.text for h in await store.search_memories("mei", "上海")] == ["我住在上海"]
    assert await lg.aget(("memories",), "fact") is None  # outside a run: no user, not mei's namespace


# the sync API --------------------------------------------------------------------------------------
def test_many_threads_share_the_sync_api_and_close_never_hangs(settings):
    lg = MemlaneStore.open(settings, embeddings=EMBED, index={"dims": EMBED.dims, "embed": EMBED})
    loop_thread = lg._private.thread
    try:

        def work(thread: int) -> int:
            done = 0
            for i in range(20):
                namespace = ("test", "t", str(thread))
                lg.put(namespace, f"k{i}", {"text": f"item {i} of {thread}"})
                assert lg.get(namespace, f"k{i}") is not None
                lg.search(("test",), query=f"item {i}", limit=3)
                lg.list_namespaces(prefix=("test",), max_depth=2)
                lg.batch(
                    [GetOp(namespace, f"k{i}"), SearchOp(namespace, None, 2, 0, None), PutOp(namespace, f"k{i}", None)]
                )
                done += 5
            return done

        with ThreadPoolExecutor(max_workers=10) as pool:
            assert sum(pool.map(work, range(10))) == 1000
    finally:
        lg.close()
    assert not loop_thread.is_alive()  # close() ended the store's loop thread


def test_a_caller_waiting_on_a_stopped_loop_gets_an_error_not_a_hang(settings):
    lg = MemlaneStore.open(settings, embeddings=EMBED)
    loop = lg._loop
    blocker = asyncio.run_coroutine_threadsafe(asyncio.sleep(30), loop)  # keeps the loop from answering in time
    loop.call_soon_threadsafe(loop.stop)  # the loop stops with a call still waiting
    with pytest.raises(StoreError, match="event loop"):
        lg.get(("a",), "k")
    lg._private.thread.join()  # clean up: cancel what the stopped loop still holds, close the store
    blocker.cancel()
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(lg.store.aclose())
    loop.close()
