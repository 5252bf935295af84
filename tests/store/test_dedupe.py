"""The rules of store/text/sameness.py, without Redis: when a newer text adds nothing to an older one."""

from __future__ import annotations

import pytest

from memlane.store.text.sameness import adds_nothing, content_terms, is_near_duplicate, normalized, text_digest


def test_identity_reads_text_without_case_and_spacing_and_keeps_the_kind():
    assert normalized("  Her Sister\tlives  in Porto ") == "her sister lives in porto"
    assert text_digest("event", "Her sister lives in Porto") == text_digest("event", "her sister  lives in porto")
    assert text_digest("event", "Her sister lives in Porto") != text_digest("profile", "Her sister lives in Porto")


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        ("The user lives in Lyon.", "I live in Lyon"),
        ("I'm vegetarian", "The user is vegetarian."),
        ("Likes green tea", "Wow, I really like green tea!"),
        ("用户对花生过敏", "我对花生过敏。"),
        ("我喜欢户外活动", "我非常喜欢户外活动，真的"),
        ("Kayaking on Sundays", "Kayaking on Sundays with my brother"),
    ],
)
def test_a_restatement_adds_nothing(newer, older):
    assert adds_nothing(newer, older)


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        ("I lived in Paris", "I live in Lyon"),  # an update: another place, another tense
        ("I live in Paris", "I live in Lyon"),
        ("I moved to Berlin in 2021", "I moved to Berlin in 2019"),
        ("I prefer coffee to tea", "I prefer tea to coffee"),  # the same words, the other order
        ("I don't eat meat", "I eat meat"),
        ("I eat meat", "I don't eat meat"),  # a negation dropped is a change too
        ("I have three cats", "I have two cats"),
        ("我以前住在北京", "我住在上海"),
        ("比起茶我更喜欢喝咖啡", "比起咖啡我更喜欢喝茶"),
        ("我不喜欢看恐怖片", "我喜欢看恐怖片"),
        ("我今年四十三岁", "我今年三十四岁"),
        ("Kayaking on Sundays with my brother", "Kayaking on Sundays"),  # the newer says more
    ],
)
def test_a_changed_fact_adds_something(newer, older):
    assert not adds_nothing(newer, older)


def test_near_duplicates_need_both_the_similarity_and_the_words():
    assert is_near_duplicate("The user lives in Lyon", "I live in Lyon", 0.93, 0.90)
    assert not is_near_duplicate("The user lives in Lyon", "I live in Lyon", 0.89, 0.90)
    assert not is_near_duplicate("I lived in Paris", "I live in Lyon", 0.99, 0.90)
    assert not is_near_duplicate("The user lives in Lyon", "I live in Lyon", 1.0, None)  # off
    assert not is_near_duplicate("The user lives in Lyon", "I live in Lyon", 1.0, 0.0)


def test_content_terms_leave_out_the_speaker_and_fillers():
    assert content_terms("Hey, I really love my two cats!") == ["love", "two", "cat"]
    assert content_terms("用户非常喜欢猫") == ["喜", "欢", "猫"]
