"""Search (store/redis/search.py): hybrid search over one user's memories, filtered by kind, session,
time and speaker, in English and Chinese, by keywords alone while the embedder is down; who
spoke is in the vector, a message's vector is the message, and each signal of the fusion does
what its setting says (bench/recall_quality.py measures how much)."""

from __future__ import annotations

import pytest
from test_messages import chat as owner_chat
from test_messages import flaky_store

from memlane.store.fusion import recency_ranking
from memlane.store.records import Memory, Message
from memlane.store.redis.search import Ranking
from memlane.store.redis.store import RedisMemoryStore
from memlane.store.schema import MemoryField
from memlane.store.text.terms import name_candidates


def chat(user: str, lines: list[tuple[str, str]], session: str = "s", start: float = 1_700_000_000.0) -> list[Message]:
    """A two-person chat: every line a named 'user' message, one second apart (as LoCoMo is stored)."""
    return [
        Message(
            id=f"{session}:{i}",
            user_id=user,
            session_id=session,
            role="user",
            name=name,
            content=text,
            created_at=start + i,
        )
        for i, (name, text) in enumerate(lines)
    ]


def variant(store: RedisMemoryStore, **settings) -> RedisMemoryStore:
    """The same index searched with other settings."""
    return store.with_settings(**settings)


def first(hits) -> str:
    return hits[0].memory.source_message_ids[0]


def fused_first(hits) -> str:
    """The fusion's first (hits come sorted by the relevance shown; a signal's vote shows in the fusion)."""
    return max(hits, key=lambda hit: hit.rank_score).memory.source_message_ids[0]


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
async def test_a_question_naming_a_person_ranks_that_persons_turn_first(
    store: RedisMemoryStore, lines, question, expected
):
    await store.add_messages(chat("alice", lines))
    assert first(await store.search_memories("alice", question, kinds=["message"])) == expected
    # the speaker ranking alone: the vector ranking among what the named person said
    speaker_only = variant(
        store, search_text_weight=0.0, search_speaker_text_weight=0.0, search_context_weight=0.0, search_time_weight=0.0
    )
    hits = await speaker_only.search_memories("alice", question, kinds=["message"])
    assert first(hits) == expected and len({hit.memory.speaker for hit in hits}) == 1


