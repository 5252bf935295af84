"""The README's promises: every Python block runs as written, its commands are CI's.

Each ```python block is run as it stands, in a fresh interpreter, with what a user sets:
REDIS_URL (the test Redis, under a key prefix of its own), OPENAI_BASE_URL (the fake
OpenAI-compatible server of tests/fake_upstream.py) and OPENAI_API_KEY. A block whose first
line says `# needs a running memlane serve` is run against one: `memlane serve`'s app on
uvicorn, with MEMLANE_URL and MEMLANE_KEY set as the block asks. No block is skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import drop_prefix_sync
from fake_upstream import FakeUpstream, Served

from memlane.config import Settings
from memlane.serve.app import create_app
from memlane.serve.config import ApiKey, ServeConfig, hash_api_key
from memlane.testing import ScriptedChatModel, memory_rules

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```", re.M | re.S)
NEEDS_SERVE = "# needs a running memlane serve"
MARKER = re.compile(r"^[ \t]*# --- README: (?P<name>.+?) \(start\) ---\n(?P<body>.*?)^[ \t]*# --- README: (?P=name) \(end\) ---", re.M | re.S)
SERVE_KEY = "readme-key-" + uuid.uuid4().hex


def python_blocks() -> list[tuple[str, str]]:
    """(id, code) of every ```python block of the README, the id naming its line."""
    return [(f"line-{README.count(chr(10), 0, match.start()) + 1}", match["code"]) for match in PYTHON_BLOCK.finditer(README)]


BLOCKS = python_blocks()


def test_every_python_block_is_found():
    assert len(BLOCKS) == README.count("```python") >= 9


@pytest.fixture(scope="module")
def upstream():
    with FakeUpstream(reply="Noted, from the fake model.") as fake:
        yield fake


@pytest.fixture(scope="module")
def served(redis_url, upstream, tmp_path_factory):
    """`memlane serve`'s app on loopback, its persona answered by the fake upstream."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url, key_prefix=prefix, data_dir=tmp_path_factory.mktemp("readme-serve"), openai_api_key=None, openai_base_url=None
    )
    config = ServeConfig(
        keys=[ApiKey(name="readme", tenant="acme", hash=hash_api_key(SERVE_KEY), scopes=("chat", "read", "write"))],
        personas={"assistant": {"model": "fake-model", "base_url": upstream.url}},
    )
    with Served(create_app(config, settings, memory_model=ScriptedChatModel(rules=memory_rules()))) as app:
        yield app.url
    drop_prefix_sync(redis_url, prefix)


@pytest.mark.parametrize(("code"), [code for _, code in BLOCKS], ids=[block_id for block_id, _ in BLOCKS])
def test_readme_python_block_runs_as_written(code, redis_url, upstream, request, tmp_path):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "OPENAI_", "REDIS_"))}
    env = {
        **keep,
        "REDIS_URL": redis_url,
        "MEMLANE_KEY_PREFIX": prefix,
        "MEMLANE_DATA_DIR": str(tmp_path / "data"),
        "OPENAI_BASE_URL": upstream.url,
        "OPENAI_API_KEY": "sk-readme-test",
    }
    if code.startswith(NEEDS_SERVE):
        env |= {"MEMLANE_URL": request.getfixturevalue("served"), "MEMLANE_KEY": SERVE_KEY}
    else:
        assert NEEDS_SERVE not in code, "the mark goes on the block's first line"
    script = tmp_path / "block.py"
    script.write_text(code)
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    finally:
        drop_prefix_sync(redis_url, prefix)
    assert done.returncode == 0, f"the README block failed:\n{textwrap.indent(code, '    ')}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), "every block prints what it did"


def readme_snippets() -> dict[str, str]:
    """Every `# --- README: name (start/end) ---` block of the tests (the curl commands), dedented."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for match in MARKER.finditer(path.read_text()):
            found[f"{path.name}: {match['name']}"] = textwrap.dedent(match["body"]).strip()
    return found


def test_every_tested_snippet_is_in_the_readme_verbatim():
    snippets = readme_snippets()
    assert len(snippets) >= 2
    stale = [name for name, body in snippets.items() if body not in README]
    assert not stale, f"README code differs from the tested code of: {stale}"


def test_the_readme_test_command_is_what_ci_runs():
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command in README
