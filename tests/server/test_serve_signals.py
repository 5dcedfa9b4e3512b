"""`memdir serve` started by hand: it says it is waiting, and Ctrl-C / SIGTERM stop it at once, cleanly."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

WAITING = b"waiting for an MCP client"


@pytest.fixture
def serve_env(tmp_path):
    return {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false", "MEMDIR_ROOT": str(tmp_path / "memory")}


def read_pty_until(fd: int, wanted: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
    return seen


def wait_for_exit(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    return None


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.02])
def test_ctrl_c_on_a_terminal_stops_the_server_after_it_said_it_is_waiting(serve_env, delay):
    """Also while the server is still being built: Ctrl-C right after the message used to land in
    an import, and ``python -m memdir`` then died of SIGINT instead of exiting with 130."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the server with a terminal as stdin, stdout and stderr
        os.execve(sys.executable, [sys.executable, "-m", "memdir", "serve"], serve_env)
    code = None
    try:
        shown = read_pty_until(fd, b"Ctrl-C", timeout=30)
        assert WAITING in shown and b"Ctrl-C" in shown, shown
        time.sleep(delay)
        os.kill(pid, signal.SIGINT)
        code = wait_for_exit(pid, timeout=10)
        shown += read_pty_until(fd, b"\0", timeout=0.3)
    finally:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert code == 130, shown
    assert b"Traceback" not in shown and b"KeyboardInterrupt" not in shown


def rpc(process: subprocess.Popen, message: dict) -> dict | None:
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()
    return json.loads(process.stdout.readline()) if "id" in message else None


def test_sigterm_stops_a_connected_server_with_its_memory_open(serve_env):
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", "serve"], env=serve_env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "MemoryGlob", "arguments": {"pattern": "**"}}})
        assert "result" in answer, answer
        process.send_signal(signal.SIGTERM)  # stdin stays open: the SDK's reader is blocked on it
        code = process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read().decode()
    assert code == 143, stderr
    assert "Traceback" not in stderr and WAITING.decode() not in stderr  # not a terminal: no waiting line



INTERRUPTED_WHILE_IMPORTING = """
import sys

class CtrlC:  # Ctrl-C pressed while the command line (or the server, started without it) is still being imported
    def find_spec(self, name, path=None, target=None):
        if name in ("memdir.cli", "memdir.server.app"):
            raise KeyboardInterrupt

sys.meta_path.insert(0, CtrlC())
from memdir.launch import main
main()
"""


def test_ctrl_c_while_the_command_line_is_still_starting_is_quiet_too(serve_env):
    """Importing and building the commands takes a few hundred ms: Ctrl-C in there is no traceback either."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_IMPORTING, "serve"], env=serve_env,
                          capture_output=True, timeout=60)
    assert done.returncode == 130 and done.stderr == b"", done.stderr
