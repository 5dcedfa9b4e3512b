"""The audit log: one record per change, with who, when, what and a short diff; `memdir audit` filters."""

from __future__ import annotations

import errno
import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core import files
from memdir.core.errors import DiskFullError, InputValidationError
from memdir.storage.audit_query import parse_since

runner = CliRunner()


def put(memory, path="fact/plan.md", content="Ship on Friday.", **metadata):
    return memory.write(path, content, title="Plan", metadata=metadata)


def test_create_update_and_delete_are_recorded_with_a_diff(open_as):
    alice = open_as("alice", "executor")
    put(alice, kind="bug")
    put(alice, content="Ship on Monday.", kind="bug")
    alice.delete("fact/plan.md")
    create, update, delete = alice.audit.records()
    assert (create.action, create.agent, create.role, create.path, create.owner) == (
        "create", "alice", "executor", "fact/plan.md", "alice")
    assert create.diff.splitlines()[:2] == ["--- /dev/null", "+++ fact/plan.md"]
    assert "+kind: bug" in create.diff and "+Ship on Friday." in create.diff
    assert update.action == "update"
    assert [line for line in update.diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-Ship on Friday.", "+Ship on Monday."]
    assert delete.action == "delete" and delete.diff.splitlines()[1] == "+++ /dev/null"
    assert "-Ship on Monday." in delete.diff
    assert create.time <= update.time <= delete.time
    month = alice.root / "audit" / f"{create.time:%Y-%m}.jsonl"
    assert len(month.read_text().splitlines()) == 3  # one JSON line per change, human-readable


@pytest.mark.parametrize("failing", ["index", "flush"])
def test_a_write_that_fails_after_its_audit_record_leaves_neither_the_change_nor_the_record(open_as, monkeypatch, failing):
    alice = open_as("alice")
    put(alice, content="Ship on Friday.")
    month = next((alice.root / "audit").iterdir())
    trail = month.read_bytes()

    def index_full(*args, **kwargs):
        raise DiskFullError(alice.root, "no room for the index row")

    def flush_fails(fd):
        raise OSError(errno.EIO, "I/O error")

    if failing == "index":
        monkeypatch.setattr(type(alice.index), "upsert", index_full)
    else:  # the record is written, then its flush fails
        monkeypatch.setattr(files, "_sync_data", flush_fails)
    with pytest.raises((DiskFullError, OSError)):
        put(alice, content="Ship on Monday.")
    monkeypatch.undo()
    assert month.read_bytes() == trail  # the record of the change that failed is cut off again
    assert alice.read("fact/plan.md").content == "Ship on Friday."
    assert [record.action for record in alice.audit.records()] == ["create"]
    put(alice, content="Ship on Sunday.")  # and the next change is recorded after the last whole line
    assert [record.action for record in alice.audit.records()] == ["create", "update"]


def test_a_long_diff_is_cut_to_the_setting(open_as):
    alice = open_as("alice", audit_diff_chars=200)
    put(alice, content="word " * 200)
    (record,) = alice.audit.records()
    assert len(record.diff) <= 200 + len("\n… (diff truncated)") and record.diff.endswith("(diff truncated)")


@pytest.mark.parametrize("label", ["archive", "unarchive", "supersede", "link", "unlink"])
def test_changes_made_under_an_action_label_are_recorded_as_that_action(open_as, label):
    """The API graph and evolution call: `with memory.action("archive"): memory.write(...)`."""
    alice = open_as("alice")
    put(alice)
    with alice.action(label, reason="test"):
        put(alice, content="Ship on Friday. (changed)")
    assert [(r.action, r.details) for r in alice.audit.records()] == [("create", {}), (label, {"reason": "test"})]


def test_an_unknown_action_label_is_a_programming_error(open_as):
    with pytest.raises(ValueError, match="unknown audit action"):
        with open_as("alice").action("frobnicate"):
            pass


def test_an_action_label_does_not_lift_the_ownership_check(open_as):
    from memdir.core.errors import NotOwnerError

    put(open_as("alice"))
    bob = open_as("bob")
    with pytest.raises(NotOwnerError, match="bob may not archive it"), bob.action("archive"):
        put(bob, content="archived by bob")


def test_merges_by_defrag_and_their_undo_are_recorded(open_as):
    from memdir.optimization.defragmenter import Defragmenter
    from memdir.optimization.journal import undo_last

    text = "The deploy script runs the migrations first and then restarts the web workers."
    alice = open_as("alice")
    put(alice, "fact/deploy-a.md", text)
    put(alice, "fact/deploy-b.md", text + " ")
    Defragmenter(alice).run("merge_duplicates", dry_run=False, merge_strategy="combine")
    undone = undo_last(alice)
    records = list(alice.audit.records())[2:]
    merge_a, merge_b = sorted(records[:2], key=lambda r: r.path)
    assert (merge_a.action, merge_b.action) == ("merge", "merge")
    assert (merge_a.details, merge_b.details) in [
        ({"into": "fact/deploy-b.md"}, {"merged": "fact/deploy-a.md"}),
        ({"merged": "fact/deploy-b.md"}, {"into": "fact/deploy-a.md"}),
    ]
    assert [(r.action, r.path, r.details) for r in records[2:]] == [
        ("undo", path, {"run": undone.run_id}) for path in [*undone.restored, *undone.removed]]
    assert undone.restored


def test_since_takes_dates_times_and_ages():
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    assert parse_since("2026-11-01") == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_since("2026-11-01T08:00+02:00") == datetime(2026, 11, 1, 6, tzinfo=UTC)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("30m", now) == now - timedelta(minutes=30)
    with pytest.raises(InputValidationError, match="neither a date nor an age"):
        parse_since("last tuesday")


def test_the_audit_command_filters_by_path_agent_and_time(open_as, tmp_path):
    alice, bob = open_as("alice", "executor"), open_as("bob", "reviewer")
    put(alice, "fact/a.md")
    put(bob, "fact/b.md")
    put(bob, "fact/b.md", content="Bob again.")
    root = ["--root", str(tmp_path / "memory")]

    listed = runner.invoke(app, ["audit", *root])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert len(lines) == 3 and "alice (executor)  create  memory://fact/a.md" in lines[0]
    by_bob = runner.invoke(app, ["audit", *root, "--agent", "bob", "--json"])
    assert [(r["agent"], r["action"], r["path"]) for r in json.loads(by_bob.output)] == [
        ("bob", "create", "fact/b.md"), ("bob", "update", "fact/b.md")]
    of_a = runner.invoke(app, ["audit", "memory://fact/a.md", *root, "--json"])
    assert [r["path"] for r in json.loads(of_a.output)] == ["fact/a.md"]
    assert runner.invoke(app, ["audit", *root, "--since", "1h", "--json"]).output.count('"action"') == 3
    future = runner.invoke(app, ["audit", *root, "--since", "2999-01-01"])
    assert future.output.strip() == "No changes recorded that match."
    with_diff = runner.invoke(app, ["audit", "fact/b.md", *root, "--agent", "bob", "--diff"])
    assert "    +Bob again." in with_diff.output
    bad = runner.invoke(app, ["audit", *root, "--since", "soon"])
    assert bad.exit_code == 1 and "neither a date nor an age" in bad.output


def test_a_torn_last_line_is_skipped(open_as):
    alice = open_as("alice")
    put(alice)
    (month,) = (alice.root / "audit").glob("*.jsonl")
    with month.open("a") as handle:
        handle.write('{"at": "2026-11-2')  # a writer killed mid-line
    assert [r.action for r in alice.audit.records()] == ["create"]


def test_the_audit_folder_is_reserved_and_never_holds_entries(open_as):
    from memdir.core.errors import InvalidPathError

    alice = open_as("alice")
    put(alice)
    with pytest.raises(InvalidPathError, match="reserved"):
        put(alice, "audit/notes.md")
    assert [info.path for info in alice.list(include_virtual=False)] == ["fact/plan.md"]


def test_a_link_planted_at_the_audit_folder_is_refused(open_as, tmp_path):
    from memdir.core.errors import UnsafeFileError

    outside = tmp_path / "outside"
    outside.mkdir()
    alice = open_as("alice")
    (alice.root / "audit").symlink_to(outside)
    with pytest.raises(UnsafeFileError):
        put(alice)
    assert not alice.exists("fact/plan.md") and list(outside.iterdir()) == []


def test_links_made_and_removed_are_recorded_and_only_the_owner_may_make_them(open_as):
    from memdir.core.errors import NotOwnerError

    alice, bob = open_as("alice"), open_as("bob")
    put(alice, "fact/a.md")
    put(bob, "fact/b.md")
    alice.link("fact/a.md", "fact/b.md", "extends", 0.8)
    with pytest.raises(NotOwnerError, match="bob may not link it"):
        bob.link("fact/a.md", "fact/b.md", "references")
    alice.record_traversal("fact/a.md", "fact/b.md")  # bookkeeping of reads: no audit record, owner unchanged
    with pytest.raises(NotOwnerError, match="bob may not unlink it"):
        bob.unlink("fact/a.md", "fact/b.md")
    alice.unlink("fact/a.md", "fact/b.md")
    records = [(r.action, r.path, r.agent, r.details) for r in alice.audit.records()][2:]
    assert records == [
        ("link", "fact/a.md", "alice", {"target": "fact/b.md", "kind": "extends"}),
        ("unlink", "fact/a.md", "alice", {"target": "fact/b.md"}),
    ]


def test_evolutions_metadata_changes_are_audited_as_what_they_are(open_as):
    from memdir.evolution.archival import unarchive

    alice = open_as("alice")
    put(alice, "fact/a.md")
    put(alice, "fact/b.md", "Ship on Friday, confirmed.")
    alice.update_metadata_many({"fact/a.md": {"importance": 8}})
    alice.update_metadata("fact/a.md", {"archived_at": "2026-11-26T00:00:00+00:00"})
    unarchive(alice, "fact/a.md", now=datetime(2026, 11, 27, tzinfo=UTC))
    alice.update_metadata_many({"fact/a.md": {"superseded_by": "fact/b.md"}})
    records = [(r.action, r.details) for r in alice.audit.records()][2:]
    assert [action for action, _ in records] == ["update", "archive", "unarchive", "supersede"]
    assert records[0][1] == {"fields": ["importance"]} and records[3][1] == {"fields": ["superseded_by"]}
    assert alice.read("fact/a.md").metadata.modified_by == "alice"


def test_a_job_run_as_another_agent_leaves_that_agents_entries_alone(open_as):
    from memdir.core.errors import NotOwnerError

    alice, bob = open_as("alice"), open_as("bob")
    put(alice, "fact/a.md")
    put(bob, "fact/b.md")
    written = bob.update_metadata_many({"fact/a.md": {"importance": 9}, "fact/b.md": {"importance": 9}})
    assert [entry.path for entry in written] == ["fact/b.md"]
    assert bob.read("fact/a.md").metadata.importance is None
    with pytest.raises(NotOwnerError, match="bob may not archive it"):
        bob.update_metadata("fact/a.md", {"archived_at": "2026-11-26T00:00:00+00:00"})
    admin = open_as("root", admin=True)
    assert [entry.path for entry in admin.update_metadata_many({"fact/a.md": {"importance": 9}})] == ["fact/a.md"]


def test_the_trail_lives_with_the_store_and_memdir_audit_reads_it(open_as, store_kind):
    """Directory store: ``audit/`` files of the root; PostgreSQL: the ``audit`` table, written in each
    change's transaction (many servers on many machines share one trail)."""
    alice = open_as("alice", "executor")
    put(alice, kind="bug")
    alice.update_metadata_many({"fact/plan.md": {"importance": 8}})
    alice.delete("fact/plan.md")
    records = list(alice.audit.records())
    assert [(r.action, r.agent, r.role) for r in records] == [("create", "alice", "executor")] + [
        ("update", "alice", "executor"), ("delete", "alice", "executor")]
    assert "+importance: 8" in records[1].diff and "Ship on Friday." not in records[1].diff  # the fields that changed
    assert (alice.root / "audit").exists() == (store_kind == "directory")
    assert [r.action for r in alice.audit.records(path="fact/plan.md", agent="alice", since=records[1].time)] == [
        "update", "delete"]
    listed = runner.invoke(app, ["audit", "fact/plan.md", "--root", str(alice.root), "--json"])  # the store from MEMDIR_STORE
    assert listed.exit_code == 0, listed.output
    assert [record["action"] for record in json.loads(listed.output)] == ["create", "update", "delete"]
