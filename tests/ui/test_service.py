"""The app's back end without a browser: status texts, the panel's reads, delete and forget me."""

from __future__ import annotations

from scripted import ScriptedChatModel

from memlane.graph import MemoryRunResult
from memlane.store.base import Memory, MemoryUpdate, Message, ProfileEntry, profile_memory_id
from memlane.ui.service import ChatService, describe_result


async def seeded_service(store, settings) -> ChatService:
    entry = ProfileEntry(user_id="u", topic="diet", subtopic="coffee", content="black coffee, no sugar", confidence=0.9)
    memory = Memory(id=profile_memory_id(entry.id), user_id="u", kind="profile", text="diet / coffee: black coffee, no sugar", ref_id=entry.id)
    await store.apply_update(MemoryUpdate(user_id="u", upsert_profile=[entry], memories=[memory]))
    await store.add_messages([Message(id="m1", user_id="u", session_id="s", role="user", content="I run trails on Sundays")])
    return ChatService(settings, store=store)


def test_result_descriptions():
    result = MemoryRunResult(user_id="u", added=["a"], updated=["b", "c"], event_id="e")
    assert describe_result(result) == "remembered: 2 updated, 1 added, 1 event"
    assert describe_result(RuntimeError("model down")) == "memory run failed: model down"
    skipped = MemoryRunResult(user_id="u", skipped_reason="the chat says nothing to remember about the user")
    assert describe_result(skipped).startswith("remembered nothing new")


async def test_panel_reads_search_delete_and_forget(store, settings):
    service = await seeded_service(store, settings)
    rows = await service.profile_rows("u")
    assert [row[:3] for row in rows] == [["diet", "coffee", "black coffee, no sugar"]]
    assert await service.sessions("u") == ["s"]
    assert await service.history("u", "s") == [{"role": "user", "content": "I run trails on Sundays"}]

    results = await service.search_rows("u", "trail running")
    assert results[0][1:4] == ["message", "I run trails on Sundays", "m1"] and 0 <= results[0][0] <= 1

    assert await service.delete_entry("u", rows[0][-1]) == f"deleted {rows[0][-1]}"
    assert await service.profile_rows("u") == [] and service.status("u").version == 1
    assert (await service.delete_entry("u", "nope")).startswith("no entry")

    assert (await service.forget_user("u")).startswith("forgot everything of u")
    assert await service.search_rows("u", "trail running") == [] and await service.sessions("u") == []


async def test_reply_without_a_model_explains_the_configuration(store, settings):
    service = ChatService(settings, store=store)
    answers = [answer async for answer in service.stream_reply("u", "s", "hi", [])]
    assert len(answers) == 1 and "OPENAI_BASE_URL" in answers[0]
    assert await store.recent_messages("u", "s") == []


async def test_reply_streams_and_reports_the_save(store, settings):
    service = ChatService(settings, store=store, chat_model=ScriptedChatModel(default="All good here.", rules=[("zzz", "")]))
    answers = [answer async for answer in service.stream_reply("u", "s", "how are you?", [], persona="Be terse.")]
    assert answers[-1] == "All good here." and len(answers) > 2
    await service.middleware.wait_idle()
    await service.scheduler.wait_idle(10)
    assert [m.content for m in await store.recent_messages("u", "s")] == ["how are you?", "All good here."]
    assert service.status("u").text.startswith("saved · ")  # below the buffer threshold: no run yet
    await service.aclose()
