"""Turn-level retrieval recall on LoCoMo: BM25 alone, dense alone, and memdir's hybrid search.

    python bench/bench_recall_locomo.py [--recipe conversation|plain] [--set name=value ...] [--grid]

Setup (the LoCoMo paper's R@k, as in shared/data/README.md): one memory root per
conversation, one entry per dialogue turn written with `Memory.write`, questions of
categories 1-4 that carry evidence, searched with the product's `HybridSearcher`;
recall@k is the share of a question's evidence turns among the first k results,
averaged over questions. How the turns are written is in `corpora` (``conversation``:
speaker and date as title, speaker as tag, the turn answered as a second paragraph;
``plain``: ``"<speaker>: <text>"`` only, the earlier bench's entries).

Settings were tuned on conversations 0-4 only; ``tune`` and ``held-out`` (5-9) are
printed apart. ``--set name=value`` overrides a setting (e.g. ``embedding_summary=first_paragraph``)
for both the writes and the searches. Vectors are cached under ``--cache`` by text.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np
from corpora import CATEGORIES, DEFAULT_LOCOMO, locomo_corpora, real_embedder, recall_at, write_store

from memdir.core.settings import Settings
from memdir.search.hybrid import HybridSearcher

TUNED_ON = 5
"""Conversations 0-4 chose the defaults; 5-9 are held out."""


def parse_overrides(pairs: list[str]) -> dict:
    """``["tag_weight=0.4"]`` -> ``{"tag_weight": "0.4"}`` (pydantic converts the values)."""
    found = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        found[name.strip()] = value.strip()
    return found


def method_settings(base: Settings) -> dict[str, Settings]:
    def variant(**changes) -> Settings:
        return base.with_values(**changes)

    alone = dict(keyword_weight=0.0, tag_weight=0.0, context_weight=0.0)
    return {
        "BM25 only": variant(semantic_weight=0.0, bm25_weight=1.0, **alone),
        "dense only": variant(semantic_weight=1.0, bm25_weight=0.0, **alone),
        "RRF (dense + BM25)": variant(fusion="rrf", semantic_weight=1.0, bm25_weight=1.0, **alone),
        "hybrid, no context": variant(context_weight=0.0),
        "hybrid (memdir defaults)": base,
    }


def evaluate(stores, settings_by_name: dict[str, Settings], embedder, ks=(5, 10)):
    """{name: {k: recall per question}}, with each question's category and conversation number."""
    results = {name: {k: [] for k in ks} for name in settings_by_name}
    categories, conversation = [], []
    for number, (corpus, memory) in enumerate(stores):
        searchers = {name: HybridSearcher(memory.index, s, embedder=embedder) for name, s in settings_by_name.items()}
        for query in corpus.queries:
            categories.append(query.category)
            conversation.append(number)
            for name, searcher in searchers.items():
                ranked = [hit.path for hit in searcher.search(query.text, top_k=max(ks))]
                for k in ks:
                    results[name][k].append(recall_at(ranked, query.wanted, k))
    return results, np.array(categories), np.array(conversation)


def row(name: str, by_k: dict, categories: np.ndarray, conversation: np.ndarray, ks) -> str:
    last = np.array(by_k[max(ks)])
    cells = "".join(f"  {np.mean(by_k[k]):.3f}" for k in ks)
    cells += "".join(f"  {last[categories == c].mean():.3f}" for c in CATEGORIES)
    tune, held = conversation < TUNED_ON, conversation >= TUNED_ON
    for part in (tune, held):
        cells += "  " + "/".join(f"{np.array(by_k[k])[part].mean():.3f}" for k in ks)
    return f"{name:26s}{cells}"


def split_rows(name: str, by_k: dict, categories: np.ndarray, conversation: np.ndarray, ks) -> list[str]:
    """Per category, R@k of the tuning half and of the held-out half (one line each)."""
    lines = []
    for label, part in (("tune 0-4", conversation < TUNED_ON), ("held-out 5-9", conversation >= TUNED_ON)):
        cells = "".join(
            "  " + "/".join(f"{np.array(by_k[k])[part & (categories == c)].mean():.3f}" for k in ks)
            for c in CATEGORIES)
        lines.append(f"{name + ', ' + label:40s}{cells}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--recipe", choices=["conversation", "plain"], default="conversation")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    parser.add_argument("--grid", action="store_true", help="also print recall over a grid of fusion weights")
    args = parser.parse_args(argv)

    ks = (5, 10)
    base = Settings(**parse_overrides(args.overrides))
    embedder = real_embedder(args.cache, "locomo")
    corpora = locomo_corpora(args.data, args.recipe)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-locomo-") as tmp:
        stores = [(c, write_store(Path(tmp) / c.name, c.docs, base, embedder)) for c in corpora]
        built = time.perf_counter() - started
        results, categories, conversation = evaluate(stores, method_settings(base), embedder, ks)
        print(f"LoCoMo turn-level recall, {len(categories)} questions (categories 1-4), "
              f"{sum(len(c.docs) for c in corpora)} turns written as '{args.recipe}' entries in {len(corpora)} "
              f"stores; model {embedder.model_id}; setup {built:.1f} s")
        print(f"settings: fusion={base.search.fusion} semantic={base.search.semantic_weight} bm25={base.search.bm25_weight} "
              f"keyword={base.search.keyword_weight} tag={base.search.tag_weight} keyword_idf={base.search.keyword_idf} "
              f"embedding_summary={base.embeddings.summary} context={base.search.context_weight}"
              f" (window {base.search.context_window})")
        header = f"{'method':26s}" + "".join(f"  R@{k:<3d}" for k in ks)
        header += "".join(f"  c{c}@{max(ks)}" for c in CATEGORIES) + "  tune R@5/R@10  held-out R@5/R@10"
        print(header)
        print("-" * len(header))
        for name, by_k in results.items():
            print(row(name, by_k, categories, conversation, ks))
        print(f"\nby category, R@5/R@10:{'':17s}" + "".join(f"  {'cat ' + str(c):11s}" for c in CATEGORIES))
        for name in ("hybrid, no context", "hybrid (memdir defaults)"):
            print("\n".join(split_rows(name, results[name], categories, conversation, ks)))
        if args.grid:
            grid = {
                f"sem={a} bm25={b} kw={c} tag={t}": base.with_values(
                    semantic_weight=a, bm25_weight=b, keyword_weight=c, tag_weight=t)
                for a, b, c, t in itertools.product([0.5, 0.6, 0.7], [0.1, 0.2, 0.3], [0.1, 0.2], [0.1, 0.4, 0.6])
            }
            found, _, _ = evaluate(stores, grid, embedder, ks)
            tune = conversation < TUNED_ON
            ranked = sorted(grid, key=lambda name: -np.mean(np.array(found[name][10])[tune]))
            print("\nweight grid, best first by R@10 on the tuning half (conversations 0-4):")
            for name in ranked[:15]:
                print(row(name, found[name], categories, conversation, ks))
        for _, memory in stores:
            memory.close()


if __name__ == "__main__":
    main()
