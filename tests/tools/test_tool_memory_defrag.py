"""MemoryDefrag tool: dry run by default, readable reports, clear errors."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.optimization.options import ACTIONS, OPTION_SPECS
from memdir.tools.memory_defrag import PARAMETERS, memory_defrag
from tests.fakes import FakeEmbedder

TEXT = "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects."


@pytest.fixture
def memory(tmp_path):
    store = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    store.write("concept/ruby/classes.md", TEXT, title="Ruby classes", metadata={"type": "concept"})
    store.write("concept/ruby/classes-copy.md", TEXT + " Indeed.", title="Ruby classes", metadata={"type": "concept"})
    yield store
    store.close()


def test_analyze_returns_the_health_report(memory):
    text = memory_defrag(memory, "analyze")
    assert text.startswith("# Memory Health Report\n")
    assert "## Health Score:" in text


def test_active_actions_are_dry_runs_by_default(memory):
    text = memory_defrag(memory, "merge_duplicates")
    assert "**Dry run** — nothing was changed. Run again with `dry_run: false` to apply." in text
    assert "--live" not in text and "CLI" not in text  # the model calls the tool, it runs no command
    assert "Would merge 1 duplicate pair" in text
    assert memory.redirect_of("concept/ruby/classes.md") is None
    assert memory.list_stubs() == []


def test_dry_run_false_applies_and_mentions_undo(memory):
    text = memory_defrag(memory, "merge_duplicates", dry_run=False)
    assert "Merged 1 duplicate pair" in text and "memdir defrag --undo" in text
    assert memory.redirect_of("concept/ruby/classes.md").target == "concept/ruby/classes-copy.md"


def test_unknown_action_lists_valid_actions(memory):
    with pytest.raises(InputValidationError) as caught:
        memory_defrag(memory, "optimize_everything")
    assert caught.value.message == "Unknown MemoryDefrag action 'optimize_everything'."
    assert caught.value.hint == "Valid actions: " + ", ".join(ACTIONS) + "."


def test_options_are_checked(memory):
    with pytest.raises(InputValidationError, match="between 0 and 1"):
        memory_defrag(memory, "find_duplicates", similarity_threshold=85)


def test_none_options_mean_defaults(memory):
    text = memory_defrag(memory, "find_duplicates", similarity_threshold=None, limit=None, dry_run=None)
    assert "≥ 0.85" in text


def test_parameters_cover_every_option():
    assert set(PARAMETERS) == set(OPTION_SPECS)
    assert PARAMETERS["dry_run"] == "boolean" and PARAMETERS["merge_strategy"] == "string"
    assert {name for options in ACTIONS.values() for name in options} <= set(PARAMETERS)


def test_docstring_names_every_action():
    doc = memory_defrag.__doc__
    assert all(f"``{name}``" in doc for name in ACTIONS)
    assert "dry_run: false" in doc
