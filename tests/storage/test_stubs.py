"""memdir.storage.stubs and the adapter's redirect handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir.core.errors import EntryNotFoundError, InputValidationError, RedirectError
from memdir.storage import stubs
from memdir.storage.base import Redirect, committed
from memdir.storage.directory.filesystem import FilesystemAdapter

# --------------------------------------------------------------------------- format / parse


def test_format_is_swarm_memorys() -> None:
    text = stubs.format_stub(Redirect("merged", "concept/x.md"))
    assert text == "# merged → concept/x.md\n\nThis entry was merged into concept/x.md\n"
    moved = stubs.format_stub(Redirect("moved", "fact/y.md"))
    assert moved.startswith("# moved → fact/y.md\n\n")


def test_format_refuses_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="merged, moved"):
        stubs.format_stub(Redirect("copied", "x.md"))


@pytest.mark.parametrize("kind", stubs.KINDS)
def test_parse_round_trips(kind: str) -> None:
    redirect = Redirect(kind, "concept/ruby/advanced-classes.md")
    assert stubs.parse_stub(stubs.format_stub(redirect)) == redirect


@pytest.mark.parametrize(
    "text",
    [
        "# merged -> concept/x.md\n",
        "# merged->concept/x\n",
        "# merged →   memory://concept/x.md   \r\n\r\nbody",
        "# merged → concept/x.md",
    ],
)
def test_parse_accepts_ascii_arrows_prefixes_and_spacing(text: str) -> None:
    assert stubs.parse_stub(text) == Redirect("merged", "concept/x.md")


@pytest.mark.parametrize(
    "text",
    ["# Merged → x.md", "# mergedness", "# moved-out", "hello\n# merged → x.md", "", "## merged → x.md"],
)
def test_parse_ignores_ordinary_content(text: str) -> None:
    assert stubs.parse_stub(text) is None
    assert not stubs.looks_like_stub(text.encode())


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("# merged\n\nbody", "names no target"),
        ("# merged →\n", "names no target"),
        ("# moved to Berlin\n", "names no target"),
        ("# merged → ../etc/passwd\n", "not a valid memory path"),
        ("# moved → /abs/path\n", "not a valid memory path"),
    ],
)
def test_parse_reports_malformed_stubs(text: str, detail: str) -> None:
    assert stubs.looks_like_stub(text.encode())
    with pytest.raises(RedirectError) as excinfo:
        stubs.parse_stub(text, "concept/old.md")
    assert detail in excinfo.value.message
    assert "memory://concept/old.md" in excinfo.value.message
    assert "MemoryDelete" in excinfo.value.hint


# --------------------------------------------------------------------------- follow


def chain_reader(links: dict[str, str | None]):
    """A read_redirect over a dict: path -> target (None = real entry, absent = missing)."""

    def read_redirect(path: str) -> Redirect | None:
        if path not in links:
            raise EntryNotFoundError(path)
        target = links[path]
        return None if target is None else Redirect("merged", target)

    return read_redirect


def linear_chain(hops: int) -> dict[str, str | None]:
    links: dict[str, str | None] = {f"s{i}.md": f"s{i + 1}.md" for i in range(hops)}
    links[f"s{hops}.md"] = None
    return links


def test_a_real_entry_is_its_own_destination() -> None:
    assert stubs.follow(chain_reader({"a.md": None}), "a.md") == "a.md"


@pytest.mark.parametrize("hops", [1, 2, 5])
def test_follows_up_to_max_hops(hops: int) -> None:
    assert stubs.follow(chain_reader(linear_chain(hops)), "s0.md") == f"s{hops}.md"


def test_more_than_max_hops_is_refused() -> None:
    with pytest.raises(RedirectError) as excinfo:
        stubs.follow(chain_reader(linear_chain(6)), "s0.md")
    assert "more than 5 times" in excinfo.value.message
    assert "memory://s0.md → memory://s1.md" in excinfo.value.message
    assert excinfo.value.hint


def test_max_hops_is_configurable() -> None:
    assert stubs.follow(chain_reader(linear_chain(2)), "s0.md", max_hops=2) == "s2.md"
    with pytest.raises(RedirectError):
        stubs.follow(chain_reader(linear_chain(2)), "s0.md", max_hops=1)


def test_a_cycle_is_named() -> None:
    reader = chain_reader({"start.md": "a.md", "a.md": "b.md", "b.md": "a.md"})
    with pytest.raises(RedirectError) as excinfo:
        stubs.follow(reader, "start.md")
    assert excinfo.value.message == "Circular redirect: memory://a.md → memory://b.md → memory://a.md."
    assert excinfo.value.path == "start.md"


def test_a_self_redirect_is_a_cycle() -> None:
    with pytest.raises(RedirectError, match="Circular redirect: memory://a.md → memory://a.md"):
        stubs.follow(chain_reader({"a.md": "a.md"}), "a.md")


def test_a_missing_target_is_reported() -> None:
    with pytest.raises(RedirectError) as excinfo:
        stubs.follow(chain_reader({"a.md": "gone.md"}), "a.md")
    assert excinfo.value.message == "memory://a.md was merged into memory://gone.md, which does not exist."
    assert "memory://a.md" in excinfo.value.hint


def test_a_missing_start_is_not_found_not_a_redirect_error() -> None:
    with pytest.raises(EntryNotFoundError):
        stubs.follow(chain_reader({}), "nothing.md")


# --------------------------------------------------------------------------- through the adapter


@pytest.fixture
def adapter(tmp_path: Path) -> FilesystemAdapter:
    return FilesystemAdapter(tmp_path / "memory")


def write(adapter: FilesystemAdapter, path: str, content: str = "body") -> None:
    committed(adapter.write(path, content, title=path, metadata=None, embedding=None))


def test_write_stub_replaces_the_entry_with_a_lone_md(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new")
    committed(adapter.write("concept/old", "old", title="Old", metadata={"type": "concept"}, embedding=[0.5] * 384))
    committed(adapter.write_stub("concept/old", Redirect("merged", "memory://concept/new")))
    root = adapter.root
    assert (root / "concept/old.md").read_text(encoding="utf-8") == stubs.format_stub(
        Redirect("merged", "concept/new.md")
    )
    assert not (root / "concept/old.yml").exists()
    assert not (root / "concept/old.emb").exists()


def test_reading_a_stub_follows_it(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new", "the content")
    committed(adapter.write_stub("concept/old", Redirect("moved", "concept/new.md")))
    entry = adapter.read_entry("concept/old")
    assert entry.path == "concept/new.md"
    assert entry.content == "the content"
    assert adapter.read_redirect("concept/old") == Redirect("moved", "concept/new.md")
    assert adapter.read_redirect("concept/new") is None


def test_follow_false_returns_the_stub_itself(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new")
    committed(adapter.write_stub("concept/old", Redirect("merged", "concept/new.md")))
    stub = adapter.read_entry("concept/old", follow=False)
    assert stub.path == "concept/old.md"
    assert stub.content.startswith("# merged → concept/new.md")


def test_hits_count_on_the_target_not_the_stub(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new")
    committed(adapter.write_stub("concept/old", Redirect("merged", "concept/new.md")))
    assert adapter.read_entry("concept/old", count_hit=True).hits == 1
    assert adapter.read_entry("concept/new").hits == 1
    adapter.read_entry("concept/old", count_hit=True, follow=False)
    assert not (adapter.root / "concept/old.yml").exists()


def test_chains_of_five_are_followed_six_are_not(adapter: FilesystemAdapter) -> None:
    write(adapter, "fact/end")
    previous = "fact/end.md"
    for i in range(6):
        committed(adapter.write_stub(f"fact/s{i}", Redirect("moved", previous)))
        previous = f"fact/s{i}.md"
    assert adapter.read_entry("fact/s4").path == "fact/end.md"  # five hops
    with pytest.raises(RedirectError, match="more than 5 times"):
        adapter.read_entry("fact/s5")


def test_adapter_reports_cycles_missing_targets_and_malformed_stubs(adapter: FilesystemAdapter) -> None:
    committed(adapter.write_stub("a", Redirect("merged", "b")))
    committed(adapter.write_stub("b", Redirect("merged", "a")))
    with pytest.raises(RedirectError, match="Circular redirect: memory://a.md → memory://b.md → memory://a.md"):
        adapter.read_entry("a")
    committed(adapter.write_stub("c", Redirect("moved", "nowhere")))
    with pytest.raises(RedirectError, match="memory://c.md was moved to memory://nowhere.md, which does not exist"):
        adapter.read_entry("c")
    (adapter.root / "broken.md").write_text("# merged → \n\nbody\n", encoding="utf-8")
    with pytest.raises(RedirectError, match="malformed"):
        adapter.read_entry("broken")
    assert adapter.read_entry("broken", follow=False).content.startswith("# merged")


def test_stub_to_itself_is_refused(adapter: FilesystemAdapter) -> None:
    with pytest.raises(InputValidationError, match="itself"):
        committed(adapter.write_stub("concept/x", Redirect("merged", "concept/x.md")))


def test_stub_kind_is_validated(adapter: FilesystemAdapter) -> None:
    with pytest.raises(InputValidationError, match="redirect kind"):
        committed(adapter.write_stub("concept/x", Redirect("copied", "concept/y.md")))


def test_stubs_are_listed_only_on_request(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new")
    committed(adapter.write_stub("concept/old", Redirect("merged", "concept/new.md")))
    (adapter.root / "concept/hand.md").write_text("# moved -> concept/new.md\n", encoding="utf-8")
    assert [i.path for i in adapter.iter_entries()] == ["concept/new.md"]
    assert [i.path for i in adapter.iter_entries(with_metadata=False)] == ["concept/new.md"]
    listed = {i.path: i for i in adapter.iter_entries(include_stubs=True)}
    assert sorted(listed) == ["concept/hand.md", "concept/new.md", "concept/old.md"]
    assert listed["concept/old.md"].title == "merged → concept/new.md"


def test_a_stub_can_be_deleted_and_overwritten(adapter: FilesystemAdapter) -> None:
    write(adapter, "concept/new")
    committed(adapter.write_stub("concept/old", Redirect("merged", "concept/new.md")))
    write(adapter, "concept/old", "real again")
    assert adapter.read_entry("concept/old").content == "real again"
    committed(adapter.write_stub("concept/old", Redirect("merged", "concept/new.md")))
    committed(adapter.delete("concept/old"))
    assert not adapter.exists("concept/old")
    assert adapter.exists("concept/new")


def test_read_redirect_of_a_missing_entry_is_not_found(adapter: FilesystemAdapter) -> None:
    with pytest.raises(EntryNotFoundError):
        adapter.read_redirect("concept/none")


def test_swarm_memorys_stubs_with_a_sidecar_saying_so_are_stubs(adapter: FilesystemAdapter) -> None:
    """SwarmMemory's defrag wrote stubs through its adapter: they carry a .yml with stub: true / redirect_to."""
    write(adapter, "concept/a", "The merged entry.")
    root = adapter.root
    (root / "concept" / "b.md").write_text("# merged → concept/a.md\n\nThis entry was merged into concept/a.md\n")
    (root / "concept" / "b.yml").write_text(
        "---\n:title: B\n:metadata:\n  stub: true\n  redirect_to: concept/a.md\n  reason: merged\n"
    )
    (root / "concept" / "note.md").write_text("# moved to Berlin\n\nA note, not a stub.\n")
    (root / "concept" / "note.yml").write_text("---\ntitle: Note\nmetadata:\n  type: concept\n")
    assert adapter.read_entry("concept/b").path == "concept/a.md"
    assert adapter.read_redirect("concept/b") == Redirect("merged", "concept/a.md")
    listed = [info.path for info in adapter.iter_entries()]
    assert "concept/b.md" not in listed and "concept/note.md" in listed
    assert adapter.read_entry("concept/note").content.startswith("# moved to Berlin")
