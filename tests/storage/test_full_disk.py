"""A full disk: a write either happens or changes nothing, says so plainly, and the root stays usable.

Checked three ways: on a real 3 MB tmpfs filled through MemoryWrite; by making every
single file-system step of a write, delete or stub fail in turn with ENOSPC; and by
making SQLite itself run out of room while the index is updated.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from memdir.core.errors import DiskFullError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.directory import atomic
from memdir.storage.directory.index_db import index_path
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_read import memory_read
from memdir.tools.memory_write import memory_write
from tests.disks import tmpfs
from tests.fakes import FakeEmbedder

FAILING_CALLS = ("write", "fsync", "replace", "mkdir")


def open_memory(root, **settings) -> Memory:
    return Memory.open(Settings(root=root, **settings), embedder=FakeEmbedder())


def write_note(memory, session, name: str, words: int = 240) -> str:
    return memory_write(
        memory, session, f"fact/notes/{name}.md", " ".join(f"{name}w{i}" for i in range(words)), title=name.title(),
        type="fact", tags=["note"], related=[], domain="notes",
    )


# --------------------------------------------------------------------------- a real full disk
@pytest.mark.parametrize("min_free_disk", [0, 256 * 1024], ids=["to-the-last-byte", "with-headroom"])
def test_filling_a_small_disk_fails_cleanly_and_the_root_stays_usable(tmp_path, session, min_free_disk):
    with tmpfs(tmp_path / "disk", "3m") as disk:
        settings = {"min_free_disk": min_free_disk, "index_wal_limit": 256 * 1024}
        memory = open_memory(disk / "memory", **settings)
        written, errors = [], []
        for n in range(400):
            name = f"n{n}"
            try:
                write_note(memory, session, name)
                written.append(name)
            except DiskFullError as exc:  # never a bare OSError or sqlite3 error
                errors.append(exc)
                # Reported failure <=> nothing changed: no file, no index row, no listing.
                assert not list((disk / "memory" / "fact" / "notes").glob(f"{name}.*"))
                assert memory.index.rows([f"fact/notes/{name}.md"]) == {}
                assert f"fact/notes/{name}.md" not in memory_glob(memory, session, "fact/**/*")
                if len(errors) == 3:
                    break
        assert written and len(errors) == 3
        assert "is full" in errors[0].message and "Free space" in errors[0].hint
        assert [p for p in (disk / "memory").rglob("*.tmp")] == []
        memory.close()

        # A process started while the disk is full opens it, reads, and deletes to make room.
        reopened = open_memory(disk / "memory", **settings)
        assert sorted(info.path for info in reopened.list(include_virtual=False)) == sorted(
            f"fact/notes/{name}.md" for name in written
        )
        assert f"{written[0]}w7" in memory_read(reopened, session, f"fact/notes/{written[0]}.md")
        for name in written[:10]:
            memory_delete(reopened, session, f"fact/notes/{name}.md")
        assert "Stored" in write_note(reopened, session, "after")
        assert [r.path for r in reopened.search("afterw3", top_k=1)] == ["fact/notes/after.md"]
        reopened.close()


def fill(path) -> None:
    """Write ``path`` until the disk has not one byte left (as another program might)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"x" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_disk_filled_to_the_last_byte_by_another_program_still_opens_reads_and_deletes(tmp_path, session):
    with tmpfs(tmp_path / "disk", "3m") as disk:
        with open_memory(disk / "memory", index_wal_limit=256 * 1024) as memory:
            for n in range(20):
                write_note(memory, session, f"n{n}")
        fill(disk / "filler")
        assert os.statvfs(disk).f_bavail == 0
        with open_memory(disk / "memory") as full:
            assert "n3w7" in memory_read(full, session, "fact/notes/n3.md")  # read (its hit goes uncounted)
            assert [r.path for r in full.search("n4w9", top_k=1)] == ["fact/notes/n4.md"]
            memory_delete(full, session, "fact/notes/n3.md")  # no room for a journal: deleted without one
            assert not list((disk / "memory" / "fact" / "notes").glob("n3.*"))
            assert "n3.md" not in memory_glob(full, session, "fact/**/*")
            assert "fact/notes/n3.md" not in [r.path for r in full.search("n3w9", top_k=3)]
            with pytest.raises(DiskFullError):
                write_note(full, session, "more")
        (disk / "filler").unlink()
        with open_memory(disk / "memory") as freed:
            assert not freed.exists("fact/notes/n3.md") and freed.exists("fact/notes/n4.md")
            assert freed.adapter.rescan_total_size() == freed.adapter.total_size()
            write_note(freed, session, "more")
            assert [r.path for r in freed.search("morew5", top_k=1)] == ["fact/notes/more.md"]


