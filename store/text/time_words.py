"""Time expressions in a query ("昨天", "上周", "5月2日", "last week", "on April 27th").

`parse_time_scope(query, reference)` finds them and says which moments they name,
relative to `reference` (the time of the message being answered):

- absolute spans (`ranges`, epoch seconds): "yesterday", "3 days ago", "上周", "2023年5月2日";
- months, seasons and years: "March 2024", "2024年3月", "去年三月", "the summer of 2023",
  "in 2024", "2024年", "two years ago", "两年前";
- month-days without a year (`month_days`, MMDD): "April 27th", "5月2日". A user who asks
  "what did I do on April 27th?" means whichever April 27th they talked about, so the store
  matches these on the day of the year each memory was written (`MemoryField.MONTH_DAY`),
  in any year.

The store turns a scope into a ranking boost (see `RedisMemoryStore.search_memories`), not a
hard filter: a wrong guess about what a date means costs order, never the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from memlane.store.text.spans import ClaimedSpans

_MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_WEEKDAYS_EN = {
    name: index for index, name in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())
}
_WEEKDAYS_ZH = {char: index for index, char in enumerate("一二三四五六日")} | {"天": 6}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12, "春": 3, "夏": 6, "秋": 9, "冬": 12}
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}

_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_EN_NUMBER = "|".join(sorted((re.escape(word) for word in _EN_NUMBERS), key=len, reverse=True))
# at most 6 characters ("二十七", "365"): each place a number may start is tried over those, not to
# the end of a run of digits (a query of 100,000 digits took minutes, and held the event loop)
_ZH_NUMBER = r"[\d零〇一二两三四五六七八九十]{1,6}"
_YEAR = r"((?:19|20)\d{2})"
_SEASON_EN = r"(spring|summer|autumn|fall|winter)"
_YEAR_NUMBER = re.compile(_YEAR)
# "N days/years ago" further back than this names no time a chat memory holds ("3000 years ago")
_MOST_DAYS_AGO = 200 * 365

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso_date", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("zh_full_date", re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")),
    ("zh_named_year_date", re.compile(rf"(去|今|前)年\s*({_ZH_NUMBER})\s*月(?:\s*({_ZH_NUMBER})\s*[日号])?")),
    ("zh_year_month", re.compile(rf"{_YEAR}\s*年\s*({_ZH_NUMBER})\s*月")),
    ("zh_season", re.compile(r"((?:19|20)\d{2}|去|今|前)年\s*(?:的\s*)?(春|夏|秋|冬)(?:天|季)")),
    ("zh_month_day", re.compile(rf"({_ZH_NUMBER})\s*月\s*({_ZH_NUMBER})\s*[日号]")),
    ("en_month_day_year", re.compile(rf"\b({_MONTH_NAME})\.?\s+{_ORDINAL},?\s+(\d{{4}})\b", re.I)),
    ("en_day_month_year", re.compile(rf"\b{_ORDINAL}\s+(?:of\s+)?({_MONTH_NAME})\.?,?\s+(\d{{4}})\b", re.I)),
    ("en_month_year", re.compile(rf"\b({_MONTH_NAME})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("en_season_year", re.compile(rf"\b(?:the\s+)?{_SEASON_EN}\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("en_relative_season", re.compile(rf"\b(last|this|past)\s+{_SEASON_EN}\b", re.I)),
    ("en_last_month_name", re.compile(rf"\blast\s+({_MONTH_NAME})\b(?!\s*\d)", re.I)),
    ("en_month_day", re.compile(rf"\b({_MONTH_NAME})\.?\s+{_ORDINAL}\b(?!\s*(?:am|pm|:))", re.I)),
    ("en_day_month", re.compile(rf"\b(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?({_MONTH_NAME})\b", re.I)),
    (
        "few_days",
        re.compile(
            r"\b(?:a\s+few|several|a\s+couple\s+of)\s+days\s+ago\b|\bthe\s+other\s+day\b|前几天|前些天|这几天|前两天",
            re.I,
        ),
    ),
    ("en_ago", re.compile(rf"\b(\d+|{_EN_NUMBER})\s+(day|week|month|year)s?\s+ago\b", re.I)),
    ("zh_ago", re.compile(rf"({_ZH_NUMBER}|几)\s*(?:个\s*)?(天|日|周|星期|礼拜|月|年)(?:之|以)?前")),
    ("en_day_before_yesterday", re.compile(r"\bthe\s+day\s+before\s+yesterday\b", re.I)),
    (
        "en_relative_day",
        re.compile(r"\b(yesterday|today|tonight|this\s+morning|this\s+afternoon|this\s+evening)\b", re.I),
    ),
    ("zh_relative_day", re.compile(r"(大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|今早)")),
    (
        "en_weekday",
        re.compile(r"\b(?:(last|this|on)\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I),
    ),
    ("zh_weekday", re.compile(r"(上|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])")),
    ("en_relative_period", re.compile(r"\b(last|this|past)\s+(week|month|year)\b", re.I)),
    ("zh_relative_period", re.compile(r"(上个?|这个?|本|去|今)(周|星期|礼拜|月|年)")),
    # a bare year last: "in March 2024" and "the summer of 2023" have claimed theirs already
    ("en_year", re.compile(rf"\b(?:in|during|throughout|the\s+year)\s+{_YEAR}\b(?![%.,]?\d)", re.I)),
    ("zh_year", re.compile(rf"{_YEAR}\s*年(?!代)")),
]


@dataclass
class TimeScope:
    """What a query's time expressions name; empty when it has none."""

    ranges: list[tuple[float, float]] = field(default_factory=list)
    month_days: list[int] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.ranges or self.month_days)


