"""Hostile input at the store's edge: huge messages, huge ids, NUL bytes, lone surrogates and
the HOSTILE_IDS: stored or refused with an error naming what to change, never a crash and
never another user's data."""

from __future__ import annotations

import pytest
from conftest import HOSTILE_IDS

from memlane.middleware import MemoryAgentContext, MemoryPersistence
from memlane.recall import RecallParts, recall
from memlane.store.errors import InputTooLarge, InvalidInput
from memlane.store.ids import profile_memory_id
from memlane.store.records import Memory, MemoryUpdate, Message, ProfileEntry
from memlane.store.redis.store import RedisMemoryStore


def message(user_id: str, content: str, *, message_id: str = "m", session_id: str = "s") -> Message:
    return Message(id=message_id, user_id=user_id, session_id=session_id, role="user", content=content)


async def test_a_message_over_the_limit_is_refused_naming_the_setting(store: RedisMemoryStore):
    limit = store.parts["limits"].max_message_chars
    with pytest.raises(InputTooLarge, match="MEMLANE_MAX_MESSAGE_CHARS"):
        await store.add_messages([message("u", "ok", message_id="a"), message("u", "x" * (limit + 1), message_id="b")])
    assert await store.recent_messages("u", "s") == []  # refused before anything was written
    with pytest.raises(InputTooLarge, match="MEMLANE_MAX_MESSAGE_CHARS"):
        await store.add_memories([Memory(id="n", user_id="u", kind="event", text="y" * (limit + 1))])
    assert isinstance(InputTooLarge("x"), ValueError)


async def test_the_middleware_drops_a_refused_message_and_keeps_the_turn(store: RedisMemoryStore, settings):
    store = store.with_settings(max_message_chars=1000)
    persistence = MemoryPersistence(store, turns=settings.turns)
    identity = MemoryAgentContext(user_id="u", session_id="s")
    turn = [
        message("u", "x" * 5000, message_id="big"),
        Message(id="r", user_id="u", session_id="s", role="assistant", content="That is long!"),
    ]
    await persistence.save_turn(identity, turn)
    assert [m.id for m in await store.recent_messages("u", "s")] == ["r"]
    assert persistence.unsaved == {}


async def test_a_long_message_inside_the_limit_is_stored_whole_and_search_still_works(store: RedisMemoryStore):
    big = "I keep a log of everything. " * 20_000 + "The secret word is marzipan."  # ~560 KB
    await store.add_messages(
        [message("u", big, message_id="big"), message("u", "I drink black coffee", message_id="small")]
    )
    assert (await store.recent_messages("u", "s"))[0].content == big
    assert (await store.search_memories("u", "black coffee"))[0].memory.id == "message:small"
    assert any(hit.memory.id == "message:big" for hit in await store.search_memories("u", "marzipan log"))


@pytest.mark.parametrize("where", ["user", "session", "message"])
async def test_a_ten_kilobyte_id_is_refused_naming_the_setting(store: RedisMemoryStore, where: str):
    huge = "i" * 10_240
    ids = {"user": "u", "session": "s", "message": "m"} | {where: huge}
    with pytest.raises(InputTooLarge, match="MEMLANE_MAX_ID_CHARS"):
        await store.add_messages(
            [Message(id=ids["message"], user_id=ids["user"], session_id=ids["session"], role="user", content="hi")]
        )
    assert await store.list_sessions("u") == []


async def test_reads_with_a_huge_or_broken_user_id_are_refused_not_answered(store: RedisMemoryStore, settings):
    await store.add_messages([message("a", "alice's coffee order")])
    for bad, error in [("a" * 10_240, InputTooLarge), ("a\x00", InvalidInput), ("a\ud800", InvalidInput)]:
        for call in (
            store.get_profile(bad),
            store.search_memories(bad, "coffee"),
            store.recent_messages(bad, "s"),
            store.export_user(bad),
            store.delete_user(bad),
            store.forget(bad, "coffee"),
            recall(store, bad, "s", "coffee", parts=RecallParts.of(settings)),
        ):
            with pytest.raises(error):
                await call
    assert [m.content for m in await store.recent_messages("a", "s")] == ["alice's coffee order"]


def test_nul_bytes_and_lone_surrogates_in_ids_are_refused_in_texts_cleaned():
    for bad in ("a\x00b", "\ud800", "x\udfffy"):
        with pytest.raises(ValueError, match="NUL|surrogate|unicode"):
            Message(id=bad, user_id="u", session_id="s", role="user", content="hi")
        with pytest.raises(ValueError, match="NUL|surrogate|unicode"):
            Message(id="m", user_id=bad, session_id="s", role="user", content="hi")
        with pytest.raises(ValueError, match="NUL|surrogate|unicode"):
            Memory(id="m", user_id="u", kind="event", text="t", session_id=bad)
    assert Message(id="m", user_id="u", session_id="s", role="user", content="a\x00b\ud800c").content == "ab\ufffdc"
    assert Memory(id="m", user_id="u", kind="event", text="t\x00").text == "t"
    assert ProfileEntry(user_id="u", topic="a\x00", subtopic="b", content="c\x00").content == "c"
    with pytest.raises(ValueError):
        Memory(id="m", user_id="u", kind="event", text="\x00")  # nothing left: refused like an empty text
    with pytest.raises(ValueError):
        ProfileEntry(user_id="u", topic="a", subtopic="b", content=" \x00 ")