def test_the_index_write_ahead_log_stays_bounded(tmp_path):
    limit = 256 * 1024
    with open_memory(tmp_path / "memory", index_wal_limit=limit) as memory:
        wal = index_path(memory.root).with_name("index.sqlite3-wal")
        largest = 0
        for n in range(60):  # ~80 KB of log per write: ~5 MB unchecked
            memory.write(f"fact/n{n}", " ".join(f"w{n}x{i}" for i in range(200)), title=f"N{n}")
            largest = max(largest, wal.stat().st_size)
    # One transaction may pass the limit before the checkpoint after it moves the log back.
    assert largest < limit + 256 * 1024


def test_a_write_refused_for_headroom_says_how_much_is_free(tmp_path):
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    with open_memory(tmp_path / "memory", min_free_disk=free * 2) as memory:
        with pytest.raises(DiskFullError, match="bytes free; memdir keeps") as caught:
            memory.write("fact/x", "some text", title="X")
        assert "Free space" in caught.value.hint
        assert not memory.exists("fact/x") and not (memory.root / "fact").exists()


# --------------------------------------------------------------------------- every step failing in turn
class _FailAt:
    """Count calls of `FAILING_CALLS` in ``os``; the ``fail_at``-th raises ENOSPC (None: count only)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int | None) -> None:
        self.calls = 0
        self.fail_at = fail_at
        for name in FAILING_CALLS:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))

    def _wrap(self, real: Callable) -> Callable:
        def call(*args, **kwargs):
            self.calls += 1
            if self.calls == self.fail_at:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args, **kwargs)

        return call


@contextmanager
def failing_at(fail_at: int | None) -> Iterator[_FailAt]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _FailAt(monkeypatch, fail_at)


def observed(memory: Memory) -> tuple:
    """All a user can see of the root: entries with content and title, index rows, stubs, search, total size."""
    infos = memory.list(include_virtual=False)
    entries = {info.path: (memory.read(info.path).content, info.title) for info in infos}
    paths = [*entries, "fact/deep/new.md", "fact/old.md"]
    rows = {path: row.title for path, row in memory.index.rows(paths).items()}
    stubs = sorted(info.path for info in memory.list_stubs())
    found = sorted(result.path for result in memory.search("zebra old", top_k=10))
    return entries, rows, stubs, found, memory.adapter.total_size()


CHANGES: dict[str, Callable[[Memory], object]] = {
    "create": lambda memory: memory.write("fact/deep/new", "a zebra in a new folder", title="New"),
    "overwrite": lambda memory: memory.write("fact/old", "now about a zebra", title="Changed"),
    "delete": lambda memory: memory.delete("fact/old"),
    "stub": lambda memory: memory.write_stub("fact/old", "fact/other", "moved"),
}


def prepared(root) -> Memory:
    memory = open_memory(root)
    memory.write("fact/old", "the old text", title="Old")
    memory.write("fact/other", "another old entry", title="Other")
    return memory


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_failing_at_any_step_either_happens_or_changes_nothing(tmp_path, change):
    apply = CHANGES[change]
    with prepared(tmp_path / "reference") as memory:
        with failing_at(None) as counter:
            apply(memory)
        steps, after = counter.calls, observed(memory)
    assert steps >= 6  # journal, staged files, fsyncs, renames

    for step in range(1, steps + 1):
        root = tmp_path / f"step{step}"
        memory = prepared(root)
        before = observed(memory)
        try:
            with failing_at(step):
                apply(memory)
        except DiskFullError:
            expected = before
        else:  # the failing step came after the commit point: the change is made (and finished)
            expected = after
        assert observed(memory) == expected, f"{change}: ENOSPC at step {step} of {steps}"
        memory.close()
        with open_memory(root) as reopened:  # what another process sees
            assert observed(reopened) == expected, f"{change}: ENOSPC at step {step} of {steps}, reopened"
        assert not atomic.has_pending(root) and not list(root.rglob("*.tmp"))


def test_an_index_that_cannot_grow_fails_the_write_before_any_file_changes(tmp_path):
    with prepared(tmp_path / "memory") as memory:
        before = observed(memory)
        pages = memory.index.db.execute("PRAGMA page_count").fetchone()[0]
        memory.index.db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite answers SQLITE_FULL past it
        with pytest.raises(DiskFullError, match="derived index could not grow"):
            memory.write("fact/big", " ".join(f"zebra{i}" for i in range(5000)), title="Big")
        assert not (memory.root / "fact" / "big.md").exists()
        assert observed(memory) == before
        memory.index.db.execute("PRAGMA max_page_count = 1073741823")
        memory.write("fact/big", "zebra after all", title="Big")  # the index is usable again
        assert [r.path for r in memory.search("zebra", top_k=1)] == ["fact/big.md"]


def test_an_unlink_whose_index_update_fails_leaves_the_linking_entry_as_it_was(tmp_path, monkeypatch):
    """Removing links to a deleted entry rewrites the linking entries like any write: index first, then the files."""
    with open_memory(tmp_path / "memory") as memory:
        memory.write("fact/a", "alpha", title="A")
        memory.write("fact/b", "beta", title="B", metadata={"related": ["fact/a.md"]})
        yml = (memory.root / "fact" / "b.yml").read_bytes()

        def no_room(*_args, **_kwargs):
            raise DiskFullError(memory.root, "the derived index could not grow")

        monkeypatch.setattr(memory.index, "upsert", no_room)
        with pytest.raises(DiskFullError):
            memory.remove_links_to("fact/a.md")
        assert (memory.root / "fact" / "b.yml").read_bytes() == yml


def test_a_rebuild_whose_index_update_fails_leaves_the_files_alone(tmp_path, monkeypatch):
    with prepared(tmp_path / "memory") as memory:
        (memory.root / "fact" / "hand.md").write_text("a zebra written by hand")
        memory.reconcile()  # indexed, not embedded: no .emb, no .yml
        before = {p.name: p.read_bytes() for p in (memory.root / "fact").iterdir()}

        def index_full(items):
            list(items)
            raise DiskFullError(memory.root, "the derived index could not grow")

        monkeypatch.setattr(memory.index, "set_vectors", index_full)
        with pytest.raises(DiskFullError):
            memory.rebuild()
        assert {p.name: p.read_bytes() for p in (memory.root / "fact").iterdir()} == before


def test_an_index_updated_before_the_commit_is_level_with_the_files_after_it(tmp_path):
    with prepared(tmp_path / "memory") as memory:  # (else every change would be followed by a re-scan)
        memory.write("fact/x", "a zebra", title="X")
        assert not memory.index.behind_files()
        memory.delete("fact/x")
        assert not memory.index.behind_files()
        memory.write_stub("fact/old", "fact/other", "moved")
        assert not memory.index.behind_files()
        memory.rebuild()
        assert not memory.index.behind_files()


def test_a_writer_dying_between_its_index_update_and_its_commit_is_noticed_by_other_processes(tmp_path, monkeypatch):
    root = tmp_path / "memory"
    with prepared(root) as writer, open_memory(root) as reader:
        real_replace = os.replace

        def die_at_the_commit_point(source, target):
            if str(source).endswith(atomic.PENDING_SUFFIX):
                raise KeyboardInterrupt  # stands for the kill: the index is updated, the files are not
            return real_replace(source, target)

        monkeypatch.setattr(os, "replace", die_at_the_commit_point)
        monkeypatch.setattr(writer._keeper, "reindex", lambda path: None)  # a dead process repairs nothing
        with pytest.raises(KeyboardInterrupt):
            writer.write("fact/old", "now about a zebra", title="Changed")
        monkeypatch.undo()
        assert reader.read("fact/old").title == "Old"
        assert [(r.path, r.title) for r in reader.search("zebra old", top_k=5) if r.path == "fact/old.md"] == [
            ("fact/old.md", "Old")
        ]


# --------------------------------------------------------------------------- the command line


def test_a_command_whose_own_files_meet_a_full_disk_says_so_and_changes_nothing(tmp_path, monkeypatch):
    """The defrag journal is the command's own file (not a store write): ENOSPC there is the same clear error."""
    from typer.testing import CliRunner

    from memdir.cli import app
    from memdir.optimization import journal_store

    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    root = tmp_path / "notes"
    (root / "concept").mkdir(parents=True)
    text = "# Ruby classes\n\nClasses in Ruby are open: reopen them to add methods.\n"
    for name in ("ruby", "ruby-copy"):
        (root / "concept" / f"{name}.md").write_text(text)

    def no_room(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_store._FileWriter, "write", no_room)
    result = CliRunner().invoke(app, ["defrag", "--root", str(root), "--action", "merge_duplicates", "--live"])
    assert result.exit_code == 1
    assert f"The disk holding the memory root {root} is full" in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, OSError)
    assert sorted(p.name for p in (root / "concept").glob("*.md")) == ["ruby-copy.md", "ruby.md"]
