"""The hooks' local socket: a running server answers `memdir discover` / `memdir hook session-start`,
only its owner can reach it, and the hooks fall back to their cold path whenever it does not answer."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memdir.core import hook_socket
from memdir.core.settings import Settings
from memdir.launch import answered_by_server
from memdir.memory import Memory
from memdir.server import local_socket
from memdir.server.state import MemoryHost
from memdir.tools.discovery import discover
from tests.fakes import FakeEmbedder

PROMPT = "how do I rebase my git branch?"


@pytest.fixture
def settings(tmp_path):
    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("skill/git/rebase.md", "Fetch, rebase the branch onto main, run the tests, push.",
                     title="Rebase a git branch", metadata={"type": "skill", "tags": ["git", "rebase", "branch"]})
        memory.write("fact/git/remotes.md", "origin is GitHub; backup is the NAS.",
                     title="Git remotes", metadata={"type": "fact", "tags": ["git", "remotes"]})
    return settings


@contextlib.contextmanager
def running_server(settings: Settings):
    """`local_socket.serving` on an event loop in a thread, as the server's lifespan runs it; yields its path."""
    host = MemoryHost(settings, embedder=FakeEmbedder())
    started, stop, result = threading.Event(), threading.Event(), {}

    async def serve() -> None:
        async with local_socket.serving(settings, host) as path:
            result["path"] = path
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.01)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield result["path"]
    finally:
        stop.set()
        thread.join(10)
        host.close()


def discover_request(prompt: str = PROMPT) -> dict:
    return {"kind": "discover", "prompt": prompt, "include_skills": True}


def raw_exchange(path: Path, line: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(os.fspath(path))
        client.sendall(line)
        return json.loads(client.makefile("rb").readline())


def test_the_server_answers_as_the_cold_path_would(settings):
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        cold = discover(memory, PROMPT, settings, include_skills=True)
    with running_server(settings) as path:
        assert path is not None and path.is_socket()
        answer = hook_socket.ask(settings.store_root, discover_request(), timeout=5)
    assert cold and answer == cold


def test_socket_is_owner_only_and_removed_on_the_way_out(settings):
    with running_server(settings) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.exists()


def test_the_hook_entry_point_prints_the_servers_answer(settings, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"prompt": PROMPT, "cwd": "/tmp"})))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    with running_server(settings):
        assert answered_by_server(["discover", "--root", str(settings.storage.root)])
    context = json.loads(out.getvalue())["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert 'LoadSkill(file_path: "skill/git/rebase.md")' in context["additionalContext"]


def test_session_start_is_answered_too(settings, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"cwd": "/src/nothing-here"})))
    with running_server(settings):
        assert hook_socket.ask(settings.store_root, {"kind": "session-start", "cwd": "/src/x"}, timeout=5) == ""
        assert answered_by_server(["hook", "session-start", f"--root={settings.storage.root}"])


@pytest.mark.parametrize("argv", [
    ["discover", "--root"],                     # a missing value
    ["discover", "--verbose"],                  # an option the fast path does not know
    ["discover", "--mode", "nonsense"],         # a value only the CLI can explain
    ["discover", "--agent", "../escape"],
    ["status"],
])
def test_anything_unusual_goes_to_the_full_cli(settings, monkeypatch, argv):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"prompt": PROMPT})))
    with running_server(settings):
        assert not answered_by_server(argv)


def test_a_hook_answers_from_the_server_when_one_runs_and_it_may_ask(settings):
    """`hook_socket.answer`, which both hooks use: the server's text, else the hook's own work."""
    def cold() -> str:
        return "cold"

    assert hook_socket.answer(settings, discover_request(), cold) == "cold"  # no server running
    with running_server(settings):
        assert "skill/git/rebase.md" in hook_socket.answer(settings, discover_request(), cold)
        not_asking = Settings(root=settings.storage.root, hook_socket=False)
        assert hook_socket.answer(not_asking, discover_request(), cold) == "cold"


