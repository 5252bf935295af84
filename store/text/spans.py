"""Character spans of a text claimed one at a time, none overlapping another: what a scan for
time expressions (store/text/time_words.py) or private data (store/text/private_data.py) has found already.

Kept in order, so whether a span is free is a binary search: checking each new match against
every span claimed before was quadratic in the matches, and a pasted text of 200,000 characters
holds tens of thousands of them (its dates or phone numbers took seconds to minutes)."""

from __future__ import annotations

import bisect


class ClaimedSpans:
    """Non-overlapping [start, end) spans, in order."""

    def __init__(self) -> None:
        self._spans: list[tuple[int, int]] = []

    def free(self, start: int, end: int) -> bool:
        """Whether [start, end) overlaps no span claimed: of those starting before `end`, the
        last one ends last (none overlaps another)."""
        before = bisect.bisect_left(self._spans, (end,))
        return not before or self._spans[before - 1][1] <= start

    def claim(self, start: int, end: int) -> None:
        bisect.insort(self._spans, (start, end))

    def spans(self) -> list[tuple[int, int]]:
        return list(self._spans)
