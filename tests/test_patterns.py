"""Every regular expression of memlane reads a long text in linear time.

A pattern that backtracks over a long run of the characters it repeats (a `\\s+` tried at each
space of a run before a `$`, a `[\\w-]*` lookahead at each letter of a word) takes time quadratic
in the run: a 200,000-character chat message searched through `memlane serve` held its event loop
for minutes, and every other user's request with it. Each pattern of every module (and of the
lists and tables modules keep) is run here on texts built to make such a pattern backtrack: a
long run of one character between two others, and long repeats of short pieces. A linear pattern
reads 8,000 characters in well under 50 ms; the quadratic ones this caught took 0.3 s to
minutes. The bound is a hang guard, wide enough for a loaded machine, not a speed target.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time

import memlane

SUBPACKAGES = ("store", "nodes", "graph", "serve", "ui")
RUN = 8_000
# the characters of runs: spaces and line ends, punctuation of both languages, word characters
RUN_CHARACTERS = " \n\t.,;:!?-_*#'\"/()（）。，、；：！？》《“”1Aa我年月日号天"
PIECES = [
    "x-",
    "a1",
    "1 ",
    "Ab ",
    "Aa, ",
    "a ",
    "1-",
    "1.",
    "a.",
    "我a",
    "a我",
    "x@",
    "a:",
    "http://a",
    "on 1st ",
    "5月3日，",
    "the ",
]


def texts() -> list[str]:
    runs = [f"a{char * RUN}x" for char in RUN_CHARACTERS] + [char * RUN for char in RUN_CHARACTERS]
    return runs + [(piece * (RUN // len(piece) + 1))[:RUN] for piece in PIECES]


def patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern a module of memlane holds at its top level or in a list, tuple or
    dict there, by "module.name"."""
    names = {module.name for module in pkgutil.walk_packages(memlane.__path__, "memlane.")}
    for sub in SUBPACKAGES:
        package = importlib.import_module(f"memlane.{sub}")
        names |= {module.name for module in pkgutil.walk_packages(package.__path__, f"memlane.{sub}.")}
    found: dict[str, re.Pattern[str]] = {}  # each pattern once (a module importing another's holds it too)

    def keep(key: str, pattern: re.Pattern[str]) -> None:
        if all(pattern is not kept for kept in found.values()):
            found[key] = pattern

    for name in sorted(names):
        for attr, value in vars(importlib.import_module(name)).items():
            if isinstance(value, re.Pattern):
                keep(f"{name}.{attr}", value)
            elif isinstance(value, (list, tuple, dict)):
                for index, item in enumerate(value.values() if isinstance(value, dict) else value):
                    for candidate in item if isinstance(item, (list, tuple)) else [item]:  # ("kind", pattern) pairs too
                        if isinstance(candidate, re.Pattern):
                            keep(f"{name}.{attr}[{index}]", candidate)
    return found


def test_every_pattern_reads_a_long_text_in_linear_time():
    found = patterns()
    assert len(found) > 100  # the walk reached the modules (130 patterns when this was written)
    slow = []
    for name, pattern in found.items():
        for text in texts():
            started = time.perf_counter()
            pattern.search(text)
            pattern.findall(text)
            seconds = time.perf_counter() - started
            if seconds > 1.0:
                slow.append(
                    f"{name} ({pattern.pattern[:60]!r}) on {text[:12]!r}… ({len(text)} characters): {seconds:.1f} s"
                )
                break
    assert not slow, "\n".join(slow)
