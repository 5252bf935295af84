"""The bilingual analyzer (store/text.py) and time expressions (store/timeexpr.py)."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from memlane.store.text import detect_language, index_terms, is_short_entity_query, query_terms, term_coverage
from memlane.store.timeexpr import month_day, parse_time_scope, without_time_expressions, zh_number

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


def test_language_detection():
    assert detect_language("我喜欢黑咖啡") == "zh"
    assert detect_language("I like black coffee") == "en"
    assert detect_language("", "  ", "咖啡 please") == "zh"


def test_short_entity_queries():
    assert is_short_entity_query("张伟") and is_short_entity_query("星际穿越") and is_short_entity_query("Marco Morelli")
    assert not is_short_entity_query("我喜欢黑咖啡") and not is_short_entity_query("what coffee") and not is_short_entity_query("?")


def _days(query: str) -> list[tuple[str, str]]:
    scope = parse_time_scope(query, REFERENCE, ZONE)
    fmt = "%Y-%m-%d"
    return [(datetime.fromtimestamp(a, ZONE).strftime(fmt), datetime.fromtimestamp(b, ZONE).strftime(fmt)) for a, b in scope.ranges]


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
    "query, month_days",
    [("On April 27th, how long did I run?", [427]), ("我曾经在5月2日提到过", [502]), ("在4月27号这天", [427]),
     ("on May 2nd", [502]), ("the 4th of May", [504]), ("五月二日", [502]), ("十二月二十五日", [1225])],
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
