"""Periodic consolidation: clusters of near-duplicates, merged,
superseded or kept, never deleted, every decision journaled and undoable.

Finding clusters (`find_clusters`) — a real clustering, not a list of pairs:

1. the similarity graph: an edge joins two entries whose vectors are close (cosine >=
   ``consolidation_cosine``, found by blocked matrix products over the vector index,
   `memdir.optimization.pairs.cosine_pairs`) *and* whose words overlap (Jaccard >=
   ``consolidation_jaccard``), in the same top-level folder (the design's "different namespace:
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
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from memdir.core.settings import Settings
from memdir.evolution.deciding import Cluster, Decide, Decision, Member, rule_decision
from memdir.evolution.runner import JobContext, JobOutcome, ScheduledJob
from memdir.optimization.actions import Changer, combine_content, combine_metadata
from memdir.optimization.corpus import Corpus
from memdir.optimization.journal import Journal
from memdir.optimization.pairs import WordSets, cosine_pairs, row_cosines

if TYPE_CHECKING:
    from memdir.memory import Memory


def _namespace(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


class NearDuplicates:
    """The near-duplicate graph of a store and its clusters.

    Only the vectors of every entry are looked at (one blocked matrix product); the contents
    are read, and tokenised for word overlap, only for the entries in a close pair.

    Args:
        memory: the store.
        corpus: a light snapshot (`Corpus` without items): paths and the vector matrix.
    """

    def __init__(self, memory: Memory, corpus: Corpus, settings: Settings) -> None:
        self.corpus, self.settings = corpus, settings
        self.row_of = {int(position): row for row, position in enumerate(corpus.rows)}
        facts = memory.index.rank_facts(corpus.paths)  # archived and superseded entries take no part
        hidden = {path for path, fact in facts.items() if fact.hidden}
        rows = np.array([row for row, position in enumerate(corpus.rows) if corpus.paths[position] not in hidden], np.int64)
        positions = corpus.rows[rows] if len(rows) else rows
        found = cosine_pairs(corpus.matrix[rows], settings.evolution.consolidation_cosine) if len(rows) > 1 else None
        a = positions[found.i] if found is not None else np.zeros(0, np.int64)
        b = positions[found.j] if found is not None else np.zeros(0, np.int64)
        same = np.fromiter((_namespace(corpus.paths[x]) == _namespace(corpus.paths[y]) for x, y in zip(a, b)), bool, len(a))
        a, b = a[same], b[same]
        involved = np.unique(np.concatenate((a, b)))
        self.local = {int(position): index for index, position in enumerate(involved)}
        self.words = WordSets.from_texts(memory.adapter.read_contents([corpus.paths[p] for p in involved]))
        close = self.jaccard(a, b) >= settings.evolution.consolidation_jaccard
        self.a, self.b = a[close], b[close]

    def jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Word Jaccard of corpus positions ``a[k]``, ``b[k]`` (entries in a close pair only)."""
        if not len(a):
            return np.zeros(0)
        local = np.vectorize(self.local.__getitem__, otypes=[np.int64])
        return self.words.jaccard(local(a), local(b))

    def cosine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        rows = np.vectorize(self.row_of.__getitem__, otypes=[np.int64])
        return row_cosines(self.corpus.matrix, rows(a), rows(b))

    def clusters(self) -> list[list[int]]:
        """Clusters of near-duplicates (corpus positions, two or more each), in path order."""
        found = cluster(self.a, self.b, len(self.corpus), self._distances, 1.0 - self.settings.evolution.consolidation_cosine)
        return sorted(found, key=lambda members: self.corpus.paths[members[0]])

    def _distances(self, members: np.ndarray) -> np.ndarray:
        """Condensed pairwise distances: 1 - cosine where the words overlap enough, else 2 (never joined)."""
        i, j = np.triu_indices(len(members), k=1)
        a, b = members[i], members[j]
        return np.where(self.jaccard(a, b) >= self.settings.evolution.consolidation_jaccard, 1.0 - self.cosine(a, b), 2.0)

    def describe(self, positions: list[int]) -> Cluster:
        """A cluster as the decider sees it: members newest first, with their pairwise similarities."""
        items = [item for item in map(self.corpus.item, positions) if item is not None]
        ordered = sorted(items, key=lambda item: (item.updated_at, item.path), reverse=True)
        at = np.array([self.corpus.index[item.path] for item in ordered])
        i, j = (part.ravel() for part in np.meshgrid(at, at, indexing="ij"))
        square = (len(at), len(at))
        cosine, jaccard = self.cosine(i, j).reshape(square), self.jaccard(i, j).reshape(square)
        return Cluster(
            tuple(Member(item.path, item.title, item.content, item.updated_at) for item in ordered),
            tuple(tuple(float(x) for x in row) for row in cosine), tuple(tuple(float(x) for x in row) for row in jaccard),
        )  # fmt: skip


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


class ConsolidationJob(ScheduledJob):
    """Cluster near-duplicates and merge, supersede or keep them (see the module docstring).

    ``context.options["decide"]``: the client's model as a `memdir.evolution.deciding.Decide`; absent, the rule.
    """

    name = "consolidation"
    title = "consolidation"
    interval_setting = "consolidation_interval_days"

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        outcome = JobOutcome()
        corpus = Corpus(memory, [info.path for info in memory.list(include_virtual=False)], None)
        decide: Decide | None = context.options.get("decide")
        near = NearDuplicates(memory, corpus, context.settings)
        clusters = [near.describe(positions) for positions in near.clusters()]
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
        done = changer.update({other.path: {"superseded_by": keeper.path} for other in others})
        return changed + [path for path, result in done.items() if result.done]


def _named(cluster: Cluster) -> str:
    return ", ".join(f"memory://{path}" for path in cluster.paths)


__all__ = ["ConsolidationJob", "NearDuplicates", "cluster"]
