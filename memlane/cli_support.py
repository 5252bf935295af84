"""What the `memlane` commands share: running one async call, a store opened for one command,
URLs shown masked, a port that is taken. Each imports what it uses when it runs (`memlane --help`
stays light)."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from memlane.config import Settings

T = TypeVar("T")


def run_async(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    from memlane.config import get_settings
    from memlane.masking import mask_secrets
    from memlane.store.errors import StoreError

    try:
        return asyncio.run(coro_factory())
    except StoreError as error:
        print(f"memlane: {mask_secrets(str(error), get_settings().parts().values())}", file=sys.stderr)
        raise SystemExit(2) from error


async def with_store(settings: Settings, action: Callable[[Any], Awaitable[T]]) -> T:
    from memlane.store.redis.store import open_store

    store = await open_store(settings)
    try:
        return await action(store)
    finally:
        await store.aclose()


def masked_url(url: str) -> str:
    """`redis://:secret@host:port/0` → `redis://:****@host:port/0` (see memlane/masking.py)."""
    from memlane.masking import mask_url

    return mask_url(url)


def port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def error_sentence(error: BaseException) -> str:
    """One sentence for an error a command ends with (`memlane --debug` shows its traceback): a
    setting that cannot be read names its environment variable, the value and what it should be;
    a bad file or argument says where and what to fix, as its error says it."""
    from pydantic import ValidationError

    from memlane.masking import mask_secrets

    if isinstance(error, ValidationError) and error.title == "Settings":
        return "; ".join(_setting_problem(problem) for problem in error.errors()) + (
            "; fix it in the environment (or .env), or unset it for the default"
        )
    text = str(error) or type(error).__name__
    if not isinstance(error, (ValueError, LookupError, OSError, RuntimeError)):
        text = f"{type(error).__name__}: {text} (`memlane --debug ...` shows where)"
    try:
        from memlane.config import get_settings

        return mask_secrets(text, get_settings().parts().values())
    except Exception:  # the settings themselves are what failed: mask what can be masked without them
        return mask_secrets(text)


def _setting_problem(problem: Any) -> str:
    from memlane.config import COMPONENTS, env_names

    location = [str(part) for part in problem.get("loc", ())]
    name = ".".join(location)
    if len(location) >= 2 and location[0] in COMPONENTS:
        name = env_names(COMPONENTS[location[0]].flat_name(location[1]))[-1]
    value = problem.get("input")
    shown = "" if isinstance(value, dict) else f"={value!r}"
    return f"the setting {name}{shown} is not valid: {problem.get('msg', 'unreadable')}"
