"""Two servers on one PostgreSQL store keep one defrag history: the journals are rows of the store,
so a run made by one server (or process) is listed and undone by another, once."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.optimization.defragmenter import Defragmenter
from memdir.optimization.journal import list_runs, undo_last
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres

TEXT = "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects."


def server(url: str, folder) -> Memory:
    return Memory.open(Settings(root=folder, store=url), embedder=FakeEmbedder())


@pytest.fixture
def servers(pg_url, tmp_path):
    first, second = server(pg_url, tmp_path / "first"), server(pg_url, tmp_path / "second")
    first.write("concept/ruby/classes.md", TEXT, title="Ruby classes", metadata={"type": "concept", "tags": ["ruby"]})
    first.write("concept/ruby/classes-notes.md", TEXT + " Also modules.", title="Class notes", metadata={"type": "concept"})
    yield first, second
    first.close()
    second.close()


def test_a_run_made_by_one_server_is_undone_by_the_other_once(servers, tmp_path):
    first, second = servers
    report = Defragmenter(first).run("merge_duplicates", dry_run=False)
    merged = report.data["merges"][0]["merge"]
    assert second.redirect_of(merged) is not None
    assert [run.id for run in list_runs(second)] == [report.journal]

    result = undo_last(second)
    assert result.run_id == report.journal and merged in result.restored
    assert first.redirect_of(merged) is None and first.read(merged).content.startswith("Ruby classes")
    assert list_runs(first)[0].undone
    with pytest.raises(InputValidationError) as caught:
        undo_last(first)  # the history is one: the run is not undone twice
    assert "no live defrag run to undo" in caught.value.message
    assert not (tmp_path / "first" / ".memdir" / "defrag").exists()
    assert not (tmp_path / "second" / ".memdir" / "defrag").exists()


def test_cli_undo_on_another_machine_reverts_a_servers_run(servers, pg_url, tmp_path):
    first, _ = servers
    report = Defragmenter(first).run("merge_duplicates", dry_run=False)
    merged = report.data["merges"][0]["merge"]
    env = {"MEMDIR_EMBEDDINGS_ENABLED": "false"}
    undone = CliRunner().invoke(app, ["defrag", "--undo", "--store", pg_url, "--root", str(tmp_path / "third")], env=env)
    assert undone.exit_code == 0, undone.output
    assert report.journal in undone.output and f"restored memory://{merged}" in undone.output
    assert first.redirect_of(merged) is None
    again = CliRunner().invoke(app, ["defrag", "--undo", "--store", pg_url, "--root", str(tmp_path / "third")], env=env)
    assert again.exit_code == 1 and "no live defrag run to undo" in again.output
    assert "the store's database" in " ".join(again.output.split())
