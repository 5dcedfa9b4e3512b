"""Connection limits of `memdir serve --http`, applied before a request reaches the gate.

uvicorn cuts an idle keep-alive connection, but nothing else: a client that opens a
connection and sends nothing, half a request line, or a body that stops halfway would hold
its connection (a socket and a task) for as long as it likes, and many of them would use
up the server for everyone, before any token was checked. `limited_protocol` makes
uvicorn's HTTP/1.1 protocol (h11) enforce, per connection:

* headers: a request's headers must be complete within ``http_header_timeout`` seconds of
  the connection being made (or of the request's first byte on a kept-alive connection);
  otherwise the server answers 408 and closes the connection;
* bodies: while a request's body is being received, ``http_body_timeout`` seconds without a
  byte from the client close the connection (the application sees a disconnect). Time the
  server itself does not read (its buffer is full) does not count;
* connections per client: at most ``http_max_connections_per_client`` open connections
  from one address; more are answered 503 and closed at once.

Once a request is complete nothing here limits its connection: an MCP client's event
stream stays open as long as the session does.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass
class ConnectionLimits:
    """The limits (seconds, count) and the open connections per client address they count."""

    header_timeout: float
    body_timeout: float
    per_client: int
    open: Counter[str] = field(default_factory=Counter)


TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n"
TOO_MANY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n"


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the limits of the module docstring (`limits` set by `limited_protocol`)."""

    limits: ConnectionLimits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address: str | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else ""
        if self.limits.open[address] >= self.limits.per_client:
            transport.write(TOO_MANY + f"Too many connections from {address} (at most {self.limits.per_client}); "
                            "close some, or raise http_max_connections_per_client.\n".encode())
            transport.close()
            return
        self._address = address
        self.limits.open[address] += 1
        self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._address is not None:
            self.limits.open[self._address] -= 1
            if self.limits.open[self._address] <= 0:
                del self.limits.open[self._address]
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if self.transport.is_closing():
            self._disarm()
        elif state is h11.SEND_BODY:
            self._arm(self.limits.body_timeout)  # again with every piece of the body
        elif state is h11.IDLE and self.conn.trailing_data[0]:
            if self._timer is None:  # a new request's first bytes: its headers' deadline starts
                self._arm(self.limits.header_timeout)
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        self._disarm()  # the kept-alive connection is uvicorn's to time out until the next request begins
        super().on_response_complete()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, seconds)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, seconds: float) -> None:
        """Close a connection still waiting for its client's headers or body; otherwise wait on."""
        self._timer = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self.flow.read_paused:  # the server is not reading: not the client's delay
                self._arm(seconds)
                return
            self.transport.close()
        elif state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(TIMED_OUT + b"The request's headers did not arrive in time.\n")
            self.transport.close()


def limited_protocol(limits: ConnectionLimits) -> type[LimitedH11Protocol]:
    """A `LimitedH11Protocol` class bound to ``limits`` (uvicorn makes one instance per connection)."""
    return type("LimitedH11Protocol", (LimitedH11Protocol,), {"limits": limits})


__all__ = ["ConnectionLimits", "LimitedH11Protocol", "limited_protocol"]
