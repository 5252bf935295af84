"""What the model sees: recall's memory section against search, at the same count (issue 35).

Run by `python bench/recall_quality.py` (this module prints its second table per dataset);
`--no-model-sees` skips it. Per question:

- **section R@10 turns**: the memory items in the order recall lists them, each item's source
  turns (its neighbours included), the first 10 distinct turns: the share of the question's
  evidence among them. Beside it **search R@10**: the turns of search's top 10 hits, the
  same count of turns.
- **section R@items**: every turn of every item recall shows (at most `recall_max_memories`
  items at its default budget); beside it **search R@n**, the turns of search's top n hits for
  n = `recall_max_memories`, so recall is compared with search at its own item budget.
- **precision**: the share of recalled items that hold an evidence turn, over the questions
  with any item; **empty**: the share of questions recall gives no memory at all.

One row per stage of recall, each switched off (or changed) through its setting alone, under
the same store and search. `tune` / `check` are the section R@10 turns on each half.

Noise: **off-topic items** is the mean number of memory items recall shows for everyday requests
that concern nothing the user said (`OFF_TOPIC`, in the dataset's language), asked of every user.
They are not all unrelated to every chat (a user may have talked about recipes), so it is a
rough figure, compared between rows, not a count of errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memlane import Settings
from memlane.recall import RecallParts, recall

COLUMNS = ("R@10 turns", "R@items", "precision", "empty", "items")
OFF_TOPIC = {
    "en": [
        "What is the capital of Australia?",
        "Write a haiku about autumn leaves.",
        "How do I reverse a list in Python?",
        "Explain how vaccines work.",
        "What is 17 times 23?",
        "Translate 'good morning' into French.",
        "Who wrote Pride and Prejudice?",
        "How far is the Moon from the Earth?",
    ],
    "zh": [
        "澳大利亚的首都是哪里？",
        "写一首关于秋天落叶的俳句。",
        "Python里怎么反转一个列表？",
        "解释一下疫苗是怎么起作用的。",
        "17乘以23等于多少？",
        "把“早上好”翻译成法语。",
        "《傲慢与偏见》的作者是谁？",
        "月球离地球有多远？",
    ],
}


def recall_stage_variants(settings: Settings) -> dict[str, dict[str, Any]]:
    """One row per stage of recall, changed through its setting: what each one costs or buys."""
    unweighted = {"recall_weight_profile": 1.0, "recall_weight_event": 1.0, "recall_weight_message": 1.0}
    rows: dict[str, dict[str, Any]] = {
        "  - relevance floor": {"recall_min_relevance": 0.0},
        "  floor 0.01": {"recall_min_relevance": 0.01},
        "  floor 0.03": {"recall_min_relevance": 0.03},
        "  floor 0.05": {"recall_min_relevance": 0.05},
        "  - layer weights": unweighted,
        "  - statement before echo": {"recall_echo_weight": 1.0},
        "  - unanswered questions after": {"recall_unanswered_weight": 1.0},
        "  - newer first": {"recall_newer_first": False},
        "  - exact-term fallback": {"recall_exact_fallback": False},
        "  neighbours on both sides": {"recall_neighbour_mode": "around"},
        "  - neighbours": {"recall_neighbour_messages": 0},
        "  8 items": {"recall_max_memories": 8},
        "  12 items": {"recall_max_memories": 12},
        "  budget x2 (tokens)": {"recall_max_tokens": 2 * settings.recall_max_tokens},
    }
    return {
        name: change
        for name, change in rows.items()
        if any(getattr(settings, key) != value for key, value in change.items())
    }


def first_distinct(turn_lists: Sequence[Sequence[str]], count: int) -> list[str]:
    """The first `count` distinct turns, reading the lists in order."""
    seen: dict[str, None] = {}
    for turns in turn_lists:
        for turn in turns:
            if len(seen) == count:
                return list(seen)
            seen.setdefault(turn, None)
    return list(seen)


def share(turns: Sequence[str], evidence: Sequence[str]) -> float:
    return len(set(turns) & set(evidence)) / len(evidence)


def section_row(items: Sequence[Sequence[str]], evidence: Sequence[str]) -> list[float]:
    """COLUMNS for recall's section: `items` are the section's items as lists of turns."""
    holding = [bool(set(turns) & set(evidence)) for turns in items]
    return [
        share(first_distinct(items, 10), evidence),
        share([turn for turns in items for turn in turns], evidence),
        float(np.mean(holding)) if items else float("nan"),
        0.0 if items else 1.0,
        float(len(items)),
    ]


def search_row(hit_turns: Sequence[str], evidence: Sequence[str], budget_items: int) -> list[float]:
    """COLUMNS for search at the same counts: its first 10 distinct turns, its top `budget_items`
    hits (`hit_turns`: each hit's turn, best first; two hits may share a turn)."""
    top = list(hit_turns[:budget_items])
    return [
        share(first_distinct([[turn] for turn in hit_turns], 10), evidence),
        share(top, evidence),
        float(np.mean([turn in evidence for turn in top])) if top else float("nan"),
        0.0 if top else 1.0,
        float(len(top)),
    ]


@dataclass
class SeenScores:
    rows: dict[str, list[tuple[list[float], bool]]] = field(default_factory=dict)

    def add(self, method: str, values: list[float], tuning: bool) -> None:
        self.rows.setdefault(method, []).append((values, tuning))

    def mean(self, method: str, keep: Callable[[bool], bool] = lambda tuning: True) -> list[float]:
        chosen = [values for values, tuning in self.rows[method] if keep(tuning)]
        return list(np.nanmean(np.asarray(chosen, dtype=float), axis=0)) if chosen else [float("nan")] * len(COLUMNS)


class ModelSees:
    """Collects the rows question by question (`measure`), then prints them (`print_table`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.variants = {
            name: settings.model_copy(update=change) for name, change in recall_stage_variants(settings).items()
        }
        self.scores = SeenScores()
        self.off_topic: dict[str, list[int]] = {}

    async def measure(
        self,
        store: Any,
        user_id: str,
        question: str,
        evidence: Sequence[str],
        hit_message_ids: Sequence[str],
        turn_of: Callable[[str], str],
        tuning: bool,
    ) -> list[list[str]]:
        """One question: search's ranking (`hit_message_ids`, best first) and recall under each
        variant; returns the default section's items as lists of turns."""
        budget_items = self.settings.recall_max_memories
        hit_turns = [turn_of(mid) for mid in hit_message_ids]
        self.scores.add(
            f"search, top {budget_items} hits / 10 turns", search_row(hit_turns, evidence, budget_items), tuning
        )
        sections: dict[str, list[list[str]]] = {}
        for name, settings in {"recall memory section": self.settings, **self.variants}.items():
            recalled = await recall(store, user_id, None, question, parts=RecallParts.of(settings))
            sections[name] = [
                list(dict.fromkeys(turn_of(mid) for mid in item.source_message_ids)) for item in recalled.memories
            ]
            self.scores.add(name, section_row(sections[name], evidence), tuning)
        return sections["recall memory section"]

    async def measure_off_topic(self, store: Any, user_id: str, language: str) -> None:
        """The items recall shows for each of OFF_TOPIC's requests, under each variant."""
        for name, settings in {"recall memory section": self.settings, **self.variants}.items():
            for question in OFF_TOPIC[language]:
                recalled = await recall(store, user_id, None, question, parts=RecallParts.of(settings))
                self.off_topic.setdefault(name, []).append(len(recalled.memories))

    def print_table(self, dataset_name: str) -> dict[str, list[float]]:
        print(f"\n{dataset_name}: what the model sees (recall's memory section; search at the same counts)")
        print(
            f"  {'method':42}"
            + "".join(f"  {column:>10}" for column in COLUMNS)
            + "     tune    check  off-topic items"
        )
        means = {}
        for method in self.scores.rows:
            row = means[method] = self.scores.mean(method)
            tune = self.scores.mean(method, lambda tuning: tuning)[0]
            check = self.scores.mean(method, lambda tuning: not tuning)[0]
            noise = f"  {np.mean(self.off_topic[method]):15.2f}" if self.off_topic.get(method) else ""
            print(
                f"  {method:42}" + "".join(f"  {value:10.3f}" for value in row) + f"  {tune:7.3f}  {check:7.3f}" + noise
            )
        search = next(iter(means.values()))
        section = means["recall memory section"]
        print(
            f"  section - search: R@10 turns {section[0] - search[0]:+.3f}, R@items {section[1] - search[1]:+.3f} "
            "(target: >= -0.02 at the same count)"
        )
        return means