@pytest.mark.parametrize(
    "lines, question, expected",
    [(ENGLISH, "Which instrument is Caroline learning?", "s:0"), (CHINESE, "朋友A周末去爬了哪座山？", "s:0")],
)
async def test_with_search_embed_speaker_the_vector_reads_who_spoke(store: RedisMemoryStore, lines, question, expected):
    named = RedisMemoryStore(
        store.client,
        store.embeddings,
        key_prefix=store.layout.prefix + ":named",
        **store.with_settings(search_embed_speaker=True).parts,
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
    await store.add_messages(
        chat(
            "alice",
            [
                ("Jon", "Guess what, I adopted a puppy last week, a beagle named Biscuit!"),
                ("Gina", "Aww, that is so sweet! How is he settling in?"),
                ("Jon", "He chewed my shoes already."),
                ("Gina", "Ha, my cat did the same with my scarves."),
            ],
        )
    )
    hits = await store.search_memories("alice", "What is the name of Jon's puppy?", kinds=["message"])
    assert first(hits) == "s:0"
    # between two named people a turn is indexed alone: nothing of the turn before is in its vector or words
    reply = await store.client.hget(store.layout.memory("alice", "message:s:1"), MemoryField.SEARCH_CONTEXT)
    assert reply == b""


@pytest.mark.parametrize(
    ("statement", "question", "echo", "query"),
    [
        (
            "I only drink black coffee, no sugar.",
            "What coffee do I drink?",
            "What coffee do you drink?",
            "what coffee do I drink?",
        ),
        ("我只喝黑咖啡，不加糖。", "我喝什么咖啡？", "你喝什么咖啡呢？", "我喝什么咖啡？"),
        # reworded: the statement's score is a thirtieth of the question's (search_statements_first_floor)
        (
            "We have three kids, two boys and a girl.",
            "How many kids do I have?",
            "How many children do you have? I don't remember.",
            "How many children do I have?",
        ),
    ],
)
async def test_the_statement_outranks_the_question_and_its_echo_in_search_itself(
    store: RedisMemoryStore, statement, question, echo, query
):
    """Issue 48, item 2: the user said it a month ago, then asked twice and the assistant echoed the
    question; search (which the memories API, MCP, the CLI, the facade and MemlaneStore show) puts
    the statement first, as recall does, though the question holds every word of the query."""
    start = 1_700_000_000.0
    turns = [("s", "user", statement, start)]
    for round_ in (1, 2):
        asked = start + round_ * 7 * 86_400
        turns += [(f"q{round_}", "user", question, asked), (f"e{round_}", "assistant", echo, asked + 60)]
    await store.add_messages(
        [
            Message(id=key, user_id="alice", session_id=f"s-{key[-1]}", role=role, content=text, created_at=at)
            for key, role, text, at in turns
        ]
    )
    hits = await store.search_memories("alice", query)
    assert hits[0].memory.source_message_ids == ["s"], [hit.memory.text for hit in hits]


async def test_in_a_dialogue_with_the_assistant_a_reply_is_found_through_what_it_answers(store: RedisMemoryStore):
    await store.add_messages(
        [
            Message(id="q", user_id="alice", session_id="s", role="user", content="Any good books about volcanoes?"),
            Message(
                id="a", user_id="alice", session_id="s", role="assistant", content="Try 'Krakatoa' by Simon Winchester."
            ),
            Message(
                id="q2", user_id="alice", session_id="s", role="user", content="Thanks! We also plan a trip to Iceland."
            ),
        ]
    )
    context = lambda message_id: store.client.hget(
        store.layout.memory("alice", f"message:{message_id}"), MemoryField.SEARCH_CONTEXT
    )
    assert await context("a") == b"good book volcano"
    assert b"krakatoa" in await context("q2")  # the user's answer to the assistant, in turn
    hits = await store.search_memories("alice", "which volcano book did you suggest?", limit=2)
    assert {hit.memory.id for hit in hits} == {"message:q", "message:a"}
    # with the context's ranking off, the reply is found by its vector (which read the question) alone
    no_context = variant(store, search_context_weight=0.0)
    assert "message:a" in {
        hit.memory.id
        for hit in await no_context.search_memories("alice", "which volcano book did you suggest?", limit=2)
    }


async def test_the_speaker_ranking_votes_only_for_the_person_named(store: RedisMemoryStore):
    lines = [("Caroline", f"I like {thing}.") for thing in ("tea", "jazz", "hiking")]
    lines += [("Melanie", f"I like {thing}.") for thing in ("tea", "jazz", "hiking")]
    await store.add_messages(chat("alice", lines))
    hits = await store.search_memories("alice", "What does Melanie like?", kinds=["message"], limit=6)
    speakers = [hit.memory.speaker for hit in hits]
    assert speakers[:3] == ["Melanie"] * 3
    unnamed = await store.search_memories("alice", "What do people like?", kinds=["message"], limit=6)
    assert {hit.memory.speaker for hit in unnamed} == {"Caroline", "Melanie"}
    # the shown relevance never rises down the list, whatever votes
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


@pytest.mark.parametrize(
    "lines, question",
    [
        (
            [
                ("Melanie", "Caroline, did you bring a cake to the picnic on Sunday?"),
                ("Caroline", "I brought a lemon tart to the picnic."),
            ],
            "What did Caroline bring to the picnic?",
        ),
        (
            [("朋友B", "朋友A，你周日野餐带了什么？带蛋糕了吗？"), ("朋友A", "我带了柠檬挞去野餐。")],
            "朋友A周日野餐带了什么？",
        ),
    ],
)
async def test_a_name_the_other_speaker_says_does_not_outvote_the_named_persons_words(
    store: RedisMemoryStore, lines, question
):
    await store.add_messages(chat("alice", lines))
    keywords = {"search_vector_weight": 0.0, "search_speaker_weight": 0.0, "search_time_weight": 0.0}
    # BM25 over everything: the other speaker's turn, which says the name, comes first
    over_everything = variant(store, search_speaker_text_weight=0.0, **keywords)
    assert fused_first(await over_everything.search_memories("alice", question, kinds=["message"])) == "s:0"
    # the BM25 ranking among the named person's own messages votes too: their words come first
    among_theirs = variant(store, **keywords)
    assert fused_first(await among_theirs.search_memories("alice", question, kinds=["message"])) == "s:1"
    assert fused_first(await store.search_memories("alice", question, kinds=["message"])) == "s:1"  # the defaults
    # (the list is sorted by the relevance shown, in which the question holding every word of the
    # query may come first: recall then orders it after the answer, as a question that repeats the query)


async def test_a_signal_with_weight_zero_does_not_vote(store: RedisMemoryStore):
    await store.add_messages(chat("alice", ENGLISH))
    hits = await store.search_memories("alice", "violin", kinds=["message"])
    text_off = variant(
        store,
        search_text_weight=0.0,
        search_speaker_text_weight=0.0,
        search_speaker_weight=0.0,
        search_context_weight=0.0,
    )
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


# --- hybrid search: filters, both languages, speakers, time, the embedder down --------------------
async def test_hybrid_search_ranks_an_exact_name_first_where_vector_search_does_not(store: RedisMemoryStore):
    texts = [
        "My neighbor Marco Morelli bakes sourdough loaves every morning",
        "Alicia Moretti lives in Lyon",
        "I enjoy hiking on weekends",
        "My favourite pastry shop closed",
        "I like black coffee without sugar",
    ]
    await store.add_memories([Memory(id=str(i), user_id="alice", kind="profile", text=t) for i, t in enumerate(texts)])
    query = "Moretti bread baker"
    vector = await store.embeddings.aembed_query(query)
    vector_only = await store.index.query(
        store.search.vector_query(vector, store.search.user_filter("alice", None, None, None, None), 3)
    )
    assert vector_only[0][MemoryField.TEXT] != "Alicia Moretti lives in Lyon"
    hits = await store.search_memories("alice", query, limit=3)
    assert hits[0].memory.text == "Alicia Moretti lives in Lyon"
    assert hits[0].text_score == 1.0 and 0 < hits[0].score <= 1


async def test_chinese_full_text_search_finds_words_inside_sentences(store: RedisMemoryStore):
    await store.add_messages(
        owner_chat(
            "alice",
            "s1",
            "我最近总是凌晨 2 点才睡，白天困得不行。",
            "是的，连续两周都在加班。",
            "顺便，我喜欢黑咖啡，不加糖。",
            "I also like green tea",
        )
    )
    for query, expected in [
        ("咖啡", "黑咖啡"),
        ("加班", "加班"),
        ("我喜欢喝什么咖啡", "黑咖啡"),
        ("green tea", "green tea"),
    ]:
        hits = await store.search_memories("alice", query, limit=4)
        best_text = max(hits, key=lambda hit: hit.text_score)
        assert expected in best_text.memory.text and best_text.text_score == 1.0, query
        assert hits[0].memory.source_message_ids


async def test_search_filters_on_kind_session_and_time(store: RedisMemoryStore):
    await store.add_memories(
        [
            Memory(
                id="1", user_id="alice", kind="message", text="coffee in session one", session_id="s1", created_at=100.0
            ),
            Memory(
                id="2", user_id="alice", kind="message", text="coffee in session two", session_id="s2", created_at=200.0
            ),
            Memory(id="3", user_id="alice", kind="profile", text="likes coffee", created_at=300.0),
        ]
    )
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", kinds=["profile"])} == {"3"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", session_id="s2")} == {"2"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", since=150, until=250)} == {"2"}
    assert {h.memory.id for h in await store.search_memories("alice", "coffee", kinds=["message", "event"])} == {
        "1",
        "2",
    }


async def test_blank_and_punctuation_queries_do_not_fail(store: RedisMemoryStore):
    await store.add_memories([Memory(id="1", user_id="alice", kind="profile", text="likes coffee")])
    assert await store.search_memories("alice", "   ") == []
    assert len(await store.search_memories("alice", "?!*|{}@:")) == 1  # vector search still answers


async def test_english_words_are_found_by_their_stem(store: RedisMemoryStore):
    await store.add_messages(owner_chat("alice", "s", "We hiked up the Ventoux last summer", "I bought a new phone"))
    text_only = await store.index.query(
        store.search.text_query(["hike"], store.search.user_filter("alice", None, None, None, None), 5)
    )
    assert [doc[MemoryField.TEXT] for doc in text_only] == ["We hiked up the Ventoux last summer"]
    hits = await store.search_memories("alice", "hiking trips", limit=2)
    assert hits[0].memory.text.startswith("We hiked") and hits[0].text_score == 1.0


async def test_chinese_and_english_in_one_message_are_both_searchable(store: RedisMemoryStore):
    await store.add_messages(owner_chat("alice", "s", "我在用Python写一个running app", "今天天气不错", "I like jazz"))
    for query in ["Python", "跑步 running", "写一个", "apps that run"]:
        hits = await store.search_memories("alice", query, limit=3)
        assert hits[0].memory.text == "我在用Python写一个running app", query
        assert hits[0].text_score == 1.0


async def test_a_friends_words_keep_their_speaker_and_can_be_filtered(store: RedisMemoryStore):
    await store.add_messages(
        [
            Message(
                id="m1",
                user_id="alice",
                session_id="g",
                role="user",
                name="朋友A",
                content="我最喜欢的电影是《星际穿越》",
            ),
            Message(id="m2", user_id="alice", session_id="g", role="user", content="我最喜欢的电影是《千与千寻》"),
            Message(
                id="m3",
                user_id="alice",
                session_id="g",
                role="user",
                name="Alice",
                speaker_is_owner=True,
                content="我也喜欢看纪录片",
            ),
        ]
    )
    hits = {
        hit.memory.source_message_ids[0]: hit.memory
        for hit in await store.search_memories("alice", "最喜欢的电影", limit=5)
    }
    assert hits["m1"].speaker == "朋友A" and hits["m1"].speaker_role == "other"
    assert hits["m1"].attributed_text == "朋友A: 我最喜欢的电影是《星际穿越》"
    assert hits["m2"].speaker_role == "owner" and hits["m2"].attributed_text == "我最喜欢的电影是《千与千寻》"
    assert hits["m3"].speaker_role == "owner"  # named, but explicitly the user
    # the speaker's name is searchable text, and a filter
    assert (await store.search_memories("alice", "朋友A", limit=1))[0].memory.source_message_ids == ["m1"]
    only_friend = await store.search_memories("alice", "电影", speaker="朋友A")
    assert [hit.memory.source_message_ids for hit in only_friend] == [["m1"]]
    owner_only = await store.search_memories("alice", "电影", speaker_roles=["owner"])
    assert {hit.memory.source_message_ids[0] for hit in owner_only} == {"m2", "m3"}
    history = await store.recent_messages("alice", "g")
    assert [m.speaker_role for m in history] == ["other", "owner", "owner"]


async def test_fusion_ranks_what_either_side_ranks_first(store: RedisMemoryStore):
    texts = [
        "Bought oat milk for the office",
        "My dentist is Dr. Okonkwo on Rue Pasteur",
        "Feeling tired after the long week",
        "The dentist appointment is on Friday",
    ]
    await store.add_memories([Memory(id=str(i), user_id="alice", kind="event", text=t) for i, t in enumerate(texts)])
    hits = await store.search_memories("alice", "Okonkwo", limit=4)
    assert hits[0].memory.id == "1"
    assert all(a.rank_score >= b.rank_score for a, b in zip(hits, hits[1:]))
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)


