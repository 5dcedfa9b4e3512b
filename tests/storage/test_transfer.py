"""`memdir export` / `memdir import`: a directory moved into PostgreSQL and back is the same, byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.audit_log import AuditLog
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres
runner = CliRunner()


def _files(root: Path) -> dict[str, bytes]:
    """Every entry file of a directory store (content, sidecar, vector), by relative path."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in {".md", ".yml", ".emb"} and ".memdir" not in path.parts
    }


def _fill(root: Path) -> None:
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("concept/ruby/classes.md", "# Classes\n\nRuby classes are *open*: reopen them. ✓ 日本語\n",
                     title="Ruby classes", metadata={"tags": ["ruby", "OOP"], "domain": "programming",
                                                     "confidence": "high", "source": "book", "importance": 7})
        memory.write("fact/paris.md", "Paris is the capital of France.", title="Paris",
                     metadata={"type": "fact", "related": ["memory://concept/ruby/classes.md"], "custom": {"a": [1, 2]}},
                     updated_at=datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=UTC), hits=12)
        memory.link("concept/ruby/classes.md", "fact/paris.md", "extends", 0.6)
        memory.write("skill/deploy.md", "Run the deploy script.", title="Deploy",
                     metadata={"tools": ["Bash"], "permissions": {"allowed_commands": ["make deploy"]}})
        memory.write("fact/old.md", "Old text.", title="Old")
        memory.write_stub("fact/old.md", "fact/paris.md")
        memory.read("fact/paris.md", count_hit=True)
    with Memory.open(Settings(root=root, embeddings_enabled=False)) as memory:  # an entry without a vector
        memory.write("experience/unembedded.md", "Written while no model was loaded.", title="No vector")
        thread_append(memory, "trip", "user", "Remember: the ferry leaves at 7:10. ✓")
        thread_append(memory, "trip", "assistant", "Noted. @@memory('semantic')@@")


def test_a_directory_exported_to_postgresql_and_imported_back_is_byte_identical(tmp_path, pg_url):
    original, copy = tmp_path / "original", tmp_path / "copy"
    _fill(original)
    exported = runner.invoke(app, ["export", pg_url, "--root", str(original)])
    assert exported.exit_code == 0, exported.output
    trail = list(AuditLog(original).records())
    assert "Copied 4 entries, 1 stub, 1 thread and " in exported.output and f"{len(trail)} audit records" in exported.output
    with Memory.open(Settings(root=tmp_path / "local", store=pg_url, embeddings_enabled=False)) as memory:
        assert memory.read("fact/old.md").path == "fact/paris.md"  # the stub still redirects
        assert memory.search("reopen ruby classes", top_k=1)[0].path == "concept/ruby/classes.md"
        unembedded = memory.index.needs_embedding("fake/bow-384")  # vectors kept with their model
        assert "experience/unembedded.md" in unembedded and "fact/paris.md" not in unembedded
        assert sorted(edge.kind for edge in memory.index.edges(["fact/paris.md"])) == ["extends", "references"]
        assert "[c2 user] Remember: the ferry leaves at 7:10. ✓" in thread_context(memory, "trip", 200, "ferry")
        assert "strategy semantic" in thread_context(memory, "trip", 200)
    imported = runner.invoke(app, ["import", pg_url, "--root", str(copy)])
    assert imported.exit_code == 0, imported.output
    before, after = _files(original), _files(copy)
    assert sorted(before) == sorted(after)
    assert {path for path in before if path.endswith(".emb")} == {
        "concept/ruby/classes.emb", "fact/paris.emb", "skill/deploy.emb"}
    for path, data in before.items():
        assert after[path] == data, path
    assert list(AuditLog(copy).records()) == trail  # the history went there and back, record for record
    log = Path("threads", "trip", "events.jsonl")
    assert (copy / log).read_bytes() == (original / log).read_bytes()  # and each thread, line for line


def test_export_refuses_a_store_that_is_not_empty_and_changes_nothing(tmp_path, pg_url):
    _fill(tmp_path / "original")
    assert runner.invoke(app, ["export", pg_url, "--root", str(tmp_path / "original")]).exit_code == 0
    with Memory.open(Settings(root=tmp_path / "other"), embedder=FakeEmbedder()) as memory:
        memory.write("fact/x.md", "X.", title="X")
    again = runner.invoke(app, ["export", pg_url, "--root", str(tmp_path / "other")])
    assert again.exit_code == 1
    assert "already holds 5 entries" in again.output and "nothing was copied" in again.output
    with Memory.open(Settings(root=tmp_path / "local", store=pg_url, embeddings_enabled=False)) as memory:
        assert not memory.exists("fact/x.md")
