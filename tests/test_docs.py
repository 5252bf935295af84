"""The manual's promises: every block of the README and of docs/ runs as written, and the site builds.

One mechanism for every page (README.md and docs/**/*.md):

- Each ```python block is run as it stands, in a fresh interpreter, with what a user sets:
  REDIS_URL (the test Redis, under a key prefix of its own), OPENAI_BASE_URL (the fake
  OpenAI-compatible server of tests/fake_upstream.py, answering as tests/mem0_upstream.py scripts
  it) and OPENAI_API_KEY. A block whose first
  line says `# needs a running memlane serve` is run against one: `memlane serve`'s app on
  uvicorn, with MEMLANE_URL and MEMLANE_KEY set as the block asks. No Python block is skipped.
- Each ```bash block is run the same way (bash, `memlane` on the PATH, in an empty folder),
  unless it is code a test holds verbatim (a `# --- docs: name (start) ---` snippet, such as the
  curl calls tests/serve/test_serve.py runs), the CI command (tests/ci), or one of NOT_RUN: a
  block that starts something that runs until it is stopped, or installs, each with the test
  that covers what it starts. Every `memlane` command of every shell block is parsed by the CLI's
  own parser, run or not, so a renamed command or option fails here.
- Each ```json block is an MCP client configuration, checked by tests/serve/test_mcp.py.
- The site builds with `mkdocs build --strict`, where a broken link or anchor is a warning, so a
  failure; and it fetches nothing.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import drop_prefix_sync
from fake_upstream import FakeUpstream, Served
from mem0_upstream import scripted_reply

from memlane.cli import build_parser
from memlane.config import Settings
from memlane.serve.app import create_app
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key
from memlane.testing import ScriptedChatModel, memory_rules

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<code>.*?)^```", re.M | re.S)
NEEDS_SERVE = "# needs a running memlane serve"
MARKER = re.compile(
    r"^[ \t]*# --- docs: (?P<name>.+?) \(start\) ---\n(?P<body>.*?)^[ \t]*# --- docs: (?P=name) \(end\) ---",
    re.M | re.S,
)
SERVE_KEY = "docs-key-" + uuid.uuid4().hex
CI_COMMAND = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
# shell blocks the tests do not run, by their first line: why, and what runs what they start
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/memlane demo": (
        "installs memlane, then starts the chat app, which runs until stopped (tests/ui drive the app)"
    ),
    "memlane redis start --cluster 3": "starts a six-node Redis Cluster (tests/store's cluster fixture starts the same one)",
    "memlane serve hash-key": "ends in `memlane serve`, which runs until stopped (tests/serve run its app and `hash-key`)",
    "memlane worker": "runs until stopped (tests/graph run the worker's tasks)",
    "memlane redis cluster-check": "needs a Redis Cluster (tests/store/test_shard_indexes.py runs it on the test cluster)",
}
SHELL = ("bash", "sh")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def fenced_blocks() -> list[Block]:
    """Every fenced block of every page, with the line its fence opens on."""
    blocks = []
    for path in PAGES:
        text = path.read_text()
        for match in FENCE.finditer(text):
            page = str(path.relative_to(ROOT))
            blocks.append(Block(page, text.count("\n", 0, match.start()) + 1, match["lang"], match["code"]))
    return blocks


def snippets_held_by_tests() -> dict[str, str]:
    """Every `# --- docs: name (start/end) ---` snippet of the tests, dedented."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for match in MARKER.finditer(path.read_text()):
            found[f"{path.name}: {match['name']}"] = textwrap.dedent(match["body"]).strip()
    return found


BLOCKS = fenced_blocks()
PYTHON_BLOCKS = [block for block in BLOCKS if block.lang == "python"]
SNIPPETS = snippets_held_by_tests()


def held_by_a_test(block: Block) -> bool:
    return block.code.strip() in SNIPPETS.values() or block.code.strip() == CI_COMMAND


def not_run_because(block: Block) -> str | None:
    first = block.code.splitlines()[0]
    return next((why for start, why in NOT_RUN.items() if first.startswith(start)), None)


RUN_SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELL and not held_by_a_test(b) and not_run_because(b) is None]


def test_every_block_is_found_and_has_a_known_language():
    assert sum(path.read_text().count("```") for path in PAGES) == 2 * len(BLOCKS)
    assert len(PYTHON_BLOCKS) >= 9 and len(PAGES) >= 15
    unknown = [block.id for block in BLOCKS if block.lang not in ("python", "json", *SHELL)]
    assert not unknown, f"blocks without a language the tests know how to run: {unknown}"


