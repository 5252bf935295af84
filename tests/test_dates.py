"""Dates as recall and the surfaces show them (memlane/dates.py), in both languages."""

from __future__ import annotations

from memlane import dates
from memlane.store.text.time_words import resolve_timezone

ZONE = resolve_timezone("Asia/Shanghai")
REFERENCE = 1_792_000_000.0  # 2026-10-15 in Shanghai
DAY = 86_400.0


def test_when_names_the_day_and_how_long_ago_in_the_readers_language():
    assert dates.when(REFERENCE - 21 * DAY, ZONE, "en", REFERENCE) == "2026-09-24, 3 weeks ago"
    assert dates.when(REFERENCE - 21 * DAY, ZONE, "zh", REFERENCE) == "2026年9月24日，三周前"
    assert dates.ago(REFERENCE - 70 * DAY, REFERENCE, "zh") == "两个月前"
    assert dates.ago(REFERENCE - DAY, REFERENCE, "en") == "yesterday"
    assert dates.ago(REFERENCE - 400 * DAY, REFERENCE, "en") == "a year ago"


def test_since_and_earlier_labels():
    assert dates.since(REFERENCE - 5 * DAY, ZONE, "zh", REFERENCE) == "自2026年10月10日起，五天前"
    assert dates.since(REFERENCE - 5 * DAY, ZONE, "en", REFERENCE) == "since 2026-10-10, 5 days ago"
    assert dates.earlier("住在北京", REFERENCE, ZONE, "zh") == "之前：住在北京，直到2026年10月15日"
    assert dates.earlier("lived in Beijing", REFERENCE, ZONE, "en") == "earlier: lived in Beijing, until 2026-10-15"
