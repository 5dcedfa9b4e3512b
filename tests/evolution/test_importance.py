"""Importance recalibration: the seed's formula, its limits and its edge cases, and the job over a real store."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.settings import Settings
from memdir.evolution.history import read_runs
from memdir.evolution.importance import ImportanceJob, recalibrated
from memdir.evolution.runner import run_job
from memdir.storage.evolution_records import read_importance
from tests.evolution.builders import NOW, facts

SETTINGS = Settings()


def score(**kwargs) -> float:
    return recalibrated(facts(**kwargs), SETTINGS, NOW)[0]


def test_a_much_read_well_linked_entry_gains_importance():
    # 0.3 x 5 + 0.4 x access 10 (100 reads in 10 days, held to 10) + 0.2 x recency 10 + 0.1 x links (2x3 + 3)/3
    assert score(age_days=10, reads=100, unread_days=0, inbound=3, outbound=3) == pytest.approx(7.8)


def test_never_read_uses_only_base_recency_and_links_with_their_weights_rescaled():
    # (0.3 x 5 + 0.2 x 10 + 0.1 x 0) / 0.6: no access term at all, not an access of 3
    assert score(age_days=0, reads=0) == pytest.approx(round((1.5 + 2.0) / 0.6, 2))
    assert "never read" in recalibrated(facts(reads=0), SETTINGS, NOW)[1]


def test_created_today_does_not_divide_by_zero():
    # age 0 counts as one day: 3 reads today is 30 reads a day, held to 10
    assert score(age_days=0, reads=3, unread_days=0) == pytest.approx(0.3 * 5 + 0.4 * 10 + 0.2 * 10)


def test_a_very_old_entry_loses_its_recency():
    new, reason = recalibrated(facts(age_days=1000, reads=0), SETTINGS, NOW)
    assert new == pytest.approx(1.5 / 0.6)  # recency 10 x 0.5^(1000/30) is ~0
    assert "recency 0.00" in reason


def test_no_links_means_a_link_factor_of_zero():
    with_links = score(age_days=30, reads=0, inbound=6, outbound=0)
    without = score(age_days=30, reads=0)
    assert with_links - without == pytest.approx(0.1 * 4 / 0.6, abs=0.01)  # (2 x 6 + 0) / 3 = 4


def test_the_access_factor_has_a_floor_of_three():
    # one read in a year: 0.03 a day x 10, held to 3
    expected = 0.3 * 5 + 0.4 * 3 + 0.2 * 10 * 0.5 ** (365 / 30)
    assert score(age_days=365, reads=1, unread_days=365) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"importance": 10, "age_days": 1, "reads": 500, "unread_days": 0, "inbound": 40, "outbound": 40}, 10.0),
        ({"importance": 1, "age_days": 5000, "reads": 0}, 1.0),  # 0.3/0.6 = 0.5, held to 1
    ],
)
def test_importance_stays_within_one_and_ten(kwargs, expected):
    assert score(**kwargs) == expected


def test_weights_and_ranges_are_settings():
    settings = Settings(importance_weights=(1.0, 0.0, 0.0, 0.0))
    assert recalibrated(facts(importance=8, reads=3, unread_days=1), settings, NOW)[0] == 8.0


# --------------------------------------------------------------------------- the job


def test_the_job_stores_changes_of_at_least_one_and_keeps_their_history(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old")
    memory.write("concept/used.md", "Read a few times.", title="Used")
    for _ in range(5):
        memory.read("concept/used.md", count_hit=True)
    memory.write("concept/fresh.md", "Just written.", title="Fresh")
    later = datetime.now(UTC) + timedelta(days=200)

    record = run_job(memory, ImportanceJob(), now=later)

    assert (record.status, record.processed, record.changed) == ("complete", 3, 3)
    assert memory.importance("concept/old.md") == pytest.approx((1.5 + 0.2 * 10 * 0.5 ** (200 / 30)) / 0.6, abs=0.01)
    old = memory.read("concept/old.md")
    assert old.metadata.importance is None  # what the entry states is left as it is
    assert old.hits == 0 and old.content == "Written once and never read again."
    history = read_importance(memory.adapter.records)
    assert {change.path for change in history} == {"concept/old.md", "concept/used.md", "concept/fresh.md"}
    used = next(change for change in history if change.path == "concept/used.md")
    assert (used.old, used.new, used.stated) == (5.0, memory.importance("concept/used.md"), None)
    assert "5 reads" in used.reason and used.at == later.isoformat()
    assert read_runs(memory.adapter.records)[-1] == record


@pytest.mark.directory_store
def test_the_entries_files_are_not_rewritten(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old", metadata={"importance": 8})
    sidecar = memory.root / "concept" / "old.yml"
    before = (sidecar.read_bytes(), sidecar.stat().st_mtime_ns)
    assert run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300)).changed == 1
    assert (sidecar.read_bytes(), sidecar.stat().st_mtime_ns) == before
    assert memory.importance("concept/old.md") < 7


def test_the_next_run_builds_on_the_recalibrated_value(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old", metadata={"importance": 9})
    first = run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300))
    once = memory.importance("concept/old.md")
    second = run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300))
    assert first.changed == second.changed == 1
    assert memory.importance("concept/old.md") < once - 1  # 0.3 of the lowered base, not of 9 again
    assert [(change.old, change.stated) for change in read_importance(memory.adapter.records)] == [(9.0, 9.0), (once, 9.0)]


def test_an_importance_set_later_overrides_the_recalibration(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old", metadata={"importance": 6})
    run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300))
    assert memory.importance("concept/old.md") < 5
    memory.update_metadata("concept/old.md", {"importance": 9})  # a person says it matters
    assert memory.importance("concept/old.md") == 9
    assert memory.index.most_important(8, 5) == ["concept/old.md"]
    memory.update_metadata("concept/old.md", {"importance": 6})
    assert memory.importance("concept/old.md") < 5  # stating 6 again: the recalibration made from 6 holds again


def test_a_rewritten_entry_keeps_it_and_a_deleted_one_drops_it(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old")
    run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300))
    lowered = memory.importance("concept/old.md")
    memory.write("concept/old.md", "Written again.", title="Old")
    assert memory.importance("concept/old.md") == lowered  # it states what it stated: nothing new said
    memory.delete("concept/old.md")
    memory.write("concept/old.md", "A new entry at the same path.", title="New")
    assert memory.importance("concept/old.md") is None


@pytest.mark.directory_store
def test_a_rebuilt_index_replays_the_history(tmp_path):
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("concept/old.md", "Written once and never read again.", title="Old")
        memory.write("concept/vital.md", "Set by hand afterwards.", title="Vital")
        run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=300))
        lowered = memory.importance("concept/old.md")
        memory.update_metadata("concept/vital.md", {"importance": 10})
    shutil.rmtree(settings.storage.root / ".memdir")  # deleting .memdir/ loses nothing
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        assert memory.importance("concept/old.md") == lowered
        assert memory.importance("concept/vital.md") == 10


@pytest.mark.directory_store
def test_a_history_memdir_cannot_read_is_not_replayed_and_the_root_opens(tmp_path, caplog):
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("concept/old.md", "Written once.", title="Old")
    shutil.rmtree(settings.storage.root / ".memdir")
    (settings.storage.root / "evolution" / "importance.jsonl").mkdir(parents=True)  # no regular file
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        assert memory.importance("concept/old.md") is None
    assert "not restored from the importance history" in caplog.text


@pytest.mark.directory_store
def test_torn_and_hand_edited_history_lines_are_skipped_in_a_replay(tmp_path):
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("concept/old.md", "Written once.", title="Old")
    shutil.rmtree(settings.storage.root / ".memdir")
    (settings.storage.root / "evolution").mkdir()
    (settings.storage.root / "evolution" / "importance.jsonl").write_text(
        '{"path": "concept/old.md", "at": "2026-01-01", "old": 5, "new": 2.5, "reason": "r", "stated": null}\n'
        '{"path": "concept/old.md", "new": 9}\n'  # no 'at', 'old' or 'reason': no record
        '{"path": "concept/old.md", "at": "2026-01-02", "old": 2.5, "new": "high", "reason": "", "stated": null}\n'
        '{"path": "concept/old.md", "at": "2026-01-02", "ol'  # torn by a kill
    )
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        assert memory.importance("concept/old.md") == 2.5


def test_a_change_below_one_is_not_applied(memory):
    memory.write("concept/fresh.md", "Just written.", title="Fresh")
    record = run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=1))
    assert (record.processed, record.changed) == (1, 0)  # 5 -> 5.76: not enough to store
    assert memory.importance("concept/fresh.md") is None
    assert read_importance(memory.adapter.records) == []


def test_a_dry_run_changes_nothing_and_says_what_it_would(memory):
    memory.write("concept/old.md", "Written once and never read again.", title="Old")
    record = run_job(memory, ImportanceJob(), dry_run=True, now=datetime.now(UTC) + timedelta(days=300))
    assert record.dry_run and record.changed == 1
    assert record.details[0].startswith("memory://concept/old.md: importance 5 → 2.5")
    assert memory.importance("concept/old.md") is None
    assert read_importance(memory.adapter.records) == []


def test_episodes_keep_their_own_importance(memory):
    memory.write("experience/episodes/2026-01-01/fix-1234abcd.md", "An episode.", title="Fix",
                 metadata={"type": "experience", "episode": "Fix", "importance": 0.8})
    record = run_job(memory, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=400))
    assert record.changed == 0
    assert memory.importance("experience/episodes/2026-01-01/fix-1234abcd.md") == 0.8


@pytest.mark.parametrize(("field", "value"), [("importance_weights", (0.5, 0.5, 0.5, 0.5)),
                                              ("importance_weights", (1.2, -0.2, 0.0, 0.0)),
                                              ("link_decay_factors", (0.25, 0.5, 1.5))])
def test_weights_that_do_not_sum_to_one_and_growing_decay_are_refused(field, value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="sum to 1|only weakens"):
        Settings(**{field: value})


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    """Run against the directory store and PostgreSQL."""
    return store_kind