def test_every_not_run_block_is_still_in_the_docs():
    firsts = [block.code.splitlines()[0] for block in BLOCKS if block.lang in SHELL]
    stale = [start for start in NOT_RUN if not any(first.startswith(start) for first in firsts)]
    assert not stale, f"NOT_RUN names blocks no page has any more: {stale}"


def memlane_commands(code: str) -> list[list[str]]:
    """The arguments of every `memlane ...` command of a shell block (after `VAR=value`s, across `&&`)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word not in ("&&", "||", ";", ">", "|"):
                command.append(word)
                continue
            while command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", command[0]):
                command.pop(0)
            if command and Path(command[0]).name == "memlane":
                commands.append([arg for arg in command[1:] if not arg.startswith(">")])
            command = [] if word != ">" else ["redirected"]
    return commands


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in SHELL], ids=lambda b: b.id)
def test_every_memlane_command_of_a_shell_block_parses(block: Block):
    parser = build_parser()
    for arguments in memlane_commands(block.code):
        try:
            parser.parse_args(arguments)
        except SystemExit:
            pytest.fail(f"`memlane {' '.join(arguments)}` ({block.id}) is not a command the CLI takes")


def test_the_shell_blocks_are_counted():
    shell = [b for b in BLOCKS if b.lang in SHELL]
    assert (
        len(RUN_SHELL_BLOCKS) >= 2 and any(held_by_a_test(b) for b in shell) and any(not_run_because(b) for b in shell)
    )
    assert sum(len(memlane_commands(b.code)) for b in shell) >= 10


@pytest.fixture(scope="module")
def upstream():
    # a reply model, and mem0's and memlane's memory models (JSON for their prompts): README's mem0 block adds
    with FakeUpstream(reply=scripted_reply) as fake:
        yield fake


@pytest.fixture(scope="module")
def served(redis_url, upstream, tmp_path_factory):
    """`memlane serve`'s app on loopback, its persona answered by the fake upstream."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url,
        key_prefix=prefix,
        data_dir=tmp_path_factory.mktemp("docs-serve"),
        openai_api_key=None,
        openai_base_url=None,
    )
    config = ServeConfig(
        keys=[ApiKey(name="docs", tenant="acme", hash=hash_api_key(SERVE_KEY), scopes=("chat", "read", "write"))],
        personas={"assistant": {"model": "fake-model", "base_url": upstream.url, "memory_scope": "user"}},
    )
    # a memory model that learns nothing it was not told (memory_rules() alone gives every user the
    # canned facts of a Chinese chat, which the pages' printed output would then show)
    memory_model = ScriptedChatModel(rules=memory_rules(summary="", facts=[], tags=[]), default="{}")
    with Served(create_app(config, settings, memory_model=memory_model)) as app:
        yield app.url
    drop_prefix_sync(redis_url, prefix)


