"""Ownership (seed 003, Component 3.2, done for real): only the owner updates or deletes, unless admin."""

from __future__ import annotations

import pytest

from memdir.core.errors import NotOwnerError
from memdir.core.settings import Settings
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_write import memory_write
from memdir.tools.session import Session


def put(memory, path="fact/plan.md", content="The plan is to ship on Friday.", **metadata):
    return memory.write(path, content, title="Plan", metadata=metadata)


def test_a_new_entry_records_its_owner_and_the_roles_default_visibility(open_as):
    alice = open_as("alice", "orchestrator")
    entry = put(alice, kind="decision").entry
    assert entry.metadata.created_by == "alice"
    assert entry.metadata.modified_by == "alice"
    assert entry.metadata.visible_to == ["orchestrator", "optimizer"]  # seed 003's default_visibility
    assert entry.metadata.kind == "decision"


@pytest.mark.parametrize("role, visible", [
    ("orchestrator", ["orchestrator", "optimizer"]), ("optimizer", ["optimizer", "executor"]),
    ("reviewer", ["reviewer", "executor"]), ("executor", ["executor", "reviewer"]), (None, []),
])
def test_default_visibility_per_role(open_as, role, visible):
    assert put(open_as("a", role)).entry.metadata.visible_to == visible


def test_another_agent_may_neither_update_nor_delete_and_is_told_whose_it_is(store_kind, open_as):
    put(open_as("alice", "executor"))
    bob = open_as("bob", "reviewer")
    with pytest.raises(NotOwnerError) as refused:
        put(bob, content="Bob's plan.")
    assert refused.value.message == "memory://fact/plan.md belongs to alice; bob (reviewer) may not update it."
    assert "--admin" in refused.value.hint
    with pytest.raises(NotOwnerError, match="may not delete it"):
        bob.delete("fact/plan.md")
    assert bob.read("fact/plan.md").content == "The plan is to ship on Friday."  # reading is never refused
    assert [record.action for record in bob.audit.records()] == ["create"]  # refusals change nothing


def test_the_owner_changes_it_and_keeps_ownership(open_as):
    alice = open_as("alice", "executor")
    put(alice)
    entry = put(alice, content="Ship on Monday.").entry
    assert (entry.metadata.created_by, entry.metadata.modified_by) == ("alice", "alice")
    alice.delete("fact/plan.md")
    assert not alice.exists("fact/plan.md")


def test_an_admin_may_change_and_delete_and_the_override_is_audited(store_kind, open_as):
    put(open_as("alice", "executor"))
    root = open_as("carol", admin=True)
    entry = put(root, content="Corrected by the admin.").entry
    assert (entry.metadata.created_by, entry.metadata.modified_by) == ("alice", "carol")  # ownership stays
    root.delete("fact/plan.md")
    records = list(root.audit.records())
    assert [(r.action, r.agent, r.owner, r.admin) for r in records] == [
        ("create", "alice", "alice", False), ("update", "carol", "alice", True), ("delete", "carol", "alice", True),
    ]


def test_an_anonymous_caller_is_nobodys_owner(open_as):
    put(open_as("alice"))
    with pytest.raises(NotOwnerError, match="anonymous may not update"):
        put(open_as(None))


def test_entries_without_an_owner_may_be_changed_by_anyone_and_are_never_claimed(open_as):
    """The documented rule: ownerless entries (hand-written, anonymous, older) stay ownerless."""
    put(open_as(None))  # anonymous: no owner
    bob = open_as("bob", "executor")
    entry = put(bob, content="Bob edited it.").entry
    assert entry.metadata.created_by is None
    assert entry.metadata.modified_by == "bob"
    entry = put(open_as("dave"), content="Dave edited it.", created_by="dave").entry  # naming itself is no claim
    assert entry.metadata.created_by is None
    open_as("erin").delete("fact/plan.md")


def test_the_admin_flag_is_never_taken_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMDIR_ADMIN", "true")
    monkeypatch.setenv("ADMIN", "1")
    assert Settings().roles.admin is False
    (tmp_path / "memdir.toml").write_text("admin = true\n")  # the conftest points MEMDIR_CONFIG here
    (tmp_path / "memdir.toml").chmod(0o600)  # a privileged setting needs an owner-only file
    assert Settings().roles.admin is True


def test_tools_refuse_with_the_owner_named(open_as):
    put(open_as("alice", "executor"))
    bob = open_as("bob", "executor")
    with pytest.raises(NotOwnerError, match="belongs to alice"):
        memory_write(bob, Session(), "fact/plan.md", "mine now", "Plan", "fact", [], [], "d")
    with pytest.raises(NotOwnerError, match="belongs to alice"):
        memory_delete(bob, Session(), "fact/plan.md")


def test_a_stub_keeps_the_owner_of_the_entry_it_replaced_in_both_stores(store_kind, open_as):
    alice, bob = open_as("alice"), open_as("bob")
    put(alice, "fact/a.md")
    put(alice, "fact/b.md", content="The plan is to ship on Friday, for sure.")
    alice.write_stub("fact/b.md", "fact/a.md")
    with pytest.raises(NotOwnerError, match="belongs to alice"):
        memory_write(bob, Session(), "fact/b.md", "mine now", "Plan", "fact", [], [], "d")
    with pytest.raises(NotOwnerError, match="belongs to alice"):
        bob.delete("fact/b.md")
    assert alice.redirect_of("fact/b.md").target == "fact/a.md"
    assert [info.path for info in alice.list_stubs()] == ["fact/b.md"]
    assert "fact/b.md" not in [info.path for info in alice.list()]
    open_as("carol", admin=True).delete("fact/b.md")  # an admin may


def test_deleting_ones_own_entry_drops_the_links_others_hold_to_it(open_as):
    alice, bob = open_as("alice"), open_as("bob")
    put(alice, "fact/a.md")
    put(bob, "fact/b.md", related=["memory://fact/a.md"])
    assert alice.delete_and_unlink("fact/a.md") == ("fact/a.md", ["fact/b.md"])
    b = bob.read("fact/b.md")
    assert b.metadata.related == [] and b.metadata.created_by == "bob"
    assert [(r.action, r.path, r.agent, r.details) for r in alice.audit.records()][-2:] == [
        ("delete", "fact/a.md", "alice", {}), ("unlink", "fact/b.md", "alice", {"target": "fact/a.md"}),
    ]


def test_defrag_skips_a_merge_it_may_not_make_and_changes_nothing(open_as):
    from memdir.optimization.defragmenter import Defragmenter

    text = "The deploy script runs the migrations first and then restarts the web workers."
    alice, bob = open_as("alice"), open_as("bob")
    put(alice, "fact/deploy-a.md", text)
    put(bob, "fact/deploy-b.md", text + " ")
    report = Defragmenter(bob).run("merge_duplicates", dry_run=False, merge_strategy="combine")
    assert "belongs to" in report.markdown
    assert alice.read("fact/deploy-a.md").content == text
    assert bob.read("fact/deploy-b.md").content == text + " "
