"""Dates as a reader says them: "2026-10-12, 3 weeks ago" / "2026年10月12日，三周前".

Recall, the tools, the MCP server, the memories API and the app date what they show with
these, in the conversation's language, in the configured zone (`Settings.timezone`), relative
to a reference time (the message being answered; default now).
"""

from __future__ import annotations

import time
from datetime import datetime, tzinfo

from memlane.store.text.terms import Language

_DAY = 86_400.0
_ZH_DIGITS = "零一二三四五六七八九"

# what recall writes around a dated memory, by language
BRACKETS: dict[Language, tuple[str, str]] = {"en": ("(", ")"), "zh": ("（", "）")}
LABELS: dict[Language, dict[str, str]] = {
    "en": {"since": "since {day}, {ago}", "earlier": "earlier: {text}, until {until}"},
    "zh": {"since": "自{day}起，{ago}", "earlier": "之前：{text}，直到{until}"},
}


def day(timestamp: float, zone: tzinfo | None = None, language: Language = "en") -> str:
    """The calendar day: "2026-10-12" / "2026年10月12日" (zone None: this machine's)."""
    moment = datetime.fromtimestamp(timestamp, zone)
    return f"{moment.year}年{moment.month}月{moment.day}日" if language == "zh" else moment.strftime("%Y-%m-%d")


def _zh_count(number: int, unit: str) -> str:
    """ "两周", "三个月", "十二天": Chinese numerals, 两 for two before a measure word."""
    if number == 2:
        return "两" + unit
    if number < 10:
        return _ZH_DIGITS[number] + unit
    if number < 100:
        tens, ones = divmod(number, 10)
        return ("" if tens == 1 else _ZH_DIGITS[tens]) + "十" + (_ZH_DIGITS[ones] if ones else "") + unit
    return f"{number}{unit}"


def ago(timestamp: float, reference: float, language: Language = "en") -> str:
    """How long before `reference`: "today", "yesterday", "5 days ago", "3 weeks ago", "2 months
    ago", "a year ago" / "今天", "昨天", "五天前", "三周前", "两个月前", "一年前" (and "in 3 days" /
    "三天后" after it)."""
    days = int(abs(reference - timestamp) // _DAY)
    later = timestamp > reference + _DAY
    if days == 0:
        return "今天" if language == "zh" else "today"
    if days == 1 and not later:
        return "昨天" if language == "zh" else "yesterday"
    if days < 14:
        count, unit_en, unit_zh = days, "day", "天"
    elif days < 60:
        count, unit_en, unit_zh = days // 7, "week", "周"
    elif days < 365:
        count, unit_en, unit_zh = days // 30, "month", "个月"
    else:
        count, unit_en, unit_zh = days // 365, "year", "年"
    if language == "zh":
        return _zh_count(count, unit_zh) + ("后" if later else "前")
    phrase = f"a {unit_en}" if count == 1 else f"{count} {unit_en}s"
    return f"in {phrase}" if later else f"{phrase} ago"


def when(timestamp: float, zone: tzinfo, language: Language = "en", reference: float | None = None) -> str:
    """The day and how long ago: "2026-10-12, 3 weeks ago" / "2026年10月12日，三周前"."""
    reference = time.time() if reference is None else reference
    separator = "，" if language == "zh" else ", "
    return day(timestamp, zone, language) + separator + ago(timestamp, reference, language)


def since(timestamp: float, zone: tzinfo, language: Language = "en", reference: float | None = None) -> str:
    """ "since 2026-10-12, 3 weeks ago" / "自2026年10月12日起，三周前"."""
    reference = time.time() if reference is None else reference
    return LABELS[language]["since"].format(day=day(timestamp, zone, language), ago=ago(timestamp, reference, language))


def earlier(text: str, until: float, zone: tzinfo | None = None, language: Language = "en") -> str:
    """ "earlier: lived in Beijing, until 2026-11-21" / "之前：住在北京，直到2026年11月21日"."""
    return LABELS[language]["earlier"].format(text=text, until=day(until, zone, language))
