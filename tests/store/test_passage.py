"""The part of a long text that answers a query (store/text/passage.py), in both languages, no Redis."""

from __future__ import annotations

import pytest

from memlane.store.text.passage import CUT_MARK, answering_passage
from memlane.store.text.tokens import count_tokens

CHINESE_FILLER = "今天天气不错，我们聊了很多关于工作和生活的事情，包括项目进度、团队安排以及下个月的出差计划。"
ENGLISH_FILLER = "We talked about the weather and the project schedule for a while. "


def test_a_text_that_fits_is_left_whole():
    assert answering_passage("我喜欢龙井茶", "龙井", 50) == "我喜欢龙井茶"
    assert answering_passage("I like green tea", "tea", 50) == "I like green tea"
    assert answering_passage("anything", "tea", 0) == ""


@pytest.mark.parametrize(
    ("text", "query", "answer"),
    [
        (
            (CHINESE_FILLER * 11)[:490] + "最后我在杭州梅家坞买了一斤明前龙井。",
            "我买的龙井是哪里的？",
            "梅家坞买了一斤明前龙井",
        ),
        (
            ENGLISH_FILLER * 30 + "In the end I adopted a beagle named Biscuit from the shelter.",
            "What is my dog's name?",
            "beagle named Biscuit",
        ),
    ],
)
def test_the_answer_at_the_end_of_a_long_text_survives_the_cut(text, query, answer):
    passage = answering_passage(text, query, 60)
    assert answer in passage and passage.startswith(CUT_MARK) and not passage.endswith(CUT_MARK)
    assert count_tokens(passage) <= 60


@pytest.mark.parametrize(
    ("text", "query", "answer"),
    [
        (
            "无关的内容。" * 60 + "我的护照号码是E12345678，去年办的。" + "其他的话。" * 60,
            "我的护照号码是多少？",
            "护照号码是E12345678",
        ),
        (
            ENGLISH_FILLER * 20 + "My passport number is X123, renewed last year. " + ENGLISH_FILLER * 20,
            "What is my passport number?",
            "passport number is X123",
        ),
    ],
)
def test_an_answer_in_the_middle_is_cut_on_both_sides(text, query, answer):
    passage = answering_passage(text, query, 30)
    assert answer in passage and passage.startswith(CUT_MARK) and passage.endswith(CUT_MARK)
    assert count_tokens(passage) <= 30


@pytest.mark.parametrize(
    ("text", "query", "answer"),
    [
        (
            "护照号码是多少？" + "无关的内容。" * 50 + "我的护照号码是E12345678。" + "其他的话。" * 50,
            "我的护照号码是多少？",
            "E12345678",
        ),
        (
            "What is your passport number? "
            + ENGLISH_FILLER * 20
            + "Sure, my passport number is X123. "
            + ENGLISH_FILLER * 20,
            "What is my passport number?",
            "X123",
        ),
    ],
)
def test_the_statement_wins_over_the_question_that_repeats_its_words(text, query, answer):
    assert answer in answering_passage(text, query, 30)


def test_a_rare_query_word_pulls_the_window_more_than_a_frequent_one():
    text = (
        " ".join(f"Filler sentence number {i} about nothing." for i in range(40))
        + " My passport number is X123. "
        + "More filler. " * 40
    )
    assert "passport number is X123" in answering_passage(text, "passport number", 30)
    chinese = "".join(f"第{i}个号码没什么用。" for i in range(40)) + "我的护照号码是E123。" + "别的事情。" * 40
    assert "护照号码是E123" in answering_passage(chinese, "护照号码", 30)


@pytest.mark.parametrize(("filler", "query"), [(CHINESE_FILLER, "咖啡"), (ENGLISH_FILLER, "coffee")])
def test_without_a_matching_word_the_beginning_is_kept(filler, query):
    text = filler * 20
    passage = answering_passage(text, query, 40)
    assert passage.endswith(CUT_MARK) and text.startswith(passage[: -len(CUT_MARK)])
    assert count_tokens(passage) <= 40
