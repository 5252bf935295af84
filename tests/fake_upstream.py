"""Loopback servers for tests of `memlane serve` and its bench: a fake OpenAI-compatible chat
server, and `Served` (an ASGI app on uvicorn in a thread).

    with FakeUpstream(reply="hello there") as upstream:
        ...  # point a persona's base_url at upstream.url
        upstream.requests  # every request body it got, in order

`reply` is a string or `(request_body) -> str`; a streamed reply comes in `chunk_size` pieces.
`status` (not 200) answers every request with that status and an OpenAI-style error body;
`break_stream` ends a stream after its first chunk without finishing it.
`refuse_json_schema` answers a request carrying a `json_schema` response_format with a 400, as a
server without structured outputs does; `finish_reason` ("length": the answer hit the token limit)
ends every answer.
`/embeddings` answers every text with `embedding_dims` (or the request's `dimensions`) numbers, the
same for the same words (`word_vector`: words hashed, so texts that share words are close), as
floats or base64 as asked: what mem0's embedder needs (tests/test_mem0_differential.py).
A real model's latency: `first_token_seconds` before a streamed reply's first chunk (the
reply model), `answer_seconds` before a reply that is not streamed (the memory model's calls),
e.g. `FakeUpstream(**REAL_MODEL_LATENCY)`; `chunk_seconds` between a stream's chunks (a reply a
client can leave midway).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# a hosted model as users see it: the first token after 300 ms, a short answer after 400 ms
REAL_MODEL_LATENCY = {"first_token_seconds": 0.3, "answer_seconds": 0.4}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):  # a client that left
            super().handle_error(request, client_address)


class FakeUpstream:
    """An OpenAI-compatible `/v1/chat/completions` (streamed and not) in a thread."""

    def __init__(
        self,
        reply: str | Callable[[dict[str, Any]], str] = "Hello from the fake upstream.",
        *,
        chunk_size: int = 4,
        status: int = 200,
        break_stream: bool = False,
        first_token_seconds: float = 0.0,
        answer_seconds: float = 0.0,
        chunk_seconds: float = 0.0,
        refuse_json_schema: bool = False,
        finish_reason: str = "stop",
        embedding_dims: int = 1536,
    ) -> None:
        self.reply = reply
        self.chunk_size = chunk_size
        self.status = status
        self.break_stream = break_stream
        self.first_token_seconds = first_token_seconds
        self.answer_seconds = answer_seconds
        self.chunk_seconds = chunk_seconds
        self.refuse_json_schema = refuse_json_schema
        self.finish_reason = finish_reason
        self.embedding_dims = embedding_dims
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-upstream", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)

    def system_prompts(self) -> list[str]:
        """The system message of each recorded request ("" when none)."""
        prompts = []
        for body in self.requests:
            system = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"]
            prompts.append("\n".join(system))
        return prompts


def _completion(model: str, text: str, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def word_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector of `text`: each word (and its first four letters) hashed into `dims`."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        for gram in {word, word[:4]}:
            vector[zlib.crc32(gram.encode()) % dims] += 1.0
    norm = sum(value * value for value in vector) ** 0.5 or 1.0
    return [value / norm for value in vector]


def _embeddings(upstream: FakeUpstream, body: dict[str, Any]) -> dict[str, Any]:
    texts = body.get("input", [])
    texts = [texts] if isinstance(texts, str) else texts
    dims = int(body.get("dimensions") or upstream.embedding_dims)
    data = []
    for index, text in enumerate(texts):
        vector = word_vector(str(text), dims)
        encoded: Any = vector
        if body.get("encoding_format") == "base64":  # what the openai client asks for by default
            encoded = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "fake"),
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


def _chunk(model: str, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _handler(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers: connections are reused
        disable_nagle_algorithm = True  # small SSE writes go out at once

        def log_message(self, *args: Any) -> None:
            pass

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _write_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            upstream.record(body, {name.lower(): value for name, value in self.headers.items()})
            if self.path.endswith("/embeddings"):
                self._send_json(200, _embeddings(upstream, body))
                return
            if not self.path.endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            if upstream.status != 200:
                # as real servers do, the error names the key it got (memlane must not pass it on)
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                message = f"the fake upstream is told to fail (key {key or 'none'})"
                self._send_json(upstream.status, {"error": {"message": message, "type": "server_error"}})
                return
            if upstream.refuse_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
                message = "response_format json_schema is not supported by this model"
                self._send_json(
                    400, {"error": {"message": message, "type": "invalid_request_error", "param": "response_format"}}
                )
                return
            model = body.get("model", "fake")
            text = upstream.answer(body)
            if not body.get("stream"):
                time.sleep(upstream.answer_seconds)
                self._send_json(200, _completion(model, text, upstream.finish_reason))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            time.sleep(upstream.first_token_seconds)
            self._write_chunk(
                b"data: " + json.dumps(_chunk(model, {"role": "assistant", "content": ""})).encode() + b"\n\n"
            )
            pieces = [text[start : start + upstream.chunk_size] for start in range(0, len(text), upstream.chunk_size)]
            for number, piece in enumerate(pieces):
                if number:
                    time.sleep(upstream.chunk_seconds)
                self._write_chunk(b"data: " + json.dumps(_chunk(model, {"content": piece})).encode() + b"\n\n")
                if upstream.break_stream and number == 0:
                    self.close_connection = True
                    return  # no terminating chunk: the client sees the stream cut
            self._write_chunk(b"data: " + json.dumps(_chunk(model, {}, upstream.finish_reason)).encode() + b"\n\n")
            self._write_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


class Served:
    """An ASGI app served by uvicorn on a free loopback port, in a thread with its own event loop.

    with Served(app) as served:
        httpx.get(served.url + "/healthz")
    """

    def __init__(self, app: Any, *, start_timeout: float = 60.0, **config: Any) -> None:
        """config: more keyword arguments of `uvicorn.Config` (`memlane serve`'s limits)."""
        import uvicorn

        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", **config)
        )
        self.start_timeout = start_timeout
        self._thread = threading.Thread(target=self.server.run, name="memlane-serve", daemon=True)

    @property
    def url(self) -> str:
        (server,) = self.server.servers
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    def __enter__(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the app did not start (see the log above: its lifespan failed)")
            if time.monotonic() > deadline:
                raise TimeoutError("the app did not start in time")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
