"""Webhooks (issue 54; memlane/webhooks.py, memlane/change_events.py): `memlane serve` posts each memory
change of a tenant's users to the tenant's URLs, signed with its secret, retried with backoff through
the Docket queue; a receiver that is down at first gets each event once when it comes up; another
tenant's changes never reach it. Against a real receiver on a loopback port."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import httpx
import pytest
from test_mcp import SERVE_CONFIG, http_client, serving, text

from memlane.serve.app import create_app
from memlane.serve.config import Tenant
from memlane.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookTarget, signature, verify

SECRET = "acme-webhook-secret-0123"


class Receiver:
    """An HTTP receiver on a port reserved now and listened on only from `up()` (down until then)."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self._server: ThreadingHTTPServer | None = None

    def up(self) -> None:
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                posts.append((dict(self.headers.items()), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def events(self) -> list[dict]:
        return [json.loads(body) for _, body in self.posts]


async def until(condition, seconds: float = 20.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.05)


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.down()


def user_path(user_id: str) -> str:
    return "/v1/users/" + quote(user_id, safe="")


async def test_changes_are_posted_signed_and_a_receiver_that_was_down_gets_each_once(store, settings, receiver, caplog):
    caplog.set_level("WARNING", logger="memlane.graph.queue")
    target = WebhookTarget(url=f"http://127.0.0.1:{receiver.port}/hook", secret=SECRET, backoff_seconds=0.2)
    config = SERVE_CONFIG.model_copy(update={"tenants": {"acme": Tenant(webhooks=[target]), "globex": Tenant()}})
    async with serving(create_app(config, settings, store=store)) as base_url:
        async with httpx.AsyncClient(
            base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60
        ) as http:
            note = await http.post(user_path("alice") + "/memories", json={"text": "The gate code is 4411"})
            assert note.status_code == 201  # answered while the receiver is down
            async with httpx.AsyncClient(
                base_url=base_url, headers={"Authorization": "Bearer key-globex"}, timeout=60
            ) as globex:
                other = await globex.post(user_path("alice") + "/memories", json={"text": "Globex secret plan B"})
                assert other.status_code == 201
            await asyncio.sleep(0.6)  # a few tries fail meanwhile
            assert "ConnectError" in caplog.text and "try 2 in 0.2s" in caplog.text  # retried, with backoff
            receiver.up()
            await until(lambda: len(receiver.posts) >= 1)
            await asyncio.sleep(1.0)  # no second delivery comes
            [(headers, body)] = receiver.posts
            [event] = receiver.events()
            assert event["type"] == "memory.added" and event["tenant"] == "acme" and event["user_id"] == "alice"
            assert event["memory"] == {"id": note.json()["id"], "kind": "event", "text": "The gate code is 4411"}
            assert verify(SECRET, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])
            assert headers[SIGNATURE_HEADER] == signature(SECRET, int(headers[TIMESTAMP_HEADER]), body)
            assert not verify("another-secret-0000", headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])

            slot = user_path("alice") + "/profile/home/city"
            assert (await http.put(slot, json={"content": "lives in Lyon"})).status_code == 201
            assert (await http.put(slot, json={"content": "lives in Lille"})).status_code == 200
            entry_id = (await http.get(user_path("alice") + "/profile")).json()["data"][0]["id"]
            assert (await http.delete(user_path("alice") + f"/profile/{entry_id}")).status_code == 200
            forgot = await http.post(user_path("alice") + "/forget", json={"query": "the gate code"})
            assert forgot.status_code == 200
            await until(lambda: len(receiver.posts) >= 5)
        async with http_client(base_url + "/mcp", "key-acme", "bo") as bo:  # MCP: the same events
            assert text(await bo.call_tool("remember", {"text": "Bo parks on level 3"})).startswith("remembered [")
        await until(lambda: len(receiver.posts) >= 6)
        await asyncio.sleep(0.5)
    kinds = [(event["type"], event["user_id"], event["memory"]["kind"]) for event in receiver.events()]
    assert kinds == [
        ("memory.added", "alice", "event"),
        ("memory.added", "alice", "profile"),
        ("memory.updated", "alice", "profile"),
        ("memory.deleted", "alice", "profile"),
        ("memory.forgotten", "alice", "event"),
        ("memory.added", "bo", "event"),
    ]
    assert receiver.events()[2]["memory"]["text"] == "home / city: lives in Lille"
    assert all(
        "Globex" not in body.decode() and event["tenant"] == "acme"
        for (_, body), event in zip(receiver.posts, receiver.events())
    )
    assert len({event["id"] for event in receiver.events()}) == 6


def test_a_target_is_refused_at_start_up_with_what_is_wrong():
    from memlane.serve.config import ServeConfig

    for target, says in [
        ({"url": "ftp://example.com/hook", "secret": SECRET}, "http:// or https://"),
        ({"url": "https://example.com/hook", "secret": "short"}, "16 characters"),
        ({"url": "https://example.com/hook", "secret": SECRET, "events": ["memory.eaten"]}, "memory.added"),
        ({"url": "https://example.com/hook", "secret": SECRET, "retries": 3}, "retries"),
    ]:
        with pytest.raises(ValueError, match=says):
            ServeConfig.model_validate({"tenants": {"acme": {"webhooks": [target]}}})
    body = b'{"id": "x"}'
    assert not verify(SECRET, "1000", body, signature(SECRET, 1000, body))  # too old: a replay
    assert not verify(SECRET, "soon", body, "v1=00")


async def test_a_memory_runs_changes_are_posted_too(store, settings, receiver):
    """The memory graph's writes go through the same store: its entries and its card are posted."""
    from memlane.testing import ScriptedChatModel, memory_rules

    receiver.up()
    target = WebhookTarget(url=f"http://127.0.0.1:{receiver.port}/hook", secret=SECRET, backoff_seconds=0.2)
    config = SERVE_CONFIG.model_copy(update={"tenants": {"acme": Tenant(webhooks=[target])}})
    model = ScriptedChatModel(rules=memory_rules())
    app = create_app(config, settings, store=store, memory_model=model, mount_mcp=False)
    async with serving(app) as base_url:
        async with httpx.AsyncClient(
            base_url=base_url, headers={"Authorization": "Bearer key-acme"}, timeout=60
        ) as http:
            chat = [
                {"role": "user", "content": "我喜欢黑咖啡，不加糖。"},
                {"role": "user", "content": "连续两周都在加班。"},
            ]
            sent = await http.post(user_path("cai") + "/messages", json={"messages": chat, "remember": "now"})
            assert sent.status_code == 201
            await until(lambda: len(receiver.posts) >= 4, seconds=60)  # 3 entries and the run's card
            await asyncio.sleep(0.5)
    events = receiver.events()
    assert {(event["type"], event["memory"]["kind"]) for event in events} == {
        ("memory.added", "profile"),
        ("memory.added", "event"),
    }
    assert len(events) == 4 and all(event["user_id"] == "cai" and event["tenant"] == "acme" for event in events)
