"""mem0's documented calls against mem0 itself and against memlane (issue 49, items 1 and 2): the
same scripts (tests/mem0_scripts.py) run on mem0 2.x (its local Qdrant store in a temporary
folder, its SQLite history), on memlane's facade (`from memlane import Memory`) and on memlane's
client (`from memlane import MemoryClient`) over a real `memlane serve`, one fake OpenAI-compatible
model answering all three (tests/mem0_upstream.py: the same facts for the same words).

Compared: shapes and outcomes, not wording. Every call answers or raises on both sides; `add`,
`search` and `get_all` answer {"results": [...]} whose items carry mem0's keys; `add` learns the
same facts with mem0's event kinds; a search finds what mem0's finds; `get` sees updates and
deletions as mem0's does; `history` lists the same events in the same order; the writes answer
{"message": ...}. The differences memlane keeps on purpose are allowed by name here and listed in
docs/coming-from.md ("Differences kept on purpose").
"""

from __future__ import annotations

import os

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: it reads this once

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import drop_prefix_sync
from fake_upstream import FakeUpstream
from mem0_scripts import SCRIPTS
from mem0_upstream import fact_of, facts_in, scripted_reply

import memlane

EVENTS = {"ADD", "UPDATE", "DELETE", "NONE"}
ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}  # mem0's MemoryItem
KEPT = {  # mem0's item keys memlane leaves out on purpose, where they are (docs/coming-from.md)
    "role",  # on turns only: a profile entry or a card has no speaker
    "actor_id",
    "run_id",  # on turns only: a profile entry holds across sessions
    "score",  # on search results only (mem0's get answers "score": None)
}


@dataclass
class Call:
    method: str
    answer: Any = None
    error: str | None = None


@dataclass
class Recorder:
    """A Memory (or client) whose every call is recorded with its answer, or the error it raised."""

    target: Any
    calls: list[Call] = field(default_factory=list)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                answer = method(*args, **kwargs)
            except Exception as error:
                self.calls.append(Call(name, error=f"{type(error).__name__}: {error}"))
                raise
            self.calls.append(Call(name, answer=json.loads(json.dumps(answer, default=str))))
            return answer

        return call


class Doors:
    """`Memory` as each script calls it: `Memory()` and `Memory.from_config({...})`, recorded."""

    def __init__(self, make: Callable[[dict[str, Any] | None], Any]) -> None:
        self.make = make
        self.opened: list[Recorder] = []

    def __call__(self) -> Recorder:
        return self._opened(self.make(None))

    def from_config(self, config: dict[str, Any]) -> Recorder:
        return self._opened(self.make(config))

    def _opened(self, target: Any) -> Recorder:
        self.opened.append(Recorder(target))
        return self.opened[-1]

    def calls(self) -> list[Call]:
        return [call for recorder in self.opened for call in recorder.calls]

    def close(self) -> None:
        for recorder in self.opened:
            getattr(recorder.target, "close", lambda: None)()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(reply=scripted_reply) as fake:
        yield fake


