"""The kind of question a message is (memlane/query_intent.py), read without a model, in both
languages; and recall says which it read and uses its policy."""

from __future__ import annotations

import pytest

from memlane.query_intent import INTENT_POLICIES, Intent, intent_of
from memlane.recall_select import exact_terms
from memlane.request_subject import refers_to_the_user


def read(message: str, *, names_someone: bool = False) -> Intent:
    return intent_of(
        message,
        about_the_user=refers_to_the_user(message),
        names_someone=names_someone,
        names_a_thing=bool(exact_terms(message)),
    )


@pytest.mark.parametrize(
    ("message", "intent"),
    [
        ("Write a poem about the sea.", Intent.GENERAL),
        ("帮我写一首关于大海的诗", Intent.GENERAL),
        ("Explain the difference between TCP and UDP.", Intent.GENERAL),
        ("How do I read a file line by line in Go?", Intent.GENERAL),  # a how-to: "I" is anyone
        ("我怎么用Python读文件？", Intent.GENERAL),
        ("I need a regular expression that matches email addresses.", Intent.GENERAL),  # a need: a request
        ("我需要一个匹配手机号的正则表达式。", Intent.GENERAL),
        ("How do I get to my office?", Intent.FACTUAL),  # ... unless it names the user's own
        ("I want to know what I said about my trip.", Intent.FACTUAL),
        ("When did I start my new job?", Intent.TEMPORAL),
        ("On May 6th, I read a book. What was its name?", Intent.TEMPORAL),
        ("我哪天去的博物馆？", Intent.TEMPORAL),
        ("在4月27号这天，我在公园里跑了多久？", Intent.TEMPORAL),
        ("Where does my sister's husband work?", Intent.RELATIONAL),
        ("我上司的女儿叫什么？", Intent.RELATIONAL),
        ("What did I say about 《星际穿越》?", Intent.ENTITY),
        ("Do I still use the KX-88 keyboard?", Intent.ENTITY),
        ("What coffee do I drink?", Intent.FACTUAL),
        ("我喝什么咖啡？", Intent.FACTUAL),
        ("我的女儿叫什么？", Intent.FACTUAL),  # one possessive: the user's own
    ],
)
def test_the_kind_of_question_is_read_from_grammar(message, intent):
    assert read(message) is intent


def test_a_question_about_someone_the_user_knows_is_not_general():
    assert read("What did Caroline research?", names_someone=True) is Intent.ENTITY
    assert read("When did Caroline go to the support group?", names_someone=True) is Intent.TEMPORAL
    assert read("What did Caroline research?") is Intent.GENERAL  # nobody of theirs is called so


def test_every_kind_has_one_policy_in_the_table():
    assert set(INTENT_POLICIES) == set(Intent)
    assert INTENT_POLICIES[Intent.GENERAL].exact_fallback  # "Where is the KX-88 locker?" finds the code


async def test_recall_says_the_kind_it_read_and_uses_its_policy(store, settings):
    from memlane.recall import RecallParts, recall
    from memlane.store.records import Message

    await store.add_messages(
        [Message(id="m1", user_id="u", session_id="s", role="user", content="I drink black coffee, no sugar.")]
    )
    parts = RecallParts.of(settings)
    for message, intent in [
        ("What coffee do I drink?", "factual"),
        ("When did I last drink coffee?", "temporal"),
        ("Write a poem about the sea.", "general"),
    ]:
        recalled = await recall(store, "u", None, message, parts=parts)
        assert recalled.intent == intent
        policy = INTENT_POLICIES[Intent(intent)]
        assert recalled.threshold == settings.recall_min_relevance * policy.floor
    uniform = RecallParts.of(settings.model_copy(update={"recall_intent_policies": False}))
    recalled = await recall(store, "u", None, "Write a poem about the sea.", parts=uniform)
    assert recalled.intent == "general"
    assert recalled.threshold == settings.recall_min_relevance  # one policy for every kind


@pytest.mark.parametrize(
    ("message", "memory", "held"),
    [
        ("How do I get to work?", "I take the 42 bus to work.", True),  # "get": a light verb, not what is asked
        ("我怎么去上班？", "我坐42路公交上班。", True),  # "去上" straddles the verb and the word after it
        ("我怎么去北京？", "我住在北京。", True),
        ("How do I make pancakes?", "I love pancakes on Sundays.", True),
        ("How do I read a file in Go?", "I write Go at work.", False),  # "read" and "file" are what it asks
        ("帮我写一首关于大海的诗", "我上周去海边了。", False),
    ],
)
def test_a_how_question_is_held_by_what_it_names_not_by_its_light_verbs(message, memory, held):
    from memlane.request_words import without_framing
    from memlane.store.text.terms import holds_what_it_names, query_terms

    assert holds_what_it_names(query_terms(without_framing(message)), memory) is held


async def test_a_personal_how_question_recalls_the_users_own_way(store, settings):
    from memlane.recall import RecallParts, recall
    from memlane.store.records import Message

    await store.add_messages(
        [
            Message(id="h1", user_id="h", session_id="s", role="user", content="I take the 42 bus to work."),
            Message(id="h2", user_id="h", session_id="s", role="user", content="我坐42路公交上班。"),
        ]
    )
    parts = RecallParts.of(settings)
    for message, shown in [("How do I get to work?", "42 bus"), ("我怎么去上班？", "42路")]:
        recalled = await recall(store, "h", None, message, parts=parts)
        assert any(shown in item.text for item in recalled.memories), (message, recalled.text)
