"""FilesystemAdapter: SwarmMemory's .md/.yml/.emb format, atomic changes, limits and listing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml

from memdir.core.entry import UNREADABLE_PERMISSIONS, Entry, Metadata
from memdir.core.errors import (
    DiskFullError,
    EntryNotFoundError,
    EntryTooLargeError,
    InputValidationError,
    InvalidPathError,
    LockTimeoutError,
    StorageFullError,
)
from memdir.core.files import replace_file, replacing
from memdir.storage.base import Redirect, StorageAdapter, committed
from memdir.storage.directory import atomic
from memdir.storage.directory.filesystem import FilesystemAdapter
from memdir.storage.sidecar import EMBEDDING_BYTES, embedding_checksum

SIDE_KEYS = ["title", "file_path", "updated_at", "size", "hits", "metadata", "embedding_checksum"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "memory"


@pytest.fixture
def adapter(root: Path) -> FilesystemAdapter:
    return FilesystemAdapter(root)


def vector(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(384).astype(np.float32)


def put(adapter: FilesystemAdapter, path: str, content: str = "body", **kwargs) -> None:
    kwargs.setdefault("title", path)
    kwargs.setdefault("metadata", None)
    kwargs.setdefault("embedding", None)
    committed(adapter.write(path, content, **kwargs))


def sidecar(root: Path, stem: str) -> dict:
    return yaml.safe_load((root / f"{stem}.yml").read_text(encoding="utf-8"))


def test_implements_the_storage_adapter_protocol(adapter: FilesystemAdapter) -> None:
    def accepts(store: StorageAdapter) -> StorageAdapter:
        return store

    assert accepts(adapter) is adapter
    for name in ("write", "read_entry", "exists", "delete", "write_stub", "read_redirect", "iter_entries", "total_size"):
        assert callable(getattr(adapter, name))


# --------------------------------------------------------------------------- on-disk format


@pytest.mark.parametrize(
    "content",
    [
        "# Title\n\nplain\n",
        "windows\r\nline\r\nendings\r\n",
        "old mac\rendings\r",
        "mixed\r\n\n\r",
        "no trailing newline",
        "unicode: café ☕ 🧠 \u00e9 vs e\u0301 — \u2028 ✓\n",
        "  leading and trailing spaces  \n\t\n",
        "",
    ],
)
def test_content_round_trips_byte_for_byte(adapter: FilesystemAdapter, root: Path, content: str) -> None:
    committed(adapter.write("concept/x", content, title="X", metadata=None, embedding=None))
    assert (root / "concept/x.md").read_bytes() == content.encode("utf-8")
    entry = adapter.read_entry("concept/x")
    assert entry.content == content
    assert entry.size == len(content.encode("utf-8"))
    # NFD text in the content stays NFD (only paths are normalised)
    assert unicodedata.is_normalized("NFC", entry.content) == unicodedata.is_normalized("NFC", content)


def test_content_written_by_other_tools_reads_unchanged(adapter: FilesystemAdapter, root: Path) -> None:
    (root / "fact").mkdir()
    raw = b"# Notes\r\n\r\ncaf\xc3\xa9\r\n"
    (root / "fact/notes.md").write_bytes(raw)
    entry = adapter.read_entry("fact/notes")
    assert entry.content.encode("utf-8") == raw
    assert entry.title == "Notes"  # no .yml: the first heading


def test_sidecar_has_swarm_memorys_keys(adapter: FilesystemAdapter, root: Path) -> None:
    meta = Metadata(type="concept", confidence="high", tags=["ruby", "oop"], domain="programming/ruby")
    before = datetime.now(UTC)
    committed(adapter.write("concept/ruby/classes", "Classes ✓", title="Ruby Classes", metadata=meta, embedding=vector()))
    text = (root / "concept/ruby/classes.yml").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    assert "✓" not in text and "Ruby Classes" in text  # content is not duplicated into metadata
    data = yaml.safe_load(text)
    assert list(data) == SIDE_KEYS
    assert data["title"] == "Ruby Classes"
    assert data["file_path"] == "concept/ruby/classes.md"
    # a YAML timestamp in Ruby's Time layout (SwarmMemory reads a Time back), not a quoted string
    assert re.search(r"^updated_at: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} \+00:00$", text, re.MULTILINE)
    assert isinstance(data["updated_at"], datetime)
    assert before <= data["updated_at"] <= datetime.now(UTC)
    assert data["size"] == len("Classes ✓".encode())
    assert data["hits"] == 0
    assert data["metadata"] == {
        "type": "concept",
        "confidence": "high",
        "tags": ["ruby", "oop"],
        "domain": "programming/ruby",
    }
    assert data["embedding_checksum"] == embedding_checksum((root / "concept/ruby/classes.emb").read_bytes())


def test_sidecar_keeps_unicode_readable_and_extra_metadata(adapter: FilesystemAdapter, root: Path) -> None:
    committed(adapter.write(
        "concept/café",
        "x",
        title="Café → notes",
        metadata={"type": "concept", "tags": [], "custom": {"a": 1}},
        embedding=None,
    ))
    text = (root / "concept/café.yml").read_text(encoding="utf-8")
    assert "Café → notes" in text  # allow_unicode: no \u escapes
    data = yaml.safe_load(text)
    assert data["metadata"] == {"type": "concept", "custom": {"a": 1}}
    assert "embedding_checksum" not in data
    assert adapter.read_entry("concept/café").metadata.model_extra == {"custom": {"a": 1}}


def test_embedding_file_is_raw_little_endian_float32(adapter: FilesystemAdapter, root: Path) -> None:
    v = vector(7)
    entry = committed(adapter.write("fact/api", "x", title="API", metadata=None, embedding=v)).entry
    raw = (root / "fact/api.emb").read_bytes()
    assert len(raw) == 1536 == EMBEDDING_BYTES
    assert raw == np.asarray(v, "<f4").tobytes()
    assert np.array_equal(np.frombuffer(raw, "<f4"), v)
    assert np.array_equal(entry.embedding, v)
    read = adapter.read_entry("fact/api")
    assert read.embedded and np.array_equal(read.embedding, v)
    assert read.embedding.dtype == np.float32
    assert read.embedding_checksum == embedding_checksum(raw)


def test_embedding_accepts_lists_and_float64(adapter: FilesystemAdapter, root: Path) -> None:
    committed(adapter.write("fact/a", "x", title="A", metadata=None, embedding=[0.25] * 384))
    committed(adapter.write("fact/b", "x", title="B", metadata=None, embedding=np.full(384, 0.5, dtype=np.float64)))
    assert np.all(adapter.read_entry("fact/a").embedding == 0.25)
    assert np.all(adapter.read_entry("fact/b").embedding == 0.5)


@pytest.mark.parametrize(
    ("bad", "detail"),
    [(np.zeros(100), "shape (100,)"), (np.zeros((2, 384)), "shape (2, 384)"), ([np.nan] * 384, "NaN"), ("x", "numbers")],
)
def test_bad_embeddings_are_refused(adapter: FilesystemAdapter, root: Path, bad, detail: str) -> None:
    with pytest.raises(InputValidationError) as excinfo:
        committed(adapter.write("fact/a", "x", title="A", metadata=None, embedding=bad))
    assert detail in excinfo.value.message and excinfo.value.hint
    assert not (root / "fact").exists() or not any((root / "fact").iterdir())


def test_no_emb_file_without_embedding(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "fact/a")
    assert not (root / "fact/a.emb").exists()
    entry = adapter.read_entry("fact/a")
    assert entry.embedding is None and not entry.embedded and entry.embedding_checksum is None


def test_overwrite_replaces_all_three_files(adapter: FilesystemAdapter, root: Path) -> None:
    committed(adapter.write("fact/a", "one", title="One", metadata={"tags": ["x"]}, embedding=vector(1)))
    committed(adapter.write("fact/a", "two", title="Two", metadata={"tags": ["y"]}, embedding=vector(2)))
    entry = adapter.read_entry("fact/a")
    assert (entry.content, entry.title, entry.metadata.tags) == ("two", "Two", ["y"])
    assert np.array_equal(entry.embedding, vector(2))
    committed(adapter.write("fact/a", "three", title="Three", metadata=None, embedding=None))
    assert not (root / "fact/a.emb").exists()
    assert adapter.read_entry("fact/a").embedding is None
    assert sorted(p.name for p in (root / "fact").iterdir()) == ["a.md", "a.yml"]


def test_writes_create_folders_and_leave_no_temporary_files(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "experience/2025/01/debugging", embedding=vector())
    assert (root / "experience/2025/01/debugging.md").is_file()
    leftovers = [p for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert not any(atomic.txn_dir(root).iterdir())


def test_paths_are_normalised(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "memory://concept//x/", "via uri")
    assert (root / "concept/x.md").is_file()
    assert adapter.read_entry("concept/x.md").content == "via uri"
    assert adapter.exists("concept/x") and adapter.exists("memory://concept/x.md")
    with pytest.raises(InvalidPathError):
        put(adapter, "../outside")


def test_content_must_be_valid_text(adapter: FilesystemAdapter) -> None:
    with pytest.raises(InputValidationError, match="not valid Unicode"):
        put(adapter, "fact/a", "bad \ud800 surrogate")
    with pytest.raises(InputValidationError, match="must be text"):
        put(adapter, "fact/a", b"bytes")  # type: ignore[arg-type]


def test_invalid_metadata_is_refused_clearly(adapter: FilesystemAdapter) -> None:
    with pytest.raises(InputValidationError, match="metadata for memory://fact/a.md is invalid"):
        put(adapter, "fact/a", metadata={"tags": {"not": "a list"}})


# --------------------------------------------------------------------------- delete


def test_delete_removes_all_three_files_and_empty_folders(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "concept/deep/nested/x", embedding=vector())
    put(adapter, "concept/keep")
    committed(adapter.delete("concept/deep/nested/x"))
    assert not (root / "concept/deep").exists()
    assert (root / "concept/keep.md").is_file()
    assert not adapter.exists("concept/deep/nested/x")
    with pytest.raises(EntryNotFoundError):
        adapter.read_entry("concept/deep/nested/x")


def test_delete_never_removes_the_root(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "top")
    committed(adapter.delete("top"))
    assert root.is_dir()
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == []


def test_delete_of_a_missing_entry_is_not_found(adapter: FilesystemAdapter) -> None:
    with pytest.raises(EntryNotFoundError) as excinfo:
        committed(adapter.delete("concept/none"))
    assert excinfo.value.message == "memory://concept/none.md not found."


# --------------------------------------------------------------------------- hits


def test_hits_count_only_for_agent_reads(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "fact/a", embedding=vector())
    adapter.read_entry("fact/a")
    list(adapter.iter_entries())
    assert sidecar(root, "fact/a")["hits"] == 0
    assert adapter.read_entry("fact/a", count_hit=True).hits == 1
    assert adapter.read_entry("fact/a", count_hit=True).hits == 2
    assert sidecar(root, "fact/a")["hits"] == 2
    assert adapter.read_entry("fact/a").hits == 2
    assert [i.hits for i in adapter.iter_entries()] == [2]


def test_hit_counting_changes_only_the_hits(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "fact/a", metadata={"type": "fact", "tags": ["t"]}, embedding=vector())
    before = sidecar(root, "fact/a")
    md_mtime = (root / "fact/a.md").stat().st_mtime_ns
    emb = (root / "fact/a.emb").read_bytes()
    adapter.read_entry("fact/a", count_hit=True)
    after = sidecar(root, "fact/a")
    assert after == {**before, "hits": 1}
    assert list(after) == SIDE_KEYS
    assert (root / "fact/a.md").stat().st_mtime_ns == md_mtime
    assert (root / "fact/a.emb").read_bytes() == emb


def test_overwrite_keeps_hits_unless_given(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "fact/a")
    adapter.read_entry("fact/a", count_hit=True)
    put(adapter, "fact/a", "new")
    assert sidecar(root, "fact/a")["hits"] == 1
    put(adapter, "fact/a", "newer", hits=10)
    assert adapter.read_entry("fact/a").hits == 10


def test_hand_written_entries_are_read_but_not_rewritten(adapter: FilesystemAdapter, root: Path) -> None:
    (root / "fact").mkdir()
    (root / "fact/hand.md").write_text("no heading here", encoding="utf-8")
    (root / "fact/broken.md").write_text("# Broken\n", encoding="utf-8")
    (root / "fact/broken.yml").write_text("title: [unclosed\n", encoding="utf-8")
    hand = adapter.read_entry("fact/hand", count_hit=True)
    assert (hand.title, hand.hits, hand.metadata) == ("hand", 0, Metadata())
    assert not (root / "fact/hand.yml").exists()
    broken = adapter.read_entry("fact/broken", count_hit=True)
    assert broken.title == "Broken"
    assert (root / "fact/broken.yml").read_text(encoding="utf-8") == "title: [unclosed\n"


# --------------------------------------------------------------------------- older and damaged files


def write_raw(root: Path, stem: str, yml: str, emb: bytes | None = None, md: str = "content") -> None:
    (root / stem).parent.mkdir(parents=True, exist_ok=True)
    (root / f"{stem}.md").write_text(md, encoding="utf-8")
    (root / f"{stem}.yml").write_text(yml, encoding="utf-8")
    if emb is not None:
        (root / f"{stem}.emb").write_bytes(emb)


def test_ruby_symbol_keys_and_time_dumps_are_read(adapter: FilesystemAdapter, root: Path) -> None:
    yml = (
        "---\n:title: Ruby Classes\n:file_path: concept/ruby.md\n"
        ":updated_at: 2025-01-15 10:30:00.123456789 +01:00\n:size: 7\n:hits: 4\n"
        ":metadata:\n  :type: :concept\n  :tags:\n  - ruby\n  :permissions:\n    :Bash:\n      :allowed_commands:\n"
        "      - \"^npm \"\n"
    )
    write_raw(root, "concept/ruby", yml, vector(3).tobytes())
    entry = adapter.read_entry("concept/ruby")
    assert entry.title == "Ruby Classes"
    assert entry.hits == 4
    assert entry.updated_at == datetime(2025, 1, 15, 9, 30, 0, 123456, tzinfo=UTC)
    assert entry.metadata.type == "concept" and entry.metadata.tags == ["ruby"]
    assert entry.metadata.permissions == {"Bash": {"allowed_commands": ["^npm "]}}
    assert np.array_equal(entry.embedding, vector(3))
    info = next(adapter.iter_entries())
    assert (info.title, info.type, info.hits) == ("Ruby Classes", "concept", 4)
    assert adapter.read_entry("concept/ruby", count_hit=True).hits == 5
    assert sidecar(root, "concept/ruby")["hits"] == 5
    assert sidecar(root, "concept/ruby")["title"] == "Ruby Classes"


@pytest.mark.parametrize(
    ("emb", "checksum"),
    [
        (vector().tobytes()[:-4], None),  # one value short
        (vector().tobytes() + b"\0\0\0\0", None),  # one value too many
        (b"", None),
        (vector().tobytes(), "sha256:0000000000000000"),  # not what the file holds
        (np.full(384, np.nan, dtype="<f4").tobytes(), None),
    ],
)
def test_damaged_embeddings_count_as_not_embedded(
    adapter: FilesystemAdapter, root: Path, emb: bytes, checksum: str | None
) -> None:
    yml = "title: T\nhits: 0\n" + (f"embedding_checksum: '{checksum}'\n" if checksum else "")
    write_raw(root, "fact/x", yml, emb)
    entry = adapter.read_entry("fact/x")
    assert entry.embedding is None and entry.embedding_checksum is None
    assert entry.content == "content"


def test_old_files_without_a_checksum_or_with_a_foreign_one_still_read(adapter: FilesystemAdapter, root: Path) -> None:
    write_raw(root, "fact/old", "title: Old\n", vector(5).tobytes())
    write_raw(root, "fact/foreign", "title: F\nembedding_checksum: abc123\n", vector(6).tobytes())
    assert np.array_equal(adapter.read_entry("fact/old").embedding, vector(5))
    assert np.array_equal(adapter.read_entry("fact/foreign").embedding, vector(6))


def test_odd_metadata_shapes_are_tolerated(adapter: FilesystemAdapter, root: Path) -> None:
    yml = "title: T\nhits: lots\nupdated_at: whenever\nmetadata:\n  tags: single\n  tools: 5\n  related: ~\n  permissions: no\n"
    write_raw(root, "fact/odd", yml)
    entry = adapter.read_entry("fact/odd")
    assert entry.hits == 0
    assert entry.metadata.tags == ["single"] and entry.metadata.tools == ["5"]
    assert entry.metadata.related == []
    assert entry.metadata.permissions == {}  # 'no': no permissions, said another way
    # unreadable permissions are kept as such (a skill with them refuses to load), not dropped
    write_raw(root, "fact/odd", yml.replace("permissions: no", "permissions: [1, 2]"))
    assert adapter.read_entry("fact/odd").metadata.permissions == {UNREADABLE_PERMISSIONS: [1, 2]}
    assert entry.updated_at.tzinfo is not None


# --------------------------------------------------------------------------- limits


def test_entry_size_limit(root: Path) -> None:
    adapter = FilesystemAdapter(root, max_entry_size=10)
    put(adapter, "fact/ok", "x" * 10)
    with pytest.raises(EntryTooLargeError) as excinfo:
        put(adapter, "fact/big", "é" * 6)  # 12 bytes, 6 characters
    assert excinfo.value.size == 12 and excinfo.value.limit == 10
    assert "Split" in excinfo.value.hint
    assert not adapter.exists("fact/big")


def test_total_size_limit_counts_overwrites_and_deletes(root: Path) -> None:
    adapter = FilesystemAdapter(root, max_total_size=100)
    put(adapter, "a", "x" * 60)
    with pytest.raises(StorageFullError) as excinfo:
        put(adapter, "b", "x" * 41)
    assert excinfo.value.total == 101 and excinfo.value.limit == 100
    put(adapter, "a", "x" * 20)  # overwrite frees 40
    put(adapter, "b", "x" * 80)
    assert adapter.total_size() == 100
    committed(adapter.delete("a"))
    assert adapter.total_size() == 80
    put(adapter, "c", "x" * 20)
    assert not adapter.exists("nonexistent") and adapter.total_size() == 100


def test_the_total_size_limit_holds_across_processes(root: Path) -> None:
    """Two adapters (two server processes) on one root share one total: together they cannot pass the limit."""
    first, second = FilesystemAdapter(root, max_total_size=5000), FilesystemAdapter(root, max_total_size=5000)
    put(first, "fact/a", "x" * 3000)
    assert second.total_size() == 3000
    with pytest.raises(StorageFullError):
        put(second, "fact/b", "y" * 3000)
    put(second, "fact/b", "y" * 2000)
    committed(second.delete("fact/a"))
    assert first.total_size() == 2000 and first.rescan_total_size() == 2000


def test_a_writer_killed_past_its_commit_point_leaves_no_stale_total(root: Path, monkeypatch) -> None:
    """The total rides on the change counter: a writer killed after its commit point, before it raised the
    counter, leaves the old count and figure behind; the recovery's raise makes every process count again."""
    first = FilesystemAdapter(root)
    put(first, "fact/a", "x" * 300)
    assert first.total_size() == 300

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # (the process dies here: nothing after it runs)

    monkeypatch.setattr("memdir.storage.directory.changes.ChangeCounter.bump", killed)
    with pytest.raises(KeyboardInterrupt):
        put(first, "fact/b", "y" * 200)
    monkeypatch.undo()
    second = FilesystemAdapter(root)  # the next process: it finishes the killed change
    assert second.read_entry("fact/b").content == "y" * 200
    assert second.total_size() == 500 and first.total_size() == 500


