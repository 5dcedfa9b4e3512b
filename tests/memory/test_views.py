"""Role views (seed 003, Component 3.1): a role sees its kinds in search, glob, discovery and listings."""

from __future__ import annotations

import re

import pytest

from memdir.core.errors import InputValidationError
from memdir.core.identity import ROLE_KINDS, Actor, Labels, Role, parse_role
from memdir.tools.discovery import discover
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_search import memory_search
from memdir.tools.memory_write import memory_write
from memdir.tools.session import Session

# One entry per kind, written by an agent without a role (visible to every role), plus one without a kind.
NOTES = {
    "decision": "We decided to deploy the billing service with blue green releases.",
    "implementation": "The billing service deploy script lives in ops/deploy.sh and uses blue green releases.",
    "bug": "Blue green deploys of the billing service once dropped sessions; fixed by draining.",
    "architecture": "The billing service sits behind the gateway and deploys blue green.",
    None: "Billing service deploy notes: blue green, drain first.",
}


@pytest.fixture
def store(open_as):
    writer = open_as("writer")
    for kind, text in NOTES.items():
        memory_write(writer, Session(), f"fact/billing-{kind or 'plain'}.md", text, f"Billing {kind}", "fact",
                     ["billing", "deploy"], [], "ops", kind=kind)
    return open_as


def paths_in(text: str) -> set[str]:
    """The entries a tool's text names (``memory://path`` in listings, ```path``` in reminders)."""
    return set(re.findall(r"memory://([\w/.-]+\.md)", text)) | set(re.findall(r"`([\w/.-]+\.md)`", text))


@pytest.mark.parametrize("role", list(Role))
def test_search_shows_a_role_its_kinds_and_kindless_entries_and_everything_when_asked(store, role):
    memory = store("someone", role.value)
    shown = paths_in(memory_search(memory, "billing deploy blue green", top_k=10))
    expected = {f"fact/billing-{kind}.md" for kind in NOTES if kind in ROLE_KINDS[role]} | {"fact/billing-plain.md"}
    assert shown == expected
    everything = paths_in(memory_search(memory, "billing deploy blue green", top_k=10, view_all=True))
    assert everything == {f"fact/billing-{kind or 'plain'}.md" for kind in NOTES}


def test_glob_and_listings_follow_the_view(store_kind, store):
    reviewer = store("rita", "reviewer")  # bug, test, decision
    assert paths_in(memory_glob(reviewer, Session(), "fact/*")) == {
        "fact/billing-bug.md", "fact/billing-decision.md", "fact/billing-plain.md"}
    assert len(paths_in(memory_glob(reviewer, Session(), "fact/*", view_all=True))) == 5
    listed = [info.path for info in reviewer.list("fact", view=reviewer.actor)]
    assert listed == ["fact/billing-bug.md", "fact/billing-decision.md", "fact/billing-plain.md"]


def test_no_role_sees_everything(store):
    memory = store("nobody")
    assert len(paths_in(memory_search(memory, "billing deploy blue green", top_k=10))) == 5


def test_discovery_follows_the_view(store):
    executor = store("eve", "executor")  # implementation, pattern, bug
    shown = paths_in(discover(executor, "How do we deploy the billing service with blue green releases?"))
    assert shown and shown <= {"fact/billing-implementation.md", "fact/billing-bug.md", "fact/billing-plain.md"}
    everything = paths_in(discover(executor, "How do we deploy the billing service with blue green releases?",
                                   view_all=True))
    assert everything - shown  # something outside the view shows up when asked for all


def test_visible_to_narrows_a_view_and_the_author_always_sees_its_own(store_kind, open_as):
    orchestrator = open_as("olga", "orchestrator")  # creates visible to orchestrator + optimizer
    orchestrator.write("fact/roadmap.md", "Roadmap decision: billing first.", title="Roadmap",
                       metadata={"kind": "decision"})
    reviewer = open_as("rita", "reviewer")  # decision is a reviewer kind, but not visible to reviewers
    assert reviewer.search("roadmap billing decision", view=reviewer.actor) == []
    assert [r.path for r in reviewer.search("roadmap billing decision")] == ["fact/roadmap.md"]
    optimizer = open_as("otto", "optimizer")
    assert [r.path for r in optimizer.search("roadmap billing decision", view=optimizer.actor)] == ["fact/roadmap.md"]
    assert [r.path for r in orchestrator.search("roadmap billing decision", view=orchestrator.actor)] == ["fact/roadmap.md"]


def test_a_kindless_entry_of_another_role_is_in_every_view(store_kind, open_as):
    orchestrator = open_as("olga", "orchestrator")  # creates visible to orchestrator + optimizer
    memory_write(orchestrator, Session(), "fact/pay-plain.md", "Payments retry failed charges twice.", "Pay plain",
                 "fact", ["payments"], [], "payments")
    reviewer = open_as("rita", "reviewer")
    assert paths_in(memory_search(reviewer, "payments retry failed charges")) == {"fact/pay-plain.md"}
    assert paths_in(memory_glob(reviewer, Session(), "fact/*")) == {"fact/pay-plain.md"}


def test_a_view_never_makes_search_come_back_short(open_as):
    writer = open_as("w")
    for i in range(60):  # many better-matching entries outside the view
        writer.write(f"fact/impl-{i}.md", f"billing deploy step {i} billing deploy", title="Billing deploy",
                     metadata={"kind": "implementation"})
    writer.write("fact/bug.md", "a billing deploy bug", title="Bug", metadata={"kind": "bug"})
    reviewer = open_as("r", "reviewer")
    assert [r.path for r in reviewer.search("billing deploy", top_k=1, view=reviewer.actor)] == ["fact/bug.md"]


def test_an_unknown_kind_or_role_is_refused_with_the_choices(open_as):
    with pytest.raises(InputValidationError, match="'bugs' is not a memory kind.*Did you mean 'bug'"):
        memory_write(open_as("w"), Session(), "fact/a.md", "x", "A", "fact", [], [], "d", kind="bugs")
    with pytest.raises(InputValidationError, match="'reviwer' is not a role"):
        parse_role("reviwer")


@pytest.mark.parametrize("labels, seen", [
    (Labels(), True), (Labels(kind="bug"), True), (Labels(kind="architecture"), False),
    (Labels(kind="bug", visible_to=("executor",)), False), (Labels(kind="architecture", created_by="me"), True),
    (Labels(visible_to=("orchestrator", "optimizer")), True),
])
def test_what_a_reviewer_sees(labels, seen):
    assert Actor("me", Role.REVIEWER).sees(labels) is seen
