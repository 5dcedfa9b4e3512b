"""Link decay: the seed's factors and edge cases (user links, never traversed, made today, orphans, two-way links)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.links import Link
from memdir.core.settings import Settings
from memdir.evolution.decay import LinkDecayJob, decay_factor
from memdir.evolution.runner import run_job
from tests.evolution.builders import NOW

SETTINGS = Settings()


def link(*, made_days_ago: float, traversed_days_ago: float | None = None, origin: str = "system", strength: float = 0.8) -> Link:
    traversed = None if traversed_days_ago is None else NOW - timedelta(days=traversed_days_ago)
    return Link(target="concept/b.md", kind="references", strength=strength, origin=origin,
                created_at=NOW - timedelta(days=made_days_ago), traversed_at=traversed)


@pytest.mark.parametrize(
    ("made", "traversed", "factor"),
    [
        (400, 181, 0.25),  # untraversed for half a year
        (400, 91, 0.5),  # for three months
        (400, 31, 0.8),  # older than a year, untraversed for a month
        (300, 31, 1.0),  # untraversed for a month, but younger than a year
        (400, 29, 1.0),
        (0, None, 1.0),  # made today
        (200, None, 0.25),  # never traversed: counted from when it was made
        (100, None, 0.5),
    ],
)
def test_decay_factors(made, traversed, factor):
    made_link = link(made_days_ago=made, traversed_days_ago=traversed)
    assert decay_factor(made_link.created_at, made_link.traversed_at, SETTINGS, NOW) == factor


def test_the_factors_and_periods_are_settings():
    settings = Settings(link_decay_days=(20.0, 10.0, 5.0), link_decay_factors=(0.1, 0.2, 0.3))
    assert decay_factor(NOW - timedelta(days=15), None, settings, NOW) == 0.2


def linked_store(memory, links_of_a: list[dict]) -> None:
    memory.write("concept/b.md", "Entry B.", title="B")
    memory.write("concept/c.md", "Entry C.", title="C")
    memory.write("concept/a.md", "Entry A.", title="A", metadata={"links": links_of_a, "related": ["concept/c.md"]})


def iso(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()


def strengths(memory, path: str) -> dict[tuple[str, str], float]:
    return {(link.target, link.kind): link.strength for link in memory.read(path).metadata.links}


def test_system_links_decay_user_links_never_do(memory):
    linked_store(memory, [
        {"target": "concept/b.md", "kind": "references", "strength": 0.8, "origin": "system", "created_at": iso(400), "traversed_at": iso(100)},
        {"target": "concept/b.md", "kind": "extends", "strength": 0.8, "origin": "user", "created_at": iso(400), "traversed_at": iso(300)},
        {"target": "concept/c.md", "kind": "implements", "strength": 0.9, "origin": "system", "created_at": iso(1)},
    ])
    before = memory.read("concept/a.md")
    record = run_job(memory, LinkDecayJob())
    assert (record.processed, record.changed) == (1, 1)
    assert strengths(memory, "concept/a.md") == {
        ("concept/b.md", "references"): 0.4, ("concept/b.md", "extends"): 0.8, ("concept/c.md", "implements"): 0.9,
    }
    after = memory.read("concept/a.md")
    assert after.metadata.related == ["concept/c.md"]  # SwarmMemory's related paths are user links
    assert (after.content, after.updated_at, after.hits) == (before.content, before.updated_at, before.hits)
    assert after.embedding is not None and (after.embedding == before.embedding).all()  # not re-embedded


def test_a_link_below_the_threshold_is_removed(memory):
    linked_store(memory, [
        {"target": "concept/b.md", "kind": "references", "strength": 0.3, "origin": "system", "created_at": iso(400)},
    ])
    record = run_job(memory, LinkDecayJob())  # 0.3 x 0.25 < 0.1
    assert record.changed == 1 and "removed the references link" in record.details[0]
    assert strengths(memory, "concept/a.md") == {}
    assert memory.index.edges(["concept/b.md"]) == []  # and from the derived index's link table


def test_orphaned_links_are_removed_whoever_made_them(memory):
    linked_store(memory, [
        {"target": "concept/b.md", "kind": "extends", "strength": 1.0, "origin": "user", "created_at": iso(1)},
        {"target": "concept/c.md", "kind": "extends", "strength": 1.0, "origin": "user", "created_at": iso(1)},
    ])
    memory.delete("concept/b.md")  # a plain delete (not MemoryDelete, which removes links to it): the link is orphaned
    record = run_job(memory, LinkDecayJob())
    assert record.details == ["memory://concept/a.md: removed the orphaned extends link to memory://concept/b.md"]
    assert strengths(memory, "concept/a.md") == {("concept/c.md", "extends"): 1.0}


def test_two_way_links_decay_independently(memory):
    memory.write("concept/b.md", "Entry B.", title="B", metadata={"links": [
        {"target": "concept/a.md", "kind": "references", "strength": 0.6, "origin": "system", "created_at": iso(400), "traversed_at": iso(10)},
    ]})
    memory.write("concept/a.md", "Entry A.", title="A", metadata={"links": [
        {"target": "concept/b.md", "kind": "references", "strength": 0.6, "origin": "system", "created_at": iso(400), "traversed_at": iso(95)},
    ]})
    run_job(memory, LinkDecayJob())
    assert strengths(memory, "concept/a.md") == {("concept/b.md", "references"): 0.3}
    assert strengths(memory, "concept/b.md") == {("concept/a.md", "references"): 0.6}


def test_a_dry_run_changes_no_link(memory):
    linked_store(memory, [
        {"target": "concept/b.md", "kind": "references", "strength": 0.8, "origin": "system", "created_at": iso(400)},
    ])
    record = run_job(memory, LinkDecayJob(), dry_run=True)
    assert record.details == ["memory://concept/a.md: references link to memory://concept/b.md: 0.8 → 0.2"]
    assert strengths(memory, "concept/a.md") == {("concept/b.md", "references"): 0.8}


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    """Run against the directory store and PostgreSQL."""
    return store_kind
