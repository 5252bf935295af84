"""The `memlane` command: the demo, the embedded Redis Stack, and a user's data.

    memlane demo                      the chat app on embedded defaults
    memlane redis start|stop|status   the embedded Redis Stack (kept running by `start`; URLs masked
                                      unless --show-password); `start --cluster 3 [--replicas 1]`: a Redis Cluster
    memlane redis cluster-check [--fix] every memory index on every primary of REDIS_URL's cluster, with its
                                      documents; --fix drops duplicate and stale ones and makes missing ones
    memlane worker                    run queued memory-graph runs (beside apps on the same Redis)
    memlane runs [retry|drop ID|--all] the parked runs: memory-graph runs that failed every retry
    memlane gc [--user ID] [--recount] remove what Redis expiry cannot (listings of expired records, sessions
                                      with no message left, orphaned search entries, quota usage) and say what
    memlane mcp --user ID             one user's memory as MCP tools over stdio (for MCP clients)
    memlane serve [--config FILE]     the HTTP service (OpenAI-compatible chat with memory, memories API, /mcp)
    memlane serve hash-key [KEY]      a new API key (or KEY) and the hash line for the configuration file
    memlane search USER QUERY         hybrid search over a user's memories
    memlane export USER               everything of a user, as JSON
    memlane review USER [confirm|drop ID...] facts held for review (under memory_min_confidence)
    memlane relations USER [--past|--as-of T] the links between the people, places and things of a user
    memlane forget USER TEXT          forget what the user said about something ("peanuts"), or one memory by id
                                      (--dry-run: print what would go, change nothing)
    memlane delete-user USER [--yes]  delete everything of a user (asks first on a terminal)
    memlane config [--markdown]       the settings in force, secrets masked (or the README table)
    memlane --version                 the installed version

Each command imports what it uses when it runs: `memlane --help` and `memlane --version` load
neither the settings nor Redis, LangChain, Gradio or the graph (bench/cli_startup.py times them).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.cli_operations import cmd_gc, cmd_redis, cmd_review, cmd_runs, cmd_worker, work  # noqa: F401  (work: tests drive it)
from memlane.cli_relations import add_relations_parser
from memlane.cli_support import error_sentence, masked_url, run_async, with_store

if TYPE_CHECKING:
    from memlane.config import Settings

DEMO_USER = "demo-user"
DEMO_MEMORIES = [
    ("profile", "饮食偏好 / 咖啡: 喜欢黑咖啡，不加糖"),
    ("profile", "作息 / 睡眠: 最近总是凌晨 2 点才睡，白天很困"),
    ("profile", "工作 / 加班: 连续两周都在加班"),
    ("profile", "work / role: backend engineer at a logistics start-up in Lyon"),
    ("profile", "interests / sport: goes trail running on weekends"),
    ("event", "Asked for a recipe for Sichuan mapo tofu and said spicy food is fine"),
]
DEMO_QUERIES = ["我喜欢喝什么咖啡？", "what does the user do for work", "加班", "running"]


async def store_demo(store: Any) -> None:
    """Store a few bilingual memories and print hybrid searches over them."""
    from memlane.store.records import Memory, Message

    await store.delete_user(DEMO_USER)
    await store.add_messages(
        [
            Message(
                id="demo-1", user_id=DEMO_USER, session_id="demo", role="user", content="顺便，我喜欢黑咖啡，不加糖。"
            )
        ]
    )
    await store.add_memories(
        [
            Memory(id=f"demo-{i}", user_id=DEMO_USER, kind=kind, text=text)
            for i, (kind, text) in enumerate(DEMO_MEMORIES)
        ]
    )
    for query in DEMO_QUERIES:
        print(f"\n? {query}")
        for hit in await store.search_memories(DEMO_USER, query, limit=3):
            print(f"  {hit.relevance:.3f}  [{hit.memory.kind}] {hit.memory.text}")


def demo_banner(settings: Settings, redis_url: str | None, app_url: str) -> str:
    """What `memlane demo` uses: the model, the Redis (password masked), where the data lives."""
    from memlane.models import HOW_TO_CONFIGURE

    if settings.models.has_chat_model:
        where = settings.models.openai_base_url or "OpenAI"
        model = f"{settings.models.chat_model} at {where}"
        if settings.models.memory_model_name != settings.models.chat_model:
            model += f" (memory graph: {settings.models.memory_model_name})"
    else:
        model = "none. " + HOW_TO_CONFIGURE
    if settings.store.redis_url:
        redis_line = f"{masked_url(settings.store.redis_url)} (REDIS_URL); keys under {settings.store.key_prefix}:"
    else:
        redis_line = (
            f"embedded Redis Stack at {masked_url(redis_url or '?')}, data in {Path(settings.store.data_dir) / 'redis'}"
        )
    return "\n".join(
        [
            f"memlane demo: chat model {model}",
            f"memlane demo: Redis {redis_line}",
            f"memlane demo: open {app_url} (Ctrl-C stops)",
        ]
    )


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async def search(store: Any) -> None:
        hits = await store.search_memories(args.user, args.query, limit=args.limit)
        if args.json:
            from memlane.tools import shown_hit

            print(json.dumps({"results": [shown_hit(hit) for hit in hits]}, ensure_ascii=False))
            return
        for hit in hits:
            sources = ",".join(hit.memory.source_message_ids)
            weak = " weak" if hit.weak else ""
            # the memory id first: what `memlane forget USER ID` takes (the sources are messages' ids)
            print(
                f"{hit.memory.id}\t{hit.relevance:.3f}{weak}\t{hit.memory.kind}\t{hit.memory.attributed_text}\t{sources}"
            )
        if not hits:
            print(
                f"no memory of {args.user!r} matches (a user of `memlane serve` is named with --tenant)",
                file=sys.stderr,
            )

    run_async(lambda: with_store(settings, search))
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    import time

    from tqdm import tqdm

    from memlane.doors import memory_context
    from memlane.import_stream import checked_jsonl, import_file, is_jsonl
    from memlane.importing import read_file, remember_imported
    from memlane.models import HOW_TO_CONFIGURE, memory_model_from_settings

    path = Path(args.file)
    # a JSONL export is streamed (memlane/import_stream.py): checked here line by line, never held whole
    streamed = is_jsonl(path)
    if streamed:
        total = checked_jsonl(path, args.user, session_id=args.session, user_speaker=args.user_speaker)
    else:
        total = len(read_file(path, args.user, session_id=args.session, user_speaker=args.user_speaker))
    model = memory_model_from_settings(settings.models) if args.remember else None

    async def bring_in(store: Any) -> None:
        context = memory_context(settings, store, model) if model is not None else None
        with (
            tqdm(total=total, unit="msg", desc="stored", file=sys.stderr) as stored_bar,
            tqdm(total=0, unit="window", desc="remembered", file=sys.stderr, disable=context is None) as window_bar,
        ):

            def windows(done: int, total: int) -> None:
                window_bar.total = total
                window_bar.n = done
                window_bar.refresh()

            started = time.perf_counter()
            read, added = await import_file(
                store,
                path,
                args.user,
                session_id=args.session,
                user_speaker=args.user_speaker,
                batch_messages=settings.imports.batch_messages,
                stored=stored_bar.update,
                checked=streamed,
            )
            seconds = time.perf_counter() - started
            result = await remember_imported(store, args.user, context, windows) if context is not None else None
        print(f"{read} messages read, {added} new ({read / max(seconds, 1e-9):.0f} messages/s stored and embedded)")
        if result is not None:
            print(
                f"remembered in {result.windows} window(s): {result.message_count} messages, "
                f"{len(result.added)} profile entries added, {len(result.updated)} updated, "
                f"{len(result.event_ids)} events"
            )
        elif args.remember:
            print(
                "not remembered yet: " + HOW_TO_CONFIGURE.replace("restart", "run `memlane import` again"),
                file=sys.stderr,
            )

    run_async(lambda: with_store(settings, bring_in))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    async def export(store: Any) -> None:
        print((await store.export_user(args.user)).model_dump_json(indent=2))

    run_async(lambda: with_store(settings, export))
    return 0


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    """Forget one fact, as the API's and the tools' `forget` do; never the whole user."""
    from memlane.models import memory_model_from_settings
    from memlane.nodes.confirm_forget import forget_confirmer
    from memlane.tools import answer_forget

    if not (args.what or "").strip():
        print(
            f'memlane forget: say what to forget, e.g. `memlane forget {args.user} "what I said about peanuts"` '
            "(or a memory id from `memlane search`); to delete everything of the user: "
            f"`memlane delete-user {args.user}`",
            file=sys.stderr,
        )
        return 2

    async def forget(store: Any) -> None:
        confirm = forget_confirmer(memory_model_from_settings(settings.models), settings.models)  # None without a model
        print(await answer_forget(store, args.user, args.what, actor="cli", confirm=confirm, dry_run=args.dry_run))

    run_async(lambda: with_store(settings, forget))
    return 0


def _confirmed(user_id: str) -> bool | None:
    """Ask on a terminal to type the user id; None when stdin is no terminal (nobody to ask)."""
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        return None
    try:
        answer = input(
            f"delete everything of {user_id!r} (history, profile, events, memories)? type the user id to confirm: "
        )
    except EOFError:
        return False
    return answer.strip() == user_id


def cmd_delete_user(args: argparse.Namespace, settings: Settings) -> int:
    if not args.yes:
        confirmed = _confirmed(args.user)
        if confirmed is None:
            print(
                "memlane delete-user: stdin is not a terminal, so nobody can confirm; "
                f"add --yes to delete {args.user!r}",
                file=sys.stderr,
            )
            return 2
        if not confirmed:
            print(f"kept {args.user!r}: the answer was not the user id")
            return 1

    async def delete(store: Any) -> None:
        print(f"deleted {await store.delete_user(args.user)} keys of {args.user!r}")

    run_async(lambda: with_store(settings, delete))
    return 0


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    from memlane.config import settings_markdown_table
    from memlane.masking import masked_settings

    if args.markdown:
        print(settings_markdown_table())
    else:
        print(json.dumps(masked_settings(settings.parts()), indent=2, ensure_ascii=False))  # secrets read ****
    return 0


class _Version(argparse.Action):
    """`--version`: the installed package's version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("memlane")
        except PackageNotFoundError:  # a source checkout that was never installed
            installed = "unknown (not installed)"
        print(f"memlane {installed}")  # on stdout, as argparse's own version action prints
        parser.exit()


