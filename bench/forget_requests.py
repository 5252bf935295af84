"""Forget requests phrased with the request at either end (issue 50, item 7), without a model.

    python bench/forget_requests.py

Each case of bench/forget_requests.json (two sets, each written after a change of
forget_subject and run once: see the file's "about") is stored for a user of its own, who also said bench/forget.py's everyday lines, and
forgotten with `store.forget(user, request)` and no memory model (as bench/forget.py
--phrasings does it). Prints per language the share of requests whose fact went everywhere
(target: Chinese >= 85 %) and those with collateral loss (target 0), then the misses.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forget import forget_case  # noqa: E402

from memlane import Settings, open_store  # noqa: E402
from memlane.store.text.fact_sentences import forget_subject  # noqa: E402

CASES = Path(__file__).resolve().parent / "forget_requests.json"


async def main() -> None:
    cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="memlane-bench-forget-requests-")))
    store = await open_store(settings, key_prefix=f"fq{uuid.uuid4().hex[:8]}")
    tally: dict[tuple[str, str], list[int]] = {}
    missed = []
    try:
        for number, case in enumerate(cases):
            removed, lost, left = await forget_case(store, f"forget-request-{number}", case, None)
            counts = tally.setdefault((case["set"], case["lang"]), [0, 0, 0])
            counts[0] += 1
            counts[1] += removed
            counts[2] += bool(lost)
            if not removed or lost:
                missed.append(
                    f"  {case['set']} {case['lang']} {case['request']!r} (subject {forget_subject(case['request'])!r}): "
                    + (f"kept {left!r} " if not removed else "")
                    + (f"lost {lost!r}" if lost else "")
                )
    finally:
        keys = [key async for key in store.client.scan_iter(match=f"{store.layout.prefix}:*", count=1000)]
        if keys:
            await store.client.unlink(*keys)
        await store.aclose()
    print(f"forget requests with the request at either end, no model (load {os.getloadavg()[0]:.1f})")
    for (written, language), (total, removed, lost) in sorted(tally.items()):
        print(
            f"  {written} {language}: removed everywhere {removed}/{total} = {removed / total:.0%}, collateral loss {lost}"
        )
    print("\n".join(["missed:", *missed]) if missed else "missed: none")


if __name__ == "__main__":
    asyncio.run(main())
