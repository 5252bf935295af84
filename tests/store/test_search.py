"""Search ranking: who spoke is in the vector, a message's vector is the message, and each
signal of the fusion does what its setting says (bench/recall_quality.py measures how much)."""

from __future__ import annotations

import pytest

from memlane.store.base import Message
from memlane.store.redis import RedisMemoryStore
from memlane.store.schema import MemoryField
from memlane.store.text import name_candidates


def chat(user: str, lines: list[tuple[str, str]], session: str = "s", start: float = 1_700_000_000.0) -> list[Message]:
    """A two-person chat: every line a named 'user' message, one second apart (as LoCoMo is stored)."""
    return [
        Message(id=f"{session}:{i}", user_id=user, session_id=session, role="user", name=name, content=text, created_at=start + i)
        for i, (name, text) in enumerate(lines)
    ]


def variant(store: RedisMemoryStore, **settings) -> RedisMemoryStore:
    """The same index searched with other settings."""
    return RedisMemoryStore(
        store.client, store.embeddings, key_prefix=store.layout.prefix, settings=store.settings.model_copy(update=settings)
    )


def first(hits) -> str:
    return hits[0].memory.source_message_ids[0]


ENGLISH = [
    ("Caroline", "I started learning the violin last month, it is hard but fun."),
    ("Melanie", "Cool! I started learning the cello last month too."),
    ("Caroline", "We should play a duet some day."),
    ("Melanie", "Yes! Let's do that after my vacation."),
]
CHINESE = [
    ("朋友A", "我上个周末去爬了泰山，风景特别好。"),
    ("朋友B", "我上个周末去爬了黄山，累得不行。"),
    ("朋友A", "下次我们一起去吧。"),
    ("朋友B", "好啊，等天气暖和一点。"),
]


@pytest.mark.parametrize(
    "lines, question, expected",
    [
        (ENGLISH, "Which instrument is Caroline learning?", "s:0"),
        (ENGLISH, "Which instrument is Melanie learning?", "s:1"),
        (CHINESE, "朋友A周末去爬了哪座山？", "s:0"),
        (CHINESE, "朋友B周末去爬了哪座山？", "s:1"),
    ],
)
async def test_a_question_naming_a_person_ranks_that_persons_turn_first(store: RedisMemoryStore, lines, question, expected):
    await store.add_messages(chat("alice", lines))
    assert first(await store.search_memories("alice", question, kinds=["message"])) == expected
    # the speaker ranking alone: the vector ranking among what the named person said
    speaker_only = variant(store, search_text_weight=0.0, search_context_weight=0.0, search_time_weight=0.0)
    hits = await speaker_only.search_memories("alice", question, kinds=["message"])
    assert first(hits) == expected and len({hit.memory.speaker for hit in hits}) == 1


@pytest.mark.parametrize(
    "lines, question, expected",
    [(ENGLISH, "Which instrument is Caroline learning?", "s:0"), (CHINESE, "朋友A周末去爬了哪座山？", "s:0")],
)
async def test_with_search_embed_speaker_the_vector_reads_who_spoke(store: RedisMemoryStore, lines, question, expected):
    named = RedisMemoryStore(
        store.client, store.embeddings, key_prefix=store.layout.prefix + ":named",
        settings=store.settings.model_copy(update={"search_embed_speaker": True}),
    )  # under the test's prefix: dropped with it
    await named.ensure_indexes()
    try:
        await named.add_messages(chat("alice", lines))
        vector_only = variant(named, search_text_weight=0.0, search_context_weight=0.0, search_speaker_weight=0.0)
        assert first(await vector_only.search_memories("alice", question, kinds=["message"])) == expected
    finally:
        await named.client.ft(named.layout.memory_index_name).dropindex(delete_documents=True)


async def test_what_is_shown_keeps_the_text_as_written(store: RedisMemoryStore):
    await store.add_messages(chat("alice", CHINESE))
    hit = (await store.search_memories("alice", "泰山", kinds=["message"]))[0]
    assert hit.memory.text == CHINESE[0][1]
    assert hit.memory.attributed_text == f"朋友A: {CHINESE[0][1]}"


