"""The embedded Redis Cluster: N primaries (and replicas) of the embedded Redis Stack on loopback,
for the cluster tests, the cluster drill (bench/cluster.py) and trials (`memlane redis start --cluster 3`).

Same binaries, libssl handling and privacy as `embedded.py`: one random password (in each
node's config file of mode 600, never on a command line; replicas use it as `masterauth`),
data under `<data_dir>/redis-cluster/<port>` (0700, AOF on), a state file (mode 600) with the
ports, password and pids so that `memlane redis stop` and a second process find it. A cluster
stopped by `stop` starts again on its ports with its data (AOF, nodes.conf) at the next `start`.

The search module of Redis Stack 7.4 has no coordinator: every primary keeps its own index
over its own keys, which is why the store creates the index on every primary and sends a
user's search to the primary that owns the user's slot (store/cluster/client.py).

No watchdog restarts a node that dies: a primary's replica takes over (the drill kills one).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis

from memlane.config import StoreSettings
from memlane.store.embedded.binaries import HELP, ensure_libssl, find_redis_stack
from memlane.store.embedded.processes import (
    MEMORY_ARGS,
    config_text,
    pid_alive,
    port_free,
    private_dir,
    probe,
    tighten_tree,
    write_private,
)
from memlane.store.errors import RedisUnavailable

logger = logging.getLogger(__name__)

# a primary that stops answering for this long is failed over to its replica
NODE_TIMEOUT_MS = 3000


def _command(client: redis.Redis, *args: Any) -> Any:
    """One command to one node, its reply as redis-py parses it (redis-py leaves `execute_command`
    untyped: what it answers depends on the command)."""
    execute: Callable[..., Any] = client.execute_command
    return execute(*args)


def _free_node_port(taken: set[int]) -> int:
    """A free loopback port whose cluster bus port (+10000, so at most 55535) is free too."""
    for _ in range(1000):
        port = secrets.randbelow(55535 - 20000) + 20000
        if port not in taken and port + 10000 not in taken and port_free(port) and port_free(port + 10000):
            return port
    raise RedisUnavailable(f"found no free pair of loopback ports (port, port + 10000) for a cluster node; {HELP}")


def cluster_url(port: int, password: str) -> str:
    """The URL of a cluster node in RedisVL's spelling of "this is a cluster" (`?cluster=true`)."""
    return f"redis://:{quote(password, safe='')}@127.0.0.1:{port}/0?cluster=true"


def _node_url(port: int, password: str) -> str:
    return f"redis://:{quote(password, safe='')}@127.0.0.1:{port}/0"


