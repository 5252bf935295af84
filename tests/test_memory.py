"""memlane.memory: mem0's calls (add, search, get_all, get, update, delete, delete_all, history)
over the same store and memory graph as every other door (issue 31, item 3), async and sync."""

from __future__ import annotations

import pytest
from conftest import memory_store_on

from memlane.memory import AsyncMemory, Memory
from memlane.store.errors import InvalidInput
from memlane.testing import ScriptedChatModel, memory_rules

CHAT = [
    {"role": "user", "content": "我最近总是凌晨2点才睡，白天困得不行。"},
    {"role": "assistant", "content": "听起来很累，最近工作忙吗？"},
    {"role": "user", "content": "连续两周都在加班。我喜欢不加糖的黑咖啡。"},
]


async def test_add_remembers_at_once_and_answers_what_it_added(store, settings):
    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=settings)
    added = await memory.add(CHAT, user_id="u", session_id="s1")
    assert added["stored"] == 3 and added["event_id"]
    events = {result["event"] for result in added["results"]}
    assert events == {"ADD"} and sum(result["id"].startswith("profile:") for result in added["results"]) == 3
    assert any(result["id"] == f"event:{added['event_id']}" for result in added["results"])
    again = await memory.add(CHAT, user_id="u", session_id="s1")  # the same messages: nothing new, nothing learned
    assert again["stored"] == 0 and again["results"] == []

    hits = (await memory.search("黑咖啡", user_id="u", limit=3))["results"]
    assert hits and "黑咖啡" in hits[0]["memory"] and 0 <= hits[0]["score"] <= 1

    page = await memory.get_all(user_id="u", limit=2)
    rest = await memory.get_all(user_id="u", limit=2, offset=page["next_offset"])
    assert len(page["results"]) == 2 and rest["next_offset"] is None
    assert {m["id"] for m in page["results"] + rest["results"]} == {r["id"] for r in added["results"]}
    assert all(m["created_at"].endswith("+00:00") and m["user_id"] == "u" for m in page["results"])  # mem0's shape

    entry_id = next(r["id"] for r in added["results"] if "咖啡" in r["memory"])
    assert (await memory.get(entry_id, user_id="u"))["kind"] == "profile"
    updated = await memory.update(entry_id, "喜欢燕麦拿铁", user_id="u")
    assert updated["message"] and updated["memory"].endswith("喜欢燕麦拿铁")
    assert [r["event"] for r in await memory.history(entry_id, user_id="u")] == ["ADD", "UPDATE"]
    event_id = f"event:{added['event_id']}"
    assert [h["event"] for h in await memory.history(event_id)] == ["ADD"]  # the user: the one this Memory acted for
    await memory.update(event_id, "用户换了咖啡口味", user_id="u")  # a run's card changes too, kept in its history
    assert [h["event"] for h in await memory.history(event_id, user_id="u")] == ["ADD", "UPDATE"]

    assert (await memory.delete(entry_id, user_id="u"))["message"] and await memory.get(entry_id, user_id="u") is None
    assert [r["event"] for r in await memory.history(entry_id)] == ["ADD", "UPDATE", "DELETE"]
    with pytest.raises(InvalidInput, match="no memory"):
        await memory.delete(entry_id, user_id="u")
    assert (await memory.delete_all(user_id="u"))["keys_removed"] > 0
    assert (await memory.get_all(user_id="u"))["results"] == []


async def test_add_without_inferring_stores_searchable_turns_and_a_model_is_asked_for(store, settings):
    memory = AsyncMemory(store, settings=settings)
    with pytest.raises(InvalidInput, match="OPENAI_API_KEY"):
        await memory.add("I moved to Lyon.", user_id="v")
    added = await memory.add("I moved to Lyon.", user_id="v", infer=False)
    assert added["stored"] == 1 and [(r["memory"], r["event"]) for r in added["results"]] == [
        ("I moved to Lyon.", "ADD")
    ]
    again = await memory.add("I moved to Lyon.", user_id="v", infer=False)  # kept once: NONE
    assert [r["event"] for r in again["results"]] == ["NONE"]
    assert [m["memory"] for m in (await memory.get_all(user_id="v"))["results"]] == ["I moved to Lyon."]
    hit = (await memory.search("Lyon", user_id="v"))["results"][0]
    assert hit["kind"] == "message" and (await memory.get(hit["id"], user_id="v"))["memory"] == "I moved to Lyon."
    with pytest.raises(InvalidInput, match="not a memory id"):
        await memory.get("nothing", user_id="v")


