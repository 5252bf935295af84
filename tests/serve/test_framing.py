"""serve/framing.py through `memlane serve`'s own uvicorn limits: raw sockets against the real app on
loopback, a real Redis Stack. Headers are capped however they arrive, malformed framing is answered
and closed at once, and well-framed requests (chunked ones too) are served as before."""

from __future__ import annotations

import socket
import time
import uuid

import httpx
import pytest
from conftest import drop_prefix_sync
from fake_upstream import Served
from test_serve import api_key

from memlane.config import Settings
from memlane.serve.app import create_app
from memlane.serve.config import ServeConfig
from memlane.serve.limits import uvicorn_limits

MAX_HEADER_BYTES = 4096


@pytest.fixture(scope="module")
def served(redis_url, tmp_path_factory, embeddings):
    settings = Settings(
        redis_url=redis_url,
        key_prefix=f"t{uuid.uuid4().hex[:10]}",
        data_dir=tmp_path_factory.mktemp("framing"),
        openai_api_key=None,
        openai_base_url=None,
        serve_header_timeout_seconds=10.0,
        serve_max_header_bytes=MAX_HEADER_BYTES,
    )
    app = create_app(
        ServeConfig(keys=[api_key("acme", "acme")], personas={"assistant": {"model": "m"}}), settings, mount_mcp=False
    )
    with Served(app, **uvicorn_limits(settings)) as server:
        yield server
    drop_prefix_sync(redis_url, settings.key_prefix)


def exchange(served: Served, request: bytes) -> tuple[bytes, float]:
    """Send `request` in one write; what the server answers until it closes, and how long it took
    to close (30 s: a server that never closes fails the test)."""
    address = ("127.0.0.1", int(served.url.rsplit(":", 1)[1]))
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(request)
        started = time.monotonic()
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received, time.monotonic() - started


def test_headers_past_the_cap_in_one_write_are_431(served):
    answer, took = exchange(served, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ") and f"over {MAX_HEADER_BYTES} bytes".encode() in answer
    assert took < 2.0
    answer, _ = exchange(
        served, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"a" * 3000 + b"\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"status":"ok"}')  # under the cap


def test_a_pipelined_second_request_past_the_cap_is_431_after_the_first_is_answered(served):
    first = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    second = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
    answer, took = exchange(served, first + second)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 431 " in answer and took < 2.0


@pytest.mark.parametrize(
    "request_bytes, said",
    [
        (  # the case: h11 read the bare-LF head, then waited for a CRLF chunk line
            b"POST /v1/users/u/memories HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\n\n5\nhello\n0\n\n",
            b"request head ends in a bare LF",
        ),
        (b"GET /healthz HTTP/1.1\nHost: x\n\n", b"request head ends in a bare LF"),
        (
            b"POST /v1/users/u/memories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
            b"chunk line ends in a bare LF",
        ),
        (
            b"POST /v1/users/u/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"both Content-Length and Transfer-Encoding",
        ),
    ],
    ids=["bare-LF head, chunked", "bare-LF head", "bare-LF chunk line", "two framings"],
)
def test_malformed_framing_is_answered_400_and_closed_at_once(served, request_bytes, said):
    answer, took = exchange(served, request_bytes)
    assert answer.startswith(b"HTTP/1.1 400 ") and said in answer, answer[:300]
    assert took < 2.0  # it used to wait 20 s and more for the chunk line's CRLF


def test_a_well_framed_chunked_request_is_served(served):
    body = b'{"text": "I keep bees on the roof of my flat in Leeds"}'
    request = (
        b"POST /v1/users/framing/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-acme\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    for start in range(0, len(body), 7):  # chunks of 7 bytes, as a streaming client sends them
        piece = body[start : start + 7]
        request += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    answer, _ = exchange(served, request + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:300]
    with httpx.Client(base_url=served.url, headers={"Authorization": "Bearer key-acme"}, timeout=30) as http:
        found = http.post("/v1/users/framing/search", json={"query": "bees on the roof"}).json()
    assert "bees" in str(found)
