"""Periodic consolidation (seed 003, Component 2.5): clusters of near-duplicates, merged,
superseded or kept, never deleted, every decision journaled and undoable.

Finding clusters (`find_clusters`) — a real clustering, not a list of pairs:

1. the similarity graph: an edge joins two entries whose vectors are close (cosine >=
   ``consolidation_cosine``, found by blocked matrix products over the vector index,
   `memdir.optimization.pairs.cosine_pairs`) *and* whose words overlap (Jaccard >=
   ``consolidation_jaccard``), in the same top-level folder (the seed's "different namespace:
   keep separate"); archived and superseded entries take no part;
2. its connected components (scipy's ``connected_components``);
3. each component of more than two entries is cut by complete-linkage agglomerative
   clustering (scipy's ``linkage``), so that *every* pair inside a cluster is similar — a
   chain A~B~C with A and C unlike each other is not one cluster.

Deciding (`memdir.evolution.deciding`): the client's model when the caller passes a decider
(the server does when its client offers MCP sampling), else the strict rule (supersede only
near-identical copies written close together).

Applying, through defrag's `Changer` and `Journal` (write-ahead, checked against the
snapshot, `memdir evolve --undo` reverts the run):

* supersede — every other member gets ``superseded_by: <keeper>``;
* merge — the keeper's content gains the others' text (defrag's ``combine``), its metadata
  their tags and links; then the others are superseded by it;
* keep — nothing.

Superseded entries leave search and discovery, and stay readable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from memdir.core.settings import Settings
from memdir.evolution.deciding import Cluster, Decide, Decision, Member, rule_decision
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.optimization.actions import Changer, combine_content, combine_metadata
from memdir.optimization.corpus import Corpus
from memdir.optimization.journal import Journal
from memdir.optimization.pairs import cosine_pairs, row_cosines

if TYPE_CHECKING:
    from memdir.memory import Memory


@dataclass(frozen=True, slots=True)
class Candidates:
    """The entries consolidation may touch: positions in the corpus and their rows in its matrix."""

    positions: np.ndarray  # corpus positions
    matrix_rows: np.ndarray  # the same entries' rows in corpus.matrix


def _candidates(memory: Memory, corpus: Corpus) -> Candidates:
    """Embedded entries that are neither archived nor superseded (built-ins and stubs are not in the corpus)."""
    facts = memory.index.rank_facts(corpus.paths)
    keep = [(row, int(position)) for row, position in enumerate(corpus.rows)
            if not (fact := facts.get(corpus.paths[position])) or not fact.hidden]
    rows, positions = (np.asarray(values, dtype=np.int64) for values in zip(*keep)) if keep else (np.zeros(0, np.int64),) * 2
    return Candidates(positions, rows)


def _namespace(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def similarity_graph(corpus: Corpus, candidates: Candidates, settings: Settings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Edges (a, b as corpus positions, cosine, jaccard) between near-duplicate candidates."""
    matrix = corpus.matrix[candidates.matrix_rows]
    found = cosine_pairs(matrix, settings.consolidation_cosine)
    a, b = candidates.positions[found.i], candidates.positions[found.j]
    same = np.fromiter((_namespace(corpus.paths[x]) == _namespace(corpus.paths[y]) for x, y in zip(a, b)), bool, len(a))
    a, b, cosine = a[same], b[same], found.similarity[same]
    jaccard = corpus.words.jaccard(a, b) if len(a) else np.zeros(0)
    close = jaccard >= settings.consolidation_jaccard
    return a[close], b[close], cosine[close], jaccard[close]


def find_clusters(memory: Memory, corpus: Corpus, settings: Settings) -> list[list[int]]:
    """Clusters of near-duplicates (corpus positions, each cluster of two or more), in path order."""
    a, b, _, _ = similarity_graph(corpus, _candidates(memory, corpus), settings)
    clusters = cluster(a, b, len(corpus), lambda members: _distances(corpus, members, settings), 1.0 - settings.consolidation_cosine)
    return sorted(clusters, key=lambda members: corpus.paths[members[0]])


