"""Which hits recall keeps and what comes with each (memlane/recall_select.py), and the questions
and echoes they are weighed by (store/text/questions.py), no Redis."""

from __future__ import annotations

import pytest

from memlane.recall_select import (
    answer_pair,
    exact_term_hits,
    exact_terms,
    holding_names,
    holds_acronyms,
    names_a_speaker,
    names_held,
    neighbours_shown,
    ranked_hits,
    unanswered,
)
from memlane.store.hits import MemoryHit
from memlane.store.records import Memory, Message
from memlane.store.text.questions import holds_no_answer, repeats_the_query

WEIGHTS = {"profile": 1.0, "event": 0.9, "message": 0.8}


def hit(memory_id: str, text: str, score: float, rank: float, kind: str = "message") -> MemoryHit:
    memory = Memory(id=memory_id, user_id="u", kind=kind, text=text)
    return MemoryHit(memory=memory, score=score, rank_score=rank, vector_similarity=score, text_score=0.0)


def message(message_id: str, role: str, content: str, name: str | None = None) -> Message:
    return Message(id=message_id, user_id="u", session_id="s", role=role, content=content, name=name)


@pytest.mark.parametrize(
    "texts",
    [["I drink black coffee", "Coffee at the station", "The weather"], ["我只喝黑咖啡", "在车站喝了咖啡", "今天天气"]],
    ids=["en", "zh"],
)
def test_the_one_relevance_orders_and_only_unrelated_hits_leave(texts):
    hits = [hit("a", texts[0], 0.25, 0.03), hit("b", texts[1], 0.9, 0.02), hit("c", texts[2], 0.05, 0.01)]
    kept = ranked_hits(hits, WEIGHTS, floor=0.2)
    assert [h.memory.id for h in kept] == ["b", "a"]  # the relevance shown everywhere orders; c is below the floor
    assert [h.memory.id for h in ranked_hits(hits, WEIGHTS, floor=0.0)] == ["b", "a", "c"]


def test_layer_weights_order_kinds_and_cut_nothing():
    hits = [hit("m", "raw turn", 0.21, 0.030), hit("p", "profile line", 0.21, 0.026, kind="profile")]
    assert [h.memory.id for h in ranked_hits(hits, WEIGHTS, floor=0.2)] == ["p", "m"]  # 0.026 x 1.0 > 0.030 x 0.8


@pytest.mark.parametrize(
    ("entity", "text"), [("张伟", "和张伟一起去上海出差"), ("marco morelli", "Dinner with Marco  Morelli")]
)
def test_a_short_entity_query_keeps_the_memory_that_names_it(entity, text):
    hits = [hit("named", text, 0.01, 0.01), hit("other", "something else", 0.01, 0.02)]
    assert [h.memory.id for h in ranked_hits(hits, WEIGHTS, floor=0.2, entity=entity)] == ["named"]


@pytest.mark.parametrize(
    ("question", "answer", "then"),
    [
        ("我对什么过敏？", "你对花生过敏。", "谢谢"),
        ("What am I allergic to?", "You are allergic to peanuts.", "Thanks"),
    ],
    ids=["zh", "en"],
)
def test_a_message_comes_with_its_other_half(question, answer, then):
    around = [message("q", "user", question), message("a", "assistant", answer), message("t", "user", then)]
    assert [m.id for m in answer_pair(around, "a", 16)] == ["q", "a"]  # an answer with what it answers
    assert [m.id for m in answer_pair(around, "q", 16)] == ["q", "a"]  # a question with the answer it got
    assert [m.id for m in answer_pair(around, "t", 16)] == ["a", "t"]  # a short "thanks" with what it thanks for
    assert [m.id for m in answer_pair(around, "t", 0)] == ["t"]
    assert [m.id for m in neighbours_shown(around, "a", "around", 16)] == ["q", "a", "t"]
    assert answer_pair(around, "gone", 16) == [] and neighbours_shown(around, "gone", "around", 16) == []


@pytest.mark.parametrize(
    ("before", "short", "long"),
    [
        (
            "你周末去哪儿了？",
            "去了杭州！",
            "我周末去了杭州，在西湖边走了一整天，还去梅家坞买了明前龙井，晚上在河坊街吃了片儿川，第二天一早坐高铁回来的。",
        ),
        (
            "Where did you go this weekend?",
            "Hangzhou!",
            "I went to Hangzhou for the weekend, walked around West Lake all day, "
            "bought Longjing tea at Meijiawu, had noodles on Hefang Street and took the early train back on Sunday.",
        ),
    ],
    ids=["zh", "en"],
)
def test_between_people_a_short_turn_brings_the_turn_it_replies_to(before, short, long):
    around = [
        message("b", "user", before, name="Caroline"),
        message("h", "user", short, name="Melanie"),
        message("n", "user", "Nice", name="Caroline"),
    ]
    assert [m.id for m in answer_pair(around, "h", 16)] == ["b", "h"]
    around[1] = message("h", "user", long, name="Melanie")
    assert [m.id for m in answer_pair(around, "h", 16)] == ["h"]  # a long turn says what it means itself


