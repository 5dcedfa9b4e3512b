"""Two servers on one PostgreSQL store keep one evolution history: job runs and importance changes
are rows of the store, so either server (and `memdir evolve --history`) sees what the other did."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.evolution.history import read_runs
from memdir.evolution.importance import ImportanceJob
from memdir.evolution.runner import run_job
from memdir.memory import Memory
from memdir.storage.evolution_records import read_importance
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres


def test_a_second_server_sees_the_first_ones_runs_and_importance_history(pg_url, tmp_path):
    first = Memory.open(Settings(root=tmp_path / "first", store=pg_url), embedder=FakeEmbedder())
    second = Memory.open(Settings(root=tmp_path / "second", store=pg_url), embedder=FakeEmbedder())
    try:
        first.write("concept/old.md", "Written once and never read again.", title="Old")
        record = run_job(first, ImportanceJob(), now=datetime.now(UTC) + timedelta(days=200))
        assert read_runs(second.adapter.records) == [record.__class__(**{**record.to_json(), "details": []})]
        history = read_importance(second.adapter.records)
        assert [(change.path, change.new) for change in history] == [("concept/old.md", second.importance("concept/old.md"))]
    finally:
        first.close()
        second.close()
    assert not (tmp_path / "first" / "evolution").exists()  # nothing of it in either machine's folder
    shown = CliRunner().invoke(app, ["evolve", "--history", "--json", "--root", str(tmp_path / "third")],
                               env={"MEMDIR_STORE": pg_url})
    assert shown.exit_code == 0, shown.output
    assert [run["job"] for run in json.loads(shown.output)] == ["importance"]
