"""MemorySearch: ranked results with the best-matching line, filters, explanation and clear errors."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.search.snippet import best_line
from memdir.tools.memory_search import memory_search
from tests.fakes import FakeEmbedder

DEPLOY = "# Deployment\n\nWe deploy every Tuesday.\n\nRollback: run `make rollback` and page the on-call engineer.\n"


@pytest.fixture
def memory(tmp_path):
    store = Memory.open(Settings(root=tmp_path / "memory", embeddings_enabled=False), embedder=FakeEmbedder())
    store.write("fact/ops/deploy.md", DEPLOY, title="Deployment", metadata={"type": "fact", "tags": ["ops"]})
    store.write("concept/ruby/classes.md", "Ruby classes hold methods.\nA rollback is not a Ruby idea.",
                title="Ruby classes", metadata={"type": "concept", "tags": ["ruby"]})
    store.write("skill/debug.md", "Steps to debug a flaky test.", title="Debugging", metadata={"type": "skill"})
    yield store
    store.close()


def test_results_show_the_line_that_matched_not_the_first(memory):
    text = memory_search(memory, "how do I rollback and page on-call?", top_k=2)
    lines = text.splitlines()
    assert lines[0].startswith("2 results for 'how do I rollback and page on-call?'")
    assert lines[1].startswith('1. memory://fact/ops/deploy.md "Deployment" (fact, score ')
    assert lines[2] == "   Rollback: run `make rollback` and page the on-call engineer."
    assert lines[3].startswith('2. memory://concept/ruby/classes.md "Ruby classes" (concept, score ')
    assert lines[4] == "   A rollback is not a Ruby idea."


def test_snippets_come_from_the_markdown_alone(memory, monkeypatch):
    """A result's line needs its content only: no sidecar parsed, no vector loaded, no stub walked
    (the whole entry is read only to prefetch the best results, left out here)."""
    def no_full_read(*args, **kwargs):
        raise AssertionError("a snippet read the whole entry")

    monkeypatch.setattr(memory, "settings", memory.settings.with_values(prefetch_search=0))
    monkeypatch.setattr(memory.adapter, "read_entry", no_full_read)
    lines = memory_search(memory, "how do I rollback and page on-call?", top_k=2).splitlines()
    assert lines[2] == "   Rollback: run `make rollback` and page the on-call engineer."
    assert lines[4] == "   A rollback is not a Ruby idea."


def test_filters_by_type_folder_and_tag(memory):
    assert "concept/ruby" not in memory_search(memory, "rollback", type=["fact"])
    assert "fact/ops" not in memory_search(memory, "rollback", path_prefix="concept/ruby")
    assert "fact/ops" not in memory_search(memory, "rollback", tags='["ruby"]')  # a JSON string, SwarmMemory-style
    assert memory_search(memory, "rollback", type="skill") == "No memory entries found for 'rollback'."


def test_explain_shows_the_score_breakdown(memory):
    text = memory_search(memory, "rollback", top_k=1, explain=True)
    assert text.splitlines()[3].startswith("   [semantic n/a · bm25 1.000 (raw ")
    assert " · context 0.000 · relevance " in text.splitlines()[3]  # the entry alone covers the query
    assert "relevance" not in memory_search(memory, "rollback", top_k=1)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": "  "}, "The query is empty."),
    ({"query": "x", "top_k": 0}, "top_k must be a whole number from 1 to 50, got 0."),
    ({"query": "x", "top_k": 51}, "top_k must be a whole number from 1 to 50, got 51."),
    ({"query": "x", "threshold": 1.5}, "threshold must lie between 0 and 1, got 1.5."),
    ({"query": "x", "type": ["concepts"]},
     "'concepts' is not an entry type; the types are concept, fact, skill, experience. Did you mean 'concept'?"),
])
def test_bad_arguments_say_what_to_pass(memory, arguments, message):
    with pytest.raises(InputValidationError) as caught:
        memory_search(memory, **arguments)
    assert str(caught.value).startswith(message)


def test_a_long_line_is_cut_around_its_match():
    line = "intro " * 60 + "the rollback command lives here " + "outro " * 60
    snippet = best_line(line, {"rollback": 1.0}, max_chars=80)
    assert len(snippet) <= 80 and snippet.startswith("…") and snippet.endswith("…") and "rollback" in snippet


@pytest.mark.parametrize(("before", "word"), [
    ("intro ", "rollback"),  # a plain word
    ("intro ", "(rollback:"),  # punctuation before it: the cut starts at the bracket, as the line is spaced
    ("intro\u00a0", "rollback"),  # a space that is not ASCII
    ("İntro ", "rollback"),  # a letter whose lowercase is two characters: positions still the line's own
])
def test_a_long_line_is_cut_a_quarter_of_the_snippet_before_its_first_matching_word(before, word):
    line = before * 40 + word + " lives here " + "outro " * 40
    snippet = best_line(line, {"rollback": 1.0}, max_chars=80)
    start = len(before) * 40 - 80 // 4
    assert snippet == "…" + line[start:start + 78].rstrip() + "…"


def test_rare_words_outweigh_common_ones():
    content = "the weather was nice today\nCaroline went to the support group"
    assert best_line(content, {"weather": 0.2, "nice": 0.2, "carolin": 3.0}) == "Caroline went to the support group"


def test_min_importance_keeps_the_important_entries_and_refuses_a_value_off_the_scale(memory):
    memory.write("fact/ops/freeze.md", "No rollback during the release freeze.", title="Release freeze",
                 metadata={"type": "fact", "importance": 8})
    text = memory_search(memory, "rollback", min_importance=7)
    assert "fact/ops/freeze.md" in text and "fact/ops/deploy.md" not in text and "ruby" not in text
    assert "fact/ops/deploy.md" in memory_search(memory, "rollback", min_importance=5)  # none stated: 5
    with pytest.raises(InputValidationError, match="min_importance must lie between 1 and 10, got 11"):
        memory_search(memory, "rollback", min_importance=11)


def test_memdir_search_takes_min_importance(memory):
    import json

    from typer.testing import CliRunner

    from memdir.cli import app

    memory.write("fact/ops/freeze.md", "No rollback during the release freeze.", title="Release freeze",
                 metadata={"type": "fact", "importance": 8})
    runner = CliRunner(env={"MEMDIR_EMBEDDINGS_ENABLED": "false"})
    found = runner.invoke(app, ["search", "rollback", "--root", str(memory.root), "--min-importance", "7", "--json"])
    assert found.exit_code == 0, found.output
    assert [hit["path"] for hit in json.loads(found.output)] == ["fact/ops/freeze.md"]
    refused = runner.invoke(app, ["search", "rollback", "--root", str(memory.root), "--min-importance", "0"])
    assert refused.exit_code == 2 and "--min-importance" in refused.output


@pytest.mark.parametrize("semantic, keyword", [(1.0, 0.0), (0.5, 0.5)])
def test_swarm_memory_weights_alone_give_swarm_memory_formula(tmp_path, monkeypatch, semantic, keyword):
    import re

    monkeypatch.setenv("SWARM_MEMORY_SEMANTIC_WEIGHT", str(semantic))
    monkeypatch.setenv("SWARM_MEMORY_KEYWORD_WEIGHT", str(keyword))
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as memory:
        memory.write("fact/ops/deploy.md", DEPLOY, title="Deployment", metadata={"type": "fact", "tags": ["ops", "rollback"]})
        memory.write("fact/ops/pager.md", "Page the on-call engineer for a rollback.", title="Paging",
                     metadata={"type": "fact", "tags": ["oncall"]})
        text = memory_search(memory, "rollback deploy", explain=True)
    found = re.findall(r"score (\d\.\d\d)\)\n.*\n   \[semantic (\d\.\d+) · .* · tag (\d\.\d+) ·", text)
    assert len(found) == 2, text
    for score, cosine, tag in found:
        assert float(score) == pytest.approx(semantic * float(cosine) + keyword * float(tag), abs=0.006)
