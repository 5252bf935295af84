"""The service's commands: `memlane serve` (the HTTP service) and `memlane mcp` (one user's memory as
MCP tools over stdio). Added to the `memlane` command through the `memlane.commands` entry point;
like every command, each imports what it uses when it runs."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane.cli import TENANT_HELP
from memlane.cli_support import port_taken, run_async

if TYPE_CHECKING:
    from memlane.config import Settings


def add_commands(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="serve one user's memory as MCP tools over stdio")
    mcp.add_argument("--user", required=True, help="the user every tool acts for")
    mcp.add_argument("--tenant", help=TENANT_HELP)
    mcp.add_argument("--agent", help="an agent's own memory of the user (default: the user's own memory)")
    mcp.set_defaults(handler=cmd_mcp)

    serve = commands.add_parser(
        "serve", help="the HTTP service: OpenAI-compatible chat with memory, the memories API, MCP at /mcp"
    )
    serve.add_argument(
        "action", nargs="?", choices=["run", "hash-key"], default="run", help="hash-key: print a new key and its hash"
    )
    serve.add_argument("key", nargs="?", help="hash-key: the key to hash (default: a new random key)")
    serve.add_argument("--config", help="the TOML configuration file (default: MEMLANE_SERVE_CONFIG)")
    serve.add_argument("--host", help="default: MEMLANE_SERVE_HOST")
    serve.add_argument("--port", type=int, help="default: MEMLANE_SERVE_PORT")
    serve.set_defaults(handler=cmd_serve)


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from memlane.serve.mcp import run_stdio

    # main() made it the tenant's user, and the agent's scope of it; stdout carries the protocol: nothing else is
    # printed there
    run_async(lambda: run_stdio(settings, args.user))
    return 0


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "hash-key":
        from memlane.serve.config import hash_api_key, new_api_key

        key = args.key or new_api_key()
        if not args.key:
            print(f"key: {key}", file=sys.stderr)
            print("(give the key to the client; only its hash goes in the configuration file)", file=sys.stderr)
        print(f'hash = "{hash_api_key(key)}"')
        return 0
    import uvicorn

    from memlane.serve.app import create_app
    from memlane.serve.config import ServeConfigError
    from memlane.serve.limits import uvicorn_limits

    if args.config:
        settings = settings.model_copy(update={"serve_config": Path(args.config)})
    try:
        app = create_app(settings=settings)
    except ServeConfigError as error:
        print(f"memlane serve: {error}", file=sys.stderr)
        return 2
    host = args.host or settings.serve.host
    port = settings.serve.port if args.port is None else args.port
    if port and port_taken(host, port):
        print(f"memlane serve: port {port} on {host} is taken; choose another with --port", file=sys.stderr)
        return 2
    from memlane.cli import stop_embedded_redis as stop_process_server

    print(
        f"memlane serve: http://{host}:{port}/ (config {settings.serve.config_file}; Ctrl-C or SIGTERM stops)",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn drains on SIGINT and SIGTERM, then raises the signal again with the handler it found:
    # SIGTERM's default would kill the process there, before the embedded Redis is stopped below
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _raise_stopped)
    try:
        # log_config=None: uvicorn's own lines (access, errors) go to the masking handler of `main`
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="info" if args.verbose else "warning",
            log_config=None,
            **uvicorn_limits(settings),  # header-read timeout, keep-alive, header size (serve/limits.py)
        )
    except _Stopped:
        pass
    finally:
        stop_process_server()  # the embedded Redis this process started (a reused one keeps running)
    return 0


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived outside uvicorn's own handling (after it drained, or before it started)."""


def _raise_stopped(signum: int, frame: Any) -> None:
    raise _Stopped(signal.Signals(signum).name)