TENANT_HELP = "the tenant of `memlane serve` the user belongs to (the same data as over HTTP)"
AGENT_HELP = "an agent's own memory of the user (a persona's id in `memlane serve`); default: the user's own"


def stop_embedded_redis() -> None:
    """Stop the embedded Redis this process started, if it did (a reused one keeps running)."""
    from memlane.store.embedded.server import stop_process_server

    stop_process_server()


def add_door_commands(commands: Any) -> None:
    """The commands of the doors above this room: `memlane demo` (ui/cli.py), `memlane serve` and
    `memlane mcp` (serve/cli.py). Each door declares its own in pyproject.toml's `memlane.commands`
    entry points, so this module never imports them (the arrows point down: tests/test_arrows.py)."""
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group="memlane.commands"), key=lambda entry: entry.name):
        entry.load()(commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlane", description="Long-term memory for LangGraph agents")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error, not only its sentence")
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    add_door_commands(commands)

    redis_cmd = commands.add_parser("redis", help="the embedded Redis Stack")
    redis_cmd.add_argument("action", choices=["start", "stop", "status", "cluster-check"])
    redis_cmd.add_argument(
        "--fix", action="store_true", help="cluster-check: drop duplicate and stale memory indexes, make missing ones"
    )
    redis_cmd.add_argument(
        "--show-password", action="store_true", help="print the URL with its password (masked otherwise)"
    )
    redis_cmd.add_argument(
        "--cluster",
        type=int,
        default=0,
        metavar="PRIMARIES",
        help="start (or show) a Redis Cluster of this many primaries (at least 3) instead of one server",
    )
    redis_cmd.add_argument("--replicas", type=int, default=0, help="replicas of each primary (with --cluster)")
    redis_cmd.set_defaults(handler=cmd_redis)

    worker = commands.add_parser("worker", help="run queued memory-graph runs (needs a chat model)")
    worker.set_defaults(handler=cmd_worker)

    runs = commands.add_parser("runs", help="list, retry or drop parked memory-graph runs (failed every retry)")
    runs.add_argument("action", nargs="?", choices=["list", "retry", "drop"], default="list")
    runs.add_argument("ids", nargs="*", metavar="ID", help="parked run ids (the first column of the list)")
    runs.add_argument("--all", action="store_true", help="every parked run (of --user, when given)")
    runs.add_argument("--user", help="only this user's parked runs")
    runs.set_defaults(handler=cmd_runs)

    gc = commands.add_parser(
        "gc",
        help=(
            "remove what Redis expiry cannot (MEMLANE_RETENTION_*): listings of expired records, "
            "orphaned search entries"
        ),
    )
    gc.add_argument("--user", help="only this user (default: every user with records that expire or count)")
    gc.add_argument("--recount", action="store_true", help="count the quota usage again from the records")
    gc.set_defaults(handler=cmd_gc)

    search = commands.add_parser("search", help="hybrid search over a user's memories")
    search.add_argument("user")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument(
        "--json", action="store_true", help='print {"results": [...]}: each hit\'s id, memory, kind, relevance...'
    )
    search.set_defaults(handler=cmd_search)

    importing = commands.add_parser(
        "import", help="bring in a past conversation (JSONL messages, an OpenAI messages list, LoCoMo-style sessions)"
    )
    importing.add_argument("file", help="the conversation file (UTF-8)")
    importing.add_argument("--user", required=True, help="the memlane user it belongs to")
    importing.add_argument("--session", default="import", help="session id for messages that name none")
    importing.add_argument(
        "--user-speaker",
        metavar="NAME",
        help="the speaker who is the user in a speaker-named history (LoCoMo); the others are people they talk to",
    )
    importing.add_argument(
        "--no-remember",
        dest="remember",
        action="store_false",
        help="store the history only; the memory graph reads it later",
    )
    importing.set_defaults(handler=cmd_import)

    export = commands.add_parser("export", help="print everything of a user as JSON")
    export.add_argument("user")
    export.set_defaults(handler=cmd_export)

    forget = commands.add_parser("forget", help="forget what a user said about something, everywhere recall reads")
    forget.add_argument("user")
    forget.add_argument(
        "what", nargs="?", help='what to forget ("what I said about peanuts"), or a memory id from search'
    )
    forget.add_argument(
        "--dry-run", action="store_true", help="change nothing: print what would go, each record with the clauses cut"
    )
    forget.set_defaults(handler=cmd_forget)

    delete_user = commands.add_parser("delete-user", help="delete everything of a user (asks first)")
    delete_user.add_argument("user")
    delete_user.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    delete_user.set_defaults(handler=cmd_delete_user)

    review = commands.add_parser(
        "review", help="facts held for review (extracted under memory_min_confidence): list, confirm or drop"
    )
    review.add_argument("user")
    review.add_argument("action", nargs="?", choices=["list", "confirm", "drop"], default="list")
    review.add_argument("ids", nargs="*", metavar="ID", help="held fact ids (the first column of the list)")
    review.set_defaults(handler=cmd_review)
    relations = add_relations_parser(commands)

    config = commands.add_parser("config", help="print the settings in force")
    config.add_argument("--markdown", action="store_true", help="print the README's settings table")
    config.set_defaults(handler=cmd_config)
    for command in (runs, gc, search, importing, export, forget, delete_user, review, relations):
        command.add_argument("--tenant", help=TENANT_HELP)
    for command in (search, importing, export, forget, delete_user, review, relations):
        command.add_argument("--agent", help=AGENT_HELP)
    return parser


def _tenant_user(args: argparse.Namespace) -> str | None:
    """The store user of the user given, in `--tenant T` (as `memlane serve` stores it) and `--agent A`'s
    scope of it, or None when the command names no user. Raises ValueError naming a bad id."""
    if not getattr(args, "user", None):
        return None
    user: str = args.user
    if getattr(args, "tenant", None):
        from memlane.tenants import store_user_id

        user = store_user_id(args.tenant, user)
    if getattr(args, "agent", None):
        from memlane.store.scopes import scoped_user_id

        user = scoped_user_id(user, args.agent)
    return user


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except Exception as error:
        if args.debug:
            raise
        print(f"memlane {args.command}: {error_sentence(error)}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    args.user = _tenant_user(args) or getattr(args, "user", None)
    from memlane.config import get_settings
    from memlane.masking import MaskingFormatter

    settings = get_settings()
    log_handler = logging.StreamHandler()  # a logged URL or error keeps its secrets to itself
    log_handler.setFormatter(MaskingFormatter("%(levelname)s %(name)s: %(message)s", parts=settings.parts().values()))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[log_handler])
    status: int = args.handler(args, settings)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
