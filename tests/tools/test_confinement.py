"""Hostile layouts inside a memory root, met through the tools a client calls.

Every file memdir opens lies inside the root once symlinks are resolved and is a regular
file; anything else (a symlink leading out, a named pipe, a symlink loop, a path longer
than the OS allows) is skipped in listings and refused with a clear error by the tools,
and nothing outside the root is read, written, renamed or deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.core.errors import InputValidationError, InvalidPathError, MemdirError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.directory.atomic import FAILED_DIR, txn_dir
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_edit import memory_edit
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_grep import memory_grep
from memdir.tools.memory_read import memory_read
from memdir.tools.memory_write import memory_write
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from memdir.tools.thread_control import thread_control
from memdir.tools.thread_list import thread_list
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.directory_store  # symlinks, special files and journals under the root

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


@pytest.mark.parametrize("name, target", [
    (".memdir", ""), (".lock", "sentinel.md"), (".memdir", "dangling"), ("threads", ""), ("threads/t1", ""),
])
def test_memdirs_own_files_symlinked_out_of_the_root_are_refused(root, outside, session, name, target):
    (root / name).parent.mkdir(parents=True)
    (root / name).symlink_to(outside / target)
    before = snapshot(outside)
    with pytest.raises(MemdirError, match=rf"'{name}'.*(symbolic link|outside the memory root)"):
        open_memory(root)
    assert snapshot(outside) == before


# --------------------------------------------------------------------------- journals


def hostile_journal(root: Path, outside: Path, name: str = "0001.commit") -> Path:
    """A committed journal whose paths go through an in-root symlink to ``outside``."""
    memory = open_memory(root)
    memory.close()
    (root / "concept").mkdir(exist_ok=True)
    (root / "concept/link").symlink_to(outside, target_is_directory=True)
    (outside / ".txn-x-0.tmp").write_text("planted", encoding="utf-8")
    txn_dir(root).mkdir(parents=True, exist_ok=True)
    journal = txn_dir(root) / name
    journal.write_text(json.dumps({
        "version": 1,
        "renames": [["concept/link/.txn-x-0.tmp", "concept/link/secret.md"]],
        "removals": ["concept/link/sentinel.md"],
    }), encoding="utf-8")
    return journal


def test_a_journal_leading_out_of_the_root_is_quarantined_not_replayed(root, outside, session, caplog):
    journal = hostile_journal(root, outside)
    before = snapshot(outside)
    memory = open_memory(root)
    memory_glob(memory, session, "**/*")
    put(memory, session, "fact/after.md", "still works", "After")
    memory.close()
    assert snapshot(outside) == before
    assert not journal.exists()
    assert (root / FAILED_DIR / journal.name).is_file()
    assert "quarantined" in caplog.text and "outside the memory root" in caplog.text


def test_a_journal_file_that_is_a_symlink_out_of_the_root_is_not_read(root, outside, session, caplog):
    (outside / "fake.commit").write_text(json.dumps({"version": 1, "renames": [], "removals": ["fact/x.md"]}))
    memory = open_memory(root)
    put(memory, session, "fact/x.md", "keep", "Keep")
    txn_dir(root).mkdir(parents=True, exist_ok=True)
    (txn_dir(root) / "0002.commit").symlink_to(outside / "fake.commit")  # planted while the server runs
    before = snapshot(outside)
    put(memory, session, "fact/y.md", "next", "Next")  # the next writer recovers: it quarantines the link
    assert "keep" in memory_read(memory, session, "fact/x.md")
    memory.close()
    assert not (txn_dir(root) / "0002.commit").exists()
    assert not (root / FAILED_DIR / "0002.commit").exists()  # the link was removed: it holds nothing to inspect
    assert "0002.commit was not replayed" in caplog.text and "removed (a symbolic link to" in caplog.text
    assert snapshot(outside) == before
    open_memory(root).close()  # the root opens again

    (txn_dir(root) / "0003.commit").symlink_to(outside / "fake.commit")  # planted before a start
    with pytest.raises(MemdirError, match=r"'.memdir/txn/0003.commit': it is a symbolic link"):
        open_memory(root)
    assert snapshot(outside) == before


def test_a_journal_folder_symlinked_out_of_the_root_is_refused_not_emptied(root, outside, session):
    memory = open_memory(root)
    put(memory, session, "fact/x.md", "keep", "Keep")
    (outside / "0004.commit").write_text(json.dumps({"version": 1, "renames": [], "removals": ["fact/x.md"]}))
    txn_dir(root).rmdir()
    txn_dir(root).symlink_to(outside, target_is_directory=True)  # planted while the server runs
    before = snapshot(outside)
    for tool, args in ((put, ("fact/y.md", "next", "Next")), (memory_read, ("fact/x.md",))):
        with pytest.raises(MemdirError, match=r"'.memdir/txn': it is a symbolic link"):
            tool(memory, session, *args)
    assert snapshot(outside) == before
    txn_dir(root).unlink()  # as the hint says
    assert "keep" in memory_read(memory, session, "fact/x.md")
    memory.close()


def write_defrag_journal(root: Path, *befores: dict) -> Path:
    from memdir.optimization.journal import journal_dir

    records = [
        {"type": "run", "id": "r1", "action": "compact", "options": {}, "started_at": "2026-01-01T00:00:00"},
        *({"type": "before", **before} for before in befores),
        {"type": "end", "status": "complete"},
    ]
    journal_dir(root).mkdir(parents=True, exist_ok=True)
    file = journal_dir(root) / "r1.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return file


def undo(root: Path):
    from typer.testing import CliRunner

    from memdir.cli import app

    return CliRunner().invoke(app, ["defrag", str(root), "--undo"])


@pytest.mark.parametrize("bad", [
    {"path": "fact/a.md", "state": {"state": "entry", "title": "no content"}},  # a state it cannot restore
    {"path": "fact/a.md", "state": {"state": "entry", "content": "a", "hits": None}},  # nor this one
    {"path": "../outside/sentinel.md", "state": {"state": "missing"}},  # not a memory path
    {"path": "concept/link/sentinel.md", "state": {"state": "missing"}},  # through a link out of the root
])
def test_defrag_undo_quarantines_a_journal_it_cannot_trust_and_changes_nothing(root, outside, bad):
    from memdir.optimization.journal import QUARANTINE_DIR

    memory = open_memory(root)
    memory.write("fact/a.md", "a", title="A")
    memory.write("fact/b.md", "b", title="B")
    memory.close()
    (root / "concept").mkdir()
    (root / "concept/link").symlink_to(outside, target_is_directory=True)
    journal = write_defrag_journal(root, bad, {"path": "fact/b.md", "state": {"state": "missing"}})
    before = snapshot(outside)
    result = undo(root)
    assert result.exit_code != 0
    output = " ".join(result.output.split())
    assert "cannot be undone" in output and "Nothing was changed" in output
    memory = open_memory(root)
    assert memory.read("fact/b.md").content == "b"  # nothing was undone halfway
    memory.close()
    assert not journal.exists() and (root / QUARANTINE_DIR / journal.name).is_file()
    assert snapshot(outside) == before


def test_a_defrag_journal_symlinked_out_of_the_root_is_neither_read_nor_appended_to(root, outside, session):
    from memdir.optimization.journal import journal_dir
    from memdir.tools.memory_defrag import memory_defrag

    open_memory(root).close()
    file = write_defrag_journal(root, {"path": "fact/a.md", "state": {"state": "missing"}})
    file.rename(outside / "r1.jsonl")
    file.symlink_to(outside / "r1.jsonl")
    before = snapshot(outside)
    result = undo(root)
    assert result.exit_code != 0 and "symbolic link" in result.output
    assert snapshot(outside) == before

    file.unlink()
    memory = open_memory(root)
    text = "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects."
    put(memory, session, "concept/a.md", text, "Classes")
    put(memory, session, "concept/b.md", text + " Indeed.", "Classes")
    journal_dir(root).rmdir()
    journal_dir(root).symlink_to(outside, target_is_directory=True)  # planted while the server runs
    assert "'.memdir/defrag': it is a symbolic link" in memory_defrag(memory, "merge_duplicates", dry_run=False)
    assert memory.redirect_of("concept/b.md") is None and memory.redirect_of("concept/a.md") is None
    memory.close()
    assert snapshot(outside) == before


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


def test_workspace_tools_never_wait_on_a_named_pipe(tmp_path):
    from memdir.workspace.tools import FileReads, ToolPermissions, Workspace, edit_file, read_file, write_file

    (tmp_path / "ws").mkdir()
    os.mkfifo(tmp_path / "ws/pipe.txt")
    workspace, reads = Workspace.create(tmp_path / "ws"), FileReads()
    for tool, args in ((read_file, ()), (write_file, ("x",)), (edit_file, ("a", "b"))):
        with pytest.raises(MemdirError, match="'pipe.txt': it is a named pipe"):
            call_with_timeout(tool, workspace, reads, ToolPermissions(), "pipe.txt", *args)


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


# --------------------------------------------------------------------------- working-memory threads


def _outside_thread(outside: Path) -> Path:
    """A thread folder outside the root, written by memdir itself: its log and a waiting message hold the secret."""
    donor = open_memory(outside.parent / "donor")
    thread_append(donor, "chat", "user", SECRET)
    thread_control(donor, "chat", "mode", "stepping")
    thread_append(donor, "chat", "user", f"queued {SECRET}")
    donor.close()
    shutil.copytree(outside.parent / "donor/threads/chat", outside / "thread")
    return outside / "thread"


@pytest.mark.parametrize("position, target", [
    ("threads/chat/events.jsonl", "thread/events.jsonl"),
    ("threads/chat/queue.jsonl", "thread/queue.jsonl"),
    ("threads/chat", "thread"),
    ("threads", ""),
    (".memdir/threads", "thread"),
    (".lock", "missing"),  # the root's lock, which every thread change takes: a dangling link would create a file
])
def test_a_thread_file_linked_out_of_the_root_while_serving_is_never_read_or_written(root, outside, position, target):
    """Links planted under threads/ or .memdir/threads/ after the root was opened (the open-time check
    cannot see them): every thread tool refuses them with a clear error, nothing outside is read or changed."""
    memory = open_memory(root)
    thread_append(memory, "chat", "user", "hello there")
    thread_control(memory, "chat", "strategy", "semantic")
    if position == "threads":
        (outside / "chat").mkdir()
        os.replace(_outside_thread(outside), outside / "chat")
    else:
        _outside_thread(outside)
    planted = root / position
    shutil.rmtree(planted) if planted.is_dir() else planted.unlink(missing_ok=True)
    planted.symlink_to(outside / target)
    before = snapshot(outside)
    calls = (
        (thread_append, ("chat", "user", "more")),
        (thread_context, ("chat", 20, "hello")),  # a window small enough to rank an older turn
        (thread_control, ("chat", "mode", "stepping")),
        (thread_append, ("chat", "user", "queued")),
        (thread_control, ("chat", "fork", "copy")),
        (thread_list, ()),
    )
    refused = 0
    for tool, args in calls:
        try:
            text = call_with_timeout(tool, memory, *args)
        except MemdirError as exc:
            assert SECRET not in str(exc)
            assert re.search(r"(symbolic link|outside the memory root)", exc.message), exc.message
            refused += 1
        else:
            assert SECRET not in text
    memory.close()
    assert refused
    assert snapshot(outside) == before


@pytest.mark.parametrize("position, kind", [
    ("threads/chat/events.jsonl", "a named pipe"), ("threads/chat/queue.jsonl", "a named pipe"), (".lock", "a named pipe"),
    ("threads/chat/events.jsonl", "a folder"), (".lock", "a folder"),
])
def test_a_special_file_among_a_threads_files_is_refused_and_never_blocks(root, position, kind):
    memory = open_memory(root)
    thread_append(memory, "chat", "user", "hello")
    thread_control(memory, "chat", "mode", "stepping")
    thread_append(memory, "chat", "user", "waiting")  # queue.jsonl holds it
    (root / position).unlink()
    os.mkfifo(root / position) if kind == "a named pipe" else (root / position).mkdir()
    for tool, args in ((thread_append, ("chat", "user", "more")), (thread_control, ("chat", "step"))):
        try:
            answer = call_with_timeout(tool, memory, *args)  # a step reports the message it could not write
        except MemdirError as exc:
            answer = str(exc)
        assert f"'{position}': it is {kind}" in answer
    with contextlib.suppress(MemdirError):
        call_with_timeout(thread_list, memory)
    memory.close()


@pytest.mark.parametrize("thread", ["..", "../outside", "/tmp/x", "a/b", "a\\b", ".memdir", "", "x" * 65, "a\x00b"])
def test_a_thread_id_that_would_leave_threads_is_refused(root, outside, thread):
    memory = open_memory(root)
    thread_append(memory, "chat", "user", "hello")
    before = snapshot(outside), sorted(os.listdir(root))
    calls = [(thread_append, (thread, "user", "x")), (thread_context, (thread, 500)), (thread_control, (thread, "state"))]
    if thread:  # fork with no value asks for one
        calls.append((thread_control, ("chat", "fork", thread)))
    for tool, args in calls:
        with pytest.raises(InputValidationError, match=r"thread id .* is not allowed") as excinfo:
            tool(memory, *args)
        assert "letters, digits" in excinfo.value.hint
    memory.close()
    assert (snapshot(outside), sorted(os.listdir(root))) == before


def test_thread_list_skips_a_folder_that_is_no_thread(root, outside):
    """A hand-made folder under threads/ whose name is no thread id, or whose log is a link out, is not
    listed (and does not make the listing fail)."""
    memory = open_memory(root)
    thread_append(memory, "chat", "user", "hello")
    (root / "threads/bad name").mkdir()
    (root / "threads/bad name/events.jsonl").write_bytes((root / "threads/chat/events.jsonl").read_bytes())
    (root / "threads/leak").mkdir()
    (root / "threads/leak/events.jsonl").symlink_to(_outside_thread(outside) / "events.jsonl")
    listing = thread_list(memory)
    memory.close()
    assert listing.startswith("Threads (1):") and "- chat ·" in listing and SECRET not in listing


# --------------------------------------------------------------------------- property test

# Where a hostile layout plants something: an entry's three files, a folder, memdir's own files, a thread's files.
_POSITIONS = (
    "fact/a.md", "fact/a.yml", "fact/a.emb", "fact/b.yml", "concept/c.md", "concept/d.md", "concept/sub",
    ".memdir/txn/0001.commit", ".memdir/txn/0002.pending", ".memdir/defrag/r1.jsonl", ".memdir/content-bytes", ".lock",
    "threads/t1/events.jsonl", "threads/t1/queue.jsonl", "threads/t1", "threads/t2", ".memdir/threads",
    ".memdir/threads/vectors-fake_bow-384.bin",
)
_PLANTS = ("link_out_file", "link_out_dir", "link_in", "link_dangling", "loop", "fifo", "folder", "junk", "journal_out")
_TOOLS = ("read", "write", "edit", "delete", "glob", "grep", "thread_append", "thread_context", "thread_list")
_hostile_paths = st.one_of(
    st.sampled_from([p for p in _POSITIONS if not p.startswith(".")] + ["concept/out/secret.md", "concept/out/x", "fact/b", "t1", "t2"]),
    st.lists(st.sampled_from(["concept", "fact", "out", "sub", "a", "..", ".memdir", "loop", "\U0001f600" * 62]), min_size=1, max_size=17).map("/".join),
    st.text(max_size=30),
)
_calls = st.lists(st.tuples(st.sampled_from(_TOOLS), _hostile_paths), min_size=1, max_size=6)


def _plant(root: Path, outside: Path, position: str, kind: str) -> None:
    """Put a hostile ``kind`` of file at ``position`` (replacing whatever was there)."""
    target = root / position
    if any((root / folder).is_symlink() or (root / folder).exists() and not (root / folder).is_dir()
           for folder in Path(position).parents[:-1]):
        return  # an earlier plant put a link or file where its folder was: nothing to plant inside
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file() or target.exists() and not target.is_dir():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)  # a thread's folder, .memdir/threads, or a folder planted before
    suffix = Path(position).suffix or ".md"
    if kind == "link_out_file":
        target.symlink_to(outside / f"secret{suffix if suffix in ('.md', '.yml', '.emb') else '.md'}")
    elif kind == "link_out_dir":
        target.symlink_to(outside, target_is_directory=True)
    elif kind == "link_in":
        target.symlink_to(root / "fact/b.md")
    elif kind == "link_dangling":
        target.symlink_to(outside / "missing")
    elif kind == "loop":
        target.symlink_to(target.name)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif kind == "junk":
        target.write_bytes(b"\xff\x00not what memdir wrote: [1, {")
    else:  # a committed journal leading out through the linked folder concept/out
        target.write_text(json.dumps({
            "version": 1,
            "renames": [["concept/out/.txn-x-0.tmp", "concept/out/secret.md"]],
            "removals": ["concept/out/sentinel.md", "concept/out/secret.yml"],
        }), encoding="utf-8")


def _call(memory: Memory, session, tool: str, path: str) -> str:
    if tool == "read":
        return memory_read(memory, session, path)
    if tool == "write":
        return put(memory, session, path, "written", "Written")
    if tool == "edit":
        return memory_edit(memory, session, path, "b", "B")
    if tool == "delete":
        return memory_delete(memory, session, path)
    if tool == "glob":
        return memory_glob(memory, session, path)
    if tool == "thread_append":  # the path is the thread id: a hostile one, or a thread with hostile files
        return thread_append(memory, path, "user", "b")
    if tool == "thread_context":
        return thread_context(memory, path, 500, "b")
    if tool == "thread_list":
        return thread_list(memory)
    return memory_grep(memory, session, "b|secret|SECRET", path=path)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plants=st.lists(st.tuples(st.sampled_from(_POSITIONS), st.sampled_from(_PLANTS), st.booleans()), max_size=5),
       calls=_calls)
def test_any_hostile_layout_and_any_path_stay_inside_the_root(tmp_path_factory, plants, calls):
    """Links out (files and folders), loops, pipes, folders and junk at an entry's .md/.yml/.emb, at
    journals, at memdir's own files and at a thread's files — before the root is opened or while it is
    open (where the check at open cannot see them) — then generated tool calls, thread tools included
    (the path doubling as a thread id): each works inside the root or gives a clear error, never
    blocks, and nothing outside the root is read, written, renamed or deleted."""
    from memdir.tools.session import Session

    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "memory", base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# {SECRET}\nb\n", encoding="utf-8")
    (outside / "secret.yml").write_text(f"title: {SECRET}\nhits: 77\n", encoding="utf-8")
    (outside / "secret.emb").write_bytes(b"\0" * 1536)
    (outside / "sentinel.md").write_text("keep me", encoding="utf-8")
    (outside / ".txn-x-0.tmp").write_text("planted", encoding="utf-8")
    session = Session()
    memory = open_memory(root)
    for path in ("fact/a.md", "fact/b.md", "concept/c.md"):
        put(memory, session, path, "a b c", path)
    for thread in ("t1", "t2"):
        thread_append(memory, thread, "user", "a b c")
    thread_control(memory, "t1", "strategy", "semantic")  # its context embeds: .memdir/threads/ is used
    thread_control(memory, "t2", "mode", "stepping")  # its messages wait in queue.jsonl
    thread_append(memory, "t2", "user", "waiting")
    memory.close()
    (root / "concept/out").symlink_to(outside, target_is_directory=True)
    for position, kind, _ in (plant for plant in plants if not plant[2]):
        _plant(root, outside, position, kind)
    before = snapshot(outside), sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))

    try:
        memory = call_with_timeout(open_memory, root)
    except MemdirError as exc:
        assert SECRET not in str(exc)
    else:
        for position, kind, _ in (plant for plant in plants if plant[2]):  # while serving
            _plant(root, outside, position, kind)
        try:
            for tool, path in calls:
                try:
                    text = call_with_timeout(_call, memory, session, tool, path)
                except MemdirError as exc:
                    assert exc.message and SECRET not in str(exc)
                else:
                    assert SECRET not in text
        finally:
            memory.close()
    assert (snapshot(outside), sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))) == before
