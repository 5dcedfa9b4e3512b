"""Built-in (virtual) entries: shipped in the package, readable and listed, never changed."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from memdir.core.errors import ReadOnlyEntryError
from memdir.storage.base import Redirect, committed
from memdir.storage.directory.filesystem import FilesystemAdapter
from memdir.storage.virtual import VIRTUAL_ENTRIES, is_virtual, load_virtual, virtual_paths

DEEP = "skill/meta/deep-learning.md"


@pytest.fixture
def adapter(tmp_path: Path) -> FilesystemAdapter:
    return FilesystemAdapter(tmp_path / "memory")


def test_the_mapping_is_swarm_memorys() -> None:
    assert dict(VIRTUAL_ENTRIES) == {DEEP: "meta/deep-learning"}
    assert virtual_paths() == (DEEP,)
    assert is_virtual(DEEP) and not is_virtual("skill/meta/other.md")


def test_the_files_ship_as_package_data() -> None:
    skills = resources.files("memdir").joinpath("skills", "meta")
    assert skills.joinpath("deep-learning.md").is_file()
    assert skills.joinpath("deep-learning.yml").is_file()


def test_deep_learning_protocol_content() -> None:
    entry = load_virtual(DEEP)
    content = entry.content
    assert content.startswith("# Deep Learning Protocol")
    steps = re.findall(r"^(\d+)\. ", content, flags=re.MULTILINE)
    assert steps == [str(i) for i in range(1, 11)]
    assert "## Success Criteria" in content
    for tool in ("MemoryWrite", "MemoryRead", "MemoryGrep", "MemoryGlob"):
        assert tool in content
    assert len(content.split()) < 250


def test_deep_learning_protocol_metadata() -> None:
    entry = load_virtual(DEEP)
    assert entry.title == "Deep Learning Protocol"
    assert entry.virtual
    assert entry.metadata.type == "skill"
    assert entry.metadata.confidence == "high"
    assert entry.metadata.domain == "meta/learning"
    assert entry.metadata.tools == []
    assert "learning" in entry.metadata.tags
    assert entry.size == len(entry.content.encode("utf-8"))


def test_load_virtual_returns_an_independent_copy() -> None:
    first = load_virtual(DEEP)
    first.metadata.tags.append("mutated")
    assert "mutated" not in load_virtual(DEEP).metadata.tags


def test_readable_through_the_adapter_in_any_spelling(adapter: FilesystemAdapter) -> None:
    for spelling in (DEEP, "skill/meta/deep-learning", "memory://skill/meta/deep-learning.md"):
        entry = adapter.read_entry(spelling)
        assert entry.virtual and entry.path == DEEP
    assert adapter.exists("skill/meta/deep-learning")
    assert adapter.read_redirect(DEEP) is None


def test_hits_are_not_counted_and_nothing_is_written(adapter: FilesystemAdapter) -> None:
    for _ in range(3):
        assert adapter.read_entry(DEEP, count_hit=True).hits == 0
    assert not (adapter.root / "skill").exists()


@pytest.mark.parametrize(
    "change",
    [
        lambda a: committed(a.write(DEEP, "mine", title="Mine", metadata=None, embedding=None)),
        lambda a: committed(a.write("skill/meta/deep-learning", "x", title="x", metadata=None, embedding=np.zeros(384))),
        lambda a: committed(a.delete(DEEP)),
        lambda a: committed(a.write_stub(DEEP, Redirect("merged", "skill/mine.md"))),
    ],
)
def test_never_overwritable_or_deletable(adapter: FilesystemAdapter, change) -> None:
    with pytest.raises(ReadOnlyEntryError) as excinfo:
        change(adapter)
    assert "memory://skill/meta/deep-learning.md is a built-in entry" in excinfo.value.message
    assert excinfo.value.hint
    assert adapter.read_entry(DEEP).content == load_virtual(DEEP).content
    assert not (adapter.root / "skill").exists()


def test_listed_only_on_request_and_filtered_by_folder(adapter: FilesystemAdapter) -> None:
    committed(adapter.write("skill/mine", "steps", title="Mine", metadata={"type": "skill"}, embedding=None))
    assert [i.path for i in adapter.iter_entries()] == ["skill/mine.md"]
    listed = {i.path: i for i in adapter.iter_entries(include_virtual=True)}
    assert sorted(listed) == [DEEP, "skill/mine.md"]
    info = listed[DEEP]
    assert info.virtual and info.title == "Deep Learning Protocol" and info.type == "skill" and info.hits == 0
    assert [i.path for i in adapter.iter_entries(include_virtual=True, under="skill/meta")] == [DEEP]
    assert [i.path for i in adapter.iter_entries(include_virtual=True, under="concept")] == []


def test_not_counted_in_total_size(adapter: FilesystemAdapter) -> None:
    assert adapter.total_size() == 0
    adapter.read_entry(DEEP)
    committed(adapter.write("fact/a", "12345", title="A", metadata=None, embedding=None))
    assert adapter.total_size() == 5


def test_a_file_on_disk_cannot_shadow_a_built_in(adapter: FilesystemAdapter) -> None:
    folder = adapter.root / "skill" / "meta"
    folder.mkdir(parents=True)
    (folder / "deep-learning.md").write_text("tampered", encoding="utf-8")
    assert adapter.read_entry(DEEP).content == load_virtual(DEEP).content
    assert [i.path for i in adapter.iter_entries(include_virtual=True)] == [DEEP]
    assert all(not i.path == DEEP or i.virtual for i in adapter.iter_entries(include_virtual=True))


def test_a_stub_may_point_at_a_built_in(adapter: FilesystemAdapter) -> None:
    committed(adapter.write_stub("skill/learning", Redirect("moved", DEEP)))
    entry = adapter.read_entry("skill/learning", count_hit=True)
    assert entry.virtual and entry.path == DEEP and entry.hits == 0


def test_built_in_skills_stay_out_of_content_search_unless_skills_are_asked_for(tmp_path, monkeypatch) -> None:
    """LoCoMo: "What did Caroline research?" ranked the built-in Deep Learning Protocol 3rd (BM25 only)."""
    from typer.testing import CliRunner

    from memdir.cli import app
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from memdir.tools.discovery import discover

    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")  # BM25 + keywords only, as in the report
    root = tmp_path / "locomo"
    with Memory.open(Settings(root=root)) as memory:
        memory.write("fact/caroline/adoption.md", "Caroline researched adoption agencies last week.",
                     title="Caroline's adoption research", metadata={"type": "fact"})
        memory.write("fact/melanie/pottery.md", "Melanie took a pottery class with her kids.", title="Pottery")

        assert [r.path for r in memory.search("What did Caroline research?")] == ["fact/caroline/adoption.md"]
        assert DEEP not in [r.path for r in memory.search("research protocol learning memory")]
        # Asked for skills: by type, by folder, and by discovery's skills part.
        assert DEEP in [r.path for r in memory.search("research protocol learning", types=["skill"])]
        assert DEEP in [r.path for r in memory.search("research protocol learning", path_prefix="skill/meta")]
        assert "Deep Learning Protocol" in discover(memory, "learn this research protocol deeply")
        assert DEEP in [info.path for info in memory.glob("skill/**")]

    result = CliRunner().invoke(app, ["search", "What did Caroline research?", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    assert "deep-learning" not in result.output