async def test_an_agents_memory_and_a_run_are_scopes_of_their_own(store, settings):
    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=settings)
    added = await memory.add(CHAT, user_id="w", agent_id="sleep-coach", run_id="night-1")
    assert added["stored"] == 3 and added["results"]
    assert (await memory.search("黑咖啡", user_id="w"))["results"] == []
    assert (await memory.get_all(user_id="w"))["results"] == []
    assert (await memory.get_all(user_id="w", agent_id="other"))["results"] == []
    mine = (await memory.search("黑咖啡", filters={"user_id": "w", "agent_id": "sleep-coach"}))["results"]
    assert mine and "黑咖啡" in mine[0]["memory"]
    in_run = await memory.search("加班", user_id="w", agent_id="sleep-coach", run_id="night-1", kinds=["message"])
    assert in_run["results"] and {hit["run_id"] for hit in in_run["results"]} == {"night-1"}
    elsewhere = await memory.search("加班", user_id="w", agent_id="sleep-coach", run_id="night-2", kinds=["message"])
    assert elsewhere["results"] == []
    entry_id = next(r["id"] for r in added["results"] if r["id"].startswith("profile:"))
    assert await memory.get(entry_id, user_id="w") is None and (
        await memory.get(entry_id, user_id="w", agent_id="sleep-coach")
    )
    assert await memory.history(entry_id, user_id="w") == []
    assert [r["event"] for r in await memory.history(entry_id, user_id="w", agent_id="sleep-coach")] == ["ADD"]
    with pytest.raises(InvalidInput, match="no memory"):
        await memory.delete(entry_id, user_id="w")
    assert (await memory.delete(entry_id, user_id="w", agent_id="sleep-coach"))["message"]
    await memory.add("I moved to Lyon.", user_id="w", infer=False)
    assert (await memory.delete_all(user_id="w", agent_id="sleep-coach"))["keys_removed"] > 0  # the agent's only
    assert (await memory.search("Lyon", user_id="w"))["results"][0]["memory"] == "I moved to Lyon."
    with pytest.raises(InvalidInput, match="needs user_id"):
        await memory.search("Lyon", agent_id="sleep-coach")
    with pytest.raises(InvalidInput, match="not one run"):
        await memory.delete_all(user_id="w", run_id="night-1")
    assert (await memory.delete_all(user_id="w"))["keys_removed"] > 0


async def test_metadata_is_kept_on_add_and_filters_search(settings, embeddings):
    declared = settings.model_copy(update={"metadata_fields": {"project": "tag", "priority": "numeric"}})
    async with memory_store_on(declared, embeddings) as meta_store:
        memory = AsyncMemory(meta_store, settings=declared)
        await memory.add(
            "The launch review moved to Friday.",
            user_id="x",
            metadata={"project": "apollo", "priority": 3},
            infer=False,
        )
        await memory.add(
            "The launch party is on Saturday.", user_id="x", metadata={"project": "gemini", "priority": 1}, infer=False
        )
        hits = (await memory.search("launch", user_id="x", filters={"project": "apollo"}))["results"]
        assert [hit["memory"] for hit in hits] == ["The launch review moved to Friday."]
        assert hits[0]["metadata"] == {"project": "apollo", "priority": 3}
        lower = await memory.search("launch", filters={"user_id": "x", "priority": {"lt": 2}})
        assert [h["memory"] for h in lower["results"]] == ["The launch party is on Saturday."]
        with pytest.raises(InvalidInput, match="MEMLANE_METADATA_FIELDS"):
            await memory.search("launch", user_id="x", filters={"owner": "me"})


async def test_add_without_waiting_answers_a_run_id_and_the_run_ends_in_the_background(store, settings):
    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=settings)
    started = await memory.add(CHAT, user_id="y", wait=False)
    assert started["stored"] == 3 and started["results"] == [] and started["memory_run_id"]
    assert len(await store.recent_messages("y", "default")) == 3  # stored before the answer
    first = await memory.get_run(started["memory_run_id"])
    assert first["status"] in ("running", "done")
    ended = await memory.get_run(started["memory_run_id"], wait=True)
    assert ended["status"] == "done" and ended["event_id"] and {r["event"] for r in ended["results"]} == {"ADD"}
    assert {m["id"] for m in (await memory.get_all(user_id="y"))["results"]} == {r["id"] for r in ended["results"]}
    with pytest.raises(InvalidInput, match="no memory run"):
        await memory.get_run("nope")
    # a model that answers garbage: the run says so, nothing is lost
    broken = AsyncMemory(store, model=ScriptedChatModel(rules=[], default="not json at all"), settings=settings)
    failed = await broken.add("I moved to Lyon.", user_id="z", wait=False)
    outcome = await broken.get_run(failed["memory_run_id"], wait=True)
    assert outcome["status"] in ("done", "failed") and len(await store.recent_messages("z", "default")) == 1


