"""The connection limits of `memlane serve`, set on uvicorn: how long a client may take to send
its request headers, how long an idle kept-alive connection stays open, how large the headers may
be. uvicorn closes idle kept-alive connections itself, but it waits for the headers of a request
without a bound (a slow-header client kept a connection open past 25 s): `HeaderTimeoutH11Protocol`
adds that bound, and parses through serve/framing.py's `GuardedConnection`, which caps the headers
however they arrive (h11 alone capped only headers arriving in pieces) and refuses malformed
framing at once, answering 431 or 400 and closing. In production put a reverse proxy in front too
(README, memlane serve).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from memlane.config import Settings
from memlane.serve.framing import GuardedConnection


class HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request line and headers have not all
    come within `header_timeout_seconds` of its first byte (or of the connection)."""

    header_timeout_seconds = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        max_head_bytes = self.config.h11_max_incomplete_event_size or 16 * 1024  # uvicorn's and h11's default
        self.conn = GuardedConnection(max_head_bytes)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 refused, saying what a framing refusal was (431 for
        headers over the cap), then closing the connection."""
        refusal = self.conn.refusal if isinstance(self.conn, GuardedConnection) else None
        if refusal is None:
            super().send_400_response(msg)
            return
        self.logger.info("refused a request: %s", refusal.reason)
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):  # the app had begun its answer
            self.transport.close()
            return
        body = refusal.reason.encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        reason = STATUS_PHRASES[refusal.status]
        self.transport.write(self.conn.send(h11.Response(status_code=refusal.status, headers=headers, reason=reason)))
        self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
        self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        self.transport.close()

    def _watch_headers(self) -> None:
        """Arm the timer while a request's headers are awaited with some of them in (or none on
        a new connection); idle kept-alive connections are uvicorn's own timer's."""
        awaiting_headers = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if awaiting_headers and (self.cycle is None or self.conn.trailing_data[0]):
            if self._header_timer is None:
                self._header_timer = asyncio.get_running_loop().call_later(
                    self.header_timeout_seconds, self._headers_too_slow
                )
        else:
            self._stop_header_timer()

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info("closed a connection whose request headers took over %g s", self.header_timeout_seconds)
            self.transport.close()


def uvicorn_limits(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` / `uvicorn.Config` that bound connections."""
    protocol = type(
        "HeaderTimeoutH11Protocol",
        (HeaderTimeoutH11Protocol,),
        {"header_timeout_seconds": settings.serve.header_timeout_seconds},
    )
    return {
        "http": protocol,
        "timeout_keep_alive": settings.serve.keep_alive_seconds,
        "h11_max_incomplete_event_size": settings.serve.max_header_bytes,
    }