async def test_a_time_expression_in_the_query_favours_memories_of_that_time(store: RedisMemoryStore):
    day = 86_400.0
    reference = 1_700_000_000.0  # 2023-11-14, a Tuesday
    await store.add_memories(
        [
            Memory(
                id="old",
                user_id="alice",
                kind="message",
                text="I went running in the park",
                created_at=reference - 30 * day,
            ),
            Memory(
                id="yesterday",
                user_id="alice",
                kind="message",
                text="I went swimming at the pool",
                created_at=reference - day,
            ),
            Memory(
                id="older",
                user_id="alice",
                kind="message",
                text="I went running by the river",
                created_at=reference - 60 * day,
            ),
        ]
    )
    hits = await store.search_memories("alice", "what sport did I do yesterday?", reference_time=reference)
    assert hits[0].memory.id == "yesterday" and hits[0].time_match
    assert not any(hit.time_match for hit in hits[1:])
    plain = await store.search_memories(
        "alice", "what sport did I do yesterday?", reference_time=reference, understand_time=False
    )
    assert {hit.memory.id for hit in plain} == {"old", "yesterday", "older"}


async def test_a_date_without_a_year_finds_that_day_in_any_year(store: RedisMemoryStore):
    from datetime import datetime

    def at(year: int, month: int, day: int) -> float:
        return datetime(year, month, day, 12, tzinfo=store.zone).timestamp()

    await store.add_memories(
        [
            Memory(
                id="apr27", user_id="alice", kind="message", text="我今天在公园跑了五公里", created_at=at(2023, 4, 27)
            ),
            Memory(
                id="may01", user_id="alice", kind="message", text="我今天在公园跑了十公里", created_at=at(2023, 5, 1)
            ),
        ]
    )
    for query in ["4月27号我在公园跑了多久？", "How far did I run on April 27th?"]:
        hits = await store.search_memories("alice", query, reference_time=at(2026, 11, 23))
        assert hits[0].memory.id == "apr27" and hits[0].time_match, query