def test_total_size_is_scanned_at_open_and_can_be_rescanned(root: Path) -> None:
    put(FilesystemAdapter(root), "fact/a", "12345", embedding=vector())
    adapter = FilesystemAdapter(root)
    assert adapter.total_size() == 5
    (root / "fact/b.md").write_text("123", encoding="utf-8")  # changed behind the adapter's back
    assert adapter.total_size() == 5
    assert adapter.rescan_total_size() == 8


# --------------------------------------------------------------------------- symlinks


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("secret", encoding="utf-8")
    (folder / "secret.yml").write_text("title: Secret\n", encoding="utf-8")
    return folder


def test_symlinked_folder_leading_out_is_refused(adapter: FilesystemAdapter, root: Path, outside: Path) -> None:
    (root / "escape").symlink_to(outside, target_is_directory=True)
    for action in (
        lambda: adapter.read_entry("escape/secret"),
        lambda: put(adapter, "escape/new"),
        lambda: committed(adapter.delete("escape/secret")),
        lambda: adapter.exists("escape/secret"),
    ):
        with pytest.raises(InvalidPathError, match="outside the memory root"):
            action()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md", "secret.yml"]
    assert list(adapter.iter_entries()) == []
    assert list(adapter.iter_entries(under="escape")) == []


def test_symlinked_files_leading_out_are_refused(adapter: FilesystemAdapter, root: Path, outside: Path) -> None:
    (root / "fact").mkdir()
    (root / "fact/leak.md").symlink_to(outside / "secret.md")
    (root / "fact/sidecar.md").write_text("mine", encoding="utf-8")
    (root / "fact/sidecar.yml").symlink_to(outside / "secret.yml")
    with pytest.raises(InvalidPathError):
        adapter.read_entry("fact/leak")
    with pytest.raises(InvalidPathError, match=r"'fact/sidecar.yml': it resolves outside the memory root"):
        adapter.read_entry("fact/sidecar")
    assert [i.path for i in adapter.iter_entries(with_metadata=False)] == ["fact/sidecar.md"]


