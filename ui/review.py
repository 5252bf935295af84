"""The memory panel's review tab: the facts a memory run held under `memory_min_confidence` (not in
the profile, never recalled), each confirmed into the profile or dropped. The table's data and the
handlers live here, module-level and taking the `ChatApp` first like ui/handlers.py's; ui/app.py
lays out the tab and binds them."""

from __future__ import annotations

from typing import Any

import pandas as pd

from memlane import MemoryStore
from memlane.ui.handlers import DEFAULT_USER, ChatApp, data_table, short_id
from memlane.ui.panel import when

REVIEW_COLUMNS = ["slot", "content", "confidence", "said", "id"]
REVIEW_WIDTHS: list[str | int] = ["22%", "46%", "12%", "12%", "8%"]


async def review_rows(store: MemoryStore, user_id: str) -> list[list[Any]]:
    """The held facts, oldest first: slot, content, the model's confidence, when said, full id."""
    return [
        [
            f"{fact.entry.topic} / {fact.entry.subtopic}",
            fact.entry.content,
            f"{fact.entry.confidence:.2f}",
            when(fact.entry.since),
            fact.id,
        ]
        for fact in await store.held_facts(user_id)
    ]


def review_table(rows: list[list[Any]]) -> tuple[pd.DataFrame, list[str]]:
    """The rows as shown (a short id) and the full ids row by row."""
    return data_table([[*row[:-1], short_id(row[-1])] for row in rows], REVIEW_COLUMNS), [row[-1] for row in rows]


def _user(user_id: str | None) -> str:
    return (user_id or "").strip() or DEFAULT_USER


async def _store(app: ChatApp) -> MemoryStore:
    await app.service.ensure_started()
    return app.service.started_store


async def review_list(app: ChatApp, user_id: str) -> tuple[pd.DataFrame, list[str], str]:
    """The review tab: the table, its ids, and a line saying how many facts wait."""
    rows = await review_rows(await _store(app), _user(user_id))
    table, ids = review_table(rows)
    return table, ids, f"{len(rows)} facts held for review" if rows else "no facts held for review"


async def confirm_held(app: ChatApp, user_id: str, held_id: str) -> tuple[pd.DataFrame, list[str], str]:
    """Confirm the held fact (it becomes a profile entry), then the tab again with what was done."""
    user_id, held_id = _user(user_id), (held_id or "").strip()
    if not held_id:
        return (*(await review_list(app, user_id))[:2], "click a row (or paste a held fact's id) first")
    entry = await (await _store(app)).confirm_held_fact(user_id, held_id, actor="user")
    table, ids, _ = await review_list(app, user_id)
    if entry is None:
        return table, ids, f"no fact {held_id!r} is held for review"
    app.service.status(user_id).version += 1  # the profile changed: the panel's next poll redraws it
    return table, ids, f"confirmed: {entry.topic} / {entry.subtopic}: {entry.content}"


async def drop_held(app: ChatApp, user_id: str, held_id: str) -> tuple[pd.DataFrame, list[str], str]:
    """Drop the held fact (nothing of it is kept), then the tab again with what was done."""
    user_id, held_id = _user(user_id), (held_id or "").strip()
    if not held_id:
        return (*(await review_list(app, user_id))[:2], "click a row (or paste a held fact's id) first")
    dropped = await (await _store(app)).drop_held_fact(user_id, held_id)
    table, ids, _ = await review_list(app, user_id)
    return table, ids, f"dropped {held_id}" if dropped else f"no fact {held_id!r} is held for review"
