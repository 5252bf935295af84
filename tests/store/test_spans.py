"""Spans claimed one at a time (store/text/spans.py), as the scans for time expressions and private
data claim them: a span is free when it overlaps none claimed, whatever the order of claims, and
a text holding tens of thousands of matches is scanned in about linear time."""

from __future__ import annotations

import random
import time
from datetime import UTC, timezone

from memlane.store.text.private_data import mask_private_data
from memlane.store.text.spans import ClaimedSpans
from memlane.store.text.time_words import parse_time_scope


def test_a_span_is_free_when_it_overlaps_none_claimed():
    claimed = ClaimedSpans()
    for start, end in [(10, 20), (30, 31), (0, 5)]:
        assert claimed.free(start, end)
        claimed.claim(start, end)
    assert claimed.spans() == [(0, 5), (10, 20), (30, 31)]
    assert claimed.free(5, 10) and claimed.free(20, 30) and claimed.free(31, 40)  # touching is no overlap
    assert not claimed.free(4, 6) and not claimed.free(19, 21) and not claimed.free(12, 13) and not claimed.free(0, 100)
    assert not claimed.free(30, 31) and not claimed.free(25, 35)


def test_free_answers_as_checking_every_span_would():
    rng = random.Random(4)
    claimed, kept = ClaimedSpans(), []
    for _ in range(3000):
        start = rng.randrange(2000)
        end = start + rng.randrange(1, 30)
        overlaps = any(start < other_end and other_start < end for other_start, other_end in kept)
        assert claimed.free(start, end) == (not overlaps)
        if not overlaps:
            claimed.claim(start, end)
            kept.append((start, end))
    assert claimed.spans() == sorted(kept)


def test_a_text_of_many_matches_is_scanned_without_checking_each_against_all():
    """A pasted text of 400,000 characters of phone numbers (22,000 of them) or of dates: each
    match was checked against every span claimed before it, 13 s for the phones. A hang guard,
    not a speed target: both take well under a second now."""
    phones = "+86 138 0000 0000 " * 22_000
    started = time.perf_counter()
    masked = mask_private_data(phones)
    assert masked == "[phone] " * 22_000
    dates = "on May 1st, " * 33_000
    scope = parse_time_scope(dates, 1_700_000_000.0, UTC)
    assert len(scope.spans) == 33_000
    assert time.perf_counter() - started < 5.0