class EmbeddedCluster:
    """Start (or reuse) a loopback Redis Cluster of `primaries` primaries, each with `replicas` replicas."""

    def __init__(self, store: StoreSettings, *, primaries: int = 3, replicas: int = 0, first_port: int = 0) -> None:
        if primaries < 3:
            raise ValueError("a Redis Cluster needs at least 3 primaries (`--cluster 3`)")
        self.store = store
        self.primaries = primaries
        self.replicas = replicas
        self.first_port = first_port  # 0: free ports picked at random; else first_port, first_port + 1, ...
        self.dir = Path(store.data_dir) / "redis-cluster"
        self.state_file = self.dir / "cluster.json"
        self.url: str | None = None
        self._processes: dict[int, subprocess.Popen[bytes]] = {}  # the nodes this object started, by pid

    def alive(self, pid: int | None) -> bool:
        """Whether node process `pid` runs (a node this process started is reaped, not left a zombie)."""
        if not pid:  # a node stopped on purpose
            return False
        process = self._processes.get(pid)
        if process is not None:
            return process.poll() is None
        with contextlib.suppress(OSError, IndexError):  # exited, not reaped yet by the process that started it
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        return pid_alive(pid)

    # state -------------------------------------------------------------------------------
    def _read_state(self) -> dict[str, Any]:
        with contextlib.suppress(OSError, ValueError):
            state = json.loads(self.state_file.read_text())
            if isinstance(state, dict):
                return state
        return {}

    def _write_state(self, state: dict[str, Any]) -> None:
        private_dir(self.dir)
        write_private(self.state_file, json.dumps(state))  # it holds the password

    def nodes(self) -> list[dict[str, Any]]:
        """[{"port", "pid"}] of the nodes started from this data dir (the first ones are the primaries at creation)."""
        return list(self._read_state().get("nodes", []))

    def node_url(self, port: int) -> str:
        """The plain (non-cluster) URL of one node: what the drill and the tests use to talk to it alone."""
        return _node_url(port, str(self._read_state()["password"]))

    def running_url(self) -> str | None:
        """The cluster URL when a cluster started from this data dir answers on every node that is alive."""
        state = self._read_state()
        nodes = state.get("nodes") or []
        if not nodes or not state.get("password"):
            return None
        alive = [node for node in nodes if self.alive(node.get("pid"))]
        if not alive or probe(_node_url(int(alive[0]["port"]), state["password"])) != "up":
            return None
        return cluster_url(int(alive[0]["port"]), state["password"])

    # start -------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> str:
        """Reuse or create the cluster; returns its URL (`redis://:…@127.0.0.1:<port>/0?cluster=true`)."""
        private_dir(self.dir)
        tighten_tree(self.dir)
        with os.fdopen(os.open(self.dir / "start.lock", os.O_WRONLY | os.O_CREAT, 0o600), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            url = self.running_url() or self._restart(timeout) or self._create(timeout)
            self.url = url
            return url

    def _restart(self, timeout: float) -> str | None:
        """Start the nodes of a cluster stopped earlier again, on their ports, with their data and
        their cluster configuration; None when there is none to start (or its ports are taken)."""
        state = self._read_state()
        ports = [int(node["port"]) for node in state.get("nodes") or []]
        password = state.get("password")
        if not ports or not password or not all((self.dir / str(port) / "nodes.conf").is_file() for port in ports):
            return None
        if not all(port_free(port) and port_free(port + 10000) for port in ports):
            logger.warning("the ports of the stopped embedded cluster are taken; creating a new, empty cluster")
            return None
        if len(ports) != self.primaries * (1 + self.replicas):
            logger.warning(
                "starting the stopped embedded cluster of %d nodes again, not a new one of %d; delete %s for a new one",
                len(ports),
                self.primaries * (1 + self.replicas),
                self.dir,
            )
        self._launch_all(ports, password, timeout, create=False)
        logger.info("started the embedded Redis Cluster again on ports %s (data in %s)", ports, self.dir)
        return cluster_url(ports[0], password)

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        libssl_dir = ensure_libssl(Path(self.store.cache_dir))
        if libssl_dir is not None:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libssl_dir), env.get("LD_LIBRARY_PATH")]))
        return env

    def _launch_node(self, port: int, password: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        binaries = find_redis_stack()
        node_dir = self.dir / str(port)
        private_dir(node_dir)
        config = node_dir / "redis.conf"
        quoted = password.replace("\\", "\\\\").replace('"', '\\"')
        # replicas authenticate to their primary with the same password
        write_private(config, config_text(password) + f'masterauth "{quoted}"\n')
        args = [
            str(binaries.server),
            str(config),
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--protected-mode",
            "yes",
            "--dir",
            str(node_dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            *MEMORY_ARGS,
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            str(NODE_TIMEOUT_MS),
            "--daemonize",
            "no",
            "--logfile",
            str(node_dir / "redis.log"),
        ]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        return subprocess.Popen(
            args,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            umask=0o077,
        )

    def _create(self, timeout: float) -> str:
        password = secrets.token_urlsafe(24)
        ports: list[int] = []
        for number in range(self.primaries * (1 + self.replicas)):
            if self.first_port:
                ports.append(self.first_port + number)
            else:
                ports.append(_free_node_port({*ports, *(port + 10000 for port in ports)}))
        for port in ports:  # node files of an older cluster on the same port: a new cluster starts empty
            shutil.rmtree(self.dir / str(port), ignore_errors=True)
        self._launch_all(ports, password, timeout, create=True)
        logger.info(
            "started an embedded Redis Cluster of %d primaries (%d replicas each) on ports %s",
            self.primaries,
            self.replicas,
            ports,
        )
        return cluster_url(ports[0], password)

    def _launch_all(self, ports: list[int], password: str, timeout: float, *, create: bool) -> None:
        """Start a node on each port and wait until the cluster is ok (`create`: join them into a new one)."""
        env = self._environment()
        processes = [self._launch_node(port, password, env) for port in ports]
        self._processes.update({process.pid: process for process in processes})
        self._write_state(
            {"password": password, "nodes": [{"port": p, "pid": proc.pid} for p, proc in zip(ports, processes)]}
        )
        try:
            deadline = time.monotonic() + timeout
            for port, process in zip(ports, processes):
                while probe(_node_url(port, password), timeout=0.5) != "up":
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RedisUnavailable(
                            f"node 127.0.0.1:{port} of the embedded cluster did not start "
                            f"(see {self.dir / str(port) / 'redis.log'}); {HELP}"
                        )
                    time.sleep(0.05)
            if create:
                self.cli(
                    "--cluster",
                    "create",
                    *[f"127.0.0.1:{port}" for port in ports],
                    "--cluster-replicas",
                    str(self.replicas),
                    "--cluster-yes",
                    env=env,
                )
            self._wait_until_ok(ports, password, deadline, replicas=self.replicas if create else 0)
        except (RedisUnavailable, subprocess.SubprocessError, OSError):
            self.stop()
            raise

    def _wait_until_ok(self, ports: list[int], password: str, deadline: float, *, replicas: int) -> None:
        """Until every node says `cluster_state:ok` and knows every other node, and every primary
        has its replicas connected (a failover needs them in sync)."""
        for port in ports:
            client = redis.Redis.from_url(_node_url(port, password), socket_timeout=2)
            try:
                while True:
                    info = client.cluster("info")
                    replication = client.info("replication")
                    if (
                        info.get("cluster_state") == "ok"
                        and int(info.get("cluster_known_nodes", 0)) == len(ports)
                        and (replication["role"] != "master" or replication["connected_slaves"] >= replicas)
                    ):
                        break
                    if time.monotonic() > deadline:
                        raise RedisUnavailable(f"the embedded cluster did not reach cluster_state:ok ({info}); {HELP}")
                    time.sleep(0.1)
            finally:
                client.close()

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300.0) -> str:
        """Run the wheel's `redis-cli` with the cluster's password (through REDISCLI_AUTH, not the command line)."""
        cli = find_redis_stack().server.parent / "redis-cli"
        env = dict(env or self._environment())
        env["REDISCLI_AUTH"] = str(self._read_state()["password"])
        result = subprocess.run(
            [str(cli), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0:
            raise RedisUnavailable(
                f"redis-cli {' '.join(args[:2])} failed: {(result.stderr or result.stdout).strip()[-600:]}"
            )
        return result.stdout

    def add_primary(self, timeout: float = 60.0) -> int:
        """Start one more node and join it to the cluster as a primary without slots (`redis-cli
        --cluster add-node`); returns its port. A rebalance gives it slots (the drill runs one)."""
        state = self._read_state()
        password = str(state["password"])
        taken = {int(node["port"]) for node in state["nodes"]}
        port = max(taken) + 1 if self.first_port else _free_node_port({*taken, *(p + 10000 for p in taken)})
        process = self._launch_node(port, password, self._environment())
        self._processes[process.pid] = process
        self._write_state({**state, "nodes": [*state["nodes"], {"port": port, "pid": process.pid}]})
        deadline = time.monotonic() + timeout
        while probe(_node_url(port, password), timeout=0.5) != "up":
            if process.poll() is not None or time.monotonic() > deadline:
                raise RedisUnavailable(
                    f"node 127.0.0.1:{port} did not start (see {self.dir / str(port) / 'redis.log'}); {HELP}"
                )
            time.sleep(0.05)
        existing = next(p for p in sorted(taken) if probe(_node_url(p, password), timeout=0.5) == "up")
        self.cli("--cluster", "add-node", f"127.0.0.1:{port}", f"127.0.0.1:{existing}")
        self._wait_until_ok(
            [*[p for p in taken if probe(_node_url(p, password), timeout=0.5) == "up"], port],
            password,
            deadline,
            replicas=0,
        )
        return port

    def move_slot(self, slot: int, source_port: int, target_port: int) -> int:
        """Move one hash slot and its keys from one primary to another (what a reshard does to each
        slot it moves); returns the keys moved. The tests and the drill use it."""
        password = str(self._read_state()["password"])
        source = redis.Redis.from_url(_node_url(source_port, password), socket_timeout=30)
        target = redis.Redis.from_url(_node_url(target_port, password), socket_timeout=30)
        try:
            source_id, target_id = source.cluster("myid"), target.cluster("myid")
            _command(target, "CLUSTER SETSLOT", slot, "IMPORTING", source_id)
            _command(source, "CLUSTER SETSLOT", slot, "MIGRATING", target_id)
            moved = 0
            while keys := _command(source, "CLUSTER GETKEYSINSLOT", slot, 100):
                _command(source, "MIGRATE", "127.0.0.1", target_port, "", 0, 10_000, "AUTH", password, "KEYS", *keys)
                moved += len(keys)
            for port in (target_port, source_port):  # the new owner first, as redis-cli does
                _command(redis.Redis.from_url(_node_url(port, password)), "CLUSTER SETSLOT", slot, "NODE", target_id)
            return moved
        finally:
            source.close()
            target.close()

    # stop --------------------------------------------------------------------------------
    def stop(self) -> bool:
        """Shut down every node started from this data dir (AOF keeps the data); False when none ran."""
        state = self._read_state()
        nodes = state.get("nodes") or []
        stopped = False
        for node in nodes:
            pid, port = node.get("pid"), int(node["port"])
            if not self.alive(pid):
                continue
            stopped = True
            with contextlib.suppress(redis.RedisError):
                redis.Redis.from_url(_node_url(port, state["password"]), socket_timeout=5).shutdown(nosave=False)
            for _ in range(100):
                if not self.alive(pid):
                    break
                time.sleep(0.05)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        if nodes:  # the ports and the password stay: the next start brings the cluster back with its data
            self._write_state(
                {"password": state.get("password"), "nodes": [{"port": node["port"], "pid": None} for node in nodes]}
            )
        return stopped