async def test_a_note_is_updated_in_place_and_its_history_says_so(store, settings):
    from memlane.tools import remember_note

    memory = AsyncMemory(store, settings=settings)
    note = await remember_note(store, "n", "My locker code is 3141.", session_id="s")
    updated = await memory.update(note.id, "My locker code is 2718.", user_id="n", actor="api:test")
    assert updated["id"] == note.id and updated["memory"] == "My locker code is 2718."
    found = await memory.search("locker code", user_id="n", kinds=["event"])
    assert [hit["memory"] for hit in found["results"]] == ["My locker code is 2718."]
    assert (await memory.get(note.id, user_id="n"))["memory"] == "My locker code is 2718."
    history = await memory.history(note.id, user_id="n")
    assert [(h["event"], h["new_memory"]) for h in history] == [
        ("ADD", "My locker code is 3141."),
        ("UPDATE", "My locker code is 2718."),
    ]
    assert history[1]["old_memory"] == "My locker code is 3141." and history[1]["actor_id"] == "api:test"
    with pytest.raises(InvalidInput, match="empty"):
        await memory.update(note.id, "  ", user_id="n")
    with pytest.raises(InvalidInput, match="no memory"):
        await memory.update("event:nope", "x", user_id="n")
    assert (await memory.delete(note.id, user_id="n"))["message"] and await memory.history(note.id, user_id="n") == []


async def test_exists_finds_a_note_or_a_fact_the_user_has_and_writes_nothing(store, settings):
    """issue 54: exists(text) on the facade: the same text, a near duplicate, a profile fact; per user and agent."""
    from memlane.tools import remember_fact, remember_note

    memory = AsyncMemory(store, settings=settings)
    assert (await memory.exists("My locker code is 3141.", user_id="x"))["exists"] is False
    note = await remember_note(store, "x", "My locker code is 3141.", session_id="s")
    found = await memory.exists("my locker code is  3141.", user_id="x")
    assert found["exists"] and found["identical"] and found["id"] == note.id
    assert (await memory.exists("The user's locker code is 3141.", user_id="x"))["exists"]
    assert not (await memory.exists("My locker code is 3141.", user_id="y"))["exists"]
    assert not (await memory.exists("My locker code is 3141.", user_id="x", agent_id="coach"))["exists"]
    await remember_fact(store, "x", "home", "city", "lives in Lyon")
    assert (await memory.exists("home / city: lives in Lyon", user_id="x"))["exists"]
    assert [event.summary for event in await store.list_events("x")] == ["My locker code is 3141."]


async def test_add_with_an_expiration_date_keeps_what_the_run_learned_until_then(store, settings):
    """issue 54: mem0's add(expiration_date=): the messages, the run's entries and card expire then, with
    infer=False the messages; nonsense is refused and nothing is stored."""
    import asyncio
    import time

    memory = AsyncMemory(store, model=ScriptedChatModel(rules=memory_rules()), settings=settings)
    for nonsense in ("someday", "2001-01-01", float("nan")):
        with pytest.raises(InvalidInput, match="expires_at"):
            await memory.add(CHAT, user_id="t", expiration_date=nonsense)
    assert (await memory.get_all(user_id="t"))["results"] == [] and await store.recent_messages("t", "default") == []
    await memory.add("My parking spot is B12 today.", user_id="t", infer=False, expiration_date=time.time() + 1)
    soon = time.time() + 2.5
    added = await memory.add(CHAT, user_id="t", expiration_date=soon)
    assert len(added["results"]) == 4 and len((await memory.get_all(user_id="t"))["results"]) == 4
    assert (await memory.search("黑咖啡", user_id="t"))["results"]
    assert {entry.expires_at for entry in await store.get_profile("t")} == {soon}
    await asyncio.sleep(max(0.0, soon - time.time()) + 0.05)
    assert (await memory.get_all(user_id="t"))["results"] == []
    assert (await memory.search("黑咖啡", user_id="t"))["results"] == []  # the messages too
    assert (await memory.search("parking spot B12", user_id="t"))["results"] == []
    assert await store.recent_messages("t", "default") == []


