"""The listing snapshot beside the index (`memdir.storage.directory.listing_snapshot`) and the rows made into
`EntryInfo` only when shown (`memdir.storage.directory.root_listing.Listed`): a fresh process lists a root
from the snapshot plus every change since, exactly as from SQLite alone, and a glob's newest
entries are what sorting every entry gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import memdir.storage.directory.listing_snapshot as listing_snapshot
import memdir.storage.directory.snapshot as snapshots
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.search.text_search import glob_matcher
from memdir.storage.directory.listing_rows import RowTable, by_folder, from_table, moment
from memdir.storage.directory.listing_snapshot import read_listing_snapshot, snapshot_path, write_listing_snapshot
from memdir.storage.records import EntryInfo, Listed
from memdir.tools.memory_glob import memory_glob
from memdir.tools.session import Session
from tests.fakes import FakeEmbedder


@pytest.fixture(autouse=True)
def small_roots_get_a_snapshot(monkeypatch):
    monkeypatch.setattr(snapshots, "MIN_ROWS", 3)


def open_again(memory: Memory) -> Memory:
    return Memory.open(Settings(root=memory.root), embedder=FakeEmbedder())


def by_path(infos):
    return sorted(infos, key=lambda info: info.path)


def walked(memory: Memory):
    return by_path(memory._listings.walked_entries(glob_matcher("**/*"), None))


@pytest.fixture
def written(memory):
    for i in range(6):
        memory.write(f"concept/c{i}.md", f"Concept {i}.", title=f"Concept {i}")
    memory.write("fact/deep/f.md", "A fact.", title="Fact", metadata={"type": "fact"})
    memory.write("experience/untitled.md", "# Its heading\n\nno title given")
    memory.list()  # the first listing of this process reads every row from SQLite, and writes the snapshot
    return memory


def snapshot_of(memory: Memory):
    return read_listing_snapshot(snapshot_path(memory.index.path))


def test_the_first_listing_of_a_large_root_writes_a_snapshot_of_its_rows(written):
    generation, seq, columns, runs = snapshot_of(written)
    assert dict(runs) == {"concept/": 6, "fact/deep/": 1, "experience/": 1}
    assert generation == written.index._listing.generation and seq == written.index._listing.seq
    rows = dict(zip(columns["paths"], columns["titles"]))
    assert rows["fact/deep/f.md"] == "Fact" and rows["experience/untitled.md"] == ""
    assert not any(path.startswith("skill/") and "built" in path for path in rows)  # built-ins are not rows


def test_a_fresh_process_lists_from_the_snapshot_the_same_as_a_walk(written, monkeypatch):
    with open_again(written) as again:
        read = []
        original = listing_snapshot.read_listing_snapshot
        monkeypatch.setattr(listing_snapshot, "read_listing_snapshot", lambda path: read.append(path) or original(path))
        assert by_path(again.listing.entries(glob_matcher("**/*"))) == walked(again)
        assert read, "the first listing should have read the snapshot"
        assert memory_glob(again, Session(), "**/*") == memory_glob(written, Session(), "**/*")


def test_changes_since_the_snapshot_are_in_a_fresh_process_listing(written):
    before = snapshot_of(written)
    written.write("concept/c1.md", "Rewritten.", title="Rewritten one")
    written.write("concept/new.md", "New.", title="New")
    written.delete("concept/c2.md")
    written.write_stub("concept/c3.md", "concept/new.md", "merged")
    assert snapshot_of(written)[1] == before[1]  # a few changes: the snapshot is kept as it was
    with open_again(written) as again:
        listed = {info.path: info for info in again.list(include_virtual=False)}
        assert listed["concept/c1.md"].title == "Rewritten one"
        assert "concept/new.md" in listed and "concept/c2.md" not in listed and "concept/c3.md" not in listed
        assert by_path(listed.values()) == walked(again)


def test_many_changes_since_the_snapshot_write_it_anew(written, monkeypatch):
    old_seq = snapshot_of(written)[1]
    for i in range(8):
        written.write(f"concept/c{i % 6}.md", f"Version {i}.", title=f"Version {i}")
    monkeypatch.setattr(snapshots, "STALE_AFTER", 1)
    with open_again(written) as again:
        again.list()
        assert snapshot_of(again)[1] > old_seq


@pytest.mark.parametrize(
    "damage",
    [b"", b"MDLS", b"not a snapshot at all", b"MDLS\x05\x00\x00\x00{bad}", "truncate", "extra"],
)
def test_a_damaged_snapshot_is_ignored(written, damage):
    path = snapshot_path(written.index.path)
    data = path.read_bytes()
    path.write_bytes(data[:-7] if damage == "truncate" else data + b"\0" if damage == "extra" else damage)
    with open_again(written) as again:
        assert by_path(again.listing.entries(glob_matcher("**/*"))) == walked(again)


def test_a_snapshot_of_another_index_generation_or_a_later_change_is_ignored(written):
    path = snapshot_path(written.index.path)
    generation, seq, columns, runs = snapshot_of(written)
    columns["titles"] = ["Not the truth"] * len(columns["titles"])
    for other_generation, other_seq in ((generation + "x", seq), (generation, seq + 1000)):
        write_listing_snapshot(path, other_generation, other_seq, columns, runs)
        with open_again(written) as again:
            titles = {info.title for info in again.list(include_virtual=False)}
            assert "Not the truth" not in titles


def test_a_snapshot_keeps_missing_types_and_times_and_refuses_text_it_cannot_hold(tmp_path):
    columns = {
        "paths": ["a/x.md", "b/y.md"], "titles": ["X", ""], "sizes": [1, 2], "updated": ["2025-01-01T00:00:00+00:00", None],
        "types": [None, "fact"], "hits": [0, 3], "mtimes": [5, 6], "moments": [moment("2025-01-01T00:00:00+00:00"), 0],
    }  # fmt: skip
    path = tmp_path / "listing.snapshot"
    runs = [("a/", 1), ("b/", 1)]
    write_listing_snapshot(path, "g", 7, columns, runs)
    assert read_listing_snapshot(path) == ("g", 7, columns, runs)
    path.unlink()
    write_listing_snapshot(path, "g", 7, {**columns, "titles": ["X", "a\0b"]}, runs)
    write_listing_snapshot(path, "g", 7, {**columns, "hits": [0, 2**70]}, runs)
    assert not path.exists()


def test_a_small_root_gets_no_snapshot_and_loses_one_it_had(written, monkeypatch):
    monkeypatch.setattr(snapshots, "MIN_ROWS", 1_000)
    assert snapshot_path(written.index.path).exists()
    with open_again(written) as again:
        again.list()
    assert not snapshot_path(written.index.path).exists()


def _listed(moments: dict[str, int], read: list[EntryInfo] = ()) -> Listed:
    paths = list(moments)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    updated = [(start + timedelta(microseconds=value)).isoformat() for value in moments.values()]
    table = RowTable(paths, ["T"] * len(paths), [1] * len(paths), updated, [None] * len(paths), [0] * len(paths),
                     [0] * len(paths), [moment(text) for text in updated])  # fmt: skip
    rows = from_table("g", 1, 0, table)
    return Listed(rows, list(range(len(paths))), list(read))


def sorted_the_old_way(infos: list[EntryInfo]) -> list[str]:
    """Every entry sorted by path, then stably by updated_at, newest first (what globs did before)."""
    return [info.path for info in sorted(sorted(infos, key=lambda i: i.path), key=lambda i: i.updated_at, reverse=True)]


@pytest.mark.parametrize("limit", [None, 1, 2, 3, 4, 5, 6, 10])
def test_the_newest_entries_are_those_a_full_sort_gives_ties_included(limit):
    # Ties across the cut (c, a, e share a moment), a read entry among the rows, rows out of path order.
    read = [EntryInfo("d.md", "D", 1, datetime(2025, 1, 1, tzinfo=UTC) + timedelta(microseconds=5), None)]
    listed = _listed({"e.md": 5, "b.md": 9, "c.md": 5, "a.md": 5, "f.md": 1}, read)
    expected = sorted_the_old_way(listed.infos())
    assert [info.path for info in listed.newest(limit)] == expected[:limit]
    assert len(listed) == 6


def test_only_keeps_the_paths_asked_for():
    listed = _listed({"a.md": 1, "b.md": 2}, [EntryInfo("c.md", "C", 1, datetime(2025, 1, 1, tzinfo=UTC), None)])
    kept = listed.only(lambda path: path != "b.md")
    assert sorted(kept.paths()) == ["a.md", "c.md"] and len(kept) == 2


def test_rows_read_folder_by_folder_have_the_folders_of_rows_grouped_one_by_one(tmp_path):
    paths = ["b/x.md", "a/y.md", "b/c/z.md", "top.md", "a/w.md", "b/v.md"]
    table = RowTable(paths, ["T"] * 6, [1] * 6, ["2025-01-01T00:00:00+00:00"] * 6, [None] * 6, [0] * 6, [0] * 6, [0] * 6)
    ordered, runs = by_folder(table)
    assert runs == [("", 1), ("a/", 2), ("b/", 2), ("b/c/", 1)]
    assert from_table("g", 1, 0, ordered, runs).folders == from_table("g", 1, 0, table).folders
    path = tmp_path / "listing.snapshot"
    write_listing_snapshot(path, "g", 1, ordered._asdict(), [("", 1), ("a/", 2)])  # runs short of the rows
    assert read_listing_snapshot(path) is None


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [("**/*", {"a.md", "x/a.md", "x/y/z.md"}), ("**", {"a.md", "x/a.md", "x/y/z.md"}), ("**/**", {"a.md", "x/a.md", "x/y/z.md"}),
     ("**/***", {"a.md", "x/a.md", "x/y/z.md"}), ("*", {"a.md"}), ("**/*.md", {"a.md", "x/a.md", "x/y/z.md"}),
     ("**/a*", {"a.md", "x/a.md"}), ("x/**", {"x/a.md", "x/y/z.md"})],
)  # fmt: skip
def test_a_glob_of_everything_needs_no_test_of_each_path_and_others_still_test(pattern, matched):
    from memdir.core.globbing import glob_matcher as path_glob

    keep = path_glob(pattern)
    assert {path for path in ("a.md", "x/a.md", "x/y/z.md") if keep(path)} == matched


def test_a_one_name_glob_lists_only_the_top_folder(memory):
    memory.write("top.md", "At the top.", title="Top")
    memory.write("concept/below.md", "Below.", title="Below")
    assert [info.path for info in memory.glob("*")] == ["top.md"]  # '*' matches within one folder


@pytest.mark.parametrize(
    ("pattern", "everything", "matched"),
    [("**/*", True, {"a.md", "x/a.md", "x/y/b.md"}), ("**", True, {"a.md", "x/a.md", "x/y/b.md"}),
     ("**/**/*", True, {"a.md", "x/a.md", "x/y/b.md"}), ("*/*", False, {"x/a.md"}), ("**/a*", False, {"a.md", "x/a.md"})],
)  # fmt: skip
def test_memory_glob_of_everything_tests_no_path(pattern, everything, matched):
    from memdir.search.text_search import glob_matcher as memory_glob_matcher

    keep = memory_glob_matcher(pattern)
    assert keep("never/an/entry.txt") == everything  # (only the every-path test accepts a path that is no entry's)
    assert {path for path in ("a.md", "x/a.md", "x/y/b.md") if keep(path)} == matched
