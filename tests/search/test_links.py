"""Typed links: the model, their .yml form, link/unlink through `Memory`, removal with a deleted
entry, the derived index's link table and the health analysis of links that lead nowhere."""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from memdir.core.errors import EntryNotFoundError, InputValidationError, InvalidPathError
from memdir.core.links import Link, make_link, parse_links
from memdir.optimization.defragmenter import Defragmenter
from memdir.storage.directory import index_db

pytestmark = pytest.mark.usefixtures("store_kind")  # the directory store, then PostgreSQL


@pytest.fixture
def linked(memory):
    for name in ("a", "b", "c"):
        memory.write(f"concept/{name}", f"entry {name} about graphs", title=name.upper())
    return memory


def sidecar(memory, path):
    return yaml.safe_load((memory.root / path.replace(".md", ".yml")).read_text())


# ------------------------------------------------------------------ the model

@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "extnds"}, "Did you mean 'extends'?"),
        ({"kind": "friend"}, "the kinds are extends, contradicts, implements, references, supersedes"),
        ({"strength": 1.5}, "from 0 to 1, not 1.5"),
        ({"strength": "strong"}, "from 0 to 1, not 'strong'"),
        ({"strength": float("nan")}, "from 0 to 1"),
        ({"origin": "robot"}, "'user' or 'system'"),
    ],
)
def test_bad_link_arguments_are_refused_with_what_was_wrong(kwargs, message):
    with pytest.raises(InputValidationError) as caught:
        make_link("concept/b", **kwargs)
    assert message in caught.value.message and caught.value.hint


def test_a_link_target_is_a_normalised_entry_path():
    assert make_link("memory://concept/b").target == "concept/b.md"
    with pytest.raises(InvalidPathError):
        make_link("../outside")


def test_parse_keeps_unreadable_items_apart():
    links, bad = parse_links(["concept/x", {"target": "concept/y", "kind": "extends", "strength": 0.5}, {"kind": "nope"}, 7])
    assert [(link.target, link.kind, link.strength) for link in links] == [
        ("concept/x.md", "references", 1.0), ("concept/y.md", "extends", 0.5)]
    assert bad == [{"kind": "nope"}, 7]


# ------------------------------------------------------------------ link / unlink

@pytest.mark.directory_store  # reads or edits the files
def test_link_is_written_to_the_yml_and_indexed(linked):
    link = linked.link("concept/a", "concept/b", "extends", 0.8)
    assert link == Link(target="concept/b.md", kind="extends", strength=0.8, origin="user", created_at=link.created_at)
    [stored] = sidecar(linked, "concept/a.md")["metadata"]["links"]
    assert stored == {"target": "concept/b.md", "kind": "extends", "strength": 0.8, "origin": "user",
                      "created_at": link.created_at.isoformat()}
    assert [(e.source, e.target, e.kind, e.strength, e.origin) for e in linked.index.edges(["concept/b.md"])] == [
        ("concept/a.md", "concept/b.md", "extends", 0.8, "user")]
    assert linked.read("concept/a").content == "entry a about graphs"  # content and vector untouched


def test_linking_again_by_the_same_kind_replaces_and_other_kinds_add(linked):
    linked.link("concept/a", "concept/b", "extends", 0.8)
    linked.link("concept/a", "concept/b", "extends", 0.3)
    linked.link("concept/a", "concept/b", "contradicts")
    assert [(link.kind, link.strength) for link in linked.links("concept/a")] == [("extends", 0.3), ("contradicts", 1.0)]


def test_link_refuses_a_missing_target_and_itself(linked):
    with pytest.raises(EntryNotFoundError):
        linked.link("concept/a", "concept/nowhere")
    with pytest.raises(InputValidationError, match="cannot link to itself"):
        linked.link("concept/a", "concept/a.md")
    assert linked.links("concept/a") == []


def test_related_paths_are_references_links(linked):
    linked.write("concept/d", "d", title="D", metadata={"related": ["memory://concept/a.md"]})
    [link] = linked.links("concept/d")
    assert (link.target, link.kind, link.origin, link.strength) == ("concept/a.md", "references", "user", 1.0)
    assert [e.source for e in linked.index.edges(["concept/a.md"])] == ["concept/d.md"]


def test_unlink_by_kind_or_all(linked):
    linked.link("concept/a", "concept/b", "extends")
    linked.link("concept/a", "concept/b", "implements")
    linked.write("concept/a", "entry a about graphs", title="A",
                 metadata={**linked.read("concept/a").metadata.model_dump(), "related": ["concept/b"]})
    assert [link.kind for link in linked.unlink("concept/a", "concept/b", "extends")] == ["extends"]
    assert sorted(link.kind for link in linked.unlink("concept/a", "concept/b")) == ["implements", "references"]
    assert linked.links("concept/a") == [] and linked.read("concept/a").metadata.related == []
    assert linked.index.edges(["concept/a.md"]) == []


