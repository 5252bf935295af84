"""The app's command: `memlane demo`, the chat app on embedded defaults. Added to the `memlane`
command through the `memlane.commands` entry point; it imports the app when it runs."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from memlane.cli import demo_banner, store_demo
from memlane.cli_support import port_taken, run_async, with_store

if TYPE_CHECKING:
    from memlane.config import Settings


def add_commands(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the demo on embedded defaults")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=7860)
    demo.set_defaults(handler=cmd_demo)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from memlane import StoreError
    from memlane.masking import mask_secrets

    try:
        from memlane.ui.app import launch, service_of  # the chat app, once it exists
    except ImportError:
        run_async(lambda: with_store(settings, store_demo))
        return 0
    from memlane.cli import stop_embedded_redis as stop_process_server

    taken = (
        f"memlane demo: port {args.port} on {args.host} is taken (another memlane demo?); "
        f"choose another with --port {args.port + 1}"
    )
    if port_taken(args.host, args.port):
        print(taken, file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # both end the demo the same way, below
        signal.signal(signum, lambda *_: stop.set())
    print("memlane demo: starting Redis, the embeddings and the memory scheduler…", file=sys.stderr, flush=True)
    demo = None
    try:
        demo = launch(settings, host=args.host, port=args.port, block=False, quiet=True)
        service = service_of(demo)
        if service.start_error is not None:
            raise service.start_error
        store = service.started_store
        print(demo_banner(settings, store.url, f"http://{args.host}:{args.port}/"), flush=True)
        stop.wait()
        print("memlane demo: stopping", file=sys.stderr, flush=True)
    except OSError as error:  # the port was taken between the check and the start
        if "port" not in str(error):
            raise
        print(taken, file=sys.stderr)
        return 2
    except StoreError as error:
        print(f"memlane demo: {mask_secrets(str(error), settings.parts().values())}", file=sys.stderr)
        return 2
    finally:
        if demo is not None:
            demo.close()
        stop_process_server()  # the embedded Redis this demo started (a reused one keeps running)
    return 0
