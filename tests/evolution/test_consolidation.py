"""Consolidation: real clusters (not pairs), the decider or the strict rule, never a deletion, undoable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memdir.evolution.consolidation import ConsolidationJob, NearDuplicates, cluster
from memdir.evolution.deciding import Decision, model_decider, parse_decision
from memdir.evolution.runner import run_job
from memdir.optimization.corpus import Corpus
from memdir.optimization.journal import undo_last

BASE = ("Deploy the billing service with blue green switching behind the load balancer, drain old pods first, "
        "watch error rates for ten minutes, then remove the old colour and tag the release in git with its version")


def condensed(matrix: list[list[float]]) -> np.ndarray:
    m = np.array(matrix)
    return m[np.triu_indices(len(m), k=1)]


def test_a_chain_is_not_one_cluster():
    """A~B and B~C, but A and C are far apart: complete linkage keeps every pair of a cluster close."""
    d = condensed([[0, 0.02, 0.5], [0.02, 0, 0.03], [0.5, 0.03, 0]])
    assert cluster(np.array([0, 1]), np.array([1, 2]), 3, lambda members: d, 0.1) == [[0, 1]]


def test_components_are_clusters_when_every_pair_is_close():
    d = condensed([[0, 0.02, 0.04], [0.02, 0, 0.03], [0.04, 0.03, 0]])
    found = cluster(np.array([0, 1, 3]), np.array([1, 2, 4]), 5, lambda members: d, 0.1)
    assert sorted(found) == [[0, 1, 2], [3, 4]]


def write_copies(memory, *, gap_days: float = 0.0) -> None:
    now = datetime.now(UTC)
    memory.write("concept/deploy/a.md", BASE, title="Deploying billing", updated_at=now - timedelta(days=gap_days + 2))
    memory.write("concept/deploy/b.md", BASE + " now", title="Deploying billing", updated_at=now - timedelta(days=1))
    memory.write("concept/deploy/c.md", BASE + " today", title="Deploying billing", updated_at=now)
    memory.write("fact/deploy.md", BASE, title="Deploying billing")  # another namespace: kept apart
    memory.write("concept/cooking.md", "Boil pasta in salted water for nine minutes.", title="Pasta")


def test_near_duplicates_form_one_cluster_per_namespace(memory):
    write_copies(memory)
    corpus = Corpus.load(memory, full=False)
    near = NearDuplicates(memory, corpus, memory.settings)
    clusters = near.clusters()
    assert [[corpus.paths[p] for p in members] for members in clusters] == [
        ["concept/deploy/a.md", "concept/deploy/b.md", "concept/deploy/c.md"]]
    described = near.describe(clusters[0])
    assert described.paths[0] == "concept/deploy/c.md"  # newest first
    assert described.cosine[0][1] > 0.95 and described.jaccard[0][2] > 0.9


def test_without_a_model_only_near_identical_copies_are_superseded_by_the_newest(memory):
    write_copies(memory)
    before = memory.read("concept/deploy/a.md")
    record = run_job(memory, ConsolidationJob())
    assert (record.processed, record.changed) == (1, 1)
    assert "supersede into memory://concept/deploy/c.md (rule" in record.details[0]
    for path in ("concept/deploy/a.md", "concept/deploy/b.md"):
        assert memory.read(path).metadata.superseded_by == "concept/deploy/c.md"
    after = memory.read("concept/deploy/a.md")  # still readable, nothing deleted
    assert (after.content, after.hits, after.updated_at) == (before.content, before.hits, before.updated_at)
    assert memory.read("fact/deploy.md").metadata.superseded_by is None
    facts = memory.index.rank_facts(["concept/deploy/a.md", "concept/deploy/c.md"])  # what search leaves out
    assert facts["concept/deploy/a.md"].hidden and not facts["concept/deploy/c.md"].hidden


def test_without_a_model_copies_written_long_apart_are_kept(memory):
    write_copies(memory, gap_days=100)  # a.md is 100 days older than c.md: maybe an evolution, not a copy
    record = run_job(memory, ConsolidationJob())
    assert memory.read("concept/deploy/a.md").metadata.superseded_by is None
    assert memory.read("concept/deploy/b.md").metadata.superseded_by == "concept/deploy/c.md"
    assert record.changed == 1


def test_the_model_decides_merges_and_the_run_is_undone_as_a_whole(memory):
    write_copies(memory)
    snapshot = {path: memory.read(path).model_dump(exclude={"embedding"}) for path in
                ("concept/deploy/a.md", "concept/deploy/b.md", "concept/deploy/c.md")}
    asked = []

    def ask(prompt: str, max_tokens: int) -> str:
        asked.append(prompt)
        return "ACTION: merge\nKEEP: concept/deploy/b.md\nREASON: the same runbook"

    record = run_job(memory, ConsolidationJob(), options={"decide": model_decider(ask)})
    assert len(asked) == 1 and "## concept/deploy/c.md" in asked[0] and "ACTION: merge|supersede|keep" in asked[0]
    assert "merge into memory://concept/deploy/b.md (model: the same runbook)" in record.details[0]
    keeper = memory.read("concept/deploy/b.md")
    assert "merged from memory://concept/deploy/c.md" in keeper.content and keeper.metadata.superseded_by is None
    assert memory.read("concept/deploy/a.md").metadata.superseded_by == "concept/deploy/b.md"

    undone = undo_last(memory, actions=("consolidation",))
    assert sorted(undone.restored) == sorted(snapshot)
    for path, state in snapshot.items():
        now = memory.read(path).model_dump(exclude={"embedding"})
        assert {k: now[k] for k in ("content", "title", "metadata", "hits")} == {k: state[k] for k in ("content", "title", "metadata", "hits")}


@pytest.mark.parametrize("reply", [None, "", "I am not sure.", "ACTION: merge\nKEEP: concept/elsewhere.md"])
def test_no_usable_decision_keeps_the_cluster(memory, reply):
    write_copies(memory)
    record = run_job(memory, ConsolidationJob(), options={"decide": model_decider(lambda prompt, tokens: reply)})
    assert record.changed == 0 and "no decision from the client's model" in record.details[0]
    assert memory.read("concept/deploy/a.md").metadata.superseded_by is None


def test_a_failing_model_keeps_the_cluster(memory):
    write_copies(memory)

    def ask(prompt: str, max_tokens: int) -> str:
        raise TimeoutError("the client did not answer")

    assert run_job(memory, ConsolidationJob(), options={"decide": model_decider(ask)}).changed == 0


def test_the_model_may_say_keep(memory):
    write_copies(memory)
    decide = model_decider(lambda prompt, tokens: "**ACTION:** keep\nREASON: different versions")
    record = run_job(memory, ConsolidationJob(), options={"decide": decide})
    assert record.details == [
        "memory://concept/deploy/c.md, memory://concept/deploy/b.md, memory://concept/deploy/a.md: kept (model: different versions)"
    ]


def test_superseded_and_archived_entries_take_no_part(memory):
    write_copies(memory)
    run_job(memory, ConsolidationJob())
    again = run_job(memory, ConsolidationJob())
    assert (again.processed, again.changed) == (0, 0)


def test_parse_decision_reads_a_supersede():
    from memdir.evolution.deciding import Member

    now = datetime.now(UTC)
    members = tuple(Member(path, "t", "c", now) for path in ("a.md", "b.md"))
    found = parse_decision("ACTION: Supersede\nKEEP: memory://b.md\nREASON: newer", cluster=_cluster(members))
    assert found == Decision("supersede", "b.md", ("a.md",), "newer", by="model")


def _cluster(members):
    from memdir.evolution.deciding import Cluster

    ones = tuple((1.0,) * len(members) for _ in members)
    return Cluster(members, ones, ones)


def test_a_dry_run_supersedes_nothing(memory):
    write_copies(memory)
    record = run_job(memory, ConsolidationJob(), dry_run=True)
    assert record.changed == 1
    assert memory.read("concept/deploy/a.md").metadata.superseded_by is None


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    """Run against the directory store and PostgreSQL."""
    return store_kind