def test_unlink_of_a_link_that_is_not_there_says_which_links_are(linked):
    linked.link("concept/a", "concept/b", "extends")
    with pytest.raises(InputValidationError) as caught:
        linked.unlink("concept/a", "concept/b", "supersedes")
    assert "no supersedes link to concept/b.md (its links: extends → concept/b.md)" in caught.value.message


def test_deleting_an_entry_removes_every_link_to_it(linked):
    linked.link("concept/a", "concept/c", "extends")
    linked.link("concept/b", "concept/c", "references", 0.4, origin="system")
    linked.link("concept/b", "concept/a", "implements")
    linked.write("concept/d", "d", title="D", metadata={"related": ["concept/c.md"]})
    deleted, changed = linked.delete_and_unlink("concept/c")
    assert deleted == "concept/c.md" and changed == ["concept/a.md", "concept/b.md", "concept/d.md"]
    assert linked.links("concept/a") == [] and [link.target for link in linked.links("concept/b")] == ["concept/a.md"]
    assert linked.read("concept/d").metadata.related == []
    assert linked.index.edges(["concept/c.md"]) == []


def test_record_traversal_stamps_the_link_either_way(linked):
    linked.link("concept/a", "concept/b", "extends")
    linked.write("concept/c", "c", title="C", metadata={"related": ["concept/b"]})
    assert linked.record_traversal("concept/b", "concept/a") == 1  # followed against its direction
    [link] = linked.links("concept/a")
    assert link.traversed_at is not None
    assert linked.record_traversal("concept/b", "concept/c") == 1  # a related path becomes a typed link
    [typed] = linked.read("concept/c").metadata.links
    assert typed.kind == "references" and typed.traversed_at is not None
    assert linked.read("concept/c").metadata.related == ["concept/b"]  # kept for SwarmMemory
    assert linked.record_traversal("concept/a", "concept/c") == 0


# ------------------------------------------------------------------ the index and the analysis

def test_schema_6_link_rows_become_references():
    # what a schema-6 index held: the first six migrations, one related link
    fresh = sqlite3.connect(":memory:", isolation_level=None)
    fresh.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    fresh.execute("BEGIN")
    for migration in index_db.MIGRATIONS[:6]:
        migration(fresh)
    fresh.execute("INSERT INTO entries(path, seq) VALUES ('concept/a.md', 1)")
    fresh.execute("INSERT INTO links(id, target) VALUES (1, 'concept/b.md')")
    for migration in index_db.MIGRATIONS[6:]:
        migration(fresh)
    fresh.execute("COMMIT")
    rows = fresh.execute("SELECT id, target, kind, strength, origin FROM links").fetchall()
    assert rows == [(1, "concept/b.md", "references", 1.0, "user")]
    assert {"importance", "hidden", "accessed_at"} <= {row[1] for row in fresh.execute("PRAGMA table_info(entries)")}


@pytest.mark.directory_store  # reads or edits the files
def test_analyze_reports_typed_links_that_lead_nowhere_and_unreadable_ones(linked):
    linked.link("concept/a", "concept/b", "extends")
    yml = linked.root / "concept" / "a.yml"
    data = yaml.safe_load(yml.read_text())
    data["metadata"]["links"].append({"target": "concept/gone.md", "kind": "contradicts"})
    data["metadata"]["links"].append({"target": "concept/b.md", "kind": "likes"})
    yml.write_text(yaml.safe_dump(data, sort_keys=False))  # by hand: no MemoryDelete cleaned these up
    linked.reconcile()
    report = Defragmenter(linked).run("analyze")
    assert report.data["dangling_links"] == {"concept/a.md": ["concept/gone.md (contradicts)"]}
    assert report.data["unreadable_links"] == {"concept/a.md": ["{'target': 'concept/b.md', 'kind': 'likes'}"]}
    assert "- memory://concept/a.md → memory://concept/gone.md (contradicts)" in report.markdown
    assert "## Unreadable Links" in report.markdown
    # reading the entry and writing it back keeps the unreadable item (nothing is lost)
    entry = linked.read("concept/a")
    linked.write("concept/a", entry.content, title=entry.title, metadata=entry.metadata)
    assert {"target": "concept/b.md", "kind": "likes"} in yaml.safe_load(yml.read_text())["metadata"]["links_unreadable"]