@pytest.mark.parametrize(
    ("query", "echoes", "statements"),
    [
        (
            "我对什么过敏？",
            ["我对什么过敏来着？", "你是说你对什么过敏吗？"],
            ["我对花生过敏。", "你对花生过敏，要小心。", "我去京都旅行，需要带什么？"],
        ),
        (
            "What coffee does she drink?",
            ["What coffee does she drink again?", "Which coffee does she drink?"],
            [
                "I only drink black coffee.",
                "She drinks black coffee, no sugar.",
                "I'm going to Kyoto, what should I pack?",
            ],
        ),
    ],
    ids=["zh", "en"],
)
def test_a_question_that_repeats_the_query_comes_after_the_statement(query, echoes, statements):
    hits = [hit(f"e{index}", text, 0.9, 0.05 - index * 0.001) for index, text in enumerate(echoes)]
    hits += [hit(f"s{index}", text, 0.5, 0.04 - index * 0.001) for index, text in enumerate(statements)]
    order = [h.memory.id for h in ranked_hits(hits, WEIGHTS, 0.2, query=query, echo_weight=0.5)]
    assert order == ["s0", "s1", "s2", "e0", "e1"]  # a question with words of its own (Kyoto) keeps its place
    assert [h.memory.id for h in ranked_hits(hits, WEIGHTS, 0.2, query=query, echo_weight=1.0)][:2] == ["e0", "e1"]


@pytest.mark.parametrize(
    ("query", "reworded"),
    [("我在哪里工作？", "我在哪家公司上班？"), ("Which film do I like best?", "What's my favourite film?")],
)
def test_a_reworded_question_is_known_by_its_meaning(query, reworded):
    asked = Memory(id="q", user_id="u", kind="message", text=reworded)
    assert not repeats_the_query(asked, query)  # other words
    assert repeats_the_query(asked, query, similarity=0.65, same_meaning=0.6)
    assert not repeats_the_query(asked, query, similarity=0.5, same_meaning=0.6)
    statement = Memory(id="s", user_id="u", kind="message", text="我在一家创业公司上班。")
    assert not repeats_the_query(statement, query, similarity=0.9, same_meaning=0.6)  # a statement is never an echo


@pytest.mark.parametrize(
    ("text", "empty"),
    [
        ("What coffee do you drink? You never said.", True),
        ("Which city does your sister live in? You haven't told me yet.", True),
        ("你的车是什么牌子的？你还没告诉过我。", True),
        ("你在哪家公司上班？", True),
        ("我不知道呢。", True),
        ("She drinks black coffee, no sugar.", False),
        ("你在物流公司上班吧？那挺忙的。", False),  # a guess back with a statement of its own
        ("I'm not sure what she drinks, but she loved the espresso in Rome.", False),
    ],
)
def test_a_reply_that_only_asks_back_or_does_not_know_holds_no_answer(text, empty):
    assert holds_no_answer(text) is empty


@pytest.mark.parametrize(
    ("question", "echo", "statement", "query"),
    [
        ("我在哪家公司上班？", "你在哪家公司上班？", "我在一家做物流软件的创业公司当后端工程师。", "我在哪里工作？"),
        (
            "What car do I drive?",
            "What car do you drive? You never said.",
            "I drive a white Toyota Corolla.",
            "Which car is mine?",
        ),
    ],
    ids=["zh", "en"],
)
def test_a_question_nobody_answered_comes_after_the_statement_even_in_other_words(question, echo, statement, query):
    asked = Memory(id="q", user_id="u", kind="message", text=question)
    reply = message("e", "assistant", echo)
    echoed = Memory(id="e", user_id="u", kind="message", text=echo, speaker_role="assistant")
    assert unanswered(asked, reply) and unanswered(echoed, None)
    assert not unanswered(asked, message("e", "assistant", statement))  # answered: the pair may be the evidence
    hits = [hit("q", question, 0.8, 0.05), hit("e", echo, 0.7, 0.04), hit("s", statement, 0.3, 0.03)]
    hits[1] = MemoryHit(memory=echoed, score=0.7, rank_score=0.04, vector_similarity=0.7, text_score=0.0)
    order = ranked_hits(
        hits,
        WEIGHTS,
        floor=0.2,
        query=query,
        echo_weight=0.5,
        no_answer_ids=frozenset({"q", "e"}),
        no_answer_weight=0.2,
    )
    assert [h.memory.id for h in order][0] == "s"
    assert [h.memory.id for h in ranked_hits(hits, WEIGHTS, floor=0.2, query=query, echo_weight=0.5)][0] != "s"


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Where did I put the KX-88 charger?", ["KX-88"]),
        ("When did Caroline go to the LGBTQ support group?", ["Caroline", "LGBTQ"]),
        ("我的iPhone是什么颜色？", ["iPhone"]),
        ("我最喜欢《星际穿越》吗？", ["星际穿越"]),
        ("Write a haiku about autumn leaves.", []),  # an everyday request names nothing exact
        ("写一首关于秋天落叶的俳句。", []),
        ("What is 17 times 23?", []),
    ],
)
def test_the_exact_terms_of_a_query_are_codes_names_and_titles(query, terms):
    assert exact_terms(query) == terms


