"""Every MemoryDefrag action, dry and live, on a small memory with known duplicates, relations and stubs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.optimization.defragmenter import Defragmenter
from memdir.optimization.journal import list_runs
from memdir.optimization.options import ACTIONS
from tests.fakes import FakeEmbedder

FULL = {"type": "fact", "confidence": "high", "tags": ["http"], "domain": "web", "last_verified": "2025-01-01"}

ENTRIES = {
    # a near-duplicate pair: same words but one
    "concept/ruby/classes.md": (
        "Ruby classes",
        "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects.",
        {"type": "concept", "confidence": "high", "tags": ["ruby", "oop"], "domain": "programming"},
    ),
    "concept/ruby/classes-notes.md": (
        "Ruby classes",
        "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects, usually.",
        {"type": "concept", "tags": ["classes"]},
    ),
    # related (cosine between 0.60 and 0.85), not duplicates
    "fact/http/retry.md": (
        "HTTP retries",
        "Retry failed HTTP requests with exponential backoff and jitter so clients do not stampede the server.",
        FULL,
    ),
    "fact/http/timeouts.md": (
        "HTTP timeouts",
        "Give every HTTP request a timeout; retry failed requests with exponential backoff.",
        FULL,
    ),
    # unrelated, no metadata at all: low quality
    "experience/friday-deploy.md": (
        "Friday deploy",
        "Deploying on a Friday broke the billing cron job; roll back first and debug on Monday.",
        {},
    ),
}


@pytest.fixture
def memory(tmp_path):
    store = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    for path, (title, content, metadata) in ENTRIES.items():
        store.write(path, content, title=title, metadata=metadata)
    yield store
    store.close()


def later(days: float) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def cosine_of(memory, a: str, b: str) -> float:
    paths, matrix = memory.vectors()
    return float(np.dot(matrix[paths.index(a)], matrix[paths.index(b)]))


def test_fixture_has_the_intended_similarities(memory):
    assert cosine_of(memory, "concept/ruby/classes.md", "concept/ruby/classes-notes.md") >= 0.85
    assert 0.60 <= cosine_of(memory, "fact/http/retry.md", "fact/http/timeouts.md") < 0.85
    assert cosine_of(memory, "fact/http/retry.md", "experience/friday-deploy.md") < 0.60


def snapshot(memory) -> dict:
    """Every file under the root except derived data: what a dry run must leave untouched."""
    return {
        str(path.relative_to(memory.root)): path.read_bytes()
        for path in sorted(memory.root.rglob("*"))
        if path.is_file() and ".memdir" not in path.parts and path.name != ".lock"
    }


# --------------------------------------------------------------------------- read-only


def test_find_duplicates(memory):
    report = Defragmenter(memory).run("find_duplicates")
    assert [(p["a"], p["b"]) for p in report.data["pairs"]] == [("concept/ruby/classes-notes.md", "concept/ruby/classes.md")]
    pair = report.data["pairs"][0]
    assert pair["similarity"] == max(pair["jaccard"], pair["cosine"]) >= 0.85
    assert report.markdown.startswith("# Duplicate Entries\n\n1 pair with similarity ≥ 0.85")
    assert "memory://concept/ruby/classes-notes.md ↔ memory://concept/ruby/classes.md" in report.markdown


def test_find_duplicates_threshold(memory):
    assert Defragmenter(memory).run("find_duplicates", similarity_threshold=1.0).data["count"] == 0


def test_find_low_quality(memory):
    report = Defragmenter(memory).run("find_low_quality")
    entries = {row["path"]: row for row in report.data["entries"]}
    assert set(entries) == {"experience/friday-deploy.md", "concept/ruby/classes-notes.md"}
    assert entries["experience/friday-deploy.md"]["quality"] == 0
    assert entries["experience/friday-deploy.md"]["missing"] == ["type", "confidence", "tags", "related", "domain", "last_verified"]
    assert entries["concept/ruby/classes-notes.md"]["quality"] == 35
    assert "memory://experience/friday-deploy.md — 0/100" in report.markdown


def test_find_low_quality_confidence_filter(memory):
    defrag = Defragmenter(memory)
    assert defrag.run("find_low_quality", min_quality_score=100, confidence_filter="high").data["count"] == 3
    assert [r["path"] for r in defrag.run("find_low_quality", confidence_filter="none").data["entries"]] == [
        "experience/friday-deploy.md", "concept/ruby/classes-notes.md"
    ]


def test_find_archival_candidates_uses_age_and_real_hits(memory):
    memory.read("fact/http/retry.md", count_hit=True)
    assert Defragmenter(memory).run("find_archival_candidates").data["count"] == 0  # everything is new
    report = Defragmenter(memory, now=later(100)).run("find_archival_candidates")
    paths = [row["path"] for row in report.data["entries"]]
    assert "fact/http/retry.md" not in paths and len(paths) == 4
    assert all(row["age_days"] >= 99 and row["hits"] == 0 for row in report.data["entries"])
    with_hits = Defragmenter(memory, now=later(100)).run("find_archival_candidates", max_hits=1)
    assert with_hits.data["count"] == 5


def test_find_related_with_link_status(memory):
    report = Defragmenter(memory).run("find_related")
    assert [(p["a"], p["b"], p["link"]) for p in report.data["pairs"]] == [
        ("fact/http/retry.md", "fact/http/timeouts.md", "none")
    ]
    assert "not linked" in report.markdown
    entry = memory.read("fact/http/retry.md")
    memory.write(entry.path, entry.content, title=entry.title,
                 metadata=entry.metadata.model_copy(update={"related": ["memory://fact/http/timeouts.md"]}))
    assert Defragmenter(memory).run("find_related").data["pairs"][0]["link"] == "a_to_b"


# --------------------------------------------------------------------------- link_related


def test_link_related_dry_run_changes_nothing(memory):
    before = snapshot(memory)
    report = Defragmenter(memory).run("link_related")
    assert report.dry_run is True and "**Dry run**" in report.markdown and "Would link 1 related pair" in report.markdown
    assert snapshot(memory) == before
    assert list_runs(memory) == []


def test_link_related_live_links_both_ways(memory):
    report = Defragmenter(memory).run("link_related", dry_run=False)
    assert report.dry_run is False and report.journal
    similarity = report.data["pairs"][0]["similarity"]
    for source, target in (("fact/http/retry.md", "fact/http/timeouts.md"), ("fact/http/timeouts.md", "fact/http/retry.md")):
        [link] = memory.read(source).metadata.links
        assert (link.target, link.kind, link.origin, link.strength) == (target, "references", "system", similarity)
        assert memory.read(source).metadata.related == []
    assert Defragmenter(memory).run("find_related").data["pairs"][0]["link"] == "both"
    again = Defragmenter(memory).run("link_related", dry_run=False)
    assert again.data["pairs"] == [] and again.journal is None


def test_link_related_completes_one_way_links(memory):
    entry = memory.read("fact/http/retry.md")
    memory.write(entry.path, entry.content, title=entry.title,
                 metadata=entry.metadata.model_copy(update={"related": ["fact/http/timeouts.md"]}))
    Defragmenter(memory).run("link_related", dry_run=False)
    assert memory.read("fact/http/retry.md").metadata.related == ["fact/http/timeouts.md"]  # untouched
    assert [link.target for link in memory.read("fact/http/timeouts.md").metadata.links] == ["fact/http/retry.md"]


# --------------------------------------------------------------------------- merge_duplicates


def test_merge_dry_run_changes_nothing(memory):
    before = snapshot(memory)
    report = Defragmenter(memory).run("merge_duplicates")
    assert report.data["merges"][0]["done"] is False
    assert "Would merge 1 duplicate pair" in report.markdown
    assert snapshot(memory) == before


def test_merge_keep_newer_leaves_a_redirecting_stub(memory):
    report = Defragmenter(memory).run("merge_duplicates", merge_strategy="keep_newer", dry_run=False)
    # classes-notes.md was written after classes.md, so it is the newer one
    assert report.data["merges"] == [{
        "keep": "concept/ruby/classes-notes.md", "merge": "concept/ruby/classes.md",
        "similarity": report.data["merges"][0]["similarity"], "strategy": "keep_newer", "done": True, "reason": "",
        "dropped": "",
    }]
    stub = (memory.root / "concept/ruby/classes.md").read_text()
    assert stub.startswith("# merged → concept/ruby/classes-notes.md\n")
    assert memory.redirect_of("concept/ruby/classes.md").target == "concept/ruby/classes-notes.md"
    followed = memory.read("concept/ruby/classes.md")
    assert followed.path == "concept/ruby/classes-notes.md"
    assert [info.path for info in memory.list_stubs()] == ["concept/ruby/classes.md"]
    assert "concept/ruby/classes.md" not in [info.path for info in memory.list()]
    assert Defragmenter(memory).run("find_duplicates").data["count"] == 0


def test_merge_keep_larger(memory):
    Defragmenter(memory).run("merge_duplicates", merge_strategy="keep_larger", dry_run=False)
    assert memory.redirect_of("concept/ruby/classes.md").target == "concept/ruby/classes-notes.md"  # one word longer


def test_merge_combine_keeps_content_and_metadata_of_both(memory):
    memory.write("concept/ruby/classes.md", ENTRIES["concept/ruby/classes.md"][1] + "\n\nSee also: Struct.",
                 title="Ruby classes", metadata=ENTRIES["concept/ruby/classes.md"][2])  # now the newer one
    Defragmenter(memory).run("merge_duplicates", merge_strategy="combine", similarity_threshold=0.8, dry_run=False)
    kept = memory.read("concept/ruby/classes.md")
    assert memory.redirect_of("concept/ruby/classes-notes.md").target == "concept/ruby/classes.md"
    assert "See also: Struct." in kept.content
    assert "<!-- merged from memory://concept/ruby/classes-notes.md -->" in kept.content
    assert kept.content.rstrip().endswith("for its objects, usually.")
    assert kept.metadata.tags == ["ruby", "oop", "classes"]
    assert kept.metadata.confidence == "high" and kept.metadata.domain == "programming"
    assert kept.embedding is not None


DECISION = ("Decision 2026-03-02: the payments ledger stays on Postgres 16, owned by Priya and Tom.\n\n"
            "Revisit when writes exceed 5k per second.")
SHORT = "Decision: the payments ledger stays on Postgres 16, owned by Priya and Tom."


def defrag(root, *args):
    return CliRunner().invoke(app, ["defrag", str(root), "--action", "merge_duplicates", *args])


@pytest.fixture
def decisions(tmp_path, cli):
    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as memory:
        memory.write("fact/ledger-decision.md", DECISION, title="Ledger decision", metadata={"type": "fact"})
        memory.write("fact/ledger.md", SHORT + "\n\nReplica lag pages at 30 s.",
                     title="Ledger decision", metadata={"type": "fact"})  # newer, shorter
    return tmp_path / "memory"


def test_merge_by_default_keeps_every_fact_and_the_preview_quotes_what_is_appended(decisions):
    preview = defrag(decisions, "--threshold", "0.4")
    assert preview.exit_code == 0, preview.output
    assert ("memory://fact/ledger.md's text is replaced by a redirect to memory://fact/ledger-decision.md"
            in preview.output)
    assert "what only it holds is appended to memory://fact/ledger-decision.md:\n" in preview.output
    assert "  > Replica lag pages at 30 s." in preview.output
    live = defrag(decisions, "--threshold", "0.4", "--live")
    assert live.exit_code == 0, live.output
    with Memory.open(Settings(root=decisions), embedder=FakeEmbedder()) as memory:
        kept = memory.read("fact/ledger.md")  # the redirect leads to the richer entry
        assert kept.path == "fact/ledger-decision.md"
        for fact in ("2026-03-02", "Priya", "Revisit when writes exceed 5k", "Replica lag pages at 30 s"):
            assert fact in kept.content


def test_a_merge_that_drops_text_quotes_it_in_the_preview(decisions):
    preview = defrag(decisions, "--threshold", "0.4", "--strategy", "keep_newer")
    assert preview.exit_code == 0, preview.output
    assert "this text, which memory://fact/ledger.md lacks, is dropped:" in preview.output
    assert "  > Revisit when writes exceed 5k per second." in preview.output


def test_entries_of_different_types_and_episodes_are_never_merged(tmp_path, cli):
    root = tmp_path / "memory"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        text = "The refund job crashed on a null currency; fixed by defaulting to the account's currency."
        memory.write("fact/refund-bug.md", text, title="Refund bug", metadata={"type": "fact"})
        memory.write("experience/refund-bug.md", text + " Took an hour.", title="Refund bug",
                     metadata={"type": "experience"})
        memory.write("experience/episodes/2026/refund.md", text + " Took two hours.", title="Refund episode",
                     metadata={"type": "experience", "importance": 0.4})
    result = defrag(root, "--threshold", "0.7", "--live")
    assert result.exit_code == 0, result.output
    assert "Merged 0 duplicate pairs" in result.output
    assert "not merged: " in result.output and "episodes are never merged" in result.output
    assert "a fact entry and a experience entry are never merged" in result.output or \
        "a experience entry and a fact entry are never merged" in result.output
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        assert memory.list_stubs() == []


# --------------------------------------------------------------------------- cleanup_stubs


def test_cleanup_stubs_finds_merge_stubs_only_when_old(memory):
    Defragmenter(memory).run("merge_duplicates", dry_run=False)
    assert Defragmenter(memory).run("cleanup_stubs").data["stubs"] == []  # the stub is brand new
    dry = Defragmenter(memory, now=later(31)).run("cleanup_stubs")
    assert [(s["path"], s["target"], s["done"]) for s in dry.data["stubs"]] == [
        ("concept/ruby/classes.md", "concept/ruby/classes-notes.md", False)
    ]
    assert memory.redirect_of("concept/ruby/classes.md") is not None
    live = Defragmenter(memory, now=later(31)).run("cleanup_stubs", dry_run=False)
    assert live.data["stubs"][0]["done"] is True
    assert memory.list_stubs() == [] and not memory.exists("concept/ruby/classes.md")
    assert "Deleted 1 redirect stub" in live.markdown


def test_cleanup_stubs_repoints_links_to_deleted_stubs(memory):
    Defragmenter(memory).run("merge_duplicates", dry_run=False)
    entry = memory.read("fact/http/retry.md")
    memory.write(entry.path, entry.content, title=entry.title,
                 metadata=entry.metadata.model_copy(update={"related": ["memory://concept/ruby/classes.md"]}))
    report = Defragmenter(memory, now=later(31)).run("cleanup_stubs", dry_run=False)
    assert report.data["links_updated"] == ["fact/http/retry.md"]
    assert memory.read("fact/http/retry.md").metadata.related == ["memory://concept/ruby/classes-notes.md"]


def test_cleanup_stubs_respects_max_hits(memory):
    Defragmenter(memory).run("merge_duplicates", dry_run=False)
    stub = memory.list_stubs()[0]
    assert stub.hits == 0
    assert Defragmenter(memory, now=later(31)).run("cleanup_stubs", max_hits=0).data["stubs"] != []


# --------------------------------------------------------------------------- compact


def test_compact_needs_low_quality_and_age_and_no_reads(memory):
    assert Defragmenter(memory).run("compact").data["entries"] == []  # too new
    dry = Defragmenter(memory, now=later(31)).run("compact")
    assert [row["path"] for row in dry.data["entries"]] == ["experience/friday-deploy.md"]
    assert memory.exists("experience/friday-deploy.md")
    memory.read("experience/friday-deploy.md", count_hit=True)  # a real read: now it has 1 hit
    assert Defragmenter(memory, now=later(31)).run("compact").data["entries"] == []
    live = Defragmenter(memory, now=later(31)).run("compact", max_hits=1, dry_run=False)
    assert [row["path"] for row in live.data["entries"]] == ["experience/friday-deploy.md"]
    assert not memory.exists("experience/friday-deploy.md")


def test_compact_keeps_entries_that_stubs_point_to(memory):
    Defragmenter(memory).run("merge_duplicates", merge_strategy="keep_newer", dry_run=False)  # classes.md -> classes-notes.md (quality 35)
    report = Defragmenter(memory, now=later(31)).run("compact", min_quality_score=50, dry_run=False)
    assert report.data["kept"] == ["concept/ruby/classes-notes.md"]
    assert memory.exists("concept/ruby/classes-notes.md")


# --------------------------------------------------------------------------- full


def test_full_dry_run_is_one_combined_report(memory):
    before = snapshot(memory)
    report = Defragmenter(memory, now=later(31)).run("full")
    assert report.markdown.startswith("# Full Optimization (dry run)\n")
    for heading in ("## Merge duplicates", "## Clean up stubs", "## Compact", "## Memory Health Report"):
        assert heading in report.markdown
    assert "memory://experience/friday-deploy.md" in report.markdown
    assert snapshot(memory) == before


def test_full_live_merges_cleans_compacts_and_reports_health(memory):
    defrag = Defragmenter(memory, now=later(31))
    before = defrag.run("analyze").data["health_score"]
    report = Defragmenter(memory, now=later(31)).run("full", dry_run=False)
    after = Defragmenter(memory).run("analyze").data["health_score"]
    assert f"Health score: {before} → {after} ({after - before:+d})" in report.markdown
    assert (report.data["health_before"], report.data["health_after"]) == (before, after)
    assert memory.redirect_of("concept/ruby/classes.md").target == "concept/ruby/classes-notes.md"
    assert not memory.exists("experience/friday-deploy.md")
    assert len(list_runs(memory)) == 1  # one journal for the whole run


# --------------------------------------------------------------------------- options


def test_unknown_action_lists_the_valid_ones(memory):
    with pytest.raises(InputValidationError) as caught:
        Defragmenter(memory).run("defragment")
    assert "Unknown MemoryDefrag action 'defragment'" in caught.value.message
    assert all(name in caught.value.hint for name in ACTIONS)


@pytest.mark.parametrize(
    ("action", "options", "fragment"),
    [
        ("find_duplicates", {"similarity_threshold": 1.5}, "between 0 and 1"),
        ("merge_duplicates", {"merge_strategy": "newest"}, "keep_newer, keep_larger, combine"),
        ("compact", {"age_days": 10}, "compact takes: min_quality_score, min_age_days, max_hits, dry_run"),
        ("compact", {"bogus": 1}, "unknown option"),
        ("find_related", {"min_similarity": 0.9, "max_similarity": 0.8}, "must be below max_similarity"),
        ("cleanup_stubs", {"max_hits": -1}, "zero or more"),
        ("find_low_quality", {"confidence_filter": "sure"}, "high, medium, low, none"),
    ],
)
def test_bad_options_are_explained(memory, action, options, fragment):
    with pytest.raises(InputValidationError) as caught:
        Defragmenter(memory).run(action, **options)
    assert fragment in str(caught.value)


@pytest.mark.parametrize(("value", "dry"), [(True, True), (None, True), (0, True), ("no", True), ("", True),
                                            ("true", True), (False, False), ("false", False), ("FALSE", False)])
def test_only_false_turns_dry_run_off(memory, value, dry):
    assert Defragmenter(memory).run("compact", dry_run=value).dry_run is dry


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def cli(monkeypatch):
    """The CLI opens the memory itself: keep it from loading the real model (vectors are already stored)."""
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    return CliRunner()


def test_cli_defrag_prints_markdown_and_json(memory, cli):
    runner = cli
    shown = runner.invoke(app, ["defrag", str(memory.root), "--action", "find_duplicates"])
    assert shown.exit_code == 0, shown.output
    assert "Duplicate Entries" in shown.output
    as_json = runner.invoke(app, ["defrag", str(memory.root), "--action", "find_duplicates", "--threshold", "0.85", "--json"])
    data = json.loads(as_json.output)
    assert data["action"] == "find_duplicates" and data["count"] == 1


def test_cli_defrag_live_and_undo(memory, cli):
    runner = cli
    dry = runner.invoke(app, ["defrag", str(memory.root), "--action", "merge_duplicates", "--json"])
    assert json.loads(dry.output)["dry_run"] is True
    assert memory.redirect_of("concept/ruby/classes.md") is None
    live = runner.invoke(app, ["defrag", str(memory.root), "--action", "merge_duplicates", "--live", "--json"])
    assert json.loads(live.output)["merges"][0]["done"] is True
    assert memory.redirect_of("concept/ruby/classes.md") is not None
    undone = runner.invoke(app, ["defrag", str(memory.root), "--undo"])
    assert undone.exit_code == 0, undone.output
    assert memory.redirect_of("concept/ruby/classes.md") is None
    again = runner.invoke(app, ["defrag", str(memory.root), "--undo"])
    assert again.exit_code == 1 and "no live defrag run to undo" in again.output


def test_cli_defrag_of_a_directory_prints_the_full_analysis(memory, cli):
    result = cli.invoke(app, ["defrag", str(memory.root)])
    assert result.exit_code == 0, result.output
    for section in ("Health", "Duplicate Entries", "Low-Quality Entries", "Archival Candidates"):
        assert section in result.output
    assert "1 pair with similarity ≥ 0.85" in result.output and "memory://concept/ruby/classes-notes.md" in result.output
    assert "memory://experience/friday-deploy.md — " in result.output  # low quality
    data = json.loads(cli.invoke(app, ["defrag", str(memory.root), "--json"]).output)
    assert data["total_entries"] == 5 and data["find_duplicates"]["count"] == 1
    assert data["find_low_quality"]["count"] >= 1 and data["find_archival_candidates"]["count"] == 0


def test_cli_unknown_action_is_a_clear_error(memory, cli):
    result = cli.invoke(app, ["defrag", str(memory.root), "--action", "nope"])
    assert result.exit_code == 1
    assert "Unknown MemoryDefrag action 'nope'" in result.output and "merge_duplicates" in result.output


def test_compact_removes_the_links_to_what_it_deleted_and_undo_puts_them_back(memory):
    from memdir.optimization.journal import undo_last
    from memdir.tools.memory_defrag import memory_defrag

    link = "memory://experience/friday-deploy.md"
    retry = memory.read("fact/http/retry.md")
    memory.write(retry.path, retry.content, title=retry.title,
                 metadata=retry.metadata.model_copy(update={"related": [link, "memory://fact/http/timeouts.md"]}))
    dry = Defragmenter(memory, now=later(31)).run("compact")
    assert "would remove `related` links to them from 1 entry" in dry.markdown
    assert memory.read("fact/http/retry.md").metadata.related[0] == link
    text = memory_defrag(memory, "compact", dry_run=False, min_age_days=0)
    assert "removed `related` links to them from 1 entry" in text
    assert memory.read("fact/http/retry.md").metadata.related == ["memory://fact/http/timeouts.md"]
    assert Defragmenter(memory).run("analyze").data["dangling_links"] == {}
    undo_last(memory)
    assert memory.exists("experience/friday-deploy.md")
    assert memory.read("fact/http/retry.md").metadata.related[0] == link


def test_analyze_reports_links_to_entries_deleted_behind_its_back(memory):
    retry = memory.read("fact/http/retry.md")
    memory.write(retry.path, retry.content, title=retry.title,
                 metadata=retry.metadata.model_copy(update={"related": ["memory://fact/http/gone.md",
                                                                        "memory://skill/meta/deep-learning.md"]}))
    report = Defragmenter(memory).run("analyze")
    assert report.data["dangling_links"] == {"fact/http/retry.md": ["memory://fact/http/gone.md"]}
    assert "## Dangling Links" in report.markdown
    assert "- memory://fact/http/retry.md → memory://fact/http/gone.md" in report.markdown
