"""Listings served from the derived index's rows (`memdir.storage.directory.root_listing`): the same rows as a
walk, and every change — by memdir in this process or another, or by hand — is in the next
listing, which lists again only the folders that changed (`memdir.storage.directory.folder_stamps`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.search.text_search import glob_folder, glob_matcher
from memdir.storage.directory.folder_stamps import RACY_NS, UNTRUSTED
from memdir.tools.memory_glob import memory_glob
from memdir.tools.session import Session
from tests.fakes import FakeEmbedder

SETTLED = (time.time_ns() - 10 * RACY_NS) // 1_000_000_000  # seconds: folders this old are trusted


def settle(memory: Memory) -> None:
    """Date every folder of the root back, as if the last change were minutes ago (no racy mtimes)."""
    for folder, _, _ in os.walk(memory.root):
        if ".memdir" not in folder:
            os.utime(folder, (SETTLED, SETTLED))


def walked(memory: Memory, pattern: str = "**/*"):
    """The listing a walk of every file gives."""
    return memory._listings.walked_entries(glob_matcher(pattern), None)


def from_index(memory: Memory, pattern: str = "**/*"):
    rows = memory.listing.entries(glob_matcher(pattern), glob_folder(pattern))
    assert rows is not None, "the listing should have come from the index"
    return rows


def by_path(infos):
    return sorted(infos, key=lambda info: info.path)


def paths(memory: Memory) -> list[str]:
    return [info.path for info in memory.list()]


@pytest.fixture
def relisted(monkeypatch):
    """The folders each listing (or reconcile) lists again, in the order asked."""
    from memdir.storage.directory.filesystem import FilesystemAdapter

    seen: list[str] = []
    original = FilesystemAdapter.list_folder

    def spy(self, prefix, known):
        seen.append(prefix)
        return original(self, prefix, known)

    monkeypatch.setattr(FilesystemAdapter, "list_folder", spy)
    return seen


@pytest.fixture
def filled(memory):
    memory.write("concept/ruby/classes.md", "# Classes\n\nRuby classes.", title="Classes", metadata={"tags": ["ruby"]})
    memory.write("concept/ruby/deep/modules.md", "Modules mix in.", title="Modules")
    memory.write("fact/people/ada.md", "Ada wrote the first program.", title="Ada", metadata={"type": "fact"})
    memory.write("skill/debug.md", "Read the stack trace first.", title="Debugging")
    memory.write("experience/target.md", "Where the stub points.", title="Target")
    memory.write("experience/untitled.md", "# A heading\n\nwritten without a title")
    memory.write_stub("experience/old.md", "experience/target.md", "moved")
    (memory.root / "concept" / "by-hand.md").write_text("# Written by hand\n\nno sidecar", encoding="utf-8")
    memory.read("fact/people/ada.md", count_hit=True)
    settle(memory)
    memory.reconcile()  # as the next open would: the hand-written file gets its row, the folders their stamps
    return memory


def test_a_reconcile_of_settled_folders_stamps_them_all(filled):
    stamps = filled.index.folder_stamps()
    assert {"", "concept/", "concept/ruby/", "concept/ruby/deep/", "fact/people/", "skill/"} <= set(stamps)
    assert all(stamp.mtime_ns != UNTRUSTED for stamp in stamps.values())
    assert filled.listing.stamps == stamps


@pytest.mark.parametrize(
    "pattern", ["**/*", "concept/**", "concept/ruby/*", "**/*.md", "fact/people/ada", "nothing/*", "concept/r*/**", "*"]
)
def test_listing_from_the_index_equals_the_walk(filled, pattern):
    assert by_path(from_index(filled, pattern)) == by_path(walked(filled, pattern))


@pytest.mark.parametrize(
    ("pattern", "folder"),
    [("**/*", None), ("*", None), ("concept/ruby/*", "concept/ruby"), ("skill/**", "skill"), ("fact/people/ada", "fact/people"),
     ("concept/r*/x", "concept"), ("memory://concept/a/", "concept/a"), ("x[ab]/y", None)],
)
def test_a_glob_looks_only_inside_its_literal_folders(pattern, folder):
    assert glob_folder(pattern) == folder


def test_an_unchanged_root_is_listed_without_listing_any_folder(filled, relisted):
    filled.list()
    filled.list()
    assert relisted == []


def test_glob_tool_answers_the_same_from_the_index(filled):
    session = Session()
    first = memory_glob(filled, session, "**/*")
    filled.listing.stamps = {}  # no stamps: a walk
    assert memory_glob(filled, session, "**/*") == first
    assert "experience/old.md" not in first and "concept/by-hand.md" in first
    assert '"A heading"' in first  # an entry written without a title shows its first heading


def test_a_write_by_this_process_lists_only_its_folder_again(filled, relisted):
    filled.write("concept/ruby/procs.md", "Procs are closures.", title="Procs")
    assert "concept/ruby/procs.md" in paths(filled)
    assert relisted == ["concept/ruby/"]
    assert filled.listing.stamps["concept/ruby/"].mtime_ns == UNTRUSTED  # changed just now: not trusted yet
    assert by_path(from_index(filled)) == by_path(walked(filled))
    settle(filled)
    relisted.clear()
    filled.list()
    filled.list()
    assert relisted == ["concept/ruby/"]  # listed once more, found settled and as the rows say: stamped
    assert filled.listing.stamps["concept/ruby/"].mtime_ns != UNTRUSTED


def test_a_write_into_a_new_folder_lists_its_parent_and_the_new_folder(filled, relisted):
    filled.write("concept/ruby/deep/er/blocks.md", "Blocks.", title="Blocks")
    assert "concept/ruby/deep/er/blocks.md" in paths(filled)
    assert sorted(relisted) == ["concept/ruby/deep/", "concept/ruby/deep/er/"]


def test_deletes_stubs_and_counted_reads_are_listed(filled):
    filled.delete("skill/debug.md")
    filled.write_stub("concept/ruby/classes.md", "fact/people/ada.md", "merged")
    filled.read("fact/people/ada.md", count_hit=True)
    listed = {info.path: info for info in filled.list()}
    assert "skill/debug.md" not in listed and "concept/ruby/classes.md" not in listed
    assert listed["fact/people/ada.md"].hits == 2
    assert by_path(from_index(filled)) == by_path(walked(filled))


WRITE_ELSEWHERE = """
import sys
from memdir.core.settings import Settings
from memdir.memory import Memory
with Memory.open(Settings(root=sys.argv[1], embeddings_enabled=False), load_model=False) as memory:
    memory.write("fact/people/grace.md", "Grace wrote a compiler.", title="Grace")
    memory.delete("concept/ruby/deep/modules.md")
