"""MemoryRead: numbered lines, the related-memories reminder, hits, and read registration."""

from __future__ import annotations

import pytest

from memdir.core.errors import EntryNotFoundError, InvalidPathError
from memdir.tools.formatting import numbered_lines
from memdir.tools.memory_read import memory_read

CLASSES = (
    "# Ruby Classes\n\nClasses in Ruby are blueprints for objects.\nThey encapsulate data and behavior together.\n"
)


def test_lines_are_numbered_like_swarmmemory(memory, session):
    memory.write("concept/ruby/classes.md", CLASSES, title="Ruby Classes", metadata={"type": "concept"})
    assert memory_read(memory, session, "concept/ruby/classes.md") == (
        "     1 # Ruby Classes\n"
        "     2 \n"
        "     3 Classes in Ruby are blueprints for objects.\n"
        "     4 They encapsulate data and behavior together."
    )


def test_numbering_is_right_aligned_to_six():
    text = numbered_lines("\n".join(f"line {n}" for n in range(1, 1001)))
    lines = text.split("\n")
    assert lines[0] == "     1 line 1"
    assert lines[9] == "    10 line 10"
    assert lines[999] == "  1000 line 1000"


def test_related_memories_reminder_with_titles(memory, session):
    memory.write("concept/ruby/modules.md", "Modules.", title="Ruby Modules", metadata={"type": "concept"})
    memory.write("concept/ruby/inheritance.md", "Inheritance.", title="Ruby Inheritance", metadata={"type": "concept"})
    memory.write(
        "concept/ruby/classes.md", CLASSES, title="Ruby Classes",
        metadata={
            "type": "concept",
            "related": [
                "memory://concept/ruby/modules.md",
                "concept/ruby/inheritance",
                "memory://concept/ruby/gone.md",
            ],
        },
    )
    assert memory_read(memory, session, "concept/ruby/classes.md") == (
        "     1 # Ruby Classes\n"
        "     2 \n"
        "     3 Classes in Ruby are blueprints for objects.\n"
        "     4 They encapsulate data and behavior together.\n"
        "\n"
        "<system-reminder>\n"
        "Related memories that may provide additional context:\n"
        '- memory://concept/ruby/modules.md "Ruby Modules"\n'
        '- memory://concept/ruby/inheritance.md "Ruby Inheritance"\n'
        "- memory://concept/ruby/gone.md\n"
        "</system-reminder>"
    )


def test_no_reminder_without_related(memory, session):
    memory.write("fact/x.md", "one line", title="X", metadata={"type": "fact"})
    assert "<system-reminder>" not in memory_read(memory, session, "fact/x.md")


def test_counts_a_hit(memory, session):
    memory.write("fact/x.md", "one line", title="X", metadata={"type": "fact"})
    memory_read(memory, session, "fact/x.md")
    memory_read(memory, session, "fact/x")
    assert memory.read("fact/x.md").hits == 2


def test_registers_the_read_under_the_normalised_path(memory, session):
    memory.write("fact/x.md", "one line", title="X", metadata={"type": "fact"})
    memory_read(memory, session, "memory://fact/x")
    assert session.tracker.has_read("fact/x.md")
    assert session.tracker.has_read("fact/x")
    assert session.tracker.is_current("fact/x.md", "one line")


def test_reading_through_a_stub_registers_both_paths(memory, session):
    memory.write("concept/new.md", "merged content", title="New", metadata={"type": "concept"})
    memory.write("concept/old.md", "old content", title="Old", metadata={"type": "concept"})
    memory.write_stub("concept/old.md", "concept/new.md", "merged")
    result = memory_read(memory, session, "concept/old.md")
    assert result == (
        "     1 merged content\n"
        "\n"
        "<system-reminder>\n"
        "memory://concept/old.md was merged into memory://concept/new.md; the content above is from "
        "memory://concept/new.md. Use that path from now on.\n"
        "</system-reminder>"
    )
    assert session.tracker.is_current("concept/new.md", "merged content")
    assert session.tracker.is_current("concept/old.md", "merged content")


def test_empty_entry_says_so(memory, session):
    memory.write("fact/empty.md", "", title="Empty", metadata={"type": "fact"})
    assert memory_read(memory, session, "fact/empty.md") == (
        "<system-reminder>\nmemory://fact/empty.md exists but its content is empty.\n</system-reminder>"
    )


def test_built_in_skill_is_readable(memory, session):
    result = memory_read(memory, session, "skill/meta/deep-learning.md")
    assert result.startswith("     1 # Deep Learning Protocol\n")
    assert session.tracker.has_read("skill/meta/deep-learning")


def test_missing_entry(memory, session):
    with pytest.raises(EntryNotFoundError) as caught:
        memory_read(memory, session, "fact/nope")
    assert caught.value.message == "memory://fact/nope.md not found."
    assert not session.tracker.has_read("fact/nope.md")


def test_invalid_path(memory, session):
    with pytest.raises(InvalidPathError):
        memory_read(memory, session, "/etc/passwd")


@pytest.mark.directory_store  # edits the files by hand
def test_reading_through_a_swarm_memory_stub_never_rewrites_it(memory, session):
    """SwarmMemory's stubs carry a .yml whose size must keep matching; reads are counted in .memdir/ instead."""
    from memdir.optimization.defragmenter import Defragmenter

    memory.write("concept/ruby/classes.md", CLASSES, title="Ruby Classes", metadata={"type": "concept"})
    stub_text = "# merged → concept/ruby/classes.md\n\nThis entry was merged into concept/ruby/classes.md."
    root = memory.root
    (root / "concept/ruby/old.md").write_text(stub_text, encoding="utf-8")
    (root / "concept/ruby/old.yml").write_text(
        f"---\n:title: Old\n:size: {len(stub_text.encode())}\n:hits: 0\n"
        ":metadata:\n  stub: true\n  redirect_to: concept/ruby/classes.md\n",
        encoding="utf-8",
    )
    before = {name: (root / f"concept/ruby/old.{name}").read_bytes() for name in ("md", "yml")}
    for _ in range(2):
        assert "Classes in Ruby" in memory_read(memory, session, "concept/ruby/old.md")
    assert {name: (root / f"concept/ruby/old.{name}").read_bytes() for name in ("md", "yml")} == before
    assert [stub.hits for stub in memory.list_stubs()] == [2]  # still counted, for defrag's cleanup
    cleanup = Defragmenter(memory).run("cleanup_stubs", age_days=0, max_hits=1)
    assert cleanup.data["stubs"] == []  # read more than max_hits times: still in use


@pytest.mark.directory_store  # edits the files by hand
def test_a_stub_written_anew_starts_unread(memory, session):
    memory.write("fact/a.md", "A.", title="A")
    memory.write_stub("fact/old.md", "fact/a.md")
    memory_read(memory, session, "fact/old.md")
    assert (memory.root / "fact/old.md").read_text(encoding="utf-8").endswith("fact/a.md\n")
    assert [stub.hits for stub in memory.list_stubs()] == [1]
    memory.delete("fact/old.md")
    memory.write_stub("fact/old.md", "fact/a.md")
    assert [stub.hits for stub in memory.list_stubs()] == [0]
