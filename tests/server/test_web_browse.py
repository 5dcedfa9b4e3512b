"""What the web view reads: pages of entries, one entry, its link neighbourhood (typed links too)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.identity import Actor, Role
from memdir.server import web_browse as browse
from memdir.server.web_graph import HEIGHT, WIDTH, layout

pytestmark = pytest.mark.usefixtures("store_kind")  # against both stores, as the tools' tests


@pytest.fixture
def linked(memory):
    memory.write("concept/a.md", "A", title="A", metadata={"related": ["fact/b.md", "fact/gone.md"],
                                                           "links": [{"target": "skill/c.md", "kind": "extends"}]})
    memory.write("fact/b.md", "B", title="B", metadata={"related": ["concept/a.md", "fact/d.md"]})
    memory.write("skill/c.md", "C", title="C")
    memory.write("fact/d.md", "D", title="D")
    return memory


def paths(listing: browse.Listing) -> list[str]:
    return [row.info.path for row in listing.rows]


def test_entries_come_in_pages_with_the_folders_to_browse(linked, store_kind):
    first = browse.list_entries(linked, page=1, page_size=2)
    assert paths(first) == ["concept/a.md", "fact/b.md"]
    if store_kind == "postgres":  # it reads the pages up to the one shown, and counts what it read
        assert (first.total, first.pages) == (None, None)
        second = browse.list_entries(linked, page=2, page_size=2)
        assert paths(second) == ["fact/d.md", "skill/c.md"] and (second.total, second.pages) == (4, 2)
        assert {"concept", "fact", "skill"} <= set(first.folders)
    else:
        assert (first.total, first.pages) == (4, 2)  # the entries the store holds (as health counts them)
        assert first.folders == ["concept", "fact", "skill"] and first.types == ["concept", "fact", "skill"]
    assert paths(browse.list_entries(linked, "fact")) == ["fact/b.md", "fact/d.md"]
    with pytest.raises(InputValidationError):
        browse.list_entries(linked, page=0)
    with pytest.raises(InputValidationError):
        browse.list_entries(linked, sort="size")


def test_entries_are_browsed_by_type_tag_and_recency(memory, store_kind):
    for number, (path, tags) in enumerate([("fact/old.md", ["ops"]), ("fact/new.md", ["ops", "db"]),
                                           ("concept/mid.md", ["db"])]):
        memory.write(path, path, title=path, metadata={"tags": tags},
                     updated_at=datetime(2026, 1, 1 + (number * 5) % 7, tzinfo=UTC))
    assert paths(browse.list_entries(memory, type="fact")) == ["fact/new.md", "fact/old.md"]
    tagged = browse.list_entries(memory, tag="db")
    assert paths(tagged) == ["concept/mid.md", "fact/new.md"]
    assert [row.tags for row in tagged.rows] == [("db",), ("ops", "db")]
    # the tags of every entry in view, or of the page shown where the store reads only that page
    assert tagged.tags == ([("db", 2), ("ops", 1)] if store_kind == "postgres" else [("db", 2), ("ops", 2)])
    assert paths(browse.list_entries(memory, sort="recent")) == ["fact/new.md", "concept/mid.md", "fact/old.md"]


def test_a_role_sees_in_listings_and_search_what_it_sees_over_mcp(memory):
    memory.write("fact/bug.md", "The login page crashes on empty passwords.", title="Login bug",
                 metadata={"kind": "bug", "visible_to": ["reviewer"]})
    memory.write("fact/plan.md", "The login page roadmap for next quarter.", title="Plan",
                 metadata={"kind": "architecture", "visible_to": ["orchestrator"]})
    with memory.acting_as(Actor("rita", Role.REVIEWER)):
        assert paths(browse.list_entries(memory)) == ["fact/bug.md"]
        found = browse.search_entries(memory, "login page", floor=0.0)
        assert [hit.result.path for hit in found.hits] == ["fact/bug.md"]
    assert paths(browse.list_entries(memory)) == ["fact/bug.md", "fact/plan.md"]  # no role: everything


def test_search_shows_the_best_line_and_leaves_out_what_is_below_the_floor(memory):
    memory.write("fact/deploy.md", "# Deploys\n\nWe ship on Tuesdays.\nRollbacks use the previous image tag.",
                 title="Deploys")
    memory.write("fact/lunch.md", "Lunch is at noon on Tuesdays.", title="Lunch")
    page = browse.search_entries(memory, "rollback image", floor=0.2)
    assert [hit.result.path for hit in page.hits] == ["fact/deploy.md"]
    assert page.hits[0].line == "Rollbacks use the previous image tag."
    everything = browse.search_entries(memory, "rollback image tuesdays", floor=0.0)
    assert everything.below_floor == 0 and len(everything.hits) == 2
    with pytest.raises(InputValidationError):
        browse.search_entries(memory, "x", floor=2)


def test_an_entry_knows_what_links_to_it(linked):
    page = browse.read_entry(linked, "concept/a")
    assert page.path == "concept/a.md" and page.linked_from == ["fact/b.md"]
    assert page.metadata["related"] == ["fact/b.md", "fact/gone.md"]


def test_the_neighbourhood_follows_typed_and_plain_links_both_ways(linked):
    one = browse.neighbourhood(linked, "concept/a.md")
    assert one.distance == {"concept/a.md": 0, "fact/b.md": 1, "fact/gone.md": 1, "skill/c.md": 1}
    assert ("concept/a.md", "skill/c.md", "extends") in one.edges
    assert ("fact/b.md", "concept/a.md", "references") in one.edges
    assert one.missing == {"fact/gone.md"}
    two = browse.neighbourhood(linked, "concept/a.md", depth=2)
    assert two.distance["fact/d.md"] == 2
    capped = browse.neighbourhood(linked, "concept/a.md", depth=2, limit=3)
    assert len(capped.distance) == 3 and capped.truncated


def test_the_picture_fits_the_canvas_and_draws_every_link(linked):
    picture = layout(browse.neighbourhood(linked, "concept/a.md", depth=2))
    assert len(picture.nodes) == 5 and len(picture.edges) == 5
    for node in picture.nodes:
        assert 0 < node.x < WIDTH and 0 < node.y < HEIGHT
    assert ("extends", "#2f8f4e") in picture.kinds
    centre = next(node for node in picture.nodes if node.distance == 0)
    assert (centre.x, centre.y) == (WIDTH / 2, HEIGHT / 2)


def test_a_picture_one_link_deep_draws_on_a_smaller_canvas(linked):
    near, far = layout(browse.neighbourhood(linked, "concept/a.md")), layout(browse.neighbourhood(linked, "concept/a.md", depth=2))
    assert (far.width, far.height) == (WIDTH, HEIGHT) and near.width < WIDTH and near.height < HEIGHT
    for node in near.nodes:
        assert 0 < node.x < near.width and 0 < node.y + 26 < near.height  # labels inside too
