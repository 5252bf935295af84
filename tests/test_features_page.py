"""docs/features.md's rows that say "not yet": each check here fails the day its feature lands, so the
page is corrected then (tests/test_docs.py's CHECKED_LIMITS names them). A failure says which row to
rewrite; then drop its check here and its entry there."""

from __future__ import annotations

from typing import get_args

from memlane.store.records import MemoryKind

STALE = "docs/features.md says {} is not built, but {}: rewrite its row and drop this check"


def test_the_decisions_row_is_still_open():
    assert "decision" not in get_args(MemoryKind), STALE.format("decisions as memories", "MemoryKind has 'decision'")
