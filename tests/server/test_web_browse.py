"""What the web view reads: pages of entries, one entry, its link neighbourhood (typed links too)."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError
from memdir.server.web_graph import HEIGHT, WIDTH, layout
from memdir.server import web_browse as browse

pytestmark = pytest.mark.usefixtures("store_kind")  # against both stores, as the tools' tests


@pytest.fixture
def linked(memory):
    memory.write("concept/a.md", "A", title="A", metadata={"related": ["fact/b.md", "fact/gone.md"],
                                                           "links": [{"target": "skill/c.md", "kind": "extends"}]})
    memory.write("fact/b.md", "B", title="B", metadata={"related": ["concept/a.md", "fact/d.md"]})
    memory.write("skill/c.md", "C", title="C")
    memory.write("fact/d.md", "D", title="D")
    return memory


def test_entries_come_in_pages_with_the_folders_to_browse(linked):
    first = browse.list_entries(linked, page=1, page_size=2)
    assert [info.path for info in first.entries] == ["concept/a.md", "fact/b.md"]
    assert (first.total, first.pages) == (5, 3)  # with the built-in skill
    assert first.folders == ["concept", "fact", "skill"]
    assert [info.path for info in browse.list_entries(linked, "fact").entries] == ["fact/b.md", "fact/d.md"]
    with pytest.raises(InputValidationError):
        browse.list_entries(linked, page=0)


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