def test_symlinks_inside_the_root_work_and_loops_end(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "concept/real/x", "x")
    (root / "alias").symlink_to(root / "concept/real", target_is_directory=True)
    (root / "concept/real/loop").symlink_to(root / "concept", target_is_directory=True)
    for n in (1, 2):  # folders reachable only through a symlink (their real names are hidden)
        (root / f".store{n}").mkdir()
        (root / f".store{n}/y{n}.md").write_text("y", encoding="utf-8")
        (root / f"linked{n}").symlink_to(root / f".store{n}", target_is_directory=True)
    assert adapter.read_entry("alias/x").content == "x"
    paths = [i.path for i in adapter.iter_entries(with_metadata=False)]
    assert paths == ["concept/real/x.md", "linked1/y1.md", "linked2/y2.md"]  # each folder once, real name first


# --------------------------------------------------------------------------- listing


def test_listing_skips_everything_that_is_not_an_entry(adapter: FilesystemAdapter, root: Path) -> None:
    put(adapter, "concept/a", embedding=vector())
    put(adapter, "fact/b")
    for name in (".hidden.md", "concept/.txn-abc-0.tmp", "concept/notes.txt", "concept/a.emb.bak", "bad:name.md"):
        (root / name).write_text("x", encoding="utf-8")
    (root / ".memdir/index").mkdir(parents=True)
    (root / ".memdir/index/shadow.md").write_text("x", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git/HEAD.md").write_text("x", encoding="utf-8")
    (root / "nfd").mkdir()
    (root / "nfd" / "cafe\u0301.md").write_text("unreachable spelling", encoding="utf-8")
    (root / "folder.md").mkdir()
    assert [i.path for i in adapter.iter_entries()] == ["concept/a.md", "fact/b.md"]


def test_listing_rows(adapter: FilesystemAdapter, root: Path) -> None:
    committed(adapter.write("fact/b", "12345", title="B", metadata={"type": "fact"}, embedding=vector(), hits=3))
    put(adapter, "concept/a", "1")
    rows = list(adapter.iter_entries())
    assert [r.path for r in rows] == ["concept/a.md", "fact/b.md"]
    b = rows[1]
    stat = (root / "fact/b.md").stat()
    assert (b.title, b.type, b.hits, b.size, b.mtime_ns, b.virtual) == ("B", "fact", 3, 5, stat.st_mtime_ns, False)
    assert b.updated_at == adapter.read_entry("fact/b").updated_at


def test_fast_listing_opens_no_sidecar(adapter: FilesystemAdapter, root: Path, monkeypatch) -> None:
    put(adapter, "fact/b", "12345", embedding=vector())

    def forbidden(*args, **kwargs):
        raise AssertionError("the fast path must not read .yml files")

    monkeypatch.setattr(FilesystemAdapter, "_load_sidecar", forbidden)
    (row,) = adapter.iter_entries(with_metadata=False)
    stat = (root / "fact/b.md").stat()
    assert (row.path, row.size, row.mtime_ns, row.title, row.type, row.hits) == (
        "fact/b.md", 5, stat.st_mtime_ns, "", "fact", 0,  # the folder's type: no file read for it
    )


def test_listing_under_a_folder(adapter: FilesystemAdapter) -> None:
    for path in ("fact/api/a", "fact/api/deep/b", "fact/api-design/c", "fact/d"):
        put(adapter, path)
    assert [i.path for i in adapter.iter_entries(under="fact/api")] == ["fact/api/a.md", "fact/api/deep/b.md"]
    assert [i.path for i in adapter.iter_entries(under="memory://fact/api/")] == [
        "fact/api/a.md",
        "fact/api/deep/b.md",
    ]
    assert len(list(adapter.iter_entries(under="fact"))) == 4
    assert list(adapter.iter_entries(under="nothing/here")) == []
    with pytest.raises(InvalidPathError):
        list(adapter.iter_entries(under="../x"))


def test_listing_can_be_consumed_while_writing(adapter: FilesystemAdapter) -> None:
    for i in range(3):
        put(adapter, f"fact/{i}")
    for info in adapter.iter_entries():
        committed(adapter.delete(info.path))  # would need a lock upgrade if the listing held the shared lock
    assert list(adapter.iter_entries()) == []


# --------------------------------------------------------------------------- locking and recovery


def test_callers_can_hold_the_exclusive_lock_across_calls(adapter: FilesystemAdapter, root: Path) -> None:
    with adapter.lock.exclusive():
        put(adapter, "fact/a", embedding=vector())
        assert adapter.read_entry("fact/a", count_hit=True).hits == 1
        assert [i.path for i in adapter.iter_entries()] == ["fact/a.md"]
        committed(adapter.delete("fact/a"))
    assert (root / ".lock").is_file()


_HOLD = """
import sys
from memdir.storage.directory.locking import RootLock
with RootLock(sys.argv[1]).exclusive():
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_another_process_holding_the_lock_makes_writes_time_out_while_reads_go_on(root: Path) -> None:
    adapter = FilesystemAdapter(root, lock_timeout=0.2)
    put(adapter, "fact/a")
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(root / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "locked"
            with pytest.raises(LockTimeoutError):
                put(adapter, "fact/b")
            with pytest.raises(LockTimeoutError):
                adapter.read_entry("fact/a", count_hit=True)  # counting a read writes
            # Plain reads take no lock: no change is in progress (no journal, counter still).
            assert adapter.read_entry("fact/a").content == "body"
            assert [info.path for info in adapter.iter_entries()] == ["fact/a.md"]
        finally:
            child.stdin.write("\n")
            child.stdin.flush()
            child.wait(10)
    assert adapter.read_entry("fact/a").content == "body"


def test_commit_files_writes_and_removes_together(root: Path) -> None:
    root.mkdir()
    (root / "old.txt").write_text("old", encoding="utf-8")
    atomic.commit_files(root, {root / "a/b/new.txt": b"new", root / "x.txt": b"x"}, [root / "old.txt", root / "none"])
    assert (root / "a/b/new.txt").read_bytes() == b"new"
    assert (root / "x.txt").read_bytes() == b"x"
    assert not (root / "old.txt").exists()
    assert list(atomic.txn_dir(root).iterdir()) == []


def test_commit_files_refuses_paths_outside_the_root(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    with pytest.raises(InvalidPathError, match="outside the memory root"):
        atomic.commit_files(tmp_path / "root", {tmp_path / "elsewhere.txt": b"x"})


def test_failed_staging_changes_nothing(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    put(adapter, "fact/a", "old", embedding=vector(1))
    real_write = atomic._write_new_file
    calls = []

    def failing(path, data, **options):
        calls.append(path)
        if len(calls) == 3:  # journal, .md staged, then the .yml fails
            raise OSError(28, "No space left on device")
        return real_write(path, data, **options)

    monkeypatch.setattr(atomic, "_write_new_file", failing)
    with pytest.raises(DiskFullError, match="is full"):  # said plainly, not as a bare OSError
        put(adapter, "fact/a", "new", embedding=vector(2))
    monkeypatch.undo()
    entry = adapter.read_entry("fact/a")
    assert entry.content == "old" and np.array_equal(entry.embedding, vector(1))
    assert [p for p in root.rglob("*.tmp")] == [] and list(atomic.txn_dir(root).iterdir()) == []
    assert adapter.total_size() == 3


def test_a_write_opens_each_staged_file_once_and_flushes_it_before_the_commit(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    put(adapter, "fact/a", "old", embedding=vector(1))
    opened, flushed, real_open, real_fsync = [], [], os.open, os.fsync
    names: dict[int, str] = {}

    def spy_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if ".txn-" in str(path) or str(path).endswith(atomic.PENDING_SUFFIX):
            opened.append(str(path))
            names[fd] = str(path)
        return fd

    def spy_fsync(fd):
        if fd in names:
            flushed.append((names[fd], os.path.exists(names[fd])))
        real_fsync(fd)

    def spy_close(fd):
        names.pop(fd, None)  # (its number may be reused)
        real_close(fd)

    real_close = os.close
    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "close", spy_close)
    put(adapter, "fact/a", "new", embedding=vector(2))
    monkeypatch.undo()
    assert len(opened) == len(set(opened)) == 4  # the journal, the staged .md, .yml and .emb (the total rides on the counter)
    # each flushed through the descriptor it was written with
    assert sorted(name for name, _ in flushed) == sorted(opened)
    assert all(there for _, there in flushed)  # before anything was renamed
    assert adapter.read_entry("fact/a").content == "new"


def _more_important(entry: Entry) -> Metadata:
    """An entry's metadata with importance 8 (a bulk metadata change)."""
    return entry.metadata.model_copy(update={"importance": 8.0})


@pytest.mark.skipif(not atomic._ONE_SYNC, reason="one sync per batch only where sync() waits (Linux)")
def test_a_large_batch_is_made_durable_by_one_sync_not_one_fsync_per_file(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    paths = [f"fact/batch-{i}" for i in range(atomic._SYNC_EACH_UP_TO + 4)]
    for path in paths:
        put(adapter, path, "text", embedding=vector(1))
    syncs, fsyncs, real_fsync = [], [], os.fsync
    monkeypatch.setattr(atomic.os, "sync", lambda: syncs.append(1))
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    updated = committed(adapter.set_metadata(paths, _more_important))
    monkeypatch.undo()
    assert len(updated) == len(paths) and len(syncs) == 1
    assert len(fsyncs) < len(paths)  # the journal and the folders; no staged .yml fsynced one by one
    assert all(adapter.read_entry(path).metadata.importance == 8.0 for path in paths)


def test_a_large_batch_that_fails_while_staging_changes_nothing(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    paths = [f"fact/batch-{i}" for i in range(atomic._SYNC_EACH_UP_TO + 4)]
    for path in paths:
        put(adapter, path, "text", embedding=vector(1))
    real_write, calls = atomic._write_new_file, []

    def failing(path, data, **options):
        calls.append(path)
        if len(calls) == len(paths):  # the journal, then all but the last .yml staged
            raise OSError(28, "No space left on device")
        return real_write(path, data, **options)

    monkeypatch.setattr(atomic, "_write_new_file", failing)
    with pytest.raises(DiskFullError):
        committed(adapter.set_metadata(paths, _more_important))
    monkeypatch.undo()
    assert all(adapter.read_entry(path).metadata.importance != 8.0 for path in paths)
    assert [p for p in root.rglob("*.tmp")] == [] and list(atomic.txn_dir(root).iterdir()) == []


def test_a_committed_transaction_is_rolled_forward_by_the_next_adapter(root: Path, monkeypatch) -> None:
    put(FilesystemAdapter(root), "fact/a", "old", embedding=vector(1))

    def crash(*args):
        raise KeyboardInterrupt("killed after the commit point")

    monkeypatch.setattr(atomic, "_roll_forward", crash)
    with pytest.raises(KeyboardInterrupt):
        put(FilesystemAdapter(root), "fact/a", "new", embedding=None)
    monkeypatch.undo()
    assert (root / "fact/a.md").read_text(encoding="utf-8") == "old"  # nothing applied yet
    assert [p.suffix for p in atomic.txn_dir(root).iterdir()] == [".commit"]
    entry = FilesystemAdapter(root).read_entry("fact/a")
    assert entry.content == "new" and entry.embedding is None
    assert not (root / "fact/a.emb").exists()
    assert list(atomic.txn_dir(root).iterdir()) == [] and list(root.rglob("*.tmp")) == []


def test_a_reader_recovers_before_reading(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    put(adapter, "fact/a", "old")
    monkeypatch.setattr(atomic, "_roll_forward", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        put(adapter, "fact/a", "new")
    monkeypatch.undo()
    assert adapter.read_entry("fact/a").content == "new"  # same adapter, next read
    assert adapter.total_size() == 3


def test_an_uncommitted_transaction_is_rolled_back(root: Path) -> None:
    put(FilesystemAdapter(root), "fact/a", "old")
    temp = root / "fact/.txn-dead-0.tmp"
    temp.write_bytes(b"half-writ")
    journal = {"version": 1, "renames": [["fact/.txn-dead-0.tmp", "fact/a.md"]], "removals": ["fact/a.yml"]}
    atomic.txn_dir(root).joinpath("dead.pending").write_text(json.dumps(journal), encoding="utf-8")
    atomic.txn_dir(root).joinpath("cut.pending").write_bytes(b'{"version": 1, "ren')  # killed mid-journal
    adapter = FilesystemAdapter(root)
    assert not temp.exists()
    assert list(atomic.txn_dir(root).iterdir()) == []
    entry = adapter.read_entry("fact/a")
    assert entry.content == "old" and entry.title == "fact/a"


def test_a_damaged_journal_cannot_touch_files_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep", encoding="utf-8")
    atomic.txn_dir(root).mkdir(parents=True)
    journal = {"version": 1, "renames": [], "removals": ["../victim.txt", str(victim)]}
    atomic.txn_dir(root).joinpath("x.commit").write_text(json.dumps(journal), encoding="utf-8")
    assert atomic.recover(root) == 1
    assert victim.read_text(encoding="utf-8") == "keep"


def test_recover_is_cheap_and_idle_when_nothing_is_pending(root: Path) -> None:
    assert atomic.recover(root) == 0 and not atomic.has_pending(root)
    FilesystemAdapter(root)
    assert atomic.recover(root) == 0


def test_replace_file_replaces_a_file_and_keeps_its_mode_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "derived" / "index.json"
    replace_file(target, b"one")
    target.chmod(0o600)
    replace_file(target, b"two", durable=False, keep_mode=True)
    assert target.read_bytes() == b"two" and target.stat().st_mode & 0o777 == 0o600
    assert os.listdir(target.parent) == ["index.json"]


def test_a_failed_replacement_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "file.bin"
    replace_file(target, b"old")
    with pytest.raises(RuntimeError), replacing(target) as handle:
        handle.write(b"half")
        raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["file.bin"]


def test_a_folder_in_the_way_is_refused_before_anything_changes(adapter: FilesystemAdapter, root: Path) -> None:
    (root / "fact/clash.md").mkdir(parents=True)
    with pytest.raises(InvalidPathError, match="it is a folder, not a regular file"):
        put(adapter, "fact/clash")
    assert not atomic.has_pending(root) and list(root.rglob("*.tmp")) == []


def test_a_journal_that_cannot_be_applied_is_set_aside(root: Path, caplog) -> None:
    (root / "fact/clash.md").mkdir(parents=True)
    (root / "fact/.txn-x-0.tmp").write_bytes(b"new")
    atomic.txn_dir(root).mkdir(parents=True)
    journal = {"version": 1, "renames": [["fact/.txn-x-0.tmp", "fact/clash.md"]], "removals": []}
    atomic.txn_dir(root).joinpath("x.commit").write_text(json.dumps(journal), encoding="utf-8")
    adapter = FilesystemAdapter(root)
    assert not atomic.has_pending(root)
    assert (root / atomic.FAILED_DIR / "x.commit").is_file()
    assert "x.commit was not replayed and is quarantined" in caplog.text and "could not be finished" in caplog.text
    put(adapter, "fact/ok")  # the root stays usable
    assert adapter.exists("fact/ok")


def test_a_caller_holding_the_shared_lock_never_sees_a_dead_writers_half_change(root: Path, monkeypatch) -> None:
    adapter = FilesystemAdapter(root)
    put(adapter, "fact/a", "old")
    monkeypatch.setattr(atomic, "_roll_forward", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        put(FilesystemAdapter(root), "fact/a", "new")  # as if killed after the commit point
    monkeypatch.undo()
    with adapter.lock.shared():
        assert not atomic.has_pending(root)
        assert adapter.read_entry("fact/a").content == "new"


def test_set_embeddings_skips_entries_changed_since_they_were_read(adapter: FilesystemAdapter) -> None:
    """A re-embedding must not overwrite the vector a later write made for new text (tags are embedded too)."""
    put(adapter, "concept/a.md", "alpha", metadata={"type": "concept", "tags": ["old"]}, embedding=vector(1))
    put(adapter, "concept/b.md", "beta", metadata={"type": "concept"}, embedding=vector(2))
    read_a, read_b = adapter.read_entry("concept/a.md"), adapter.read_entry("concept/b.md")
    put(adapter, "concept/a.md", "alpha", metadata={"type": "concept", "tags": ["new"]}, embedding=vector(3))
    adapter.read_entry("concept/b.md", count_hit=True)  # a hit is not a change of text
    stored = committed(adapter.set_embeddings(
        {"concept/a.md": vector(4), "concept/b.md": vector(5)}, expected={"concept/a.md": read_a, "concept/b.md": read_b}
    ))
    assert [staged.entry.path for staged in stored] == ["concept/b.md"]
    assert np.allclose(adapter.read_entry("concept/a.md").embedding, vector(3))
    assert np.allclose(adapter.read_entry("concept/b.md").embedding, vector(5))


def test_a_hand_made_file_with_a_decomposed_name_is_reported_not_lost_silently(
    adapter: FilesystemAdapter, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    (root / "fact").mkdir(parents=True, exist_ok=True)
    (root / "fact" / f"{nfd}.md").write_text("Coffee notes.")
    with caplog.at_level("WARNING"):
        listed = [info.path for info in adapter.iter_entries()]
        adapter_again = [info.path for info in adapter.iter_entries()]
    assert f"fact/{nfd}.md" not in listed and listed == adapter_again
    warnings = [record.getMessage() for record in caplog.records if "not in Unicode NFC form" in record.getMessage()]
    assert len(warnings) == 1  # once, not on every listing
    assert repr("café.md") in warnings[0]


def test_reads_through_a_stub_keep_the_shared_total_exact(root: Path) -> None:
    writer = FilesystemAdapter(root)
    put(writer, "fact/a", "target")
    committed(writer.write_stub("fact/b", Redirect("merged", "fact/a.md")))
    reader = FilesystemAdapter(root)  # another process, which has not scanned the root yet
    reader.read_entry("fact/b", count_hit=True)  # the stub's text grows by its read count
    assert writer.total_size() == reader.total_size() == writer.rescan_total_size()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names flushed files through /proc")
def test_a_write_flushes_its_files_once_each_and_nothing_derived(root: Path, monkeypatch) -> None:
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    memory = Memory.open(Settings(root=root), embedder=FakeEmbedder())
    memory.write("fact/first", "warms the root up", metadata={"type": "fact"})
    flushed, real_fsync = [], os.fsync

    def fsync(fd: int) -> None:
        flushed.append(os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), os.path.realpath(root)))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fsync)  # (appends, such as the audit record's, sync their data alone)
    memory.write("fact/second", "an embedded entry", metadata={"type": "fact"})
    monkeypatch.undo()
    memory.close()
    staged = [name for name in flushed if name.startswith("fact/.txn-")]  # .md, .yml, .emb
    journal = [name for name in flushed if name.startswith(".memdir/txn/")]
    audit = [name for name in flushed if name.startswith("audit/")]
    folders = sorted(name for name in flushed if name in (".memdir/txn", "fact"))  # the commit, the renames
    assert len(set(staged)) == 3 and len(journal) == 1 and len(audit) == 1 and folders == [".memdir/txn", "fact"]
    assert len(flushed) == 7  # not the root's size total (derived) nor the folder it sits in


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names flushed files through /proc")
def test_a_write_flushes_its_staged_files_journal_and_audit_record_together_before_the_commit(root: Path, monkeypatch) -> None:
    import threading
    import time

    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    memory = Memory.open(Settings(root=root), embedder=FakeEmbedder())
    memory.write("fact/first", "warms the root up", metadata={"type": "fact"})
    flushing: set[str] = set()
    together: list[set[str]] = []
    done: list[str] = []
    guard, real_fsync, real_replace = threading.Lock(), os.fsync, atomic.os.replace

    def fsync(fd: int) -> None:  # a disk whose every flush takes a while, as a loaded one does
        name = os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), os.path.realpath(root))
        with guard:
            flushing.add(name)
            together.append(set(flushing))
        time.sleep(0.05)
        real_fsync(fd)
        with guard:
            flushing.discard(name)
            done.append(name)

    def replace(source, target) -> None:
        if str(source).endswith(atomic.PENDING_SUFFIX):  # the commit point: every flush before it is done
            assert not flushing
            assert any(name.startswith("audit/") for name in done)
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fsync)  # (appends, such as the audit record's, sync their data alone)
    monkeypatch.setattr(atomic.os, "replace", replace)
    memory.write("fact/second", "an embedded entry", metadata={"type": "fact"})
    monkeypatch.undo()
    assert memory.read("fact/second").content == "an embedded entry"
    memory.close()
    widest = max(together, key=len)
    assert sum(name.startswith("fact/.txn-") for name in widest) == 3  # .md, .yml and .emb at once
    assert any(name.startswith(".memdir/txn/") for name in widest)
    assert any(name.startswith("audit/") for name in widest)  # the record joins them: one round, not two
