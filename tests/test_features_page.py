"""docs/features.md's rows that say "not yet": each check here fails the day its feature lands, so the
page is corrected then (tests/test_docs.py's CHECKED_LIMITS names them). A failure says which row to
rewrite; then drop its check here and its entry there."""

from __future__ import annotations

import importlib.util
from typing import get_args

from memlane.config import FLAT_NAMES
from memlane.store.records import MemoryKind

STALE = "docs/features.md says {} is not built, but {}: rewrite its row and drop this check"


def test_the_confidence_floor_row_is_still_open():
    found = [name for name in FLAT_NAMES if "confidence" in name or "importance" in name]
    assert not found, STALE.format("a confidence floor / importance", f"the settings have {found}")


def test_the_review_row_is_still_open():
    from memlane.serve import memories, memories_mem0

    paths = [route.path for module in (memories, memories_mem0) for route in module.router.routes]  # type: ignore[attr-defined]
    assert not [path for path in paths if "review" in path], STALE.format("a review list", "serve has a review route")


def test_the_intent_row_is_still_open():
    assert importlib.util.find_spec("memlane.query_intent") is None, STALE.format(
        "intent-adapted retrieval", "memlane/query_intent.py exists"
    )


def test_the_decisions_row_is_still_open():
    assert "decision" not in get_args(MemoryKind), STALE.format("decisions as memories", "MemoryKind has 'decision'")
