"""MemoryGrep: the three output modes in SwarmMemory's formats, filters, errors and the cap."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.memory_grep import memory_grep
from tests.fakes import FakeEmbedder


def open_store(tmp_path, **settings):
    store = Memory.open(Settings(root=tmp_path / "memory", **settings), embedder=FakeEmbedder())
    store.write(
        "concept/ruby/classes.md",
        "# Classes\nRuby classes are blueprints for objects.\nA Ruby class holds methods; Ruby calls them.\n",
        title="Ruby Classes", metadata={"type": "concept", "tags": ["secretword"]},
    )
    store.write(
        "concept/ruby/modules.md", "# Modules\nRuby modules are mixins.\n", title="Ruby Modules",
        metadata={"type": "concept"},
    )
    store.write("fact/api/limits.md", "limit: 100\n", title="Limits", metadata={"type": "fact"})
    store.write("fact/api-design/rest.md", "limit your verbs\n", title="REST", metadata={"type": "fact"})
    return store


@pytest.fixture
def memory(tmp_path):
    store = open_store(tmp_path)
    yield store
    store.close()


def test_files_with_matches_is_the_default(memory, session):
    assert memory_grep(memory, session, "Ruby") == (
        "Memory entries matching 'Ruby' (2 entries):\n"
        '- memory://concept/ruby/classes.md "Ruby Classes" (title, content)\n'
        '- memory://concept/ruby/modules.md "Ruby Modules" (title, content)'
    )


def test_content_mode(memory, session):
    assert memory_grep(memory, session, "blueprints", output_mode="content") == (
        "memory://concept/ruby/classes.md:\n"
        "2: Ruby classes are blueprints for objects.\n"
        "(1 match in 1 entry)"
    )
    assert memory_grep(memory, session, "Ruby", output_mode="content") == (
        "memory://concept/ruby/classes.md:\n"
        "2: Ruby classes are blueprints for objects.\n"
        "3: A Ruby class holds methods; Ruby calls them.\n"
        "\n"
        "memory://concept/ruby/modules.md:\n"
        "2: Ruby modules are mixins.\n"
        "(4 matches in 2 entries)"
    )


def test_count_mode(memory, session):
    assert memory_grep(memory, session, "Ruby", output_mode="count") == (
        "4 total matches in 2 entries:\n"
        "- memory://concept/ruby/classes.md: 3 matches\n"
        "- memory://concept/ruby/modules.md: 1 match"
    )
    assert memory_grep(memory, session, "mixins", output_mode="count") == (
        "1 total match in 1 entry:\n- memory://concept/ruby/modules.md: 1 match"
    )


def test_case_insensitive(memory, session):
    assert memory_grep(memory, session, "RUBY", case_insensitive=True, output_mode="count").startswith(
        "4 total matches in 2 entries:"
    )
    assert memory_grep(memory, session, "RUBY") == "No matches found for pattern 'RUBY'."


def test_regex_patterns(memory, session):
    assert memory_grep(memory, session, r"limit: \d+", output_mode="content") == (
        "memory://fact/api/limits.md:\n1: limit: 100\n(1 match in 1 entry)"
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("fact/api", ["fact/api/limits.md"]),
        ("fact/api/", ["fact/api/limits.md"]),
        ("fact/", ["fact/api-design/rest.md", "fact/api/limits.md"]),
        ("fact/api-design/rest.md", ["fact/api-design/rest.md"]),
        (None, ["fact/api-design/rest.md", "fact/api/limits.md"]),
    ],
)
def test_path_filter(memory, session, path, expected):
    result = memory_grep(memory, session, "limit", path=path)
    assert [line.split()[1] for line in result.split("\n")[1:]] == [f"memory://{p}" for p in expected]


def test_files_with_matches_also_finds_entries_by_title_and_tags_and_says_where(memory, session):
    assert memory_grep(memory, session, "secretword") == (
        "Memory entries matching 'secretword' (1 entry):\n"
        '- memory://concept/ruby/classes.md "Ruby Classes" (tags)'
    )
    assert memory_grep(memory, session, "^Limits$") == (
        "Memory entries matching '^Limits$' (1 entry):\n"
        '- memory://fact/api/limits.md "Limits" (title)'
    )
    assert memory_grep(memory, session, "mixins") == (
        "Memory entries matching 'mixins' (1 entry):\n"
        '- memory://concept/ruby/modules.md "Ruby Modules" (content)'
    )
    assert "(tags)" in memory_grep(memory, session, "SECRETWORD", case_insensitive=True)
    assert memory_grep(memory, session, "secretword", path="fact/") == "No matches found for pattern 'secretword' under 'fact/'."


def test_the_line_modes_search_content_only_and_no_sidecar_internals_are_searched(memory, session):
    assert memory_grep(memory, session, "secretword", output_mode="content") == "No matches found for pattern 'secretword'."
    assert memory_grep(memory, session, "secretword", output_mode="count") == "No matches found for pattern 'secretword'."
    assert memory_grep(memory, session, "file_path") == "No matches found for pattern 'file_path'."


def test_no_match_names_the_path(memory, session):
    result = memory_grep(memory, session, "zzz", path="concept/")
    assert result == "No matches found for pattern 'zzz' under 'concept/'."


def test_invalid_output_mode(memory, session):
    with pytest.raises(InputValidationError) as caught:
        memory_grep(memory, session, "Ruby", output_mode="lines")
    assert str(caught.value) == "Invalid output_mode 'lines'. Use one of: files_with_matches, content, count."


def test_invalid_regex(memory, session):
    with pytest.raises(InputValidationError) as caught:
        memory_grep(memory, session, "(unclosed")
    assert caught.value.message.startswith("Invalid regular expression '(unclosed': ")


def test_invalid_path_filter(memory, session):
    with pytest.raises(InputValidationError):
        memory_grep(memory, session, "x", path="../etc")


def test_cap_in_files_and_count_modes(tmp_path, session):
    with open_store(tmp_path, grep_max_results=1) as memory:
        files = memory_grep(memory, session, "Ruby")
        count = memory_grep(memory, session, "Ruby", output_mode="count")
    reminder = (
        "\n\n<system-reminder>\n"
        "Results truncated: showing 1 of 2 matching entries.\n"
        "Use a more specific pattern or the path parameter (e.g. 'concept/ruby/') to narrow the search.\n"
        "</system-reminder>"
    )
    assert files == (
        "Memory entries matching 'Ruby' (1 entry):\n" '- memory://concept/ruby/classes.md "Ruby Classes" (title, content)'
        + reminder
    )
    assert count == "4 total matches in 2 entries:\n- memory://concept/ruby/classes.md: 3 matches" + reminder


def test_cap_in_content_mode_counts_lines(tmp_path, session):
    with open_store(tmp_path, grep_max_results=2) as memory:
        result = memory_grep(memory, session, "Ruby", output_mode="content")
    assert result == (
        "memory://concept/ruby/classes.md:\n"
        "2: Ruby classes are blueprints for objects.\n"
        "3: A Ruby class holds methods; Ruby calls them.\n"
        "(4 matches in 2 entries)\n"
        "\n"
        "<system-reminder>\n"
        "Results truncated: showing 2 of 3 matching lines.\n"
        "Use a more specific pattern or the path parameter (e.g. 'concept/ruby/') to narrow the search.\n"
        "</system-reminder>"
    )


def test_a_runaway_pattern_is_stopped_at_the_time_limit_with_the_reason(tmp_path, session):
    import time

    settings = Settings(root=tmp_path / "m", grep_time_limit=0.3)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("fact/runaway", "a" * 40 + "!", title="Runaway", metadata={"type": "fact"})
        started = time.monotonic()
        with pytest.raises(InputValidationError, match=r"took longer than 0.3 s to match, so the search was stopped") as caught:
            memory_grep(memory, session, "(a|aa)+$")
        assert time.monotonic() - started < 3
        assert "Simplify the pattern" in caught.value.hint


@pytest.mark.parametrize("pattern", ["[z-a]", "*a", "a)"])
def test_patterns_the_engine_cannot_take_are_explained(memory, session, pattern):
    with pytest.raises(InputValidationError, match="Invalid regular expression"):
        memory_grep(memory, session, pattern)


def test_lines_end_where_their_line_breaks_are_whatever_the_line_ending(memory, session):
    memory.write("fact/crlf", "first line\r\nneedle at the end\r\nlast", title="CRLF", metadata={"type": "fact"})
    assert "memory://fact/crlf.md" in memory_grep(memory, session, "end$")


def test_the_time_limit_counts_matching_only_not_reading_many_entries(tmp_path, session):
    settings = Settings(root=tmp_path / "m", grep_time_limit=0.5)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        for i in range(300):
            memory.write(f"fact/many/e{i}", "ordinary words\n" * 100, title=f"E{i}", metadata={"type": "fact"})
        assert memory_grep(memory, session, "needle").startswith("No matches")


@pytest.mark.parametrize(
    ("pattern", "content"),
    [(r"(?<!\s)foo", "bar\nfoo()\n"), (r"foo\s*+$", "foo\nbar\n"), (r"(?-m:foo$)", "foo\nbar\n"),
     (r"\Afoo", "bar\nfoo\n"), (r"[^x]foo", "bar\n foo\n")],
)
def test_patterns_that_see_past_a_line_still_find_every_matching_line(memory, session, pattern, content):
    memory.write("fact/lines", content, title="Lines", metadata={"type": "fact"})
    assert "memory://fact/lines.md" in memory_grep(memory, session, pattern)


@pytest.mark.parametrize(
    "pattern", ["a{10000000}", "a{1000000000}", "((a{1000}){1000}){1000}", "(" * 5000 + "a" + ")" * 5000,
                "|".join(f"w{i}" for i in range(100_000))],
)
def test_patterns_that_would_cost_too_much_to_compile_are_refused_before_compiling(memory, session, pattern):
    with pytest.raises(InputValidationError, match="is too costly to search with") as caught:
        memory_grep(memory, session, pattern)
    assert caught.value.hint


def test_a_pattern_that_repeats_a_group_is_refused_a_line_over_its_bound_with_the_reason(tmp_path, session):
    settings = Settings(root=tmp_path / "m", grep_max_line_chars=100)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("fact/wide", "ab" * 60 + "\nshort ab line", title="Wide", metadata={"type": "fact"})
        found = memory_grep(memory, session, "(?:x|ab)b*", path="fact/", output_mode="count")  # no repeated group
        assert "fact/wide.md: 61 matches" in found
        with pytest.raises(InputValidationError, match="fact/wide.md has a line of 120 characters") as caught:
            memory_grep(memory, session, "(a|b)+", path="fact/")
        assert "grep_max_line_chars" in caught.value.message and "[ab]* instead of (a|b)*" in caught.value.hint
        assert "fact/wide.md: 2 matches" in memory_grep(memory, session, "[ab]+", path="fact/", output_mode="count")


def test_files_with_matches_finds_a_word_that_is_only_in_the_domain(memory, session):
    memory.write("fact/ledger.md", "Balanced lines only.", title="Ledger rule",
                 metadata={"type": "fact", "domain": "bookkeeping", "tags": ["ledger"]})
    assert memory_grep(memory, session, "bookkeeping") == (
        "Memory entries matching 'bookkeeping' (1 entry):\n"
        '- memory://fact/ledger.md "Ledger rule" (domain)'
    )
    assert "No matches" in memory_grep(memory, session, "bookkeeping", output_mode="content")
