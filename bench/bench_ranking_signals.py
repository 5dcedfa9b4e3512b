"""LoCoMo recall with and without each ranking signal beyond the text: graph expansion, importance, recency,
and a role's importance.

    python bench/bench_ranking_signals.py [--conversations N] [--cache DIR]

Every store is written through the product only (`bench_recall_locomo`'s setup: one entry per
turn, `Memory.write`), with two things an agent's ingest would record and nothing taken
from the answers:

* each turn is written at the time it was said, the conversation shifted so that its last
  session is today (as if recorded while it happened): what recency sees;
* each turn's importance comes from memdir's own message heuristics
  (`memdir.episodes.heuristics.message_importance`, 0-1, stored as ``1 + 9 x``): what importance sees.

A role (``role``, ``role_importance_weight``) ranks by its own mix of importance, reads,
recency and kind (`memdir.search.ranking.RoleImportance`); LoCoMo's turns have no kind, so
there it measures what the mix costs a search that asks about anything.

Links, also made only by the product: ``sequence`` — `link_sequence.link_sequence` (bench/link_sequence.py)
links each turn to the one before it in its session (system links, strength
``sequence_link_strength``); ``related`` — defrag's ``link_related`` (system links between
turns of cosine 0.60-0.85, strength = cosine). Recall@10 overall and for category 1
(multi-hop) is printed for the text ranking alone, then with each signal at a few weights.
Recall is deterministic for a given model; the setup time printed is a single run
(2 shared cores, other work running: noisy).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from bench_recall_locomo import evaluate
from corpora import DEFAULT_LOCOMO, Doc, locomo_corpora, real_embedder, write_store
from link_sequence import link_sequence

from memdir.core.settings import Settings
from memdir.episodes.heuristics import message_importance
from memdir.episodes.model import Message
from memdir.optimization.defragmenter import Defragmenter

_DATE = re.compile(r", (\d{1,2} \w+, \d{4})$")


def turn_date(title: str) -> datetime | None:
    """``"Caroline, 8 May, 2023"`` -> 2023-05-08 (UTC)."""
    found = _DATE.search(title)
    return datetime.strptime(found.group(1), "%d %B, %Y").replace(tzinfo=UTC) if found else None


def as_recorded(docs: list[Doc], now: datetime) -> list[Doc]:
    """The turns with the day each was said (the last session's today) and the importance memdir's
    heuristics give the turn's words."""
    dates = [turn_date(doc.title) for doc in docs]
    last = max((d for d in dates if d), default=now)
    out = []
    for doc, date in zip(docs, dates):
        said = now - (last - date) if date else now
        importance = 1.0 + 9.0 * message_importance(Message(role="user", text=doc.content.split("\n\n")[0]))
        metadata = {**doc.metadata, "importance": round(importance, 2)}
        out.append(dataclasses.replace(doc, metadata=metadata, updated_at=said))
    return out


def sessions(docs: list[Doc]) -> list[list[str]]:
    """Paths of each session's turns, in order (``turn/d3/1.md`` ... by the folder)."""
    found: dict[str, list[str]] = {}
    for doc in docs:
        found.setdefault(doc.path.rsplit("/", 1)[0], []).append(doc.path)
    return list(found.values())


def variants(base: Settings) -> dict[str, Settings]:
    def v(**changes) -> Settings:
        return base.with_values(**changes)

    found = {"text only (graph/importance/recency off)": v(graph_weight=0.0, importance_weight=0.0, recency_weight=0.0)}
    for w in (0.02, 0.05, 0.1, 0.2):
        found[f"importance w={w}"] = v(importance_weight=w)
    for w in (0.02, 0.05, 0.1):
        for half in (30.0, 365.0):
            found[f"recency w={w} half-life {half:g} d"] = v(recency_weight=w, recency_half_life_days=half)
    for role in ("orchestrator", "optimizer", "reviewer", "executor"):  # seed 003's role importance (3.3)
        for w in (0.02, 0.05, 0.1):
            found[f"role {role} w={w}"] = v(role=role, role_importance_weight=w)
    return found


def graph_variants(base: Settings) -> dict[str, Settings]:
    found = {}
    for w in (0.02, 0.05, 0.1, 0.2):
        for hops in (1, 2):
            found[f"graph w={w} hops={hops}"] = base.with_values(graph_weight=w, graph_hops=hops)
    return found


def report(title: str, results: dict, categories: np.ndarray) -> None:
    print(f"\n{title}")
    print(f"{'variant':44s}  R@10   cat1@10  ΔR@10   Δcat1")
    first = None
    for name, by_k in results.items():
        r10 = np.array(by_k[10])
        overall, cat1 = r10.mean(), r10[categories == 1].mean()
        first = first or (overall, cat1)
        print(f"{name:44s}  {overall:.3f}  {cat1:.3f}   {overall - first[0]:+.3f}  {cat1 - first[1]:+.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)

    base = Settings(graph_weight=0.0, importance_weight=0.0, recency_weight=0.0)
    embedder = real_embedder(args.cache, "locomo")
    corpora = locomo_corpora(args.data)[: args.conversations]
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="memdir-ranking-") as tmp:
        started = time.perf_counter()
        stores = [(c, write_store(Path(tmp) / c.name, as_recorded(c.docs, now), base, embedder)) for c in corpora]
        print(f"LoCoMo: {sum(len(c.queries) for c in corpora)} questions, {sum(len(c.docs) for c in corpora)} turns "
              f"in {len(corpora)} stores, model {embedder.model_id}; written in {time.perf_counter() - started:.0f} s")
        results, categories, _ = evaluate(stores, variants(base), embedder, ks=(10,))
        report("Without links (graph expansion has nothing to follow):", results, categories)

        started = time.perf_counter()
        made = sum(link_sequence(memory, turns) for corpus, memory in stores for turns in sessions(corpus.docs))
        print(f"\nsequence: {made} links (strength {base.search.sequence_link_strength}) in {time.perf_counter() - started:.0f} s")
        results, _, _ = evaluate(stores, {"text only": base, **graph_variants(base)}, embedder, ks=(10,))
        report("Links from the sequence of turns (each to the one before it in its session):", results, categories)

        started = time.perf_counter()
        related = sum(Defragmenter(m).run("link_related", dry_run=False).data["entries_updated"] for _, m in stores)
        print(f"\nlink_related: {related} entries linked in {time.perf_counter() - started:.0f} s")
        results, _, _ = evaluate(stores, {"text only": base, **graph_variants(base)}, embedder, ks=(10,))
        report("Links from the sequence + defrag link_related:", results, categories)
        for _, memory in stores:
            memory.close()


if __name__ == "__main__":
    main()