async def test_years_months_and_seasons_favour_memories_of_that_time(store: RedisMemoryStore):
    from datetime import datetime

    def at(year: int, month: int, day: int) -> float:
        return datetime(year, month, day, 12, tzinfo=store.zone).timestamp()

    await store.add_memories(
        [
            Memory(id="2022", user_id="alice", kind="message", text="我去杭州旅行了", created_at=at(2022, 7, 10)),
            Memory(id="2024", user_id="alice", kind="message", text="我去成都旅行了", created_at=at(2024, 3, 12)),
            Memory(
                id="en2022", user_id="bob", kind="message", text="I took a trip to Lisbon", created_at=at(2022, 7, 10)
            ),
            Memory(
                id="en2024", user_id="bob", kind="message", text="I took a trip to Oslo", created_at=at(2024, 3, 12)
            ),
        ]
    )
    now = at(2025, 5, 8)
    cases = [
        ("2024年我去哪里旅行了？", "2024"),
        ("2024年3月我去哪里旅行了？", "2024"),
        ("三年前的夏天我去哪里旅行了？", "2022"),
        ("去年三月我去哪里旅行了？", "2024"),
        ("2022年夏天我去哪里旅行了？", "2022"),
        ("Where did I travel in 2024?", "en2024"),
        ("Where did I travel in March 2024?", "en2024"),
        ("Where did I travel three years ago?", "en2022"),
        ("Where did I travel in the summer of 2022?", "en2022"),
    ]
    for query, expected in cases:
        hits = await store.search_memories("bob" if expected.startswith("en") else "alice", query, reference_time=now)
        assert hits[0].memory.id == expected and hits[0].time_match, query