def user_environment(redis_url: str, upstream: FakeUpstream, tmp_path: Path, prefix: str) -> dict[str, str]:
    """What a user sets: the test Redis under a prefix of its own, the fake model server, `memlane` on the PATH."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "OPENAI_", "REDIS_"))}
    return {
        **keep,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), keep.get("PATH", "")]),
        "REDIS_URL": redis_url,
        "MEMLANE_KEY_PREFIX": prefix,
        "MEMLANE_DATA_DIR": str(tmp_path / "data"),
        "OPENAI_BASE_URL": upstream.url,
        "OPENAI_API_KEY": "sk-docs-test",
    }


@dataclass(frozen=True)
class Teaches:
    """What an example block is about: the line of its output that shows it, which must be there
    and come first among the lines it prints of its kind; `only`: every line it prints."""

    page: str
    code: str  # a piece of the block's code that picks it out (line numbers move as pages grow)
    first: str  # the line (a part of it) the example is about
    among: str = ""  # the printed lines it must come first among (those this pattern finds); all when empty
    only: tuple[str, ...] = ()
    never: tuple[str, ...] = ("凌晨2点", "加班")  # memory_rules()'s canned facts, which no example's chat says


# the examples whose output says what they teach (issue 55, item 3): each block's printed lines are
# checked by test_python_block_runs_as_written, and the page shows what really prints
TEACHES = [
    Teaches(
        "README.md",
        'context=MemoryAgentContext(user_id="bob")',
        "lifestyle / diet: 喜欢黑咖啡，不加糖",
        only=("lifestyle / diet: 喜欢黑咖啡，不加糖",),  # nothing the conversation did not say
    ),
    Teaches(
        "docs/doors/agent.md",
        'context=MemoryAgentContext(user_id="bob")',
        "lifestyle / diet: 喜欢黑咖啡，不加糖",
        only=("lifestyle / diet: 喜欢黑咖啡，不加糖",),
    ),
    Teaches("docs/doors/agent.md", 'user_id="carol"', "1 added, 0 updated", only=("1 added, 0 updated",)),
    Teaches("docs/doors/agent.md", 'user_id="dan"', "['喜欢黑咖啡，不加糖']", only=("['喜欢黑咖啡，不加糖']",)),
    Teaches(
        "docs/coming-from.md",
        'Message(id="c1", user_id="erin"',
        "黑咖啡",
        among=r"^\d\.\d\d ",
    ),
    Teaches("docs/coming-from.md", "with Memory(model=model) as memory:", "ADD lifestyle / diet: 喜欢黑咖啡，不加糖"),
    Teaches("docs/concepts/store.md", 'text="The track opens at 6 am"', "The track opens at 6 am", among=r"^- "),
    Teaches("docs/doors/serve.md", 'put_profile("home", "city", "Lyon"', "home / city: Lyon", among=r"^\d\.\d\d "),
]


def teaches(block: Block) -> Teaches | None:
    return next((t for t in TEACHES if t.page == block.page and t.code in block.code), None)


def test_every_example_that_teaches_is_found():
    found = [t for t in TEACHES if any(teaches(block) == t for block in PYTHON_BLOCKS)]
    assert found == TEACHES, f"examples no page holds any more: {[t.page for t in TEACHES if t not in found]}"


def check_what_it_teaches(block: Block, printed: str) -> None:
    """The line the example is about is printed, and first; and, where the page says so, alone."""
    about = teaches(block)
    if about is None:
        return
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    said = [line for line in lines if any(word in line for word in about.never)]
    assert not said, f"{block.id} prints what its conversation never said: {said}"
    if about.only:
        assert lines == list(about.only), f"{block.id} prints {lines}, not only {list(about.only)}"
    among = [line for line in lines if re.search(about.among, line)]
    assert among and about.first in among[0], (
        f"{block.id} is about {about.first!r}, which is not its first line of {about.among!r}:\n{printed}"
    )


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs_as_written(block: Block, redis_url, upstream, request, tmp_path):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    env = user_environment(redis_url, upstream, tmp_path, prefix)
    if block.code.startswith(NEEDS_SERVE):
        env |= {"MEMLANE_URL": request.getfixturevalue("served"), "MEMLANE_KEY": SERVE_KEY}
    else:
        assert NEEDS_SERVE not in block.code, "the mark goes on the block's first line"
    script = tmp_path / "block.py"
    script.write_text(block.code)
    try:
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
        )
    finally:
        drop_prefix_sync(redis_url, prefix)
    assert done.returncode == 0, (
        f"the block at {block.id} failed:\n{textwrap.indent(block.code, '    ')}\n{done.stderr[-4000:]}"
    )
    assert done.stdout.strip(), "every block prints what it did"
    check_what_it_teaches(block, done.stdout)


@pytest.mark.parametrize("block", RUN_SHELL_BLOCKS, ids=lambda b: b.id)
def test_shell_block_runs_as_written(block: Block, redis_url, upstream, tmp_path):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    env = user_environment(redis_url, upstream, tmp_path, prefix)
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        drop_prefix_sync(redis_url, prefix)
    assert done.returncode == 0, (
        f"the block at {block.id} failed:\n{textwrap.indent(block.code, '    ')}\n{done.stderr[-4000:]}"
    )


def test_every_tested_snippet_is_in_the_docs_verbatim():
    assert len(SNIPPETS) >= 3
    pages = "\n".join(path.read_text() for path in PAGES)
    stale = [name for name, body in SNIPPETS.items() if body not in pages]
    assert not stale, f"the docs' code differs from the tested code of: {stale}"


# A page's word that memlane lacks something ("does not … yet", "is not supported", "unsupported")
# goes stale without a sound when the thing lands: docs/coming-from.md said the Memory facade did
# not pass filters yet long after it did (b0f8810). Each such claim names the test that proves it
# (CHECKED_LIMITS), or says how far a user's own data has got rather than what memlane lacks
# (STATE_NOT_LIMIT: "the turns not remembered yet"); anything else fails here, to be checked or dropped.
LIMIT_CLAIM = re.compile(
    r"\b(?:(?:does|do|is|are|can|has|have)(?:n['’]t| not)\b[^.|:;]{0,80}?\byet\b"
    r"|not\b[^.|:;]{0,60}?\byet\b|yet to be\b|unsupported|not (?:yet )?(?:supported|implemented|available)|no support)",
    re.I,
)
STATE_NOT_LIMIT = (
    "not yet remembered",  # a user's turns no memory run has read
    "not remembered yet",
    "none remembered yet",
    "not indexed yet",  # a turn between its write and its search entry (bench/cluster.py)
    "not searchable yet",  # the index backlog's messages (memlane_index_backlog_messages)
)
CHECKED_LIMITS: dict[str, str] = {  # words of the claim: the test that fails when it stops being true
    # docs/operations/cluster.md: redis-py 8.1 fails inside itself on a node its map did not hold yet,
    # and the store says so as Redis away
    "its node map did not hold yet": (
        "tests/store/test_cluster.py::test_a_call_whose_connection_redis_py_closed_under_it_is_redis_unavailable"
    ),
}


def limit_claims(text: str) -> list[str]:
    """The claims of `text` that memlane lacks something, each as its sentence (or table cell)."""
    flat = re.sub(r"\s+", " ", text)
    claims = []
    for match in LIMIT_CLAIM.finditer(flat):
        start = max(flat.rfind(". ", 0, match.start()), flat.rfind("|", 0, match.start())) + 1
        ends = [end for end in (flat.find(". ", match.end()), flat.find("|", match.end())) if end >= 0]
        claims.append(flat[start : min(ends, default=len(flat))].strip())
    return claims


def test_the_limit_claim_finder_finds_the_stale_one():
    stale = "The Memory facade takes `filters` but does not pass them to search yet."
    assert limit_claims(stale) and limit_claims("Streaming is unsupported.") and limit_claims("not supported")
    assert limit_claims("the turns not remembered yet")  # found, then let through by STATE_NOT_LIMIT


def test_every_claim_that_memlane_lacks_something_is_checked_by_a_test():
    unchecked = []
    for path in PAGES:
        for claim in limit_claims(path.read_text()):
            if any(state in claim for state in STATE_NOT_LIMIT):
                continue
            test = next((test for words, test in CHECKED_LIMITS.items() if words in claim), None)
            if test is None:
                unchecked.append(f"{path.relative_to(ROOT)}: {claim!r}")
                continue
            file, _, name = test.partition("::")
            assert f"def {name}(" in (ROOT / file).read_text(), f"{test} (checking {claim!r}) is gone"
    assert not unchecked, "claims that memlane lacks something, checked by no test: check or drop them:\n" + "\n".join(
        unchecked
    )


def test_the_readme_links_to_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert len(links) >= 15
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, f"the README links to pages docs/ does not have: {missing}"


def test_the_readme_test_command_is_what_ci_runs():
    assert CI_COMMAND in (ROOT / "README.md").read_text()


# --- the site ------------------------------------------------------------------------------------------
BUILD = r"""
# --- docs: build the site (start) ---
.venv/bin/python -m mkdocs build --strict --site-dir site
# --- docs: build the site (end) ---
"""


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """The build command of docs/index.md, with this interpreter and a site folder of the test's own."""
    (command,) = [line for line in BUILD.strip().splitlines() if not line.startswith("# ---")]
    arguments = shlex.split(command)
    arguments[0], arguments[-1] = sys.executable, str(site)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [*arguments, "--config-file", str(config)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
    )


