"""MemoryLink, MemoryUnlink and MemoryGraph as the model calls them, and traversal recording."""

from __future__ import annotations

import pytest

from memdir.core.errors import EntryNotFoundError, InputValidationError
from memdir.tools.memory_graph import memory_graph
from memdir.tools.memory_link import memory_link, memory_unlink
from memdir.tools.memory_read import memory_read


@pytest.fixture
def chain(memory):
    """a —extends→ b —contradicts→ c, and d references a (a system link)."""
    for name in "abcd":
        memory.write(f"concept/{name}", f"entry {name}", title=f"Entry {name.upper()}")
    memory_link(memory, "concept/a", "concept/b", "extends", 0.8)
    memory_link(memory, "concept/b", "concept/c", "contradicts", 0.5)
    memory.link("concept/d", "concept/a", "references", 0.3, origin="system")
    return memory


def test_graph_lists_links_by_hop(chain, session):
    assert memory_graph(chain, session, "concept/b", hops=2) == "\n".join([
        'memory://concept/b.md "Entry B": 3 linked entries within 2 hops, 3 links.',
        "Hop 1:",
        '- memory://concept/b.md "Entry B" —contradicts 0.50 (user)→ memory://concept/c.md "Entry C"',
        '- memory://concept/a.md "Entry A" —extends 0.80 (user)→ memory://concept/b.md "Entry B"',
        "Hop 2:",
        '- memory://concept/d.md "Entry D" —references 0.30 (system)→ memory://concept/a.md "Entry A"',
        "Read any of them with MemoryRead.",
    ])


def test_graph_filters_by_kind_and_says_when_there_is_nothing(chain, session):
    assert "—contradicts" in memory_graph(chain, session, "concept/b", kinds=["contradicts"])
    assert "extends" not in memory_graph(chain, session, "concept/b", kinds=["contradicts"])
    chain.write("concept/e", "alone", title="E")
    assert memory_graph(chain, session, "concept/e") == 'memory://concept/e.md "E" has no links.'


def test_graph_mermaid_diagram(chain, session):
    text = memory_graph(chain, session, "concept/a", hops=1, mermaid=True)
    diagram = text.split("\n\n", 1)[1]
    assert diagram == "\n".join([
        "```mermaid",
        "graph LR",
        '  n0(["Entry A"])',
        '  n1["Entry B"]',
        '  n2["Entry D"]',
        '  n0 -->|"extends 0.80"| n1',
        '  n2 -.->|"references 0.30"| n0',
        "```",
    ])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"hops": 4}, "hops must be a whole number from 1 to 3"),
    ({"hops": 0}, "hops must be a whole number from 1 to 3"),
    ({"kinds": ["opposes"]}, "is not a link kind"),
])
def test_graph_refuses_bad_arguments(chain, session, kwargs, message):
    with pytest.raises(InputValidationError, match=message):
        memory_graph(chain, session, "concept/a", **kwargs)


def test_graph_of_a_missing_entry(chain, session):
    with pytest.raises(EntryNotFoundError):
        memory_graph(chain, session, "concept/zzz")


def test_reading_a_neighbour_shown_by_the_graph_records_the_traversal(chain, session):
    memory_graph(chain, session, "concept/b", hops=2)
    memory_read(chain, session, "concept/c")
    [link] = chain.links("concept/b")
    assert link.traversed_at is not None
    assert chain.links("concept/a")[0].traversed_at is None  # not read
    memory_read(chain, session, "concept/d")  # two hops out: the link from a's side
    assert chain.links("concept/d")[0].traversed_at is not None


def test_reading_an_entry_from_a_related_reminder_records_the_traversal(chain, session):
    shown = memory_read(chain, session, "concept/a")
    assert '- memory://concept/b.md "Entry B" (extends)' in shown
    memory_read(chain, session, "concept/b")
    assert chain.links("concept/a")[0].traversed_at is not None


def test_a_plain_read_records_no_traversal(chain, session):
    memory_read(chain, session, "concept/b")
    assert chain.links("concept/a")[0].traversed_at is None


def test_link_and_unlink_messages(chain):
    assert memory_link(chain, "concept/c", "concept/a", "supersedes") == (
        "Linked memory://concept/c.md —supersedes 1.00→ memory://concept/a.md")
    assert memory_unlink(chain, "concept/c", "concept/a") == (
        "Removed 1 link from memory://concept/c.md to memory://concept/a.md: supersedes")
    with pytest.raises(InputValidationError, match="has no link to concept/a.md"):
        memory_unlink(chain, "concept/c", "concept/a")
