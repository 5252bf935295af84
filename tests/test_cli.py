"""The `memlane` command: the worker that takes queued runs, the store commands, config."""

from __future__ import annotations

import asyncio
import json

import pytest
from docket import Docket
from memory_graph_helpers import CHINESE_CHAT, add_chat, memory_rules
from scripted import ScriptedChatModel

from memlane import cli
from memlane.graph.tasks import memory_run_task
from memlane.store.base import StoreError


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


def test_export_search_and_forget_from_the_command_line(settings, monkeypatch, capsys):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["search", "nobody", "咖啡"]) == 0
    assert cli.main(["export", "a|b"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["user_id"] == "a|b"
    assert cli.main(["forget", "a|b"]) == 0
    assert "deleted" in capsys.readouterr().out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-print-me")
    assert cli.main(["config"]) == 0
    assert "sk-do-not-print-me" not in capsys.readouterr().out