def zh_number(text: str) -> int | None:
    """'27', '二十七', '十' → int; None when it is not a number."""
    if text.isdigit():
        return int(text)
    if not text or any(char not in _ZH_DIGITS and char != "十" for char in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    value = 0
    for char in text:
        value = value * 10 + _ZH_DIGITS[char]
    return value


def resolve_timezone(name: str | None) -> tzinfo:
    """The zone dates are read in: `name` (IANA) or this machine's local zone."""
    if name:
        return ZoneInfo(name)
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def month_day(timestamp: float, zone: tzinfo) -> int:
    """MMDD of a moment in `zone` (427 for April 27th)."""
    moment = datetime.fromtimestamp(timestamp, zone)
    return moment.month * 100 + moment.day


def _day_range(day: date, zone: tzinfo, days: int = 1) -> tuple[float, float]:
    start = datetime(day.year, day.month, day.day, tzinfo=zone)
    return start.timestamp(), (start + timedelta(days=days)).timestamp() - 0.001


def _valid_month_day(month: int | None, day: int | None) -> int | None:
    if month is None or day is None or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    try:
        date(2000, month, day)  # a leap year: 0229 is a valid month-day
    except ValueError:
        return None
    return month * 100 + day


def parse_time_scope(query: str, reference: float, zone: tzinfo) -> TimeScope:
    """The time expressions of `query`, resolved against `reference` (epoch seconds) in `zone`."""
    scope = TimeScope()
    taken = ClaimedSpans()
    today = datetime.fromtimestamp(reference, zone).date()
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if not taken.free(match.start(), match.end()):
                continue  # a longer expression already covered these characters
            try:
                applied = _apply(kind, match, scope, today, zone)
            except (OverflowError, ValueError):  # a date out of the calendar's range names no time
                applied = False
            if applied:
                taken.claim(*match.span())
    scope.spans = taken.spans()
    scope.month_days = list(dict.fromkeys(scope.month_days))
    return scope


def _apply(kind: str, match: re.Match[str], scope: TimeScope, today: date, zone: tzinfo) -> bool:
    groups = match.groups()
    if kind in ("iso_date", "zh_full_date", "en_month_day_year", "en_day_month_year"):
        if kind in ("iso_date", "zh_full_date"):
            year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
        elif kind == "en_month_day_year":
            year, month, day = int(groups[2]), _MONTHS[groups[0].lower()], int(groups[1])
        else:
            year, month, day = int(groups[2]), _MONTHS[groups[1].lower()], int(groups[0])
        try:
            scope.ranges.append(_day_range(date(year, month, day), zone))
        except ValueError:
            return False
        return True
    if kind in ("zh_month_day", "en_month_day", "en_day_month"):
        if kind == "zh_month_day":
            value = _valid_month_day(zh_number(groups[0]), zh_number(groups[1]))
        elif kind == "en_month_day":
            ordinal = re.search(r"(?:st|nd|rd|th)$", match.group(0), re.I)
            # the words just before it (not the whole text before: a query of many dates took minutes)
            after_preposition = re.search(
                r"\b(?:on|in|of|since|by|until)\s+$", match.string[max(0, match.start() - 64) : match.start()], re.I
            )
            if groups[0].lower() == "may" and not (ordinal or after_preposition):
                return False  # "may 3 people come?" is no date
            value = _valid_month_day(_MONTHS[groups[0].lower()], int(groups[1]))
        else:
            value = _valid_month_day(_MONTHS[groups[1].lower()], int(groups[0]))
        if value is None:
            return False
        scope.month_days.append(value)
        return True
    if kind in ("en_ago", "zh_ago"):
        amount_text, unit = groups[0].lower(), groups[1]
        if amount_text == "几":
            amount = 3
        elif kind == "en_ago":
            amount = int(amount_text) if amount_text.isdigit() else _EN_NUMBERS[amount_text]
        else:
            amount = zh_number(amount_text) or 0
        if kind == "zh_ago" and unit == "年" and _YEAR_NUMBER.fullmatch(amount_text):  # 4 digits, 19xx or 20xx
            # "2024年前我住在哪？" asks about before the year 2024, not 2024 years ago (which was out
            # of the calendar's range: the search raised OverflowError)
            scope.ranges.append((0.0, datetime(amount, 1, 1, tzinfo=zone).timestamp() - 0.001))
            return True
        days = {
            "day": 1,
            "日": 1,
            "天": 1,
            "week": 7,
            "周": 7,
            "星期": 7,
            "礼拜": 7,
            "month": 30,
            "月": 30,
            "year": 365,
            "年": 365,
        }[unit.lower()]
        if amount <= 0 or amount > 3650 or amount * days > _MOST_DAYS_AGO:
            return False
        center = today - timedelta(days=amount * days)
        slack = 0 if days == 1 and amount_text != "几" else max(1, amount * days // 4)
        if days == 365:  # "two years ago" is loose: about half a year either side at least
            slack = max(slack, 182)
        scope.ranges.append(_day_range(center - timedelta(days=slack), zone, 2 * slack + 1))
        return True
    if kind == "en_day_before_yesterday":
        scope.ranges.append(_day_range(today - timedelta(days=2), zone))
        return True
    if kind in ("en_relative_day", "zh_relative_day"):
        word = groups[0].lower()
        offset = {"yesterday": 1, "昨天": 1, "昨日": 1, "昨晚": 1, "前天": 2, "大前天": 3}.get(word, 0)
        scope.ranges.append(_day_range(today - timedelta(days=offset), zone))
        return True
    if kind in ("en_weekday", "zh_weekday"):
        if kind == "en_weekday":
            qualifier, weekday = (groups[0] or "").lower(), _WEEKDAYS_EN[groups[1].lower()]
            last_week = qualifier == "last"
        else:
            last_week, weekday = groups[0] == "上", _WEEKDAYS_ZH[groups[1]]
        if last_week:
            monday = today - timedelta(days=today.weekday() + 7)
            that_day = monday + timedelta(days=weekday)
        else:  # the latest such weekday, today included
            that_day = today - timedelta(days=(today.weekday() - weekday) % 7)
        scope.ranges.append(_day_range(that_day, zone))
        return True
    if kind in ("en_relative_period", "zh_relative_period"):
        which, unit = groups[0].lower(), groups[1]
        previous = which in ("last", "past", "上", "上个", "去")
        if unit in ("week", "周", "星期", "礼拜"):
            if which == "past":
                scope.ranges.append(_day_range(today - timedelta(days=7), zone, 8))
                return True
            monday = today - timedelta(days=today.weekday() + (7 if previous else 0))
            scope.ranges.append(_day_range(monday, zone, 7))
        elif unit in ("month", "月"):
            first = today.replace(day=1)
            if previous:
                first = (first - timedelta(days=1)).replace(day=1)
            following = (first + timedelta(days=32)).replace(day=1)
            scope.ranges.append(_day_range(first, zone, (following - first).days))
        else:
            year = today.year - (1 if previous else 0)
            start = date(year, 1, 1)
            scope.ranges.append(_day_range(start, zone, (date(year + 1, 1, 1) - start).days))
        return True
    if kind in _CALENDAR_KINDS:
        spans = _calendar_spans(kind, groups, today)
        scope.ranges.extend(_day_range(first, zone, (end - first).days) for first, end in spans)
        return bool(spans)
    if kind == "few_days":
        scope.ranges.append(_day_range(today - timedelta(days=7), zone, 7))
        return True
    return False


_CALENDAR_KINDS = frozenset(
    {
        "zh_named_year_date",
        "zh_year_month",
        "zh_season",
        "en_month_year",
        "en_season_year",
        "en_relative_season",
        "en_last_month_name",
        "en_year",
        "zh_year",
    }
)


def _month_span(year: int, month: int) -> tuple[date, date]:
    """The first day of a month and the first day after it."""
    first = date(year, month, 1)
    return first, (first + timedelta(days=32)).replace(day=1)


def _season_spans(year: int, first_month: int) -> list[tuple[date, date]]:
    """The months of a season (northern hemisphere); a year's winter is its own January,
    February and December, since "the winter of 2023" is said of either end."""
    if first_month == 12:
        return [(date(year, 1, 1), _month_span(year, 2)[1]), _month_span(year, 12)]
    return [(date(year, first_month, 1), _month_span(year, first_month + 2)[1])]


def _calendar_spans(kind: str, groups: tuple[str | None, ...], today: date) -> list[tuple[date, date]]:
    """[first day, day after) spans that a month, season or year expression names; [] when none is valid."""
    named_years = {"今": today.year, "去": today.year - 1, "前": today.year - 2}
    if kind == "zh_named_year_date":
        month, day = zh_number(groups[1] or ""), zh_number(groups[2] or "") if groups[2] else None
        if month is None or not 1 <= month <= 12:
            return []
        year = named_years[groups[0] or "今"]
        if day is None:
            return [_month_span(year, month)]
        try:
            first = date(year, month, day)
        except ValueError:
            return []
        return [(first, first + timedelta(days=1))]
    if kind in ("zh_year_month", "en_month_year"):
        if kind == "zh_year_month":
            year, month = int(groups[0] or 0), zh_number(groups[1] or "")
        else:
            year, month = int(groups[1] or 0), _MONTHS[(groups[0] or "").lower()]
        return [_month_span(year, month)] if month is not None and 1 <= month <= 12 else []
    if kind == "zh_season":
        which = groups[0] or ""
        return _season_spans(named_years[which] if which in named_years else int(which), _SEASONS[groups[1] or ""])
    if kind == "en_season_year":
        return _season_spans(int(groups[1] or 0), _SEASONS[(groups[0] or "").lower()])
    if kind == "en_relative_season":
        first_month = _SEASONS[(groups[1] or "").lower()]
        if (groups[0] or "").lower() == "this":
            return _season_spans(today.year, first_month)
        # "last summer": the latest one that has ended; a winter runs from one December into the next year
        last_month = 2 if first_month == 12 else first_month + 2
        year = today.year if _month_span(today.year, last_month)[1] <= today else today.year - 1
        if first_month == 12:
            return [(date(year - 1, 12, 1), _month_span(year, 2)[1])]
        return _season_spans(year, first_month)
    if kind == "en_last_month_name":
        month = _MONTHS[(groups[0] or "").lower()]
        return [_month_span(today.year if month < today.month else today.year - 1, month)]
    if kind in ("en_year", "zh_year"):
        year = int(groups[0] or 0)
        return [(date(year, 1, 1), date(year + 1, 1, 1))]
    return []


def without_time_expressions(query: str, scope: TimeScope) -> str:
    """The query with its time expressions cut out (they are not words to look for)."""
    if not scope.spans:
        return query
    parts, last = [], 0
    for start, end in scope.spans:
        parts.append(query[last:start])
        last = end
    parts.append(query[last:])
    return " ".join(part.strip() for part in parts if part.strip())
