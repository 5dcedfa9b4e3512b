"""Listings served from the derived index's rows (`memdir.storage.folder_stamps`): the same rows as
the walk, and a file added, removed or touched by hand, or by memdir itself, is noticed."""

from __future__ import annotations

import os
import time

import pytest

from memdir.memory import Memory
from memdir.search.text_search import glob_matcher
from memdir.storage.folder_stamps import RACY_NS
from memdir.tools.memory_glob import memory_glob
from memdir.tools.session import Session

SETTLED = (time.time_ns() - 10 * RACY_NS) // 1_000_000_000  # seconds: folders this old are trusted


def settle(memory: Memory) -> None:
    """Date every folder of the root back, as if the last change were minutes ago (no racy mtimes)."""
    for folder, dirs, _ in os.walk(memory.root):
        if ".memdir" not in folder:
            os.utime(folder, (SETTLED, SETTLED))


def walked(memory: Memory, pattern: str = "**/*"):
    """The listing a walk gives (no folder stamps to vouch for the index)."""
    memory._folder_stamps = None
    return memory._walked_entries(glob_matcher(pattern), None)


def stamped(memory: Memory) -> None:
    """List once, so the walk stamps the (settled) folders; later listings come from the index.

    (Entries written through `Memory.write` without a title have no title in their row — the walk
    shows their first heading — so a root holding one is always walked; the fixture titles all.)
    """
    settle(memory)
    memory.list()
    assert memory._folder_stamps is not None


def from_index(memory: Memory, pattern: str = "**/*"):
    rows = memory._indexed_entries(glob_matcher(pattern))
    assert rows is not None, "the listing should have come from the index"
    return rows


def by_path(infos):
    return sorted(infos, key=lambda info: info.path)


@pytest.fixture
def filled(memory):
    memory.write("concept/ruby/classes.md", "# Classes\n\nRuby classes.", title="Classes", metadata={"tags": ["ruby"]})
    memory.write("concept/ruby/deep/modules.md", "Modules mix in.", title="Modules")
    memory.write("fact/people/ada.md", "Ada wrote the first program.", title="Ada", metadata={"type": "fact"})
    memory.write("skill/debug.md", "Read the stack trace first.", title="Debugging")
    memory.write("experience/target.md", "Where the stub points.", title="Target")
    memory.write_stub("experience/old.md", "experience/target.md", "moved")
    (memory.root / "concept" / "by-hand.md").write_text("# Written by hand\n\nno sidecar", encoding="utf-8")
    memory.read("fact/people/ada.md", count_hit=True)
    memory.reconcile()  # as the next open would: the hand-written file gets its row
    return memory


@pytest.mark.parametrize("pattern", ["**/*", "concept/**", "concept/ruby/*", "**/*.md", "fact/people/ada", "nothing/*"])
def test_listing_from_the_index_equals_the_walk(filled, pattern):
    stamped(filled)
    assert by_path(from_index(filled, pattern)) == by_path(walked(filled, pattern))


def test_glob_tool_answers_the_same_from_the_index(filled):
    session = Session()
    settle(filled)
    first = memory_glob(filled, session, "**/*")  # a walk, which stamps the folders
    assert filled._folder_stamps is not None
    assert memory_glob(filled, session, "**/*") == first
    assert "experience/old.md" not in first and "concept/by-hand.md" in first


def test_a_file_added_by_hand_is_listed(filled):
    stamped(filled)
    (filled.root / "concept" / "ruby" / "new.md").write_text("Added by an editor.", encoding="utf-8")
    assert "concept/ruby/new.md" in [info.path for info in filled.list()]
    assert filled._indexed_entries(glob_matcher("**/*")) is None  # its folder changed: walks until reconciled


def test_a_file_removed_by_hand_is_not_listed(filled):
    stamped(filled)
    os.remove(filled.root / "skill" / "debug.md")
    os.remove(filled.root / "skill" / "debug.yml")
    assert "skill/debug.md" not in [info.path for info in filled.list()]


def test_a_new_folder_made_by_hand_is_listed(filled):
    stamped(filled)
    (filled.root / "concept" / "ruby" / "deep" / "deeper").mkdir()
    (filled.root / "concept" / "ruby" / "deep" / "deeper" / "x.md").write_text("deep", encoding="utf-8")
    assert "concept/ruby/deep/deeper/x.md" in [info.path for info in filled.list()]


def test_memdir_writes_deletes_and_hit_counts_are_listed(filled):
    stamped(filled)
    filled.write("concept/ruby/procs.md", "Procs are closures.", title="Procs")
    filled.delete("skill/debug.md")
    paths = [info.path for info in filled.list()]
    assert "concept/ruby/procs.md" in paths and "skill/debug.md" not in paths
    stamped(filled)
    filled.read("concept/ruby/classes.md", count_hit=True)  # rewrites the .yml, raises no counter
    hits = {info.path: info.hits for info in filled.list()}
    assert hits["concept/ruby/classes.md"] == 1 and hits["fact/people/ada.md"] == 1


def test_recently_changed_folders_are_not_trusted(filled):
    filled.list()  # every folder was changed just now: a change within the mtime granularity could hide
    assert filled._folder_stamps is None


def test_listings_come_from_the_index_again_after_a_counted_read(filled):
    stamped(filled)
    filled.read("concept/ruby/classes.md", count_hit=True)
    stamped(filled)  # the walk after the read found every row fresh, its hit count included
    assert {info.path: info.hits for info in from_index(filled)}["concept/ruby/classes.md"] == 1
