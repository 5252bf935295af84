"""A large JSONL export imported as a stream (memlane/import_stream.py): the same messages as the whole-file
reader, a bad line named before anything is stored, and a `memlane import` killed midway finished by running it
again, nothing stored twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from memlane import cli
from memlane.import_stream import import_file, jsonl_messages
from memlane.importing import read_file
from memlane.store.errors import InvalidInput


def export_lines(count: int) -> list[dict]:
    """A chat of `count` lines, English and Chinese, some without a time, an "ok" said several times."""
    lines = []
    for i in range(count):
        row: dict = {"role": "user" if i % 2 == 0 else "assistant", "session_id": f"s{i // 40}"}
        row["content"] = "ok" if i % 17 == 0 else (f"day {i}: I fed the cat" if i % 3 else f"第{i}天，我去了杭州")
        if i % 5:
            row["created_at"] = 1_700_000_000 + i
        lines.append(row)
    return lines


def write_export(path: Path, lines: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in lines) + "\n", encoding="utf-8")
    return path


def test_the_stream_reads_the_messages_the_whole_file_reader_reads(tmp_path):
    path = write_export(tmp_path / "chat.jsonl", export_lines(120))
    streamed = list(jsonl_messages(path, "u"))
    whole = read_file(path, "u")
    assert sorted(m.id for m in streamed) == sorted(m.id for m in whole) and len(set(m.id for m in whole)) == 120
    by_id = {m.id: m for m in whole}
    for message in streamed:
        assert (message.content, message.session_id, message.role) == (
            by_id[message.id].content,
            by_id[message.id].session_id,
            by_id[message.id].role,
        )


async def test_a_bad_line_is_named_before_anything_is_stored(store, tmp_path):
    lines = export_lines(30)
    lines[25] = {"role": "robot", "content": "beep"}
    path = write_export(tmp_path / "chat.jsonl", lines)
    with pytest.raises(InvalidInput, match="line 26 has the role 'robot'"):
        await import_file(store, path, "bad", batch_messages=10)
    assert not (await store.export_user("bad")).messages


async def test_a_streamed_import_again_stores_nothing_twice(store, tmp_path):
    path = write_export(tmp_path / "chat.jsonl", export_lines(90))
    assert await import_file(store, path, "again", batch_messages=20) == (90, 90)
    assert await import_file(store, path, "again", batch_messages=20) == (90, 0)
    assert len((await store.export_user("again")).messages) == 90


def test_an_import_killed_midway_is_finished_by_running_it_again(
    settings, monkeypatch, capsys, tmp_path, fresh_settings
):
    count, user = 600, "killed"
    path = write_export(tmp_path / "chat.jsonl", export_lines(count))
    env = {**os.environ, "REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}
    env["MEMLANE_IMPORT_BATCH_MESSAGES"] = "20"
    client = redis.Redis.from_url(settings.redis_url)
    timeline = f"{settings.key_prefix}:u:*:timeline"
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane.cli", "import", str(path), "--user", user, "--no-remember"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stored = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            keys = list(client.scan_iter(match=timeline))
            stored = client.zcard(keys[0]) if keys else 0
            if stored >= 100:
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)  # midway: no chance to finish a batch or clean up
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert 0 < stored < count, f"the import was not caught midway ({stored} of {count} stored)"

    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMLANE_IMPORT_BATCH_MESSAGES", "20")
    assert cli.main(["import", str(path), "--user", user, "--no-remember"]) == 0
    out = capsys.readouterr().out
    new = int(out.split(" messages read, ")[1].split(" new")[0])
    assert out.startswith(f"{count} messages read, ") and 0 <= new <= count - stored

    keys = list(client.scan_iter(match=timeline))
    assert client.zcard(keys[0]) == count  # every message once
    # the batch the kill cut between storing and embedding was embedded by the second run: none left waiting
    assert not [key for key in client.scan_iter(match=f"{settings.key_prefix}:u:*:unindexed") if client.scard(key)]
    assert len(list(client.scan_iter(match=f"{settings.key_prefix}:mem:*", count=1000))) >= count * 0.9
    client.close()
