"""Read-only roots: a read-only mount, and commands that only look, read and search without changing a byte.

A root on a read-only filesystem opens read-only by itself (reads, glob, grep and search
work; writes are refused with a clear error); `status`, `search` and `discover` open every
root that way, so they never create a root, a ``.lock``, a ``.memdir/`` or the ``.yml`` and
``.emb`` of a hand-written note.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import ReadOnlyRootError, RootNotFoundError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_grep import memory_grep
from memdir.tools.memory_read import memory_read
from memdir.tools.memory_write import memory_write
from tests.disks import remount, tmpfs
from tests.fakes import FakeEmbedder

runner = CliRunner()


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root`` with its content: what "nothing changed" compares."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def write_fact(memory, session, name: str, text: str) -> None:
    memory_write(memory, session, f"fact/{name}.md", text, title=name.title(), type="fact", tags=["cats"],
                 related=[], domain="pets")


@pytest.fixture
def hand_written(tmp_path) -> Path:
    """A directory that was never a memory root, holding one note written by hand."""
    root = tmp_path / "notes"
    (root / "concept").mkdir(parents=True)
    (root / "concept" / "tides.md").write_text("# Tides\nThe moon pulls the oceans twice a day.\n")
    return root


# --------------------------------------------------------------------------- a read-only mount
@pytest.mark.parametrize("with_index", [True, False], ids=["index-on-disk", "no-index"])
def test_a_read_only_mount_reads_globs_greps_and_searches_and_refuses_writes(tmp_path, session, with_index):
    with tmpfs(tmp_path / "disk", "8m") as disk:
        root = disk / "memory"
        with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
            write_fact(memory, session, "cats", "Cats sleep sixteen hours a day.")
            write_fact(memory, session, "dogs", "Dogs bark at the postman.")
        (root / "concept").mkdir()
        (root / "concept" / "tides.md").write_text("The moon pulls the oceans.")  # written by hand, not indexed
        if not with_index:
            shutil.rmtree(root / ".memdir")
        before = tree(root)
        remount(disk, "ro")
        try:
            memory = Memory.open(Settings(root=root), embedder=FakeEmbedder())  # no OSError (EROFS)
            assert memory.read_only and memory.index.in_memory  # seeded from the file when there is one
            assert "sixteen hours" in memory_read(memory, session, "fact/cats.md")
            assert "fact/dogs.md" in memory_glob(memory, session, "fact/*")
            assert "concept/tides.md" in memory_grep(memory, session, "oceans", output_mode="files_with_matches")
            assert [r.path for r in memory.search("postman", top_k=1)] == ["fact/dogs.md"]
            assert [r.path for r in memory.search("moon oceans", top_k=1)] == ["concept/tides.md"]
            with pytest.raises(ReadOnlyRootError) as caught:
                write_fact(memory, session, "birds", "Birds sing.")
            assert "is read-only (its filesystem is mounted read-only)" in caught.value.message
            assert "Reading and search still work" in caught.value.hint
            with pytest.raises(ReadOnlyRootError):
                memory_delete(memory, session, "fact/cats.md")
            memory.close()
            assert tree(root) == before
        finally:
            remount(disk, "rw")


# --------------------------------------------------------------------------- opening read-only on purpose
def test_opening_read_only_creates_and_changes_nothing(hand_written, session):
    before = tree(hand_written)
    with Memory.open(Settings(root=hand_written), embedder=FakeEmbedder(), read_only=True) as memory:
        assert [info.path for info in memory.list(include_virtual=False)] == ["concept/tides.md"]
        assert [r.path for r in memory.search("moon", top_k=1)] == ["concept/tides.md"]
        assert "The moon pulls" in memory_read(memory, session, "concept/tides.md")
        with pytest.raises(ReadOnlyRootError, match="opened for reading only"):
            write_fact(memory, session, "x", "y")
    assert tree(hand_written) == before  # no .lock, no .memdir/, no tides.yml or tides.emb


def test_opening_a_missing_root_read_only_says_so_and_creates_nothing(tmp_path):
    with pytest.raises(RootNotFoundError, match="There is no memory root at"):
        Memory.open(Settings(root=tmp_path / "missing" / "root"), embedder=FakeEmbedder(), read_only=True)
    assert not (tmp_path / "missing").exists()


def test_opening_read_only_uses_and_updates_an_existing_index(tmp_path, session):
    root = tmp_path / "memory"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        write_fact(memory, session, "cats", "Cats sleep sixteen hours a day.")
    (root / "fact" / "owls.md").write_text("Owls hunt at night.")
    with Memory.open(Settings(root=root), embedder=FakeEmbedder(), read_only=True) as memory:
        assert not memory.index.in_memory  # derived data of a memory root may be kept up to date
        assert [r.path for r in memory.search("owls night", top_k=1)] == ["fact/owls.md"]
    assert not (root / "fact" / "owls.yml").exists() and not (root / "fact" / "owls.emb").exists()


# --------------------------------------------------------------------------- the commands that only look
@pytest.fixture
def keyword_only(monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")


@pytest.mark.parametrize("command", [["status"], ["search", "x"]])
def test_looking_at_a_missing_root_says_so_and_creates_nothing(tmp_path, keyword_only, command):
    missing = tmp_path / "nonexistent" / "dir"
    result = runner.invoke(app, [*command, "--root", str(missing)])
    assert result.exit_code == 1
    assert "There is no memory root at" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "nonexistent").exists()


def test_discover_on_a_missing_root_says_so_and_creates_nothing(tmp_path, keyword_only):
    missing = tmp_path / "nonexistent"
    result = runner.invoke(app, ["discover", "--root", str(missing)], input=json.dumps({"prompt": "how do tides work"}))
    assert result.exit_code == 0 and result.stdout == ""  # a hook never fails the prompt
    assert "There is no memory root at" in result.stderr
    assert not missing.exists()


def test_status_search_and_discover_write_nothing_into_a_directory(hand_written, keyword_only):
    before = tree(hand_written)
    status = runner.invoke(app, ["status", "--root", str(hand_written), "--json"])
    assert status.exit_code == 0, status.output
    figures = json.loads(status.output)
    assert (figures["entries"], figures["builtins"]) == (1, 1)  # the note; the built-in skill apart
    search = runner.invoke(app, ["search", "moon oceans", "--root", str(hand_written), "--json"])
    assert search.exit_code == 0, search.output
    assert json.loads(search.output)[0]["path"] == "concept/tides.md"
    discover = runner.invoke(app, ["discover", "--root", str(hand_written)], input=json.dumps({"prompt": "moon oceans tides"}))
    assert discover.exit_code == 0, discover.stderr
    assert tree(hand_written) == before  # /etc stays /etc: no .lock, no .memdir/, no .yml or .emb


@pytest.mark.model
def test_status_says_how_many_hand_written_notes_need_a_rebuild(hand_written):
    (hand_written / "concept" / "waves.md").write_text("Wind makes waves.")
    before = tree(hand_written)
    stale = json.loads(runner.invoke(app, ["status", "--root", str(hand_written), "--json"]).output)["stale"]
    assert stale == 2  # both notes (the built-in skill is counted apart)
    result = runner.invoke(app, ["status", "--root", str(hand_written)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # however rich wrapped it
    assert f"{stale} entries need embedding: run `memdir rebuild --missing-only`." in said
    assert tree(hand_written) == before
