"""The house's arrows, enforced: `ui, serve → memlane → graph → nodes → store` (../shared/ARCHITECTURE.md).

Every import in package code counts, at module level or inside a function, under TYPE_CHECKING
too: a lazy import is still an arrow. The rules:

- every room may import `memlane.config` and `memlane.masking` (the settings, their models kept in
  `memlane.config_store`, `memlane.config_keeping` and `memlane.config_agent`, and the masking of secrets, which import
  nothing else of memlane); `store/` imports no other room;
- `nodes/` imports the store's data modules (records, protocols, errors, ids, scopes), its text
  wing and its breaker, never its Redis, cluster, embedded or embeddings wings, and never Redis;
- `graph/` likewise, plus the queue's keys (`store.schema`); only `graph/queue.py` knows pydocket;
- `memlane/` imports everything below it, never `ui/` or `serve/` (the doors add their commands
  to `memlane` through entry points), and never Redis itself;
- `ui/` and `serve/` import memlane's public API (`memlane`), the modules of the memlane room
  (`memlane.doors` is their way to the graph and the nodes) and the store's data modules
  (`DOOR_STORE_MODULES`: records, errors, ids, hits, scopes, protocols), never the rest of
  `memlane.store`, `memlane.graph` or `memlane.nodes`, and never Redis;
- nothing imports the deprecated `memlane.store.base` (kept for users' code).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("memlane", "store", "nodes", "graph", "ui", "serve")
LEVEL = {"store": 0, "nodes": 1, "graph": 2, "memlane": 3, "ui": 4, "serve": 4}

# what nodes and graph may use of the store: its data modules, the text wing (pure rules) and the
# breaker, never a Redis, cluster, embedded or embeddings module (a name covers its submodules)
STORE_FOR_NODES = {
    "records",
    "protocols",
    "errors",
    "ids",
    "scopes",
    "relations",  # entities and links: records, pure rules and the role, no Redis (store/relations.py)
    "text",
    "models.breaker",
}
STORE_FOR_GRAPH = STORE_FOR_NODES | {"schema", "models.background"}  # background: a context variable, no Redis
# the store's data modules the doors (ui/, serve/) may import: what records hold and how they are named
DOOR_STORE_MODULES = {
    f"memlane.store.{name}" for name in ("records", "errors", "ids", "hits", "scopes", "protocols", "relations")
}
# the settings and the masking of secrets: every room reads them (they import nothing of memlane)
FOUNDATION = {"memlane.config", "memlane.masking"}
REDIS_CLIENTS = ("redis", "redisvl")


def room_of(module: str) -> str | None:
    """The room a `memlane...` module belongs to (None: not memlane's)."""
    parts = module.split(".")
    if parts[0] != "memlane":
        return None
    if len(parts) > 1 and parts[1] in ROOMS[1:]:
        return parts[1]
    return "memlane"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in the file, wherever it sits."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            # `from memlane import graph` names a room too
            if node.module == "memlane":
                found += [(node.lineno, f"memlane.{alias.name}") for alias in node.names if alias.name in ROOMS[1:]]
    return found


def broken_arrows(room: str, module: str) -> str | None:
    """Why importing `module` from `room` breaks the house rule, or None."""
    top = module.split(".")[0]
    target = room_of(module)
    if module == "memlane.store.base" or module.startswith("memlane.store.base."):
        return "memlane.store.base is kept for users' code; import from store.records, .protocols, .errors or .ids"
    if top in REDIS_CLIENTS and room != "store":
        return f"only store/ talks to Redis ({module})"
    if top == "docket":
        return None if room == "graph" else f"only graph/queue.py knows pydocket ({module})"
    if target is None or target == room or module in FOUNDATION:
        return None
    if room == "store":
        return f"store/ may import only {sorted(FOUNDATION)} above it"
    if LEVEL[target] > LEVEL[room]:
        return f"{room}/ may not import {target}/ (arrows point down: ui, serve → memlane → graph → nodes → store)"
    if room in ("ui", "serve") and target != "memlane" and module not in DOOR_STORE_MODULES:
        return f"{room}/ may import only memlane's public API, not {module}"
    if room in ("nodes", "graph") and target == "store":
        allowed = STORE_FOR_NODES if room == "nodes" else STORE_FOR_GRAPH
        part = module.split(".", 2)[2] if module.count(".") >= 2 else ""
        if not any(part == name or part.startswith(name + ".") for name in allowed):
            return f"{room}/ may use the store's records and protocols, not its implementation ({module})"
    return None


def package_files() -> list[tuple[str, Path]]:
    files = [("memlane", path) for path in sorted((ROOT / "memlane").glob("*.py"))]
    for room in ROOMS[1:]:
        files += [(room, path) for path in sorted((ROOT / room).rglob("*.py"))]
    return files


def test_every_import_in_package_code_points_down():
    broken = [
        f"{path.relative_to(ROOT)}:{line}: {module}: {why}"
        for room, path in package_files()
        for line, module in imports_of(path)
        if (why := broken_arrows(room, module)) is not None
    ]
    assert broken == [], "\n".join(broken)


def test_only_the_queue_adapter_knows_pydocket():
    knowing = sorted(
        str(path.relative_to(ROOT))
        for _, path in package_files()
        if any(module.split(".")[0] == "docket" for _, module in imports_of(path))
    )
    assert knowing == ["graph/queue.py"]


def test_the_contract_catches_what_it_forbids():
    """The rules bite: each forbidden arrow is named (a contract that passes everything proves nothing)."""
    assert broken_arrows("serve", "memlane.store.redis.store")
    assert broken_arrows("serve", "memlane.store.text.terms")
    assert broken_arrows("ui", "memlane.graph")
    assert broken_arrows("serve", "memlane.store.records") is None
    assert broken_arrows("ui", "memlane.nodes.llm")
    assert broken_arrows("memlane", "memlane.serve.app")
    assert broken_arrows("nodes", "memlane.store.redis.store")
    assert broken_arrows("graph", "memlane.store.redis.messages")
    assert broken_arrows("store", "memlane.recall")
    assert broken_arrows("memlane", "redis.exceptions")
    assert broken_arrows("graph", "memlane.store.base")
    assert broken_arrows("memlane", "docket")
    assert broken_arrows("serve", "memlane") is None
    assert broken_arrows("serve", "memlane.turns") is None
    assert broken_arrows("memlane", "memlane.store.redis.store") is None
    assert broken_arrows("graph", "memlane.store.schema") is None
    assert broken_arrows("store", "memlane.config") is None


def test_the_public_api_is_what_the_manual_teaches():
    """`memlane.__all__` stays small (issue 47: at most 35 names), and every name in it imports."""
    import memlane

    assert len(memlane.__all__) <= 35, sorted(memlane.__all__)
    assert len(set(memlane.__all__)) == len(memlane.__all__)
    for name in memlane.__all__:
        assert getattr(memlane, name) is not None, name


def test_a_name_taken_out_of_the_public_api_says_where_it_lives():
    import pytest

    import memlane

    with pytest.raises(AttributeError, match=r"import it from memlane\.store\.ids"):
        memlane.check_id  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        memlane.no_such_name  # noqa: B018


# the doors that build the settings' parts from the whole `Settings` (issue 47): the CLI, the public
# entry points, and the builders the doors call; every other function takes the parts it reads
SETTINGS_DOORS = {
    "memlane/cli.py": None,  # every command
    "memlane/cli_operations.py": None,
    "memlane/cli_relations.py": {"cmd_relations"},
    "memlane/cli_support.py": None,
    "memlane/doors.py": {"memory_context"},
    "memlane/memory.py": {"__init__", "open"},
    "memlane/middleware.py": {"__init__"},
    "memlane/tools.py": {"memory_tools"},
    "memlane/langgraph_store.py": {"open"},
    "memlane/recall.py": {"of"},  # RecallParts.of
    "store/redis/store.py": {"open_store"},
}


def functions_taking_settings(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every function with a parameter annotated with the whole `Settings`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for param in params:
                text = ast.unparse(param.annotation) if param.annotation is not None else ""
                if "Settings" in {part.strip(" '\"") for part in text.replace("|", " ").split()}:
                    found.append((node.lineno, node.name))
    return found


def test_below_the_doors_no_function_takes_the_whole_settings():
    taking = []
    for room, path in package_files():
        name = str(path.relative_to(ROOT))
        if room in ("ui", "serve") or name.startswith("memlane/config"):
            continue
        allowed = SETTINGS_DOORS.get(name, set())
        taking += [
            f"{name}:{line}: {function}"
            for line, function in functions_taking_settings(path)
            if allowed is not None and function not in allowed
        ]
    assert taking == [], "take the settings' parts the function reads, not the whole Settings:\n" + "\n".join(taking)


def test_the_settings_check_bites(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def a(settings: Settings) -> None: ...\ndef b(recall: RecallSettings) -> None: ...\n")
    assert functions_taking_settings(sample) == [(1, "a")]