async def test_reset_deletes_every_users_memories(store, settings):
    memory = AsyncMemory(store, settings=settings)
    for user in ("r1", "r2"):
        await memory.add("I collect vinyl records.", user_id=user, infer=False)
    await memory.add("I collect stamps.", user_id="r1", agent_id="coach", infer=False)
    assert (await memory.reset())["keys_removed"] > 0
    for user, agent in (("r1", None), ("r2", None), ("r1", "coach")):
        assert (await memory.search("collect", user_id=user, agent_id=agent))["results"] == []
    await memory.add("I collect coins.", user_id="r1", infer=False)  # the store works on after a reset
    assert (await memory.search("collect coins", user_id="r1"))["results"][0]["memory"] == "I collect coins."


async def test_reset_on_a_cluster(cluster_store, settings):
    memory = AsyncMemory(cluster_store, settings=settings)
    for user in ("c1", "c2", "c3", "c4"):
        await memory.add("I collect vinyl records.", user_id=user, infer=False)
    assert (await memory.reset())["keys_removed"] > 0
    assert [key async for key in cluster_store.client.scan_iter(match=f"{cluster_store.layout.prefix}:u:*")] == []
    for user in ("c1", "c2", "c3", "c4"):
        assert (await memory.search("vinyl", user_id=user))["results"] == []


def test_the_sync_memory_works_inside_a_running_loop(
    store, settings, embeddings
):  # (store: its prefix is dropped after)
    import asyncio

    async def inside_a_loop() -> list[dict]:
        with Memory(settings, model=ScriptedChatModel(rules=memory_rules()), embeddings=embeddings) as memory:
            memory.add(CHAT, user_id="w")
            found = memory.search("加班", user_id="w")["results"]
            memory.delete_all(user_id="w")
            return found

    assert asyncio.run(inside_a_loop())


def test_mem0s_config_gives_what_has_a_setting_and_names_what_it_leaves_out(settings):
    from memlane.config_mem0 import settings_from_mem0_config

    mem0_config = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": "gpt-4.1-nano",
                "api_key": "sk-x",
                "openai_base_url": "http://m/v1",
                "temperature": 0.1,
            },
        },
        "embedder": {"provider": "huggingface", "config": {"model": "multi-qa-MiniLM-L6-cos-v1"}},
        "vector_store": {"provider": "redis", "config": {"redis_url": "redis://h:1", "collection_name": "c"}},
        "history_db_path": "/tmp/history.db",
    }
    mapped, left_out = settings_from_mem0_config(mem0_config, settings)
    assert mapped.models.memory_model == "gpt-4.1-nano" and mapped.models.openai_base_url == "http://m/v1"
    assert mapped.models.openai_api_key.get_secret_value() == "sk-x" and mapped.store.redis_url == "redis://h:1"
    assert [line.split(":")[0] for line in left_out] == [
        "embedder",
        "vector_store.config.collection_name",
        "history_db_path",
    ]
    with pytest.raises(InvalidInput, match="provider"):
        settings_from_mem0_config({"llm": "openai"}, settings)


CONTROLS = [chr(code) for code in range(0x20)] + ["\x7f"]


async def test_a_control_character_in_an_id_or_a_filter_value_is_refused(store, settings):
    """Issue 50, item 5, through the facade: every control character inside a user id, an agent
    id, a run id, a memory id or a filter value is `InvalidInput` (a ValueError), never stored,
    never a silent miss; get answered None for a memory id holding one, as for an id not held."""
    memory = AsyncMemory(store, settings=settings)
    await memory.add("I moved to Lyon.", user_id="v", infer=False)
    for control in CONTROLS:
        calls = {
            "add user_id": lambda: memory.add("hi", user_id=f"v{control}w", infer=False),
            "add run_id": lambda: memory.add("hi", user_id="v", run_id=f"r{control}s", infer=False),
            "add agent_id": lambda: memory.add("hi", user_id="v", agent_id=f"a{control}b", infer=False),
            "search user_id": lambda: memory.search("Lyon", user_id=f"v{control}w"),
            "search run_id": lambda: memory.search("Lyon", user_id="v", run_id=f"r{control}s"),
            "search filter": lambda: memory.search("Lyon", user_id="v", filters={"project": f"p{control}q"}),
            "get_all run_id": lambda: memory.get_all(user_id="v", run_id=f"r{control}s"),
            "get": lambda: memory.get(f"event:x{control}y", user_id="v"),
            "delete": lambda: memory.delete(f"event:x{control}y", user_id="v"),
        }
        for name, call in calls.items():
            with pytest.raises(InvalidInput):
                await call()
                pytest.fail(f"{name} took {control!r}")
    assert [m["memory"] for m in (await memory.get_all(user_id="v"))["results"]] == ["I moved to Lyon."]
