"""What the embedded Redis launchers (one server, `embedded.py`; a cluster, `embedded_cluster.py`)
share: free ports, probing a server, live pids, and files only their owner can read."""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path
from urllib.parse import quote

import redis

logger = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def server_url(port: int, password: str) -> str:
    return f"redis://:{quote(password, safe='')}@127.0.0.1:{port}/0"


def probe(url: str, timeout: float = 1.0) -> str:
    """ "up", "loading" (replaying its data after a restart) or "down"."""
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


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` (as Redis does, with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def private_dir(path: Path) -> None:
    """Create `path` (and missing parents) as 0700, or take group and other access off it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)


def tighten_tree(root: Path) -> None:
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


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` (mode 600 from its creation on), replacing it at once."""
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.chmod(partial, 0o600)  # a partial file left by an older run may have had other modes
    os.replace(partial, path)


# A memory's hash (store/schema.py) keeps its vector (768 bytes as float16 at 384 dims) beside short fields: with
# Redis's default (64 bytes) any value that long makes the hash a hashtable, about 60 bytes per field more than a
# listpack (bench/memory_bytes.py: 1.5 KiB of the 6.1 KiB a memory took). Values up to 4 KiB keep it a listpack.
MEMORY_ARGS = ["--hash-max-listpack-value", "4096"]


def config_text(password: str) -> str:
    """The server's config file: the one setting that must not appear on its command line."""
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    return f'# written by memlane at each start (mode 600): the password stays out of `ps`\nrequirepass "{quoted}"\n'
