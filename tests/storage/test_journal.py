"""The transaction journal: one round of flushes before the commit point, and recovery that tells
a whole commit record (and the files it names) from one a power cut left torn."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.directory import atomic
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names flushed files through /proc")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as opened:
        opened.write("fact/a", "the old text", title="Old", metadata={"type": "fact"})
        yield opened


def reopened(memory: Memory) -> Memory:
    """The memory as the next process opens it (which finishes or undoes what a killed writer left)."""
    return Memory.open(Settings(root=memory.root), embedder=FakeEmbedder())


def killed_after_the_flush(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Write a new version of fact/a, the writer dying after the commit point's flush, before any rename:
    what a power cut leaves once the journal's commit record reached the disk."""
    monkeypatch.setattr(atomic, "_roll_forward", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        memory.write("fact/a", "the new text", title="New", metadata={"type": "fact"})
    monkeypatch.undo()
    assert [p.suffix for p in atomic.txn_dir(memory.root).iterdir()] == [".commit"]


def journal_file(root: Path) -> Path:
    return next(atomic.txn_dir(root).iterdir())


def staged_files(root: Path) -> list[Path]:
    return sorted(root.rglob(".txn-*.tmp"))


def audit_lines(root: Path) -> list[str]:
    return [line for file in sorted((root / "audit").glob("*.jsonl")) for line in file.read_text(encoding="utf-8").splitlines()]


def assert_old_version_whole(memory: Memory) -> None:
    with reopened(memory) as again:
        entry = again.read("fact/a")
        assert (entry.content, entry.title) == ("the old text", "Old")
        assert again.search("old text")[0].path == "fact/a.md"
    assert staged_files(memory.root) == [] and list(atomic.txn_dir(memory.root).iterdir()) == []


@pytest.mark.parametrize("previous", ["this process", "another process"])
def test_a_write_flushes_once_before_its_commit_point_and_not_after(memory: Memory, monkeypatch, previous: str) -> None:
    if previous == "another process":
        monkeypatch.setattr(atomic, "_LEFT", {})  # the journal of fact/a's write is read from disk
    rounds: list[set[str]] = [set()]
    flushing: set[str] = set()
    guard, real_fsync, real_replace = threading.Lock(), os.fsync, atomic.os.replace
    root = os.path.realpath(memory.root)

    def fsync(fd: int) -> None:  # a slow disk, so that flushes started together overlap
        name = os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), root)
        with guard:
            flushing.add(name)
            rounds[-1].add(name)
        time.sleep(0.05)
        real_fsync(fd)
        with guard:
            flushing.discard(name)

    def replace(source, target) -> None:
        if str(source).endswith(atomic.PENDING_SUFFIX):  # past the commit point: every flush before it is done
            assert not flushing
            rounds.append(set())
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fsync)
    monkeypatch.setattr(atomic.os, "replace", replace)
    memory.write("concept/b", "an embedded entry", metadata={"type": "concept"})
    monkeypatch.undo()
    before, after = rounds
    assert sum(name.startswith("concept/.txn-") for name in before) == 3
    assert {".memdir/txn", "audit", "concept", "fact"} <= {os.path.dirname(name) or name for name in before}
    assert {"concept", "fact"} <= before  # the staged files' folder, and the one of the renames before (fact/a's)
    assert after == set()  # its own renames are flushed with the next change's files
    assert memory.read("concept/b").content == "an embedded entry"


def test_a_power_cut_that_undid_the_last_changes_renames_is_rolled_forward_at_the_next_open(memory: Memory) -> None:
    root = memory.root
    memory.write("fact/a", "the new text", title="New", metadata={"type": "fact"})
    done = atomic._load_journal(root, root / atomic.DONE_JOURNAL, named=False)
    assert done is not None
    # What the disk may hold after a power cut: the staged files and the journal flushed, the renames not.
    md_temp, md = (root / name for name in done["renames"][0])
    md_temp.write_bytes(md.read_bytes())
    md.write_text("the old text", encoding="utf-8")
    with reopened(memory) as again:
        assert again.read("fact/a").content == "the new text"
    assert staged_files(root) == [] and not (root / atomic.DONE_JOURNAL).exists()


def test_a_change_whose_commit_record_reached_the_disk_is_rolled_forward(memory: Memory, monkeypatch) -> None:
    killed_after_the_flush(memory, monkeypatch)
    with reopened(memory) as again:
        entry = again.read("fact/a")
        assert (entry.content, entry.title) == ("the new text", "New")
    assert staged_files(memory.root) == [] and list(atomic.txn_dir(memory.root).iterdir()) == []