def test_the_site_builds_strict_with_links_and_anchors_checked(tmp_path):
    done = build_site(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    built = {str(path.relative_to(tmp_path / "site")) for path in (tmp_path / "site").rglob("index.html")}
    pages = {str(path.relative_to(ROOT / "docs").with_suffix("")) for path in (ROOT / "docs").rglob("*.md")}
    assert {f"{page}/index.html" for page in pages if page != "index"} | {"index.html"} <= built


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    subprocess.run(["cp", "-r", str(ROOT / "docs"), str(docs)], check=True)
    (docs / "coming-from.md").write_text(
        (docs / "coming-from.md").read_text()
        + "\n[gone](concepts/no-such-page.md) and [lost](concepts/recall.md#no-such-anchor)\n"
    )
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    hooks = [str(ROOT / hook) for hook in config.get("hooks", [])]  # named relative to the config's folder
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({**config, "docs_dir": str(docs), "hooks": hooks}))
    done = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr and "no-such-anchor" in done.stderr


def test_the_site_fetches_nothing():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["theme"]["font"] is False  # no web fonts
    plugins = [plugin if isinstance(plugin, str) else next(iter(plugin)) for plugin in config.get("plugins", [])]
    assert set(plugins) <= {"search"}, "a plugin that downloads (social, privacy, ...) would need the network"
    assert config["strict"] is True
    assert config["validation"]["links"] == {
        "not_found": "warn",
        "anchors": "warn",
        "absolute_links": "warn",
        "unrecognized_links": "warn",
    }