async def test_search_falls_back_to_keywords_when_the_embedder_is_down(store: RedisMemoryStore, settings, embeddings):
    await store.add_messages(owner_chat("alice", "s1", "I live in Lyon", "my sister lives in Berlin", "我养了一只猫"))
    degraded, flaky = flaky_store(store, settings, embeddings)
    flaky.down = True
    hits = await degraded.search_memories("alice", "Lyon")
    assert hits and hits[0].memory.text == "I live in Lyon"
    assert hits[0].vector_similarity == 0.0 and hits[0].score > 0.2  # the keyword-only relevance: every word, first
    chinese = await degraded.search_memories("alice", "我的那只猫")
    assert [hit.memory.text for hit in chinese] == ["我养了一只猫"]
    assert await degraded.search_memories("bob", "Lyon") == []  # still the user's own memories only


@pytest.mark.parametrize(
    ("older", "newer", "query"),
    [
        ("这周我很忙，在赶项目", "这周我很忙，要搬家", "我这周忙什么？"),
        ("I'm busy this week with a project", "I'm busy this week with the move", "What am I busy with this week?"),
    ],
)
async def test_recency_ranking_puts_the_newer_of_two_alike_memories_first_when_it_votes(
    store: RedisMemoryStore, older: str, newer: str, query: str
):
    day = 86_400.0
    await store.add_memories(
        [
            Memory(id="old", user_id="ann", kind="message", text=older, created_at=1_790_000_000.0),
            Memory(id="new", user_id="ann", kind="message", text=newer, created_at=1_790_000_000.0 + 60 * day),
            Memory(
                id="pref", user_id="ann", kind="profile", text=older, created_at=1_700_000_000.0
            ),  # profile entries do not fade
        ]
    )
    store = store.with_settings(search_recency_weight=3.0)
    ranked = [hit.memory.id for hit in await store.search_memories("ann", query, limit=3)]
    assert ranked.index("new") < ranked.index("old")
    docs = [
        {"id": k, MemoryField.KIND: kind, MemoryField.CREATED_AT: str(t)}
        for k, kind, t in [("a", "message", 0.0), ("b", "message", 30 * day), ("p", "profile", 60 * day)]
    ]
    recency = recency_ranking([Ranking("vector", 1.0, docs)], store.core.search)
    assert recency is not None and [doc["id"] for doc in recency.docs] == ["b", "a"]  # the profile entry is not in it
    assert recency.factors == [1.0, pytest.approx(0.5)]  # halves every search_recency_half_life_days (30)