async def test_the_evidence_turn_outranks_the_reply_after_it(store: RedisMemoryStore):
    await store.add_messages(chat("alice", [
        ("Jon", "Guess what, I adopted a puppy last week, a beagle named Biscuit!"),
        ("Gina", "Aww, that is so sweet! How is he settling in?"),
        ("Jon", "He chewed my shoes already."),
        ("Gina", "Ha, my cat did the same with my scarves."),
    ]))
    hits = await store.search_memories("alice", "What is the name of Jon's puppy?", kinds=["message"])
    assert first(hits) == "s:0"
    # between two named people a turn is indexed alone: nothing of the turn before is in its vector or words
    reply = await store.client.hget(store.layout.memory("alice", "message:s:1"), MemoryField.SEARCH_CONTEXT)
    assert reply == b""


async def test_in_a_dialogue_with_the_assistant_a_reply_is_found_through_what_it_answers(store: RedisMemoryStore):
    await store.add_messages([
        Message(id="q", user_id="alice", session_id="s", role="user", content="Any good books about volcanoes?"),
        Message(id="a", user_id="alice", session_id="s", role="assistant", content="Try 'Krakatoa' by Simon Winchester."),
        Message(id="q2", user_id="alice", session_id="s", role="user", content="Thanks! We also plan a trip to Iceland."),
    ])
    context = lambda message_id: store.client.hget(store.layout.memory("alice", f"message:{message_id}"), MemoryField.SEARCH_CONTEXT)
    assert await context("a") == b"good book volcano"
    assert b"krakatoa" in await context("q2")  # the user's answer to the assistant, in turn
    hits = await store.search_memories("alice", "which volcano book did you suggest?", limit=2)
    assert {hit.memory.id for hit in hits} == {"message:q", "message:a"}
    # with the context's ranking off, the reply is found by its vector (which read the question) alone
    no_context = variant(store, search_context_weight=0.0)
    assert "message:a" in {hit.memory.id for hit in await no_context.search_memories("alice", "which volcano book did you suggest?", limit=2)}


async def test_the_speaker_ranking_votes_only_for_the_person_named(store: RedisMemoryStore):
    lines = [("Caroline", f"I like {thing}.") for thing in ("tea", "jazz", "hiking")]
    lines += [("Melanie", f"I like {thing}.") for thing in ("tea", "jazz", "hiking")]
    await store.add_messages(chat("alice", lines))
    hits = await store.search_memories("alice", "What does Melanie like?", kinds=["message"], limit=6)
    speakers = [hit.memory.speaker for hit in hits]
    assert speakers[:3] == ["Melanie"] * 3
    unnamed = await store.search_memories("alice", "What do people like?", kinds=["message"], limit=6)
    assert {hit.memory.speaker for hit in unnamed} == {"Caroline", "Melanie"}
    # fusion scores never rise down the list, whatever votes
    assert all(a.rank_score >= b.rank_score for a, b in zip(hits, hits[1:]))


async def test_a_signal_with_weight_zero_does_not_vote(store: RedisMemoryStore):
    await store.add_messages(chat("alice", ENGLISH))
    hits = await store.search_memories("alice", "violin", kinds=["message"])
    text_off = variant(store, search_text_weight=0.0, search_speaker_weight=0.0, search_context_weight=0.0)
    vector_off = variant(store, search_vector_weight=0.0, search_speaker_weight=0.0, search_context_weight=0.0)
    # the vector ranking holds every memory; the text ranking only those with the word
    assert len(await text_off.search_memories("alice", "violin", kinds=["message"])) == len(ENGLISH)
    assert [first(await vector_off.search_memories("alice", "violin", kinds=["message"]))] == ["s:0"]
    assert len(await vector_off.search_memories("alice", "violin", kinds=["message"])) == 1
    assert first(hits) == "s:0"


def test_name_candidates_cover_words_pairs_and_chinese_pieces():
    english = name_candidates("When did Caroline's friend Mary Ann go?")
    assert {"caroline", "mary ann", "mary"} <= set(english) and "caroline's" not in english
    assert {"朋友a", "小明"} <= set(name_candidates("朋友A和小明去哪了？"))
    assert len(name_candidates("很" * 10_000)) <= 200
