"""`memdir import` of a directory store: entries go across in batches, one transaction each, byte for byte."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory, NewEntry
from memdir.storage import transfer
from memdir.storage.directory.changes import ChangeCounter
from tests.fakes import FakeEmbedder

runner = CliRunner()


def _entry_files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and path.suffix in {".md", ".yml", ".emb"} and ".memdir" not in path.parts}


def test_a_store_is_copied_one_transaction_per_batch_and_stays_byte_identical(tmp_path, monkeypatch):
    source, copy = tmp_path / "source", tmp_path / "copy"
    with Memory.open(Settings(root=source), embedder=FakeEmbedder()) as memory:
        memory.write_many([NewEntry(f"fact/topic{i % 3}/note{i}", f"Note {i} about topic {i % 3}.", f"Note {i}",
                                    {"type": "fact", "tags": ["bulk"]}) for i in range(11)])
        memory.read("fact/topic1/note4", count_hit=True)  # a hit count other than 0 goes across too
        memory.write("fact/old", "Old text.", title="Old")
        memory.write_stub("fact/old", "fact/topic0/note0")
    (source / "concept").mkdir()
    (source / "concept" / "plain.md").write_text("A note written by hand, without sidecar or vector.\n")
    monkeypatch.setattr(transfer, "BATCH", 5)

    done = runner.invoke(app, ["import", str(source), "--root", str(copy)])

    assert done.exit_code == 0, done.output
    assert "Copied 12 entries, 1 stub" in done.output
    before, after = _entry_files(source), _entry_files(copy)
    assert {path: after[path] for path in before} == before
    assert set(after) - set(before) == {"concept/plain.yml"}  # the hand-written note gets its sidecar
    # 14 paths in batches of 5: three transactions of entries and one for the stub, not one per entry.
    assert ChangeCounter(copy).value() == 4
