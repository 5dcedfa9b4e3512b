"""Hostile layouts inside a memory root, met through the tools a client calls.

Every file memdir opens lies inside the root once symlinks are resolved and is a regular
file; anything else (a symlink leading out, a named pipe, a symlink loop, a path longer
than the OS allows) is skipped in listings and refused with a clear error by the tools,
and nothing outside the root is read, written, renamed or deleted.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from memdir.core.errors import InvalidPathError, MemdirError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools import memory_delete, memory_edit, memory_glob, memory_grep, memory_read, memory_write
from tests.fakes import FakeEmbedder

SECRET = "OUTSIDE-SECRET"


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` (no symlinks followed): its bytes and modification time."""
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the root with files an attacker would like memdir to leak or destroy."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# {SECRET}\n", encoding="utf-8")
    (folder / "secret.yml").write_text(f"title: {SECRET}\nhits: 77\n", encoding="utf-8")
    (folder / "secret.emb").write_bytes(b"\0" * 1536)
    (folder / "sentinel.md").write_text("keep me", encoding="utf-8")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "memory"


def open_memory(root: Path) -> Memory:
    return Memory.open(Settings(root=root), embedder=FakeEmbedder())


def put(memory: Memory, session, path: str, content: str, title: str) -> str:
    """MemoryWrite with only what these tests vary (the type is the path's top folder)."""
    return memory_write(memory, session, path, content, title, path.split("/")[0], None, None, None)


def call_with_timeout(fn, *args, seconds: float = 10.0):
    """``fn(*args)``'s result or exception; fails (instead of hanging the suite) if it blocks."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 — handed back to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{getattr(fn, '__name__', fn)} blocked for {seconds} s"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]


# --------------------------------------------------------------------------- sidecars


def test_a_sidecar_symlinked_out_of_the_root_never_leaks(root, outside, session):
    memory = open_memory(root)
    put(memory, session, "fact/ok.md", "mine", "Mine")
    (root / "fact/ok.yml").unlink()
    (root / "fact/ok.yml").symlink_to(outside / "secret.yml")
    (root / "fact/ok.emb").unlink()
    (root / "fact/ok.emb").symlink_to(outside / "secret.emb")
    memory.close()
    before = snapshot(outside)

    memory = open_memory(root)
    assert SECRET not in memory_glob(memory, session, "fact/*")
    assert SECRET not in memory_grep(memory, session, "mine", output_mode="files_with_matches")
    with pytest.raises(InvalidPathError, match=r"'fact/ok.yml': it resolves outside the memory root"):
        memory_read(memory, session, "fact/ok.md")
    with pytest.raises(InvalidPathError, match="outside the memory root"):
        put(memory, session, "fact/ok.md", "again", "Again")
    assert memory_delete(memory, session, "fact/ok.md")  # removes the links, not what they point at
    put(memory, session, "fact/ok.md", "fresh", "Fresh")
    assert memory.read("fact/ok.md").hits == 0  # the outside file's 77 hits were not copied
    memory.close()
    assert snapshot(outside) == before
    assert not (root / "fact/ok.yml").is_symlink()


# --------------------------------------------------------------------------- special files


def test_a_named_pipe_is_not_an_entry_and_never_blocks(root, outside, session):
    memory = open_memory(root)
    put(memory, session, "concept/ok.md", "fine", "Ok")
    os.mkfifo(root / "concept/fifo.md")
    os.mkfifo(root / "concept/ok.yml.tmp")
    (root / "concept/ok.yml").unlink()
    os.mkfifo(root / "concept/ok.yml")
    (root / "concept/folder.md").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "concept/sock.md"))
        for tool, args in (
            (memory_read, ("concept/fifo.md",)),
            (memory_read, ("concept/sock.md",)),
            (memory_read, ("concept/folder.md",)),
            (put, ("concept/fifo.md", "x", "X")),
            (memory_edit, ("concept/fifo.md", "a", "b")),
            (memory_delete, ("concept/fifo.md",)),
        ):
            with pytest.raises(MemdirError, match="not a regular file"):
                call_with_timeout(tool, memory, session, *args)
        listing = call_with_timeout(memory_glob, memory, session, "concept/*")
        assert "concept/ok.md" in listing and "fifo" not in listing and "sock" not in listing
        with pytest.raises(MemdirError, match=r"'concept/ok.yml': it is a named pipe"):
            call_with_timeout(memory_read, memory, session, "concept/ok.md")  # its sidecar cannot be used
        call_with_timeout(memory_grep, memory, session, "fine")
    memory.close()


# --------------------------------------------------------------------------- OS limits


def test_a_symlink_loop_gives_a_clear_error(root, session):
    memory = open_memory(root)
    (root / "concept").mkdir()
    (root / "concept/a.md").symlink_to("b.md")
    (root / "concept/b.md").symlink_to("a.md")
    (root / "concept/l1").symlink_to("l2")
    (root / "concept/l2").symlink_to("l1")
    for tool, args in (
        (memory_read, ("concept/a.md",)),
        (put, ("concept/a.md", "x", "X")),
        (put, ("concept/l1/x.md", "x", "X")),
        (memory_read, ("concept/l1/x.md",)),
        (memory_delete, ("concept/a.md",)),
    ):
        with pytest.raises(InvalidPathError, match="symbolic links that loop") as excinfo:
            tool(memory, session, *args)
        assert excinfo.value.hint
    assert "a.md" not in memory_glob(memory, session, "**/*")


def test_a_path_longer_than_the_os_allows_gives_a_clear_error(tmp_path, session):
    base = tmp_path / ("r" * max(1, 223 - len(str(tmp_path)) - 1))
    memory = open_memory(base)
    path = "fact/" + "/".join(["\U0001f600" * 62] * 16) + ".md"  # 3,991 bytes: valid, but not under this root
    for tool, args in (
        (put, (path, "x", "X")),
        (memory_read, (path,)),
        (memory_delete, (path,)),
    ):
        with pytest.raises(InvalidPathError, match="longer than the operating system allows") as excinfo:
            tool(memory, session, *args)
        assert "shorter" in excinfo.value.hint
