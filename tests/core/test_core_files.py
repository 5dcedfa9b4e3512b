"""memdir.core.files: the one confined open every file of a root goes through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memdir.core import files
from memdir.core.errors import UnsafeFileError
from memdir.core.files import private_folder, read_regular, stat_regular


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "concept").mkdir(parents=True)
    (root / "concept/x.md").write_text("inside", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x.md").write_text("outside", encoding="utf-8")
    return root


@pytest.fixture(params=[True, False], ids=["kernel-checked", "resolved-first"])
def kernel_tells(request, monkeypatch) -> bool:
    """Both ways of confining an open: checked on the opened file (Linux), or resolved before opening."""
    monkeypatch.setattr(files, "_OPEN_FILES_KNOWN", request.param and files._OPEN_FILES_KNOWN)
    return request.param


def test_regular_files_inside_the_root_are_read(root: Path, kernel_tells: bool) -> None:
    (root / "alias").symlink_to(root / "concept", target_is_directory=True)
    (root / "concept/y.md").symlink_to("x.md")
    for path in ("concept/x.md", "alias/x.md", "concept/y.md", "alias/y.md"):
        assert read_regular(root, root / path) == b"inside"
        assert stat_regular(root, root / path).st_size == 6
    assert read_regular(root, root / "concept/x.md", 3) == b"ins"


@pytest.mark.parametrize("link, path", [("concept/out", "concept/out/x.md"), ("concept/z.md", "concept/z.md")])
def test_a_link_leading_out_is_refused_however_it_is_reached(root: Path, kernel_tells: bool, link: str, path: str) -> None:
    target = root.parent / "outside" / ("x.md" if link.endswith(".md") else "")
    (root / link).symlink_to(target)
    for action in (read_regular, stat_regular):
        with pytest.raises(UnsafeFileError, match="outside the memory root") as caught:
            action(root, root / path)
        assert caught.value.reason == "outside" and caught.value.path == path


def test_special_files_are_refused_without_waiting(root: Path, kernel_tells: bool) -> None:
    os.mkfifo(root / "concept/pipe.md")
    (root / "concept/folder.md").mkdir()
    for name, kind in (("pipe.md", "a named pipe"), ("folder.md", "a folder")):
        for action in (read_regular, stat_regular):
            with pytest.raises(UnsafeFileError, match=f"it is {kind}") as caught:
                action(root, root / "concept" / name)
            assert caught.value.reason == "special"


def test_loops_and_missing_files(root: Path, kernel_tells: bool) -> None:
    (root / "concept/loop.md").symlink_to("loop.md")
    with pytest.raises(UnsafeFileError, match="symbolic links that loop"):
        read_regular(root, root / "concept/loop.md")
    with pytest.raises(FileNotFoundError):
        read_regular(root, root / "concept/none.md")
    assert stat_regular(root, root / "concept/none.md") is None


def test_private_folders_are_created_and_never_links(root: Path) -> None:
    assert private_folder(root, ".memdir/txn") == root / ".memdir/txn"
    assert (root / ".memdir/txn").is_dir()
    (root / ".memdir/defrag").symlink_to(root / "concept", target_is_directory=True)  # even one inside the root
    with pytest.raises(UnsafeFileError, match="'.memdir/defrag': it is a symbolic link"):
        private_folder(root, ".memdir/defrag/quarantine")
    assert not (root / "concept/quarantine").exists()


def test_quarantine_moves_regular_files_and_removes_links_and_pipes(root: Path) -> None:
    from memdir.core.files import quarantine

    private_folder(root, ".memdir/txn")
    (root / ".memdir/txn/a.commit").write_text("{}", encoding="utf-8")
    (root / ".memdir/txn/b.commit").symlink_to(root.parent / "outside/x.md")
    os.mkfifo(root / ".memdir/txn/c.commit")
    assert quarantine(root, root / ".memdir/txn/a.commit", ".memdir/set-aside").startswith("moved to")
    assert (root / ".memdir/set-aside/a.commit").read_text(encoding="utf-8") == "{}"
    assert "a symbolic link to" in quarantine(root, root / ".memdir/txn/b.commit", ".memdir/set-aside")
    assert quarantine(root, root / ".memdir/txn/c.commit", ".memdir/set-aside") == "removed (a named pipe (FIFO))"
    assert list((root / ".memdir/txn").iterdir()) == [] and [p.name for p in (root / ".memdir/set-aside").iterdir()] == ["a.commit"]
    assert (root.parent / "outside/x.md").read_text(encoding="utf-8") == "outside"


def test_a_new_record_syncs_the_folders_it_made_and_its_own(root: Path, monkeypatch) -> None:
    """A record appended in folders that did not exist is durable by name: each folder made is
    synced into its parent, and the record into its folder; folders that were there are not."""
    synced: list[Path] = []
    monkeypatch.setattr(files, "fsync_dir", lambda path: synced.append(Path(path)))
    files.append_bytes(root, root / "concept/threads/t1/log.jsonl", b"{}\n")
    assert synced == [root / "concept", root / "concept/threads", root / "concept/threads/t1"]
    synced.clear()
    files.append_bytes(root, root / "concept/threads/t1/log.jsonl", b"{}\n")
    assert synced == []
