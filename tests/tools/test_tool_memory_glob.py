"""MemoryGlob: SwarmMemory's listing format, pattern rules, newest first, and the result cap."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.memory_glob import memory_glob
from tests.fakes import FakeEmbedder


def open_store(tmp_path, **settings):
    return Memory.open(Settings(root=tmp_path / "memory", **settings), embedder=FakeEmbedder())


@pytest.fixture
def memory(tmp_path):
    store = open_store(tmp_path)
    yield store
    store.close()


def put(memory, path, size, title):
    memory.write(path, "x" * size, title=title, metadata={"type": path.split("/")[0]})


def test_seed_format_newest_first(memory, session):
    put(memory, "concept/ruby/modules.md", 856, "Ruby Modules")
    put(memory, "concept/ruby/classes.md", 1200, "Ruby Classes")
    assert memory_glob(memory, session, "concept/ruby/*") == (
        "Memory entries matching 'concept/ruby/*' (2 entries):\n"
        '- memory://concept/ruby/classes.md "Ruby Classes" (1.2KB)\n'
        '- memory://concept/ruby/modules.md "Ruby Modules" (856B)'
    )


def test_one_entry_is_singular(memory, session):
    put(memory, "fact/a.md", 10, "A")
    assert memory_glob(memory, session, "fact/*") == (
        "Memory entries matching 'fact/*' (1 entry):\n"
        '- memory://fact/a.md "A" (10B)'
    )


def test_star_is_direct_children_and_double_star_recursive(memory, session):
    put(memory, "concept/ruby/classes.md", 5, "Classes")
    put(memory, "concept/ruby/advanced/meta.md", 5, "Meta")
    put(memory, "fact/people/john.md", 5, "John")
    assert "advanced" not in memory_glob(memory, session, "concept/ruby/*")
    recursive = memory_glob(memory, session, "concept/ruby/**")
    assert recursive.startswith("Memory entries matching 'concept/ruby/**' (2 entries):\n")
    assert "memory://concept/ruby/advanced/meta.md" in recursive
    everything = memory_glob(memory, session, "**/*")
    assert "(4 entries)" in everything  # three of ours + the built-in skill
    assert "memory://fact/people/john.md" in everything


def test_built_in_skill_is_listed(memory, session):
    result = memory_glob(memory, session, "skill/**")
    assert result.startswith("Memory entries matching 'skill/**' (1 entry):\n")
    assert result.split("\n")[1].startswith('- memory://skill/meta/deep-learning.md "Deep Learning Protocol" (')


def test_no_match(memory, session):
    assert memory_glob(memory, session, "fact/*") == "No entries found matching pattern 'fact/*'."


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "fact\\*", ""])
def test_patterns_are_confined_to_the_root(memory, session, pattern):
    with pytest.raises(InputValidationError):
        memory_glob(memory, session, pattern)


def test_results_are_capped_with_a_reminder(tmp_path, session, store_kind):
    """The directory store counts every match; a database reads the page alone and says more match."""
    with open_store(tmp_path, glob_max_results=2) as memory:
        for name in ("a", "b", "c"):
            put(memory, f"fact/{name}.md", 1, name.upper())
        result = memory_glob(memory, session, "fact/*")
    assert result == (
        "Memory entries matching 'fact/*' (2 entries):\n"
        '- memory://fact/c.md "C" (1B)\n'
        '- memory://fact/b.md "B" (1B)\n'
        "\n"
        "<system-reminder>\n"
        + ("Results truncated: showing the 2 newest of 3 matching entries.\n" if store_kind == "directory" else
           "Results truncated: showing the 2 newest matching entries; more match.\n") +
        "Use a more specific pattern (e.g. a folder such as 'concept/ruby/*') to narrow the results.\n"
        "</system-reminder>"
    )


def test_untitled_entries_show_the_path_alone(memory, session):
    memory.write("fact/untitled.md", "", title="", metadata={"type": "fact"})
    line = memory_glob(memory, session, "fact/*").split("\n")[1]
    assert line.startswith("- memory://fact/untitled.md") and line.endswith("(0B)")


@pytest.mark.parametrize("pattern", ["*" * 2000, "*a" * 60, "**/" * 200 + "*"])
def test_stacked_wildcards_are_matched_in_bounded_time(memory, session, pattern):
    import time

    memory.write("fact/" + "a" * 200, "x", title="Long", metadata={"type": "fact"})
    started = time.monotonic()
    memory_glob(memory, session, pattern)
    assert time.monotonic() - started < 2


def test_brackets_are_character_classes_and_odd_ones_are_harmless(memory, session):
    memory.write("fact/]", "x", title="Bracket", metadata={"type": "fact"})
    assert "memory://fact/].md" in memory_glob(memory, session, "fact/[]]")
    assert memory_glob(memory, session, "fact/[z-a]*").startswith("No entries found")


def test_a_glob_too_long_to_compile_cheaply_is_refused(memory, session):
    with pytest.raises(InputValidationError, match="The glob pattern '.*' is too costly to search with") as caught:
        memory_glob(memory, session, "*a" * 200_000)
    assert "400,000 characters long" in caught.value.message


def test_a_selective_pattern_pages_through_ties_in_path_order(tmp_path, session):
    """Entries written at the same moments (ties broken by path): a pattern matching one in ten is
    listed as on either store, however many chunks of rows a database reads to fill the page."""
    moments = [datetime(2026, 1, day, tzinfo=UTC) for day in (1, 2, 3)]
    with open_store(tmp_path, glob_max_results=7) as memory:
        for i in range(90):
            memory.write(f"fact/a/n{i:03d}.md", "x", title=f"N{i}", metadata={"type": "fact"}, updated_at=moments[i % 3])
        lines = memory_glob(memory, session, "fact/a/n*7.md").split("\n")
    matching = sorted((i for i in range(90) if i % 10 == 7), key=lambda i: (-(i % 3), i))
    assert lines[1:8] == [f'- memory://fact/a/n{i:03d}.md "N{i}" (1B)' for i in matching[:7]]
