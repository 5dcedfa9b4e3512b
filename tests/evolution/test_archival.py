"""Archival: the seed's rules and edge cases; archived entries leave search but stay readable; unarchive and undo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.evolution.archival import ArchivalJob, archival_reason, unarchive
from memdir.evolution.runner import run_job
from memdir.optimization.journal import undo_last
from tests.evolution.builders import NOW, facts

SETTINGS = Settings()


@pytest.mark.parametrize(
    ("kwargs", "archived"),
    [
        ({"age_days": 181, "reads": 0}, True),  # never read in 180+ days
        ({"age_days": 179, "reads": 0}, False),
        ({"age_days": 400, "reads": 2, "unread_days": 91, "importance": 2.9}, True),  # < 3, unread 90+ days
        ({"age_days": 400, "reads": 2, "unread_days": 89, "importance": 2.9}, False),
        ({"age_days": 400, "reads": 2, "unread_days": 31, "importance": 1.9}, True),  # < 2, unread 30+ days
        ({"age_days": 400, "reads": 2, "unread_days": 29, "importance": 1.9}, False),
        ({"age_days": 400, "reads": 2, "unread_days": 91, "importance": 3.0}, False),  # important enough
        # the seed's edge cases
        ({"age_days": 400, "reads": 9, "unread_days": 1, "importance": 1.0}, False),  # read yesterday, very low importance
        ({"age_days": 900, "reads": 0, "importance": 9.5}, False),  # never read, very important
        ({"age_days": 900, "reads": 0, "importance": 7.0}, False),  # importance >= 7 is never archived
        ({"age_days": 900, "reads": 0, "importance": 6.9}, True),
        ({"age_days": 900, "reads": 0, "hidden": True}, False),  # archived or superseded already
    ],
)
def test_the_archival_rules(kwargs, archived):
    assert (archival_reason(facts(**kwargs), SETTINGS, NOW) is not None) is archived


def test_an_entry_unarchived_by_hand_counts_as_used():
    assert archival_reason(facts(age_days=900, reads=0), SETTINGS, NOW, restored=NOW - timedelta(days=10)) is None


def test_the_thresholds_are_settings():
    settings = Settings(archival_unread_days=10.0, archival_protected_importance=9.0)
    assert archival_reason(facts(age_days=11, reads=0, importance=8), settings, NOW) is not None


@pytest.fixture
def store(memory):
    memory.write("concept/forgotten.md", "Nobody ever reads about quasar brewing.", title="Quasar brewing")
    memory.write("concept/vital.md", "Production database password rotation: quasar keys every quarter.",
                 title="Key rotation", metadata={"importance": 9})
    memory.write("concept/daily.md", "The quasar standup happens at nine.", title="Standup")
    memory.read("concept/daily.md", count_hit=True)
    return memory


def hidden(memory, path: str) -> bool:
    """Archived or superseded, as the derived index tells search and discovery."""
    return memory.index.rank_facts([path])[path].hidden


def later(days: float) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def test_archived_entries_leave_search_but_stay_readable_and_unarchive_restores_them(store):
    before = store.read("concept/forgotten.md")
    record = run_job(store, ArchivalJob(), now=later(200))

    assert (record.status, record.processed, record.changed) == ("complete", 3, 1)  # daily: read once, importance 5
    archived = store.read("concept/forgotten.md")
    assert archived.metadata.archived_at is not None
    assert (archived.content, archived.hits, archived.updated_at) == (before.content, before.hits, before.updated_at)
    assert store.read("concept/vital.md").metadata.archived_at is None  # importance 9: never archived
    assert hidden(store, "concept/forgotten.md") and not hidden(store, "concept/vital.md")  # what search leaves out

    unarchive(store, "concept/forgotten.md", now=later(201))
    assert not hidden(store, "concept/forgotten.md")
    again = run_job(store, ArchivalJob(), now=later(210))  # the restore counts as a use
    assert store.read("concept/forgotten.md").metadata.archived_at is None and again.changed == 0


def test_unarchive_refuses_an_entry_that_is_not_archived(store):
    with pytest.raises(InputValidationError, match="is not archived"):
        unarchive(store, "concept/vital.md", now=later(1))


def test_an_archival_run_is_undone_as_a_whole(store):
    def snapshot():
        return {info.path: store.read(info.path).metadata.to_yaml_dict() for info in store.list(include_virtual=False)}

    before = snapshot()
    run_job(store, ArchivalJob(), now=later(200))
    assert snapshot() != before
    result = undo_last(store, actions=("archival",))
    assert result.restored == ["concept/forgotten.md"]
    assert snapshot() == before


def test_a_dry_run_archives_nothing(store):
    record = run_job(store, ArchivalJob(), dry_run=True, now=later(200))
    assert record.changed == 1 and record.details == ["memory://concept/forgotten.md: archived (never read in 200 days)"]
    assert all(store.read(info.path).metadata.archived_at is None for info in store.list(include_virtual=False))
    with pytest.raises(InputValidationError, match="no live archival run"):
        undo_last(store, actions=("archival",))


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    """Run against the directory store and PostgreSQL."""
    return store_kind