def test_the_fallback_keeps_only_candidates_holding_an_exact_term_verbatim():
    hits = [
        hit("a", "locker code KX-88, top shelf", 0.01, 0.03),
        hit("b", "the charger is broken", 0.015, 0.04),
        hit("c", "我的 iphone 是绿色的", 0.01, 0.02),
    ]
    assert [h.memory.id for h in exact_term_hits(hits, ["KX-88"])] == ["a"]
    assert [h.memory.id for h in exact_term_hits(hits, ["iPhone"])] == ["c"]
    assert exact_term_hits(hits, []) == []


def test_the_fallback_finds_a_word_whole_a_name_capitalized_and_an_acronym_in_capitals():
    """Issue 48, item 3: "How does a bill become law in the US?" recalled 15 of 15 MemoryBank
    users' turns holding "just" or "discuss", and "the Sun" the turns about a sunset."""
    hits = [
        hit("just", "I just discussed it with my boss", 0.01, 0.03),
        hit("sunset", "Watching the sunset was so peaceful", 0.01, 0.03),
        hit("sun", "We sat in the sun all afternoon", 0.01, 0.03),
        hit("us", "Flew to the US last May", 0.01, 0.03),
        hit("name", "The Sun came out at last, as Sun Li said", 0.01, 0.03),
        hit("code", "locker kx-88 is mine", 0.01, 0.03),
        hit("plural", "The office closes at 6 pm on Fridays", 0.01, 0.03),
    ]
    assert [h.memory.id for h in exact_term_hits(hits, ["Friday"])] == ["plural"]  # a plural is the word
    assert [h.memory.id for h in exact_term_hits(hits, ["US"])] == ["us"]
    assert [h.memory.id for h in exact_term_hits(hits, ["Sun"])] == ["name"]
    assert [h.memory.id for h in exact_term_hits(hits, ["KX-88"])] == ["code"]


def test_a_question_naming_someone_who_speaks_in_the_memories_is_about_the_users_world():
    said = Memory(id="m", user_id="u", kind="message", text="I'm researching adoption agencies", speaker="Caroline")
    hits = [MemoryHit(memory=said, score=0.1, rank_score=0.01, vector_similarity=0.1, text_score=0.0)]
    assert names_a_speaker("What did Caroline research?", hits)
    assert not names_a_speaker("What is the capital of Mongolia?", hits)
    assert not names_held("What is the capital of Mongolia?", hits)
    sister = Memory(id="s", user_id="u", kind="message", text="My sister Alice lives in Osaka")
    told = [MemoryHit(memory=sister, score=0.1, rank_score=0.01, vector_similarity=0.1, text_score=0.0)]
    assert names_held("Where does Alice live?", told)
    assert not names_held("Where does Bob live?", told)
    assert not names_held("My sister is coming.", told)  # a sentence's first word names no one
    # a capitalized word names someone only where the hits hold it as a name, inside a sentence:
    # "One" and "The" start the user's sentences, and a quote's words are mentioned
    plain = Memory(id="p", user_id="u", kind="message", text="One day I got lost. The bus never came. I met Dana.")
    held = [MemoryHit(memory=plain, score=0.1, rank_score=0.01, vector_similarity=0.1, text_score=0.0)]
    assert not names_held("Who wrote One Hundred Years of Solitude?", held)
    assert not names_held('Is it "affect" in this sentence: "The weather will change"?', held)
    assert names_held("Where does Dana work?", held)