async def test_nul_bytes_in_content_are_dropped_and_the_rest_is_searchable(store: RedisMemoryStore):
    await store.add_messages([message("u", "black\x00 coffee \ud83d lover")])
    [stored] = await store.recent_messages("u", "s")
    assert stored.content == "black coffee \ufffd lover"
    assert (await store.search_memories("u", "coffee lover"))[0].memory.id == "message:m"


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_hostile_ids_edit_forget_and_keep_history_of_their_own_only(store: RedisMemoryStore, hostile: str):
    for user in ("victim", hostile):
        entry = ProfileEntry(
            user_id=user, topic=hostile, subtopic="diet", content="allergic to peanuts", source_message_ids=[hostile]
        )
        await store.add_messages([message(user, "I'm allergic to peanuts", message_id=hostile, session_id=hostile)])
        await store.apply_update(
            MemoryUpdate(
                user_id=user,
                upsert_profile=[entry],
                memories=[
                    Memory(
                        id=profile_memory_id(entry.id),
                        user_id=user,
                        kind="profile",
                        text=f"diet: {entry.content}",
                        ref_id=entry.id,
                    )
                ],
            )
        )
    [entry] = await store.get_profile(hostile)
    assert (
        await store.edit_profile_entry(hostile, entry.id, content="allergic to peanuts and cashews")
    ).content.endswith("cashews")
    report = await store.forget(hostile, "peanuts")
    assert report.forgot_anything and await store.get_profile(hostile) == []
    assert [r.action for r in await store.profile_history(hostile, entry.id)] == ["add", "update", "delete"]
    assert await store.recent_messages(hostile, hostile) == []
    assert await store.search_memories(hostile, "peanuts") == []
    # the victim, with the same ids, keeps everything
    [victim_entry] = await store.get_profile("victim")
    assert victim_entry.content == "allergic to peanuts"
    assert len(await store.profile_history("victim", victim_entry.id)) == 1
    assert [m.content for m in await store.recent_messages("victim", hostile)] == ["I'm allergic to peanuts"]


def test_settings_the_store_was_built_on_cannot_change_under_it(store):
    """Issue 33, item 1: the key layout, time zone and breaker were fixed when the store was
    built; a setter that took new ones silently changed nothing."""
    from memlane.store.errors import StoreError

    for change in ({"timezone": "Asia/Shanghai"}, {"key_prefix": "other"}, {"circuit_reset_seconds": 1.0}):
        with pytest.raises(StoreError, match=next(iter(change))):
            store = store.with_settings(**change)
    store = store.with_settings(recall_max_tokens=900)  # read on each call: taken
    assert store.parts["recall"].max_tokens == 900


CONTROLS = [chr(code) for code in range(0x20)] + ["\x7f"]


@pytest.mark.parametrize("control", CONTROLS, ids=[f"x{ord(c):02x}" for c in CONTROLS])
async def test_a_control_character_in_an_id_is_refused_naming_it(store: RedisMemoryStore, control: str):
    """Issue 50, item 5: every control character, not only NUL; a tab or an escape in a session id
    was stored, in an id no filter matched and no one could type again."""
    for bad in (
        dict(message_id=f"m{control}1"),
        dict(session_id=f"s{control}1"),
    ):
        with pytest.raises((InvalidInput, ValueError), match="control character|NUL byte"):
            await store.add_messages([message("u", "hello", **bad)])
    with pytest.raises(InvalidInput, match="control character|NUL byte"):
        await store.recent_messages("u", f"s{control}1")
    assert await store.recent_messages("u", "s") == []


async def test_a_scope_of_a_user_keeps_its_mark_and_a_message_has_a_datable_time(store: RedisMemoryStore):
    from memlane.store.scopes import scoped_user_id

    scoped = scoped_user_id("u", "planner")  # the store's own \x1f between the user and the agent
    assert [m.id for m in await store.add_messages([message(scoped, "hello")])] == ["m"]
    for moment in (1e308, float("inf"), float("nan"), -1e20):
        with pytest.raises(InvalidInput, match="no moment"):  # an OverflowError (a 500) when it was indexed
            await store.add_messages([message("u", "hi").model_copy(update={"created_at": moment})])
    assert await store.recent_messages("u", "s") == []
