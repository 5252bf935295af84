"""The bilingual analyzer (store/text/terms.py) and time expressions (store/text/time_words.py)."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from memlane.store.text.terms import (
    detect_language,
    index_terms,
    is_short_entity_query,
    query_terms,
    term_coverage,
    term_spans,
)
from memlane.store.text.time_words import month_day, parse_time_scope, without_time_expressions, zh_number

ZONE = ZoneInfo("Asia/Shanghai")
# Monday 8 May 2023, noon
REFERENCE = datetime(2023, 5, 8, 12, tzinfo=ZONE).timestamp()


def test_chinese_becomes_bigrams_and_function_bigrams_leave_queries():
    assert index_terms("我喜欢黑咖啡") == "我喜 喜欢 欢黑 黑咖 咖啡"
    assert query_terms("我的猫") == ["的猫"]  # 我的 is two function characters
    assert query_terms("猫") == ["猫"]


def test_english_is_stemmed_and_stop_words_and_symbols_leave():
    assert query_terms("What is the @x:y | *coffee*?") == ["x", "y", "coffe"]
    assert query_terms("hiking") == query_terms("hiked") == query_terms("hikes")
    assert "run" in index_terms("I was running 10km") and "10km" in index_terms("I was running 10km")


def test_mixed_text_keeps_both_scripts():
    terms = index_terms("我在用Python写running app").split()
    assert {"python", "run", "app", "我在"} <= set(terms)
    assert term_coverage("running 写", "我在用Python写running app") == 1.0


def test_term_spans_are_the_index_terms_with_their_characters():
    text = "我在用Python写running app"
    spans = term_spans(text)
    assert [term for term, _, _ in spans] == index_terms(text).split()
    assert [text[start:end] for _, start, end in spans] == ["我在", "在用", "Python", "写", "running", "app"]


def test_language_detection():
    assert detect_language("我喜欢黑咖啡") == "zh"
    assert detect_language("I like black coffee") == "en"
    assert detect_language("", "  ", "咖啡 please") == "zh"


def test_short_entity_queries():
    assert (
        is_short_entity_query("张伟") and is_short_entity_query("星际穿越") and is_short_entity_query("Marco Morelli")
    )
    assert (
        not is_short_entity_query("我喜欢黑咖啡")
        and not is_short_entity_query("what coffee")
        and not is_short_entity_query("?")
    )


def _days(query: str) -> list[tuple[str, str]]:
    scope = parse_time_scope(query, REFERENCE, ZONE)
    fmt = "%Y-%m-%d"
    return [
        (datetime.fromtimestamp(a, ZONE).strftime(fmt), datetime.fromtimestamp(b, ZONE).strftime(fmt))
        for a, b in scope.ranges
    ]


@pytest.mark.parametrize(
    "query, days",
    [
        ("昨天我说了什么", [("2023-05-07", "2023-05-07")]),
        ("前天", [("2023-05-06", "2023-05-06")]),
        ("上周我去哪了", [("2023-05-01", "2023-05-07")]),
        ("What did I say last week?", [("2023-05-01", "2023-05-07")]),
        ("yesterday", [("2023-05-07", "2023-05-07")]),
        ("3天前", [("2023-05-05", "2023-05-05")]),
        ("two days ago", [("2023-05-06", "2023-05-06")]),
        ("上周三", [("2023-05-03", "2023-05-03")]),
        ("last Monday", [("2023-05-01", "2023-05-01")]),
        ("2023年5月2日", [("2023-05-02", "2023-05-02")]),
        ("on 2023-04-27", [("2023-04-27", "2023-04-27")]),
        ("last month", [("2023-04-01", "2023-04-30")]),
        ("前几天", [("2023-05-01", "2023-05-07")]),
    ],
)
def test_relative_and_dated_expressions_become_spans(query, days):
    assert _days(query) == days


@pytest.mark.parametrize(
    "query, days",
    [
        ("What did I do in 2024?", [("2024-01-01", "2024-12-31")]),
        ("2024年我去了哪里", [("2024-01-01", "2024-12-31")]),
        ("2024年3月发生了什么", [("2024-03-01", "2024-03-31")]),
        ("2024年三月", [("2024-03-01", "2024-03-31")]),
        ("What happened in March 2024?", [("2024-03-01", "2024-03-31")]),
        ("in February of 2024", [("2024-02-01", "2024-02-29")]),
        ("two years ago", [("2020-11-07", "2021-11-06")]),
        ("2 years ago", [("2020-11-07", "2021-11-06")]),
        ("两年前我在哪里工作", [("2020-11-07", "2021-11-06")]),
        ("2年前", [("2020-11-07", "2021-11-06")]),
        ("去年三月我去了哪里", [("2022-03-01", "2022-03-31")]),
        ("去年3月5日", [("2022-03-05", "2022-03-05")]),
        ("今年二月", [("2023-02-01", "2023-02-28")]),
        ("the summer of 2023", [("2023-06-01", "2023-08-31")]),
        ("2022年夏天", [("2022-06-01", "2022-08-31")]),
        ("去年的秋天", [("2022-09-01", "2022-11-30")]),
        ("last summer", [("2022-06-01", "2022-08-31")]),
        ("last winter", [("2022-12-01", "2023-02-28")]),
        ("winter 2023", [("2023-01-01", "2023-02-28"), ("2023-12-01", "2023-12-31")]),
        ("last March", [("2023-03-01", "2023-03-31")]),
        ("last June", [("2022-06-01", "2022-06-30")]),
        ("March 5, 2024", [("2024-03-05", "2024-03-05")]),
        ("2024年3月5日", [("2024-03-05", "2024-03-05")]),
        # a year before 前 is "before that year", not that many years ago (which raised OverflowError)
        ("2021年前我住在哪？", [("1970-01-01", "2020-12-31")]),
        ("20年前我在哪", [("1998-05-14", "2008-05-11")]),  # still 20 years ago, give or take a quarter
    ],
)
def test_years_months_and_seasons_become_spans(query, days):
    assert _days(query) == days


def test_a_time_further_back_than_any_chat_is_no_time_and_no_error():
    """3,000 years ago is out of the calendar's range: the search raised OverflowError, and recall
    with it. Now it names no time."""
    for query in ("3000 years ago what did I eat", "3000年前", "一千年前"):
        assert not parse_time_scope(query, REFERENCE, ZONE), query


def test_numbers_and_words_that_are_not_years_stay_words():
    assert not parse_time_scope("I ran 2024 meters", REFERENCE, ZONE)
    assert not parse_time_scope("1990年代的音乐", REFERENCE, ZONE)
    assert not parse_time_scope("以前年轻的时候", REFERENCE, ZONE)  # 前年 inside 以前年轻 is no year
    assert not parse_time_scope("Did I fall last time?", REFERENCE, ZONE)
    query = "What did I do in the summer of 2023?"
    left = without_time_expressions(query, parse_time_scope(query, REFERENCE, ZONE))
    assert "summer" not in left and "2023" not in left and left.startswith("What did I do")
    assert (
        without_time_expressions("2024年3月我去了哪里", parse_time_scope("2024年3月我去了哪里", REFERENCE, ZONE))
        == "我去了哪里"
    )


@pytest.mark.parametrize(
    "query, month_days",
    [
        ("On April 27th, how long did I run?", [427]),
        ("我曾经在5月2日提到过", [502]),
        ("在4月27号这天", [427]),
        ("on May 2nd", [502]),
        ("the 4th of May", [504]),
        ("五月二日", [502]),
        ("十二月二十五日", [1225]),
    ],
)
def test_dates_without_a_year_match_that_day_in_any_year(query, month_days):
    assert parse_time_scope(query, REFERENCE, ZONE).month_days == month_days


def test_words_that_only_look_like_dates_are_not_dates():
    assert not parse_time_scope("May I ask you something?", REFERENCE, ZONE)
    assert not parse_time_scope("What is 13月40日?", REFERENCE, ZONE)
    assert not parse_time_scope("I like coffee", REFERENCE, ZONE)


def test_time_words_leave_the_text_query():
    query = "On April 27th, how long did I run?"
    assert "27th" not in without_time_expressions(query, parse_time_scope(query, REFERENCE, ZONE))
    assert zh_number("二十七") == 27 and zh_number("十") == 10 and zh_number("abc") is None
    assert month_day(datetime(2021, 4, 27, 23, tzinfo=ZONE).timestamp(), ZONE) == 427