def test_a_request_naming_an_acronym_is_about_what_holds_it_in_capitals():
    question = "What does the WHO do, and when was it founded?"
    assert not holds_acronyms(question, "Today I found a really interesting novel")
    assert not holds_acronyms(question, "who knows what they do")
    assert holds_acronyms(question, "My aunt worked for the WHO in Geneva")
    assert holds_acronyms("How far is it to the pharmacy?", "anything")  # no acronym: nothing to hold
    assert holds_acronyms('What does "LOL" mean?', "anything")  # a quoted word is mentioned


def test_a_name_is_held_whole_and_a_quoted_titles_words_are_its_own():
    """Issue 48, item 3: "Who painted The Starry Night?" beside a song "You Shook Me All Night Long",
    and "How do we know the Earth is round?" beside a film "The Wandering Earth", read as naming
    what the user's memories name; New Zealand is not New York."""

    def said(text: str) -> list[MemoryHit]:
        memory = Memory(id="m", user_id="u", kind="message", text=text)
        return [MemoryHit(memory=memory, score=0.1, rank_score=0.01, vector_similarity=0.1, text_score=0.0)]

    song = said('I recently listened to a really good song called "You Shook Me All Night Long."')
    assert not names_held("Who painted The Starry Night?", song)
    film = said('If you like, you can go see "The Wandering Earth". It is great.')
    assert not names_held("How do we know the Earth is round?", film)
    assert names_held("Who directed The Wandering Earth?", film) == {("wandering", "earth")}
    assert not names_held("What is the capital of New Zealand?", said("We flew to New York in May."))
    sister = said("My sister Alice Chen lives in Osaka")
    assert names_held("Where does Alice live?", sister) == {("alice",)}
    assert names_held("Is Osaka far from Kyoto?", sister) == {("osaka",)}
    gallery = said("We saw The Starry Night at MoMA last week.")
    assert names_held("Who painted The Starry Night?", gallery) == {("starry", "night")}
    assert holding_names([*song, *gallery], frozenset({("starry", "night")})) == gallery


@pytest.mark.parametrize(
    ("question", "echo", "statement", "query"),
    [
        (
            "How many kids do I have?",
            "How many children do you have? I don't remember.",
            "We have three kids.",
            "How many children do I have?",
        ),
        ("我在学什么语言？", "你在学什么语言？你还没告诉我。", "我在用多邻国学葡萄牙语。", "我在学哪门外语？"),
    ],
    ids=["en", "zh"],
)
def test_a_statement_likely_enough_comes_before_a_message_that_holds_none_whatever_their_scores(
    question, echo, statement, query
):
    """Issue 48, item 2: the question holds every word of the query, so its score is 40 times the
    statement's (0.8 against 0.02) and no weight put it after; above `statements_first_floor` the
    statement comes first, below it the weights alone order them."""
    echoed = Memory(id="e", user_id="u", kind="message", text=echo, speaker_role="assistant")
    hits = [
        hit("q", question, 0.8, 0.05),
        MemoryHit(memory=echoed, score=0.7, rank_score=0.04, vector_similarity=0.7, text_score=0.0),
        hit("s", statement, 0.02, 0.01),
    ]
    common = {
        "floor": 0.01,
        "query": query,
        "echo_weight": 0.5,
        "no_answer_ids": frozenset({"q"}),
        "no_answer_weight": 0.05,
    }
    first = ranked_hits(hits, WEIGHTS, statements_first_floor=0.01, **common)
    assert [h.memory.id for h in first] == ["s", "q", "e"]
    weights_alone = ranked_hits(hits, WEIGHTS, statements_first_floor=1.0, **common)
    assert [h.memory.id for h in weights_alone][0] == "q"
    below = ranked_hits(hits, WEIGHTS, statements_first_floor=0.05, **common)
    assert [h.memory.id for h in below][0] == "q"


@pytest.mark.parametrize(
    ("query", "used", "mentioned"),
    [
        ('Give me three synonyms for "happy".', ["happy"], []),
        ("给我三个形容“开心”的成语。", ["开心"], []),
        ("《傲慢与偏见》的作者是谁？", ["傲慢与偏见"], ["傲慢与偏见"]),
        ('Where is the "KX-88" locker?', ["KX-88"], ["KX-88"]),
    ],
)
def test_a_quoted_word_is_no_exact_term_of_a_request_that_only_mentions_it(query, used, mentioned):
    """Issue 48, item 3: a request not about the user mentions what it quotes; a title, a code and
    a name still name something the user may have said."""
    assert exact_terms(query) == used
    assert exact_terms(query, mentions=False) == mentioned