@pytest.fixture(scope="module")
def model_environment(upstream: FakeUpstream) -> Iterator[None]:
    """OPENAI_BASE_URL / OPENAI_API_KEY on the fake model, for mem0 and memlane alike."""
    saved = {name: os.environ.get(name) for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    os.environ.update({"OPENAI_BASE_URL": upstream.url, "OPENAI_API_KEY": "sk-differential"})
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def run_on_mem0(script: Callable[..., None], workdir: Path) -> list[Call]:
    from mem0 import Memory as Mem0

    def make(config: dict[str, Any] | None) -> Any:
        config = dict(config or {})
        config.setdefault(
            "vector_store", {"provider": "qdrant", "config": {"collection_name": "m", "path": str(workdir / "qdrant")}}
        )
        config.setdefault("history_db_path", str(workdir / "history.db"))
        return Mem0.from_config(config)

    doors = Doors(make)
    try:
        script(doors, workdir)
    finally:
        doors.close()
    return doors.calls()


_MEM0_CALLS: dict[str, list[Call]] = {}


@pytest.fixture
def mem0_calls(model_environment: None, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[Call]]:
    """mem0's recorded calls for a script (run once per module)."""

    def calls(script: Callable[..., None]) -> list[Call]:
        if script.__name__ not in _MEM0_CALLS:
            _MEM0_CALLS[script.__name__] = run_on_mem0(script, tmp_path_factory.mktemp(f"mem0-{script.__name__}"))
        return _MEM0_CALLS[script.__name__]

    return calls


@pytest.fixture
def memlane_environment(model_environment: None, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """What a memlane user sets: Redis, a key prefix of the test's own, the metadata field the scripts filter on."""
    from memlane.config import get_settings

    prefix = f"t{uuid.uuid4().hex[:10]}"
    for name, value in {
        "REDIS_URL": redis_url,
        "MEMLANE_KEY_PREFIX": prefix,
        "MEMLANE_DATA_DIR": str(tmp_path / "data"),
        "MEMLANE_METADATA_FIELDS": '{"category": "tag"}',
        "MEMLANE_LLM_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield prefix
    get_settings.cache_clear()
    drop_prefix_sync(redis_url, prefix)


# --- what is compared ---------------------------------------------------------------------------------
def stated(text: str) -> str:
    """What a memory states, whoever words it: a scripted fact (mem0's text, memlane's entry line, or
    a turn holding the fact's words), else the text itself."""
    found = fact_of(text) or next((fact for *_, fact in facts_in(text)), None)
    if found is not None:
        return found
    slot, _, content = text.partition(": ")
    return content if " / " in slot else text  # a profile entry's line: its content


def _results(call: Call) -> list[dict[str, Any]]:
    assert isinstance(call.answer, dict) and isinstance(call.answer.get("results"), list), (
        f"{call.method} answers {{'results': [...]}}, not {call.answer!r}"
    )
    return call.answer["results"]


def compare(theirs: Call, ours: Call, earlier: list[Call]) -> None:
    """One call of a script, mem0's and memlane's: shapes and outcomes."""
    where = f"{theirs.method}"
    assert ours.method == theirs.method
    assert (ours.error is None) == (theirs.error is None), f"{where}: mem0 {theirs.error}, memlane {ours.error}"
    if theirs.error is not None:
        return
    if theirs.method == "add":
        mine, their = _results(ours), _results(theirs)
        assert all({"id", "memory", "event"} <= set(item) and item["event"] in EVENTS for item in mine), mine
        learned = {stated(item["memory"]) for item in mine if item.get("kind") != "event" and item["event"] != "DELETE"}
        assert {stated(item["memory"]) for item in their} <= learned | {""}, (their, mine)
        if any(item.get("role") for item in their):  # infer=False: the same turns, new (ADD) or held (NONE)
            assert [item["memory"] for item in mine] == [item["memory"] for item in their]
            repeated = any(c.method == "add" for c in earlier)
            assert {item["event"] for item in mine} <= ({"ADD", "NONE"} if repeated else {"ADD"})
        else:
            assert {fact_of(item["memory"]) for item in mine if item.get("kind") == "profile"} == {
                fact_of(item["memory"]) for item in their
            }
    elif theirs.method in ("search", "get_all"):
        mine, their = _results(ours), _results(theirs)
        for item in mine:
            assert ITEM_KEYS <= set(item), f"{where}: {sorted(ITEM_KEYS - set(item))} missing from {item}"
            if theirs.method == "search":
                assert 0 <= item["score"] <= 1
        their_keys = set().union(*(set(item) for item in their)) if their else set()
        our_keys = set().union(*(set(item) for item in mine)) if mine else set()
        assert not mine or their_keys - KEPT <= our_keys, f"{where}: {sorted(their_keys - KEPT - our_keys)} missing"
        found_by_them = {stated(item["memory"]) for item in their}
        found_by_us = {stated(item["memory"]) for item in mine}
        if theirs.method == "get_all":
            assert {f for f in found_by_them if fact_of(f)} == {f for f in found_by_us if fact_of(f)}, (their, mine)
            their_turns = {item["memory"] for item in their if item.get("role")}
            our_turns = {item["memory"] for item in mine if item.get("kind") == "message"}
            remembered = any(
                c.method == "add" and c.answer["results"] and "role" not in c.answer["results"][0] for c in earlier
            )
            assert our_turns == their_turns or (remembered and our_turns <= their_turns), (their_turns, our_turns)
        else:
            assert found_by_them <= found_by_us, f"{where}: mem0 found {found_by_them}, memlane {found_by_us}"
    elif theirs.method == "get":
        assert (ours.answer is None) == (theirs.answer is None), (theirs.answer, ours.answer)
        if theirs.answer is not None:
            assert ITEM_KEYS | (set(theirs.answer) - KEPT) <= set(ours.answer), (theirs.answer, ours.answer)
            assert ours.answer["memory"].endswith(theirs.answer["memory"]) or stated(ours.answer["memory"]) == stated(
                theirs.answer["memory"]
            )
    elif theirs.method == "history":
        assert [entry["event"] for entry in ours.answer] == [entry["event"] for entry in theirs.answer]
        for entry in ours.answer:
            assert {"memory_id", "old_memory", "new_memory", "event", "created_at"} <= set(entry)
    elif theirs.method in ("update", "delete", "delete_all"):
        assert isinstance(ours.answer, dict) and "message" in ours.answer, ours.answer
    elif theirs.method == "reset":
        assert ours.answer is None or "message" in ours.answer


def compare_runs(theirs: list[Call], ours: list[Call]) -> int:
    assert [c.method for c in ours] == [c.method for c in theirs], "the scripts made the same calls"
    for number, (their_call, our_call) in enumerate(zip(theirs, ours, strict=True)):
        compare(their_call, our_call, theirs[:number])
    return len(theirs)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
def test_the_facade_answers_as_mem0_does(script, mem0_calls, memlane_environment, tmp_path):
    theirs = mem0_calls(script)
    doors = Doors(lambda config: memlane.Memory() if config is None else memlane.Memory.from_config(config))
    try:
        script(doors, tmp_path)
    finally:
        doors.close()
    assert compare_runs(theirs, doors.calls()) >= 2


# --- through the client, against memlane serve ---------------------------------------------------------
CLIENT_KEYS = {script.__name__: f"key-{script.__name__}-{uuid.uuid4().hex[:8]}" for script in SCRIPTS}


@pytest.fixture(scope="module")
def served(model_environment: None, upstream: FakeUpstream, redis_url: str, tmp_path_factory: pytest.TempPathFactory):
    """`memlane serve`'s app on loopback, its memory model the fake one (through OPENAI_BASE_URL, as a
    user configures it); a key and a tenant of its own per script."""
    from fake_upstream import Served

    from memlane.config import Settings
    from memlane.serve.app import create_app
    from memlane.serve.config import ApiKey, ServeConfig, hash_api_key

    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        redis_url=redis_url,
        key_prefix=prefix,
        data_dir=tmp_path_factory.mktemp("mem0-serve"),
        openai_api_key="sk-differential",
        openai_base_url=upstream.url,
        metadata_fields={"category": "tag"},
        llm_max_retries=0,
        memory_idle_flush_seconds=0,
    )
    keys = [
        ApiKey(name=name, tenant=name, hash=hash_api_key(key), scopes=("read", "write"))
        for name, key in CLIENT_KEYS.items()
    ]
    with Served(create_app(ServeConfig(keys=keys, personas={}), settings)) as app:
        yield app.url
    drop_prefix_sync(redis_url, prefix)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.__name__)
def test_the_client_answers_as_mem0_does(script, mem0_calls, served, tmp_path):
    theirs = mem0_calls(script)
    doors = Doors(lambda config: memlane.MemoryClient(served, CLIENT_KEYS[script.__name__]))
    try:
        script(doors, tmp_path)
    finally:
        doors.close()
    assert compare_runs(theirs, doors.calls()) >= 2


async def test_async_memory_as_mem0_writes_it(memlane_environment):
    # mem0's AsyncMemory page: `memory = AsyncMemory()`, then every call awaited; from_config is not awaited
    memory = memlane.AsyncMemory()
    try:
        added = await memory.add("I'm planning a trip to Tokyo next month.", user_id="kim")
        assert [fact_of(r["memory"]) for r in added["results"] if r["kind"] == "profile"] == [
            "Planning a trip to Tokyo next month"
        ]
        found = await memory.search("trip to Tokyo", filters={"user_id": "kim"}, top_k=3)
        assert any(fact_of(hit["memory"]) for hit in found["results"])
        memory_id = added["results"][0]["id"]
        await memory.update(memory_id, "Planning a trip to Kyoto next month")
        assert [change["event"] for change in await memory.history(memory_id)] == ["ADD", "UPDATE"]
        assert (await memory.delete_all(user_id="kim"))["message"]
    finally:
        await memory.aclose()
    configured = memlane.AsyncMemory.from_config({"llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano"}}})
    try:
        assert configured.model is None and (await configured.get_all(filters={"user_id": "kim"}))["results"] == []
        assert configured.model is not None  # opened at the first call, with the configured model
    finally:
        await configured.aclose()
