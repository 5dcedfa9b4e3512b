"""A real `memdir serve --http` process for tests and benchmarks, and an MCP client for it; an HTTP
application served by uvicorn on a thread of the test's own process (`serving`).

`running_server` starts ``python -m memdir serve --http --port 0`` (any free port) with the
environment of the caller (tests: the isolated home of ``conftest.py``), waits for the line
announcing its address, and stops it with SIGTERM afterwards. Its stderr is collected on a
thread (``server.stderr_text()``), so a chatty server never blocks on a full pipe.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ANNOUNCED = re.compile(r"serving MCP at (http://\S+/mcp)")


@dataclass
class RunningServer:
    process: subprocess.Popen
    url: str
    """The MCP endpoint, ``http://127.0.0.1:PORT/mcp``."""
    lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    @property
    def port(self) -> int:
        return int(self.base.rpartition(":")[2])

    def stderr_text(self) -> str:
        return "".join(self.lines)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then the exit status (SIGKILL if it does not stop within ``timeout``)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "memdir", "serve", "--http", "--port", "0", *args]


@contextmanager
def running_server(args: Sequence[str] = (), *, env: dict[str, str] | None = None, cwd: Path | None = None,
                   startup_timeout: float = 60.0) -> Iterator[RunningServer]:
    """A running HTTP server (keyword search only unless ``env`` says otherwise); stopped on exit."""
    environment = {"MEMDIR_EMBEDDINGS_ENABLED": "false", **os.environ, **(env or {})}
    process = subprocess.Popen(serve_command(*args), env=environment, cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    announced = threading.Event()

    def drain() -> None:
        for line in process.stderr:
            lines.append(line)
            if ANNOUNCED.search(line):
                announced.set()

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + startup_timeout
    while not announced.wait(0.05):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"memdir serve --http did not start (exit {process.poll()}):\n{''.join(lines)}")
    url = next(match.group(1) for line in lines if (match := ANNOUNCED.search(line)))
    server = RunningServer(process, url, lines)
    try:
        yield server
    finally:
        if process.poll() is None:
            server.stop()


@asynccontextmanager
async def mcp_client(url: str, token: str | None, *, mode: str = "legacy", **headers: str) -> AsyncIterator:
    """The official MCP client over streamable HTTP, sending ``token`` as its bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    sent = {"Authorization": f"Bearer {token}"} if token else {}
    sent.update({name.replace("_", "-"): value for name, value in headers.items()})
    async with httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


@contextmanager
def serving(app, ready: Callable[[], bool] = lambda: True) -> Iterator[str]:
    """``app`` (an ASGI application) served by uvicorn on a thread, on a free loopback port, until the
    block ends; yields its base URL once uvicorn has started and ``ready()`` says so."""
    import socket

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not (runner.started and ready()):
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