def cluster(a: np.ndarray, b: np.ndarray, n: int, distances: Callable[[np.ndarray], np.ndarray], cut: float) -> list[list[int]]:
    """The connected components of the graph with edges (a[k], b[k]) over n nodes, each component
    of more than two nodes cut by complete linkage at distance ``cut`` (``distances(members)``:
    their condensed pairwise distances); clusters of one are left out."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not len(a):
        return []
    _, labels = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)), directed=False)
    touched = np.unique(np.concatenate((a, b)))
    found: list[list[int]] = []
    for label in np.unique(labels[touched]):
        members = touched[labels[touched] == label]
        if len(members) == 2:
            found.append(sorted(members.tolist()))
            continue
        cuts = fcluster(linkage(distances(members), method="complete"), t=cut + 1e-9, criterion="distance")
        found.extend(sorted(members[cuts == group].tolist()) for group in np.unique(cuts) if (cuts == group).sum() > 1)
    return found


def _distances(corpus: Corpus, members: np.ndarray, settings: Settings) -> np.ndarray:
    """Condensed pairwise distances of a component: 1 - cosine where the words overlap enough, else 2 (never joined)."""
    i, j = np.triu_indices(len(members), k=1)
    a, b = members[i], members[j]
    row_of = {int(position): row for row, position in enumerate(corpus.rows)}
    cosine = row_cosines(corpus.matrix, np.array([row_of[int(x)] for x in a]), np.array([row_of[int(y)] for y in b]))
    overlap = corpus.words.jaccard(a, b)
    return np.where(overlap >= settings.consolidation_jaccard, 1.0 - cosine, 2.0)


def describe(corpus: Corpus, positions: list[int]) -> Cluster:
    """A cluster as the decider sees it: members newest first, with their pairwise similarities."""
    items = [corpus.item(position) for position in positions]
    ordered = sorted((item for item in items if item is not None), key=lambda item: (item.updated_at, item.path), reverse=True)
    row_of = {int(position): row for row, position in enumerate(corpus.rows)}
    rows = np.array([row_of[corpus.index[item.path]] for item in ordered])
    cosine = corpus.matrix[rows] @ corpus.matrix[rows].T
    at = np.array([corpus.index[item.path] for item in ordered])
    i, j = np.meshgrid(at, at, indexing="ij")
    jaccard = corpus.words.jaccard(i.ravel(), j.ravel()).reshape(len(at), len(at))
    return Cluster(
        tuple(Member(item.path, item.title, item.content, item.updated_at) for item in ordered),
        tuple(tuple(float(x) for x in row) for row in cosine), tuple(tuple(float(x) for x in row) for row in jaccard),
    )  # fmt: skip


class ConsolidationJob(ScheduledJob):
    """Cluster near-duplicates and merge, supersede or keep them (see the module docstring).

    ``context.options["decide"]``: the client's model as a `memdir.evolution.deciding.Decide`; absent, the rule.
    """

    name = "consolidation"
    title = "consolidation"
    interval_setting = "consolidation_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        outcome = JobOutcome()
        corpus = Corpus.load(memory, full=False)
        decide: Decide | None = context.options.get("decide")
        clusters = [describe(corpus, positions) for positions in find_clusters(memory, corpus, context.settings)]
        with Journal(memory, self.name, {"decided_by": "model" if decide else "rule"}) as journal:
            changer = Changer(memory, journal, corpus)
            for cluster in context.each(clusters, lambda cluster: cluster.key, outcome):
                decision = decide(cluster) if decide else rule_decision(cluster, context.settings)
                if decision is None:
                    outcome.details.append(f"{_named(cluster)}: no decision from the client's model; kept this run")
                    continue
                if decision.action == "keep":
                    outcome.details.append(f"{_named(cluster)}: kept ({decision.by}: {decision.reason})")
                    continue
                done = self._apply(changer, corpus, decision) if not context.dry_run else []
                if not context.dry_run and not done:
                    outcome.details.append(f"{_named(cluster)}: skipped (changed since it was looked at)")
                    continue
                outcome.changed += 1
                outcome.details.append(
                    f"{_named(cluster)}: {decision.action} into memory://{decision.keeper} ({decision.by}: {decision.reason})"
                )
        return outcome

    @staticmethod
    def _apply(changer: Changer, corpus: Corpus, decision: Decision) -> list[str]:
        """Carry a merge or supersede out; the paths changed (none when the cluster changed meanwhile)."""
        keeper = corpus.get(decision.keeper or "")
        others = [item for item in map(corpus.get, decision.others) if item is not None]
        if keeper is None or not others:
            return []
        changed = []
        if decision.action == "merge":
            content, merged = keeper.content, keeper
            for other in others:
                content = combine_content(content, other.path, other.content)
                merged = replace(merged, stored=combine_metadata(merged, other))
            if not changer.rewrite(keeper, content=content, metadata=merged.stored).done:
                return []
            changed.append(keeper.path)
        for other in others:
            if changer.update(other, {"superseded_by": keeper.path}).done:
                changed.append(other.path)
        return changed


def _named(cluster: Cluster) -> str:
    return ", ".join(f"memory://{path}" for path in cluster.paths)


__all__ = ["ConsolidationJob", "cluster", "describe", "find_clusters", "similarity_graph"]
