"""The framing rules `memlane serve` holds a request to before h11 parses it.

h11 bounds a request's head only while it is incomplete: a 70 KB head that arrives in one write
is parsed whole. It reads a bare LF as a line end in the head but waits for CRLF in a chunk line,
so a bare-LF chunked request waited, unanswered, for bytes that never come. `GuardedConnection`
refuses, before parsing: a head longer than the cap however it arrived (431), a line of the head
or a chunk line that ends in a bare LF, and a request that gives both Content-Length and
Transfer-Encoding (400; two framings are how requests are smuggled past a proxy). The protocol
answers the refusal and closes the connection (serve/limits.py).
"""

from __future__ import annotations

from typing import Any

import h11

# the longest chunk line read: a size in hex and an extension (h11 discards extensions)
_MAX_CHUNK_LINE_BYTES = 4096


class FramingRefused(h11.RemoteProtocolError):
    """A request refused for its framing, with the status and the sentence the client is answered."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason, error_status_hint=status)
        self.status = status
        self.reason = reason


class GuardedConnection(h11.Connection):
    """h11's server connection, refusing a request head past `max_head_bytes` and malformed framing."""

    def __init__(self, max_head_bytes: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self.max_head_bytes = max_head_bytes
        self.refusal: FramingRefused | None = None

    def _extract_next_receive_event(self) -> Any:
        # h11's own step, inside next_event's error handling: a refusal raised here leaves the
        # peer's state ERROR as h11's own do, so a 4xx can still be sent and the connection closed
        try:
            if self.their_state is h11.IDLE:
                self._check_head()
            elif self.their_state is h11.SEND_BODY:
                self._check_chunk_line()
            event = super()._extract_next_receive_event()
            if isinstance(event, h11.Request):
                _check_single_framing(event)
        except FramingRefused as refused:
            self.refusal = refused
            raise
        return event

    def _buffered(self) -> bytearray | bytes:
        """What has been received and not yet parsed (h11's buffer itself where it can be read:
        a copy per event would make a body of many small chunks cost its length squared)."""
        buffer = getattr(getattr(self, "_receive_buffer", None), "_data", None)
        return buffer if isinstance(buffer, bytearray) else self.trailing_data[0]

    def _check_head(self) -> None:
        buffered = self._buffered()
        # a head ends at its first blank line, which h11 reads as LF, CR? LF; the cap counts it
        limit = self.max_head_bytes
        ends = [at + len(blank) for blank in (b"\n\n", b"\n\r\n") if (at := buffered.find(blank, 0, limit)) != -1]
        if not ends:
            if len(buffered) > self.max_head_bytes:
                raise FramingRefused(431, f"the request line and headers are over {self.max_head_bytes} bytes")
            return  # incomplete: h11 and the header timeout bound the rest
        head = bytes(buffered[: min(ends)])
        if head.count(b"\n") != head.count(b"\r\n"):
            raise FramingRefused(400, "a line of the request head ends in a bare LF; lines end in CRLF")

    def _check_chunk_line(self) -> None:
        """A chunk line that ends in a bare LF, refused where h11 would wait for its CRLF forever."""
        reader = getattr(self, "_reader", None)
        awaiting_chunk_line = (
            type(reader).__name__ == "ChunkedReader"
            and getattr(reader, "_bytes_in_chunk", None) == 0
            and not getattr(reader, "_bytes_to_discard", b"")
            and getattr(reader, "_reading_trailer", True) is False
        )
        if not awaiting_chunk_line:
            return
        buffered = self._buffered()
        line_end = buffered.find(b"\n", 0, _MAX_CHUNK_LINE_BYTES)
        if line_end == -1:
            if len(buffered) >= _MAX_CHUNK_LINE_BYTES:
                raise FramingRefused(400, f"a chunk line is over {_MAX_CHUNK_LINE_BYTES} bytes")
        elif line_end == 0 or buffered[line_end - 1] != ord("\r"):
            raise FramingRefused(400, "a chunk line ends in a bare LF; lines end in CRLF")


def _check_single_framing(request: h11.Request) -> None:
    names = {name.lower() for name, _ in request.headers}
    if b"content-length" in names and b"transfer-encoding" in names:
        raise FramingRefused(400, "the request gives both Content-Length and Transfer-Encoding; send one")
