"""Slow and half-open clients against `memdir serve --http` with its default limits.

Usage::

    python bench/bench_slow_clients.py [--connections 200] [--wait 40]

Starts a real ``memdir serve --http`` on loopback (fresh temporary root and token file,
default settings) and opens ``--connections`` connections from 127.0.0.1 that never finish
their request, in three kinds in turn: nothing sent, half a request line, a request whose
body stops after a few bytes. It then watches them for up to ``--wait`` seconds.

Printed: how many the server refused at once (503, over ``http_max_connections_per_client``),
how many of each kind it cut later (408 or closed) and when the last of those went (seconds
after the connections were opened), how many were still open at the end; then whether a request with
the token is served once they are gone.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.server.tokens import TokenFile
from tests.server.http_process import running_server

KINDS = ("silent", "half request line", "stalled body")


def opening(kind: str, port: int, token: str) -> bytes:
    if kind == "silent":
        return b""
    if kind == "half request line":
        return b"POST /mcp HT"
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "Content-Length: 100000\r\n\r\n{\"jsonrpc\":").encode()


def main(connections: int, wait: float) -> None:
    """Open ``connections`` unfinished requests, watch them for ``wait`` seconds, print what became of them."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        token = TokenFile(home / "tokens.json").create("bench")
        env = {"MEMDIR_ROOT": str(home / "memory"), "MEMDIR_HTTP_TOKENS_FILE": str(home / "tokens.json"),
               "MEMDIR_CONFIG": str(home / "memdir.toml"), "MEMDIR_EMBEDDINGS_ENABLED": "false"}
        with running_server(env=env, cwd=home) as server:
            print(f"load: {os.getloadavg()[0]:.2f}")
            watch = selectors.DefaultSelector()
            started = time.monotonic()
            for number in range(connections):
                connection = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                kind = KINDS[number % len(KINDS)]
                if sent := opening(kind, server.port, token):
                    connection.sendall(sent)
                connection.setblocking(False)
                watch.register(connection, selectors.EVENT_READ, {"kind": kind, "answer": b""})
            refused, cut = 0, {kind: [] for kind in KINDS}
            while watch.get_map() and time.monotonic() - started < wait:
                for key, _ in watch.select(timeout=0.5):
                    connection, state = key.fileobj, key.data
                    try:
                        chunk = connection.recv(4096)
                    except (ConnectionResetError, BlockingIOError):
                        chunk = b""
                    state["answer"] += chunk
                    if chunk:
                        continue
                    watch.unregister(connection)
                    connection.close()
                    if state["answer"].startswith(b"HTTP/1.1 503"):
                        refused += 1
                    else:
                        cut[state["kind"]].append(time.monotonic() - started)
            still_open = len(watch.get_map())
            for key in list(watch.get_map().values()):
                key.fileobj.close()
            cuts = ", ".join(f"{len(times)} {kind} (the last after {max(times, default=0):.1f} s)"
                             for kind, times in cut.items())
            print(f"{connections} unfinished requests from one address: {refused} refused at once (503); cut: {cuts}; "
                  f"{still_open} still open after {wait:.0f} s")
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as good:
                good.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {token}"
                             "\r\nConnection: close\r\n\r\n".encode())
                answer = good.recv(4096).split(b"\r\n", 1)[0].decode()
            print(f"then a request with the token: {answer}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--wait", type=float, default=40.0)
    options = parser.parse_args()
    main(options.connections, options.wait)