def test_without_a_server_the_hook_falls_back_to_the_cold_path(settings):
    """No server: `ask` is None at once, and the real command still answers (through the CLI)."""
    started = time.perf_counter()
    assert hook_socket.ask(settings.store_root, discover_request(), timeout=5) is None
    assert time.perf_counter() - started < 1
    result = subprocess.run(
        [sys.executable, "-m", "memdir", "discover", "--root", str(settings.storage.root)],
        input=json.dumps({"prompt": PROMPT}), capture_output=True, text=True, timeout=120,
        env={**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"},
    )
    assert result.returncode == 0 and "rebase.md" in result.stdout, result.stderr


def stale_socket(path: Path) -> None:
    """A socket file whose server is gone (what a killed server leaves behind)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(os.fspath(path))
    dead.close()


def test_a_stale_socket_is_a_fallback_and_the_next_server_replaces_it(settings):
    path = hook_socket.socket_path(Path(hook_socket.canonical_root(settings.store_root)))
    stale_socket(path)
    assert hook_socket.ask(settings.store_root, discover_request(), timeout=5) is None
    assert path.is_socket()  # the client removes nothing
    with running_server(settings) as served:
        assert served == path
        assert hook_socket.ask(settings.store_root, discover_request(), timeout=5)


def test_a_second_server_leaves_the_first_ones_socket_alone(settings):
    with running_server(settings) as first:
        inode = first.stat().st_ino
        with running_server(settings) as second:
            assert second is None
        assert first.stat().st_ino == inode
        assert hook_socket.ask(settings.store_root, discover_request(), timeout=5)


def test_a_socket_directory_others_can_enter_is_not_trusted(settings):
    with running_server(settings) as path:
        path.parent.chmod(0o755)
        try:
            assert hook_socket.ask(settings.store_root, discover_request(), timeout=5) is None
        finally:
            path.parent.chmod(0o700)


def test_a_slow_server_is_a_fallback(settings, monkeypatch):
    """The memory thread busy (here: a slow answer): the hook stops waiting after its timeout."""
    answer = local_socket._answer
    monkeypatch.setattr(local_socket, "_answer", lambda *args: time.sleep(1.5) or answer(*args))
    with running_server(settings):
        started = time.perf_counter()
        assert hook_socket.ask(settings.store_root, discover_request(), timeout=0.3) is None
        assert time.perf_counter() - started < 1.0


def test_the_server_declines_while_the_model_loads(settings, monkeypatch):
    """Keyword-only answers while the model loads would differ from the cold path's: the hook answers itself."""
    from memdir.embeddings.provider import ModelState

    original = local_socket._answer

    def loading(memory, request, settings):
        memory.model.state = ModelState.LOADING
        try:
            return original(memory, request, settings)
        finally:
            memory.model.state = ModelState.READY

    monkeypatch.setattr(local_socket, "_answer", loading)
    root = hook_socket.canonical_root(settings.store_root)
    with running_server(settings) as path:
        line = json.dumps({"v": 1, "root": root, **discover_request()}).encode() + b"\n"
        assert raw_exchange(path, line) == {"ok": False, "error": "the embedding model is still loading"}


@pytest.mark.parametrize(("line", "error"), [
    (b"not json\n", "not JSON"),
    (b"[1]\n", "JSON object"),
    (b'{"v": 9, "kind": "discover"}\n', "unsupported request version 9"),
    (b'{"v": 1, "kind": "rm -rf"}\n', "unknown kind 'rm -rf'"),
    (b'{"v": 1, "kind": "discover", "root": "R", "prompt": 3, "include_skills": true}\n', "'prompt' is missing or not str"),
    (b'{"v": 1, "kind": "session-start", "root": "R", "cwd": null, "extra": 1}\n', "unknown field(s) extra"),
    (b'{"v": 1, "kind": "session-start", "root": "/elsewhere", "cwd": null}\n', "not /elsewhere"),
])
def test_bad_requests_get_a_clear_error(settings, line, error):
    root = hook_socket.canonical_root(settings.store_root)
    with running_server(settings) as path:
        reply = raw_exchange(path, line.replace(b'"R"', json.dumps(root).encode()))
    assert reply["ok"] is False and error in reply["error"]


@pytest.fixture
def runtime_dir(monkeypatch):
    """A short XDG_RUNTIME_DIR (pytest's own temporary paths are long for a socket)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as run:
        os.chmod(run, 0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", run)
        yield Path(run)


def test_a_root_too_long_for_a_socket_uses_the_runtime_dir(tmp_path, monkeypatch, runtime_dir):
    long_root = tmp_path / ("x" * 120)
    path = hook_socket.socket_path(long_root)
    assert path is not None and path.parent == runtime_dir / "memdir" and path.suffix == ".sock"
    assert hook_socket.socket_path(tmp_path / ("y" * 120)) != path  # keyed by the root
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/" + "r" * 120)
    assert hook_socket.socket_path(long_root) is None


def test_a_long_root_is_still_served(tmp_path, runtime_dir):
    settings = Settings(root=tmp_path / ("deep-" * 20) / "memory")
    with running_server(settings) as path:
        assert path is not None and path.parent == runtime_dir / "memdir"
        assert hook_socket.ask(settings.store_root, discover_request(), timeout=5) == ""


def test_the_store_opens_beside_its_servers_socket(settings):
    """The socket is the one special file allowed under .memdir/ (the cold path opens the store while a server runs)."""
    with running_server(settings) as path:
        assert path.is_socket() and path.is_relative_to(settings.store_root / ".memdir")
        with Memory.open(settings, embedder=FakeEmbedder()) as memory:
            assert memory.read("fact/git/remotes.md")


def spawn_server(root: Path, env: dict[str, str]) -> subprocess.Popen:
    """`memdir serve` over stdio (stdin held open), once its hooks socket answers."""
    server = subprocess.Popen([sys.executable, "-m", "memdir", "serve", "--root", str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while hook_socket.ask(root, discover_request(), timeout=2) is None:
        assert server.poll() is None and time.monotonic() < deadline, "memdir serve did not answer on its socket"
        time.sleep(0.1)
    return server


@pytest.mark.slow
def test_real_server_and_hook_processes(settings):
    """`memdir serve` answers `memdir discover` as the cold hook would; killed, it leaves a stale socket
    that the hook falls back past and the next server replaces; stopped normally, it removes its socket."""
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"}

    def hook() -> str:
        result = subprocess.run([sys.executable, "-m", "memdir", "discover", "--root", str(settings.storage.root)],
                                input=json.dumps({"prompt": PROMPT}), capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0 and not result.stderr, result.stderr
        return result.stdout

    cold = hook()
    assert "rebase.md" in cold
    path = hook_socket.socket_path(Path(hook_socket.canonical_root(settings.store_root)))
    server = spawn_server(settings.storage.root, env)
    assert hook() == cold
    server.kill()
    server.wait()
    assert path.is_socket()                      # what a killed server leaves
    assert hook() == cold                        # ... costs the hook nothing but the cold path
    server = spawn_server(settings.storage.root, env)    # ... and the next server takes over
    assert hook() == cold
    server.stdin.close()
    server.wait(timeout=60)
    assert not path.exists()


def test_the_hooks_fast_path_imports_only_what_asking_needs():
    """The entry point a hook process starts with loads the socket client and the few settings it
    reads: no logging, temporary-file or hashing machinery (a long store path loads them when used)."""
    probe = ("import json, sys; import memdir.launch; "
             "print(json.dumps([name for name in ('logging', 'tempfile', 'hashlib', 'pydantic', 'typer') if name in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