def test_a_change_cut_off_half_way_through_its_renames_is_rolled_forward(memory: Memory, monkeypatch) -> None:
    real_replace, renamed = atomic.os.replace, []

    def replace(source, target) -> None:
        if ".txn-" in str(source):
            if renamed:
                raise KeyboardInterrupt("power cut after the first rename")
            renamed.append(target)
        real_replace(source, target)

    monkeypatch.setattr(atomic.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        memory.write("fact/a", "the new text", title="New", metadata={"type": "fact"})
    monkeypatch.undo()
    assert len(staged_files(memory.root)) == 2  # the .md renamed, the .yml and .emb not yet
    with reopened(memory) as again:
        entry = again.read("fact/a")
        assert (entry.content, entry.title) == ("the new text", "New")
    assert staged_files(memory.root) == []


def test_a_torn_commit_record_is_rolled_back(memory: Memory, monkeypatch) -> None:
    killed_after_the_flush(memory, monkeypatch)
    journal = journal_file(memory.root)
    journal.write_bytes(journal.read_bytes()[:-20])  # the power cut came in the middle of its flush
    assert_old_version_whole(memory)


def test_a_staged_file_cut_short_by_a_power_cut_is_rolled_back(memory: Memory, monkeypatch) -> None:
    killed_after_the_flush(memory, monkeypatch)
    sidecar = next(path for path in staged_files(memory.root) if path.read_bytes().startswith(b"---"))
    sidecar.write_bytes(sidecar.read_bytes()[:10])  # its flush had not ended
    assert_old_version_whole(memory)


def test_a_change_whose_audit_record_did_not_reach_the_disk_is_rolled_back(memory: Memory, monkeypatch) -> None:
    records = len(audit_lines(memory.root))
    killed_after_the_flush(memory, monkeypatch)
    assert len(audit_lines(memory.root)) == records + 1
    month = max((memory.root / "audit").glob("*.jsonl"))
    text = month.read_bytes()
    month.write_bytes(text[: text.rindex(b"\n", 0, len(text) - 1) + 1])  # the record's flush had not ended
    assert_old_version_whole(memory)
    assert len(audit_lines(memory.root)) == records  # no record of a change that did not happen


def test_a_journal_from_before_commit_records_is_still_recovered_by_its_name(memory: Memory) -> None:
    root = memory.root
    (root / "fact/.txn-old-0.tmp").write_bytes(b"the new text")
    journal = '{"version": 1, "renames": [["fact/.txn-old-0.tmp", "fact/a.md"]], "removals": []}'
    atomic.txn_dir(root).joinpath("old.commit").write_text(journal, encoding="utf-8")
    with reopened(memory) as again:
        assert again.read("fact/a").content == "the new text"
    assert staged_files(root) == [] and list(atomic.txn_dir(root).iterdir()) == []


def test_a_spare_journal_whose_new_text_did_not_reach_the_disk_is_not_replayed(memory: Memory) -> None:
    root = memory.root
    memory.write("fact/b", "another entry", metadata={"type": "fact"})
    spare = root / atomic.SPARE_JOURNAL
    assert spare.is_file() and list(atomic.txn_dir(root).iterdir()) == []  # a finished journal is kept to be reused
    memory.write("fact/a", "a later text", title="Later", metadata={"type": "fact"})  # the spare's text now names fact/b
    # A power cut after the next writer renamed the spare, before its own text reached the disk:
    atomic.txn_dir(root).joinpath("0123456789abcdef.pending").write_bytes(spare.read_bytes())
    with reopened(memory) as again:
        assert again.read("fact/a").content == "a later text"
    assert list(atomic.txn_dir(root).iterdir()) == []


def test_a_spare_journal_planted_as_a_link_is_set_aside_and_never_written_through(memory: Memory, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep", encoding="utf-8")
    memory.write("fact/b", "another entry", metadata={"type": "fact"})
    spare = memory.root / atomic.SPARE_JOURNAL
    spare.unlink()
    spare.symlink_to(victim)
    memory.write("fact/a", "the new text", metadata={"type": "fact"})
    assert victim.read_text(encoding="utf-8") == "keep"
    assert memory.read("fact/a").content == "the new text" and spare.is_file() and not spare.is_symlink()


def test_a_finished_journal_that_is_not_memdirs_is_seen_to_at_open_and_set_aside_by_a_write(memory: Memory, tmp_path: Path) -> None:
    root, done = memory.root, memory.root / atomic.DONE_JOURNAL
    memory.write("fact/a", "the new text", title="New", metadata={"type": "fact"})
    outside = tmp_path / "outside.md"
    planted = b'{"version": 2, "txid": "0123", "renames": [[".txn-0123-0.tmp", "../outside.md"]], "removals": []}\n'
    done.write_bytes(planted)  # names a file outside the root
    with reopened(memory) as again:  # opening leaves it to recovery, which sets it aside
        assert not done.exists() and again.read("fact/a").content == "the new text"
    quarantined = root / atomic.FAILED_DIR / done.name
    assert quarantined.read_bytes() == planted
    quarantined.unlink()
    done.write_bytes(planted)  # planted again, under a writer that holds the root open
    memory.write("fact/b", "another entry", metadata={"type": "fact"})  # sets it aside and goes on
    assert quarantined.read_bytes() == planted and not outside.exists()
    assert memory.read("fact/b").content == "another entry"
    assert atomic._load_journal(root, done, named=False)["renames"][0][1] == "fact/b.md"  # the write's own