async def test_the_text_ranking_counts_every_term_a_memory_holds(store: RedisMemoryStore):
    """The BM25 query is one intersection with the user's filter per term, OR-ed (TermwiseTextQuery):
    RediSearch 2.10 under-counted a union's terms under the filter on a primary that had just taken
    slots. Here: the memory holding every term ranks first by keywords alone, other users' memories
    holding the same words are not read, and the query says each term beside the filter."""
    from memlane.store.redis.search_candidates import CANDIDATE_FIELDS
    from memlane.store.text.terms import query_terms

    await store.add_messages(
        [
            *(
                Message(
                    id=f"f{i}", user_id="alice", session_id="s", role="user", content=f"unique zebra fact {i} of alice"
                )
                for i in range(40)
            ),
            Message(id="new", user_id="alice", session_id="s", role="user", content="unique zebra fact 3-15 of alice"),
            Message(id="other", user_id="bob", session_id="s", role="user", content="unique zebra fact 3-15 of alice"),
        ]
    )
    terms = query_terms("unique zebra fact 3-15 of alice")
    query = store.search.text_query(
        terms, store.search.user_filter("alice", None, None, None, None), 10, fields=CANDIDATE_FIELDS
    )
    text = str(query).split(" SCORER ")[0]
    assert text.count(f"@{MemoryField.USER}:") == len(terms) and text.count(" | ") == len(terms) - 1
    [docs] = await store.search._search_user("alice", [query])
    assert docs[0]["id"].endswith(store.layout.memory("alice", "message:new").rsplit(":", 1)[-1])
    keyword_only = variant(store, search_vector_weight=0.0)
    hits = await keyword_only.search_memories("alice", "unique zebra fact 3-15 of alice", limit=5)
    assert hits[0].memory.source_message_ids == ["new"] and {hit.memory.user_id for hit in hits} == {"alice"}


@pytest.mark.parametrize(
    ("statement", "question", "echo", "query"),
    [
        ("我在杭州一家银行做柜员。", "我在哪里上班？", "你在哪里上班？你还没说过。", "我的工作单位是哪？"),
        (
            "I drive an old blue Volvo estate.",
            "What car do I drive?",
            "What car do you drive? You never said.",
            "Which car is mine?",
        ),
    ],
    ids=["zh", "en"],
)
async def test_a_question_whose_reply_held_no_answer_is_marked_and_comes_after_the_statement(
    store: RedisMemoryStore, statement, question, echo, query
):
    """Issue 48, item 2: search reads no reply, so a reworded question ("我在哪里上班？" for
    "我的工作单位是哪？") looked like a statement to it. The reply that only asks back marks the
    question's search entry unanswered when it is stored (store/redis/replies.py), in a later
    call too; an answered question and a forgotten one are not marked."""
    start = 1_700_000_000.0
    await store.add_messages(
        [Message(id="s", user_id="alice", session_id="a", role="user", content=statement, created_at=start)]
    )
    await store.add_messages(
        [Message(id="q", user_id="alice", session_id="b", role="user", content=question, created_at=start + 86_400)]
    )
    await store.add_messages(  # the reply comes in a call of its own
        [Message(id="e", user_id="alice", session_id="b", role="assistant", content=echo, created_at=start + 86_460)]
    )
    await store.add_messages(
        [
            Message(
                id="q2", user_id="alice", session_id="c", role="user", content=question, created_at=start + 2 * 86_400
            ),
            Message(
                id="a2",
                user_id="alice",
                session_id="c",
                role="assistant",
                content=statement,
                created_at=start + 2 * 86_460,
            ),
        ]
    )
    marked = {
        key: await store.client.hget(store.layout.memory("alice", f"message:{key}"), MemoryField.UNANSWERED)
        for key in ("q", "e", "q2", "a2", "s")
    }
    assert marked == {"q": b"1", "e": None, "q2": None, "a2": None, "s": None}
    hits = await store.search_memories("alice", query)
    order = [hit.memory.source_message_ids[0] for hit in hits]
    assert order.index("s") < order.index("q"), [hit.memory.text for hit in hits]


async def test_a_reply_to_a_forgotten_question_marks_nothing(store: RedisMemoryStore):
    await store.add_messages(
        [Message(id="q", user_id="bob", session_id="b", role="user", content="What car do I drive?")]
    )
    assert await store.delete_message("bob", "q")
    await store.add_messages(
        [
            Message(
                id="e",
                user_id="bob",
                session_id="b",
                role="assistant",
                content="What car do you drive? You never said.",
            )
        ]
    )
    assert not await store.client.exists(store.layout.memory("bob", "message:q"))