"""


def test_writes_and_deletes_by_another_process_are_listed(filled, relisted):
    filled.list()
    subprocess.run([sys.executable, "-c", WRITE_ELSEWHERE, str(filled.root)], check=True, timeout=120)
    listed = paths(filled)
    assert "fact/people/grace.md" in listed and "concept/ruby/deep/modules.md" not in listed
    # Not a walk of every folder: the two changed ones (the delete removed the emptied deep/ too).
    assert "fact/people/" in relisted and set(relisted) <= {"fact/people/", "concept/ruby/", "concept/ruby/deep/"}
    assert by_path(from_index(filled)) == by_path(walked(filled))


def test_a_file_added_by_hand_is_listed(filled, relisted):
    (filled.root / "concept" / "ruby" / "new.md").write_text("# Added by an editor\n\nbody", encoding="utf-8")
    listed = {info.path: info for info in filled.list()}
    assert listed["concept/ruby/new.md"].title == "Added by an editor"
    assert relisted == ["concept/ruby/"]
    settle(filled)
    filled.list()
    assert filled.listing.stamps["concept/ruby/"].mtime_ns == UNTRUSTED  # the index lacks it: listed every time
    filled.reconcile()
    filled.list()
    assert filled.listing.stamps["concept/ruby/"].mtime_ns != UNTRUSTED


def test_a_file_removed_by_hand_is_not_listed(filled):
    os.remove(filled.root / "skill" / "debug.md")
    os.remove(filled.root / "skill" / "debug.yml")
    assert "skill/debug.md" not in paths(filled)


def test_a_file_renamed_by_hand_is_listed_under_its_new_name(filled):
    os.rename(filled.root / "fact" / "people" / "ada.md", filled.root / "fact" / "people" / "lovelace.md")
    os.rename(filled.root / "fact" / "people" / "ada.yml", filled.root / "fact" / "people" / "lovelace.yml")
    listed = {info.path: info for info in filled.list()}
    assert "fact/people/ada.md" not in listed and listed["fact/people/lovelace.md"].title == "Ada"


def test_an_entry_saved_by_an_editor_is_listed_with_its_new_files(filled):
    """Editors (vim, sed -i, most IDEs' safe write) save a new file and rename it over the old one."""
    md = filled.root / "skill" / "debug.md"
    temp = md.with_name(".debug.md.swp")
    temp.write_text("Read the stack trace first. Then the logs, then the code.", encoding="utf-8")
    os.replace(temp, md)
    listed = {info.path: info for info in filled.list()}
    assert listed["skill/debug.md"].size == md.stat().st_size


def test_a_folder_made_removed_or_renamed_by_hand_is_listed(filled):
    (filled.root / "concept" / "ruby" / "deep" / "deeper").mkdir()
    (filled.root / "concept" / "ruby" / "deep" / "deeper" / "x.md").write_text("deep", encoding="utf-8")
    assert "concept/ruby/deep/deeper/x.md" in paths(filled)
    shutil.rmtree(filled.root / "concept" / "ruby" / "deep")
    assert not [path for path in paths(filled) if path.startswith("concept/ruby/deep/")]
    os.rename(filled.root / "fact" / "people", filled.root / "fact" / "persons")
    listed = paths(filled)
    assert "fact/persons/ada.md" in listed and "fact/people/ada.md" not in listed
    assert by_path(from_index(filled)) == by_path(walked(filled))


def test_a_folder_that_is_not_there_lists_nothing_and_reads_no_rows(filled, relisted, monkeypatch):
    from memdir.storage.directory.index import DerivedIndex

    shutil.rmtree(filled.root / "fact" / "people")  # its entries' rows are still in the index
    (filled.root / "episodes").write_text("a file, not a folder", encoding="utf-8")
    monkeypatch.setattr(DerivedIndex, "listing", lambda self: pytest.fail("the listing read every entry's row"))
    assert filled.list("fact/people/") == [] and filled.list("episodes/") == [] and filled.list("nothing/") == []
    assert relisted == []


def test_an_edit_in_place_is_seen_when_the_root_is_opened_again(filled, relisted):
    """A file rewritten in place changes no folder: opening the root stats every entry's files."""
    (filled.root / "skill" / "debug.md").write_text("Rewritten in place by a script: bisect.", encoding="utf-8")
    with Memory.open(Settings(root=filled.root), embedder=FakeEmbedder()) as again:
        assert relisted == []  # no folder changed: none listed at open
        listed = {info.path: info for info in again.list()}
        assert listed["skill/debug.md"].size == len("Rewritten in place by a script: bisect.")
        assert [result.path for result in again.search("bisect")][:1] == ["skill/debug.md"]


def test_opening_an_unchanged_root_lists_no_folder(filled, relisted, monkeypatch):
    import memdir.storage.directory.root_listing as root_listing

    def no_walk(*args, **kwargs):
        raise AssertionError("opening an unchanged root walked it")

    monkeypatch.setattr(root_listing, "listing", no_walk)
    with Memory.open(Settings(root=filled.root), embedder=FakeEmbedder()) as again:
        assert relisted == []
        assert by_path(again.list()) == by_path(filled.list())


def test_opening_after_changes_by_hand_lists_only_the_changed_folders(filled, relisted):
    (filled.root / "fact" / "people" / "new.md").write_text("# New by hand", encoding="utf-8")
    os.remove(filled.root / "skill" / "debug.md")
    with Memory.open(Settings(root=filled.root), embedder=FakeEmbedder()) as again:
        assert sorted(relisted) == ["fact/people/", "skill/"]
        assert [result.path for result in again.search("New by hand")][:1] == ["fact/people/new.md"]
        assert "skill/debug.md" not in again.index.freshness()


def test_a_server_reads_the_listing_rows_right_after_opening(filled):
    with Memory.open(Settings(root=filled.root), embedder=FakeEmbedder(), background=True) as server:
        deadline = time.monotonic() + 30
        while server.index._listing is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.index._listing is not None
        assert by_path(from_index(server)) == by_path(walked(server))


def test_recently_changed_folders_are_not_trusted(memory):
    memory.write("concept/a.md", "A.", title="A")
    memory.reconcile()  # every folder was changed just now: a change within the mtime granularity could hide
    assert memory.index.folder_stamps()["concept/"].mtime_ns == UNTRUSTED


def test_a_folder_holding_a_link_to_a_folder_is_walked(filled):
    (filled.root / "concept" / "alias").symlink_to(filled.root / "fact" / "people", target_is_directory=True)
    assert filled.listing.entries(glob_matcher("**/*")) is None  # only a walk lists a linked folder once
    listed = paths(filled)
    assert "fact/people/ada.md" in listed and "concept/alias/ada.md" not in listed


def test_an_index_that_cannot_be_read_when_reconciling_is_reconciled_from_a_walk(filled, monkeypatch):
    import sqlite3

    from memdir.storage.directory.index import DerivedIndex

    calls = []
    original = DerivedIndex.freshness

    def damaged_once(self):
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return original(self)

    monkeypatch.setattr(DerivedIndex, "freshness", damaged_once)
    (filled.root / "skill" / "new.md").write_text("# New", encoding="utf-8")
    filled.reconcile()
    assert "skill/new.md" in filled.index.freshness()
    assert by_path(from_index(filled)) == by_path(walked(filled))


def test_an_edit_in_place_shows_in_the_glob_of_a_process_that_has_the_root_open(filled, relisted):
    """The entries a glob shows are checked against their files (two stat each): a rewrite in place
    shows there at once; a listing of everything (`Memory.list`) shows it at the next open."""
    session = Session()
    before = memory_glob(filled, session, "**/*")
    assert '"Debugging" (27B)' in before
    md, yml = filled.root / "skill" / "debug.md", filled.root / "skill" / "debug.yml"
    inode = md.stat().st_ino
    with open(md, "w", encoding="utf-8") as file:  # in place: same inode, the folder unchanged
        file.write("Rewritten in place by a script: bisect first.")
    yml.write_text(yml.read_text(encoding="utf-8").replace("title: Debugging", "title: Bisecting"), encoding="utf-8")
    assert md.stat().st_ino == inode
    after = memory_glob(filled, session, "**/*")
    assert '"Bisecting" (45B)' in after and "Debugging" not in after
    assert relisted == []  # no folder was listed again for it
    filled.delete("skill/debug.md")
    assert "skill/debug.md" not in memory_glob(filled, session, "**/*")
