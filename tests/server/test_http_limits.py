"""`memdir serve --http` cuts slow and half-open connections, and bounds the connections per client.

A real server process with short limits (1 s, 5 connections), raw sockets playing the slow clients.
"""

from __future__ import annotations

import socket
import time

import httpx2
import pytest

from memdir.server.tokens import TokenFile
from tests.server.http_process import running_server

pytestmark = pytest.mark.slow

LIMITS = {"MEMDIR_HTTP_HEADER_TIMEOUT": "1", "MEMDIR_HTTP_BODY_TIMEOUT": "1", "MEMDIR_HTTP_MAX_CONNECTIONS_PER_CLIENT": "5"}


@pytest.fixture
def served(tmp_path):
    token = TokenFile(tmp_path / "http-tokens.json").create("alice")
    with running_server(env=LIMITS, cwd=tmp_path) as server:
        yield server, token


def opened(server, sent: bytes = b"") -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    if sent:
        connection.sendall(sent)
    return connection


def answer_then_closed(connection: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started, received = time.monotonic(), b""
    while chunk := connection.recv(4096):
        received += chunk
    connection.close()
    return received, time.monotonic() - started


def test_silent_half_sent_and_stalled_requests_are_cut_off(served):
    server, token = served
    silent = opened(server)
    half_line = opened(server, b"POST /mcp HT")
    half_headers = opened(server, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    stalled_body = opened(server, (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                                   "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                                   "Content-Length: 1000\r\n\r\n{\"jsonrpc\":").encode())
    for connection in (silent, half_line, half_headers):
        received, seconds = answer_then_closed(connection)
        assert received.startswith(b"HTTP/1.1 408") and seconds < 8
    received, seconds = answer_then_closed(stalled_body)
    assert seconds < 8 and not received.startswith(b"HTTP/1.1 200")
    # a request that arrives whole is answered as always
    assert httpx2.get(server.base + "/health", headers={"authorization": f"Bearer {token}"}).status_code == 200


def test_one_client_gets_at_most_the_configured_connections(served):
    server, token = served
    held = [opened(server, b"GET /") for _ in range(5)]
    time.sleep(0.3)
    refused, _ = answer_then_closed(opened(server))
    assert refused.startswith(b"HTTP/1.1 503") and b"Too many connections" in refused
    for connection in held:
        connection.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the closed ones no longer count
        try:
            if httpx2.get(server.base + "/health", headers={"authorization": f"Bearer {token}"}).status_code == 200:
                break
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    else:
        pytest.fail("the server kept refusing after the connections were closed")
