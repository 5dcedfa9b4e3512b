"""MemoryDefrag: analyse a memory and optimise it — SwarmMemory's ten actions.

Read-only: ``analyze``, ``find_duplicates``, ``find_low_quality``,
``find_archival_candidates``, ``find_related``. Active (dry run unless ``dry_run`` is a
real false): ``link_related``, ``merge_duplicates``, ``cleanup_stubs``, ``compact``,
``full``. Defaults and option checking live in `memdir.optimization.options`.

Every live change goes through `memdir.optimization.actions.Changer` (locked, checked
against the analysed snapshot) and is recorded in a journal first
(`memdir.optimization.journal`), so `undo_last` can revert the last live run.

    defrag = Defragmenter(memory)
    print(defrag.run("merge_duplicates", merge_strategy="combine"))        # preview
    print(defrag.run("merge_duplicates", merge_strategy="combine", dry_run=False))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memdir.core.links import RELATED_KIND, Link, make_link
from memdir.core.paths import link_target, memory_uri
from memdir.core.quality import QUALITY_POINTS
from memdir.core.units import plural
from memdir.optimization import planning
from memdir.optimization.actions import Changer, only_in_other
from memdir.optimization.analyzer import analyze, format_health_report
from memdir.optimization.corpus import Corpus, Item
from memdir.optimization.journal import Journal
from memdir.optimization.options import ACTIONS, DEFAULT_LIMIT, DEFAULT_MERGE_STRATEGY, parse_dry_run, resolve_options
from memdir.optimization.pairs import Similar
from memdir.optimization.planning import LINK_WORDS
from memdir.optimization.reports import FOR_MODEL, UNDO_NOTE, Report, Wording, bullet_list, demote, document

if TYPE_CHECKING:
    from memdir.memory import Memory

T = TypeVar("T")


class Defragmenter:
    """Runs defrag actions on one `memdir.memory.Memory`.

    Args:
        memory: the memory to analyse and optimise.
        now: the current time for age checks (tests pass a fixed or future time).
        wording: how the reports say what to do next (the MCP tool's words unless given).
    """

    def __init__(self, memory: Memory, *, now: datetime | None = None, wording: Wording = FOR_MODEL) -> None:
        self.memory = memory
        self.wording = wording
        self._fixed_now = now
        self._corpus: Corpus | None = None

    @property
    def now(self) -> datetime:
        return self._fixed_now or datetime.now(UTC)

    def corpus(self, *, reload: bool = False, full: bool = True) -> Corpus:
        """The snapshot actions work on (re-read after live changes); ``full=False`` only lists entries."""
        if self._corpus is None or reload or (full and not self._corpus.full):
            self._corpus = Corpus.load(self.memory, full=full)
        return self._corpus

    def run(self, action: str, **options: Any) -> Report:
        """Run ``action`` with checked options (defaults filled in; see `options.ACTIONS`)."""
        resolved = resolve_options(action, options)
        return getattr(self, action)(**resolved)

    # ------------------------------------------------------------------ read-only
    def analyze(self, *, limit: int = DEFAULT_LIMIT) -> Report:
        """The health report: coverage, quality, by type and confidence, health score and band."""
        stats = analyze(self.corpus(reload=True))
        return Report("analyze", None, format_health_report(stats) + "\n", stats.to_dict())

    def overview(self, *, limit: int = DEFAULT_LIMIT) -> Report:
        """The full analysis with default options: health, duplicates, low quality, archival candidates.

        The data is the health report's, with each finding's data under its action's name.
        """
        parts = [self.analyze(limit=limit)]
        parts += [self.run(action, limit=limit)
                  for action in ("find_duplicates", "find_low_quality", "find_archival_candidates")]
        markdown = "\n".join(demote(part.markdown).rstrip() + "\n" for part in parts)
        data = {**parts[0].data, **{part.action: part.data for part in parts[1:]}}
        return Report("overview", None, f"# Memory Analysis\n\n{markdown}", data)

    def find_duplicates(self, similarity_threshold: float = 0.85, *, limit: int = DEFAULT_LIMIT) -> Report:
        """Pairs whose similarity (the higher of word Jaccard and embedding cosine) reaches the threshold."""
        corpus = self.corpus(reload=True, full=False)
        pairs = planning.duplicates(corpus, similarity_threshold)
        rows = [self._pair_dict(corpus, pair) for pair in pairs]
        lines = [
            f"- {memory_uri(row['a'])} ↔ {memory_uri(row['b'])} — {row['similarity']:.2f} "
            f"(words {row['jaccard']:.2f}, meaning {'n/a' if row['cosine'] is None else format(row['cosine'], '.2f')})"
            for row in rows
        ]
        intro = [f"{plural(len(pairs), 'pair')} with similarity ≥ {similarity_threshold:.2f} "
                 f"(the higher of word overlap and embedding cosine) among {plural(len(corpus), 'entry')}."]
        notes = [self.wording.next_step("merge_duplicates", "previews merging them")] if pairs else []
        markdown = document("Duplicate Entries", intro, bullet_list(lines, limit), notes)
        data = {"threshold": similarity_threshold, "count": len(rows), "pairs": rows}
        return Report("find_duplicates", None, markdown, data)

    def find_low_quality(
        self, min_quality_score: int = 50, confidence_filter: str | None = None, *, limit: int = DEFAULT_LIMIT
    ) -> Report:
        """Entries scoring below ``min_quality_score``, optionally only those with one confidence level."""
        corpus = self.corpus(reload=True)
        found = [
            item for item in corpus.items
            if item.quality < min_quality_score
            and (confidence_filter is None or (item.confidence or "none") == confidence_filter)
        ]
        found.sort(key=lambda item: (item.quality, item.path))
        rows: list[dict[str, Any]] = [
            {"path": item.path, "title": item.title, "quality": item.quality, "confidence": item.confidence,
             "missing": [name for name in QUALITY_POINTS if not item.metadata.get(name)]}
            for item in found
        ]
        lines = [
            f"- {memory_uri(row['path'])} — {row['quality']}/100, missing: {', '.join(row['missing']) or 'nothing'}"
            for row in rows
        ]
        which = f" with confidence {confidence_filter}" if confidence_filter else ""
        intro = [f"{len(rows)} of {plural(len(corpus), 'entry')}{which} score below {min_quality_score}/100 for metadata quality."]
        notes = ["Add the missing metadata to raise their scores."] if rows else []
        markdown = document("Low-Quality Entries", intro, bullet_list(lines, limit), notes)
        data = {"min_quality_score": min_quality_score, "confidence_filter": confidence_filter,
                "count": len(rows), "entries": rows}
        return Report("find_low_quality", None, markdown, data)

    def find_archival_candidates(self, age_days: float = 90, max_hits: int = 0, *, limit: int = DEFAULT_LIMIT) -> Report:
        """Entries not updated for ``age_days`` and read at most ``max_hits`` times."""
        corpus = self.corpus(reload=True)
        now = self.now
        found = [item for item in corpus.items if item.age_days(now) >= age_days and item.hits <= max_hits]
        found.sort(key=lambda item: (item.updated_at, item.path))
        rows: list[dict[str, Any]] = [
            {"path": i.path, "title": i.title, "age_days": int(i.age_days(now)), "hits": i.hits} for i in found
        ]
        lines = [f"- {memory_uri(row['path'])} — {row['age_days']} days old, {row['hits']} hits" for row in rows]
        intro = [f"{len(rows)} of {plural(len(corpus), 'entry')} not updated for {age_days:g}+ days "
                 f"and read at most {max_hits} times."]
        markdown = document("Archival Candidates", intro, bullet_list(lines, limit))
        data = {"age_days": age_days, "max_hits": max_hits, "count": len(rows), "entries": rows}
        return Report("find_archival_candidates", None, markdown, data)

    def find_related(
        self, min_similarity: float = 0.60, max_similarity: float = 0.85, *, limit: int = DEFAULT_LIMIT
    ) -> Report:
        """Pairs with ``min_similarity <= cosine < max_similarity`` and whether they already link each other."""
        corpus = self.corpus(reload=True, full=False)
        found = planning.related(corpus, min_similarity, max_similarity)
        rows: list[dict[str, Any]] = [
            {"a": p.a.path, "b": p.b.path, "similarity": round(p.similarity, 4), "link": p.link} for p in found
        ]
        lines = [f"- {memory_uri(r['a'])} ↔ {memory_uri(r['b'])} — {r['similarity']:.2f}, {LINK_WORDS[r['link']]}" for r in rows]
        unlinked = sum(row["link"] != "both" for row in rows)
        intro = [f"{plural(len(rows), 'pair')} with cosine similarity in [{min_similarity:.2f}, {max_similarity:.2f}); "
                 f"{unlinked} not yet linked both ways."]
        notes = [self.wording.next_step("link_related", "previews linking them")] if unlinked else []
        markdown = document("Related Entries", intro, bullet_list(lines, limit), notes)
        data = {"min_similarity": min_similarity, "max_similarity": max_similarity, "count": len(rows), "pairs": rows}
        return Report("find_related", None, markdown, data)

    # ------------------------------------------------------------------ active
    def _execute(
        self, action: str, options: dict[str, Any], dry: bool, step: Callable[[Changer | None], T]
    ) -> tuple[T, str | None]:
        """``step(None)`` for a dry run; live, ``step(changer)`` inside a journal. Returns its result and the journal id."""
        if dry:
            return step(None), None
        with Journal(self.memory, action, options) as journal:
            result = step(Changer(self.memory, journal, self.corpus(full=False)))
        self._corpus = None
        return result, journal.id if journal.written else None

    def link_related(
        self, min_similarity: float = 0.60, max_similarity: float = 0.85, dry_run: Any = True, *, limit: int = DEFAULT_LIMIT
    ) -> Report:
        """Link related entries not yet linked so, both ways: *system* ``references`` links (typed
        ``links`` metadata) whose strength is the pair's cosine similarity, so that ranking's graph
        expansion trusts a closer pair more and link decay may weaken them (user links never decay)."""
        dry = parse_dry_run(dry_run)
        corpus = self.corpus(reload=True, full=False)
        found = [pair for pair in planning.related(corpus, min_similarity, max_similarity) if pair.link != "both"]
        additions: dict[str, list[Link]] = defaultdict(list)
        for pair in found:
            strength = round(min(max(pair.similarity, 0.0), 1.0), 4)
            if pair.link != "a_to_b":
                additions[pair.a.path].append(make_link(pair.b.path, RELATED_KIND, strength, "system"))
            if pair.link != "b_to_a":
                additions[pair.b.path].append(make_link(pair.a.path, RELATED_KIND, strength, "system"))

        def link(changer: Changer | None) -> dict[str, str]:
            failed: dict[str, str] = {}
            for path, links in additions.items() if changer is not None else ():
                item = corpus.get(path)
                if item is None or changer is None:  # (the pairs' entries are the corpus's)
                    continue
                metadata = item.stored.model_copy(update={"links": [*item.stored.links, *links]})
                outcome = changer.rewrite(item, metadata=metadata)
                if not outcome.done:
                    failed[path] = outcome.reason
            return failed

        options = {"min_similarity": min_similarity, "max_similarity": max_similarity}
        failed, journal_id = self._execute("link_related", options, dry, link)
        rows: list[dict[str, Any]] = [{"a": p.a.path, "b": p.b.path, "similarity": round(p.similarity, 4), "link": p.link,
                 "done": not dry and p.a.path not in failed and p.b.path not in failed} for p in found]
        lines = [f"- {memory_uri(r['a'])} ↔ {memory_uri(r['b'])} — {r['similarity']:.2f} (was {LINK_WORDS[r['link']]})" for r in rows]
        lines += [f"- skipped {memory_uri(path)}: {reason}" for path, reason in failed.items()]
        updated = len(additions) - len(failed)
        intro = [f"{'Would link' if dry else 'Linked'} {plural(len(rows), 'related pair')} both ways "
                 f"(cosine in [{min_similarity:.2f}, {max_similarity:.2f})), "
                 f"adding system `references` links to {plural(updated, 'entry', 'entries')}."]
        markdown = document("Link Related Entries", intro, bullet_list(lines, limit), self._notes("link_related", dry, journal_id))
        data = {**options, "pairs": rows, "entries_updated": 0 if dry else updated, "skipped": failed}
        return Report("link_related", dry, markdown, data, journal_id)

    def _merge(self, threshold: float, strategy: str, changer: Changer | None) -> tuple[list[str], list[dict[str, Any]]]:
        rows: list[dict[str, Any]] = []
        lines: list[str] = []
        plan, left = planning.merge_plan(self.corpus(), threshold, strategy)
        for merge in plan:
            only_other = "\n\n".join(only_in_other(merge.keeper.content, merge.other.content))
            outcome = changer.merge(merge.keeper, merge.other, strategy) if changer else None
            row = {"keep": merge.keeper.path, "merge": merge.other.path, "similarity": round(merge.similarity, 4),
                   "strategy": strategy, "done": bool(outcome and outcome.done),
                   "reason": outcome.reason if outcome else "",
                   "appended" if strategy == "combine" else "dropped": only_other}
            rows.append(row)
            lines.append(_merge_line(row) + _skipped(row))
        lines += [f"- not merged: {memory_uri(pair.keeper.path)} and {memory_uri(pair.other.path)} "
                  f"({pair.similarity:.2f}): {reason}" for pair, reason in left]
        return lines, rows

    def merge_duplicates(
        self, similarity_threshold: float = 0.85, merge_strategy: str = DEFAULT_MERGE_STRATEGY, dry_run: Any = True,
        *, limit: int = DEFAULT_LIMIT,
    ) -> Report:
        """Merge each duplicate pair: keep one entry, leave a ``# merged →`` stub at the other."""
        dry = parse_dry_run(dry_run)
        self.corpus(reload=True)
        options = {"similarity_threshold": similarity_threshold, "merge_strategy": merge_strategy}
        (lines, rows), journal_id = self._execute(
            "merge_duplicates", options, dry, lambda changer: self._merge(similarity_threshold, merge_strategy, changer)
        )
        count = len(rows) if dry else sum(row["done"] for row in rows)
        intro = [f"{'Would merge' if dry else 'Merged'} {plural(count, 'duplicate pair')} "
                 f"(similarity ≥ {similarity_threshold:.2f}, strategy {merge_strategy}). "
                 "Each merged-away entry becomes a `# merged →` stub that redirects reads to the entry kept."
                 + (" What only the merged-away entry holds is appended to the entry kept." if merge_strategy == "combine"
                    else " Text the entry kept lacks is lost (the `combine` strategy keeps it).")]
        markdown = document("Merge Duplicates", intro, bullet_list(lines, limit), self._notes("merge_duplicates", dry, journal_id))
        return Report("merge_duplicates", dry, markdown, {**options, "merges": rows}, journal_id)

    def _cleanup(self, age_days: float, max_hits: int, changer: Changer | None) -> tuple[list[str], dict[str, Any]]:
        stubs = planning.stale_stubs(self.memory, self.now, age_days, max_hits)
        if changer is not None:  # stubs this run just made (in `full`) are not old, whatever the clock says
            stubs = [stub for stub in stubs if stub.path not in changer.stubs_created]
        # Links to a deleted stub would dangle: point them at where the stub led.
        relinks, relinked = self._relink({stub.path: stub.final for stub in stubs}, changer)
        rows: list[dict[str, Any]] = []
        for stub in stubs:
            outcome = changer.delete_stub(stub.path, stub.target) if changer else None
            rows.append({"path": stub.path, "target": stub.target, "age_days": int(stub.age_days), "hits": stub.hits,
                         "done": bool(outcome and outcome.done), "reason": outcome.reason if outcome else ""})
        lines = [f"- {memory_uri(r['path'])} → {memory_uri(r['target'])} ({r['age_days']} days old, {r['hits']} hits)" + _skipped(r)
                 for r in rows]
        if relinks:
            count = len(relinked) if changer else len(relinks)
            lines.append(f"- {'re-pointed' if changer else 'would re-point'} `related` links of "
                         f"{plural(count, 'entry', 'entries')} from deleted stubs to their targets")
        return lines, {"stubs": rows, "links_updated": relinked}

    def cleanup_stubs(
        self, age_days: float = 30, max_hits: int = 3, dry_run: Any = True, *, limit: int = DEFAULT_LIMIT
    ) -> Report:
        """Delete redirect stubs at least ``age_days`` old and read at most ``max_hits`` times."""
        dry = parse_dry_run(dry_run)
        self.corpus(reload=True)
        options = {"age_days": age_days, "max_hits": max_hits}
        (lines, data), journal_id = self._execute(
            "cleanup_stubs", options, dry, lambda changer: self._cleanup(age_days, max_hits, changer)
        )
        count = len(data["stubs"]) if dry else sum(row["done"] for row in data["stubs"])
        intro = [f"{'Would delete' if dry else 'Deleted'} {plural(count, 'redirect stub')} older than {age_days:g} days "
                 f"and read at most {max_hits} times."]
        markdown = document("Clean Up Stubs", intro, bullet_list(lines, limit), self._notes("cleanup_stubs", dry, journal_id))
        return Report("cleanup_stubs", dry, markdown, {**options, **data}, journal_id)

    def _compact(
        self, min_quality: int, min_age_days: float, max_hits: int, changer: Changer | None
    ) -> tuple[list[str], dict[str, Any]]:
        now = self.now
        targets = planning.stub_targets(self.memory)
        rows: list[dict[str, Any]] = []
        kept: list[str] = []
        for item in planning.compact_candidates(self.corpus(), now, min_quality, min_age_days, max_hits):
            if item.path in targets:  # deleting it would break the redirects
                kept.append(item.path)
                continue
            outcome = changer.delete(item) if changer else None
            rows.append({"path": item.path, "title": item.title, "quality": item.quality,
                         "age_days": int(item.age_days(now)), "hits": item.hits,
                         "done": bool(outcome and outcome.done), "reason": outcome.reason if outcome else ""})
        lines = [f"- {memory_uri(r['path'])} — quality {r['quality']}/100, {r['age_days']} days old, {r['hits']} hits"
                 + _skipped(r) for r in rows]
        lines += [f"- kept {memory_uri(path)}: redirect stubs point to it" for path in kept]
        gone: dict[str, str | None] = {row["path"]: None for row in rows if row["done"] or not changer}
        linking, unlinked = self._relink(gone, changer)
        if linking:
            count = len(unlinked) if changer else len(linking)
            lines.append(f"- {'removed' if changer else 'would remove'} `related` links to them from "
                         f"{plural(count, 'entry', 'entries')}")
        return lines, {"entries": rows, "kept": kept, "links_removed": unlinked}

    def compact(
        self, min_quality_score: int = 20, min_age_days: float = 30, max_hits: int = 0, dry_run: Any = True,
        *, limit: int = DEFAULT_LIMIT,
    ) -> Report:
        """Delete entries that are low quality AND old AND read at most ``max_hits`` times."""
        dry = parse_dry_run(dry_run)
        self.corpus(reload=True)
        options = {"min_quality_score": min_quality_score, "min_age_days": min_age_days, "max_hits": max_hits}
        (lines, data), journal_id = self._execute(
            "compact", options, dry, lambda changer: self._compact(min_quality_score, min_age_days, max_hits, changer)
        )
        count = len(data["entries"]) if dry else sum(row["done"] for row in data["entries"])
        intro = [f"{'Would delete' if dry else 'Deleted'} {plural(count, 'low-value entry', 'low-value entries')}: "
                 f"quality below {min_quality_score}/100, not updated for {min_age_days:g}+ days "
                 f"and read at most {max_hits} times."]
        markdown = document("Compact", intro, bullet_list(lines, limit), self._notes("compact", dry, journal_id))
        return Report("compact", dry, markdown, {**options, **data}, journal_id)

    def full(
        self, similarity_threshold: float = 0.85, merge_strategy: str = DEFAULT_MERGE_STRATEGY, min_quality_score: int = 20,
        min_age_days: float = 30, dry_run: Any = True, *, limit: int = DEFAULT_LIMIT,
    ) -> Report:
        """Merge duplicates, clean up old stubs, compact — and report the health score before and after."""
        dry = parse_dry_run(dry_run)
        stubs, compact_hits = ACTIONS["cleanup_stubs"], ACTIONS["compact"]["max_hits"]
        before = analyze(self.corpus(reload=True))

        def steps(changer: Changer | None) -> tuple[tuple[Any, ...], ...]:
            merged = self._merge(similarity_threshold, merge_strategy, changer)
            if changer:
                self.corpus(reload=True)
            cleaned = self._cleanup(stubs["age_days"], stubs["max_hits"], changer)
            if changer:
                self.corpus(reload=True)
            return merged, cleaned, self._compact(min_quality_score, min_age_days, compact_hits, changer)

        options = {"similarity_threshold": similarity_threshold, "merge_strategy": merge_strategy,
                   "min_quality_score": min_quality_score, "min_age_days": min_age_days}
        ((merge_lines, merges), (stub_lines, cleanup), (compact_lines, compacted)), journal_id = self._execute(
            "full", options, dry, steps
        )
        after = None if dry else analyze(self.corpus(reload=True))
        body: list[str] = []
        for title, lines, empty in (("Merge duplicates", merge_lines, "No duplicates."),
                                    ("Clean up stubs", stub_lines, "No old stubs."),
                                    ("Compact", compact_lines, "Nothing to compact.")):
            body += [f"## {title}", "", *(bullet_list(lines, limit) or [f"- {empty}"]), ""]
        if after is None:
            title = "Full Optimization (dry run)"
            intro = [f"Health score now: {before.health_score}/100 ({before.band}). "
                     "Compaction is planned on the current entries, before any merge."]
            body.append(demote(format_health_report(before)))
        else:
            title = "Full Optimization"
            intro = [f"Health score: {before.health_score} → {after.health_score} "
                     f"({after.health_score - before.health_score:+d})"]
        data = {**options, "health_before": before.health_score, "health_after": after.health_score if after else None,
                "merges": merges, **cleanup, "compacted": compacted["entries"], "kept": compacted["kept"],
                "links_removed": compacted["links_removed"]}
        return Report("full", dry, document(title, intro, body, self._notes("full", dry, journal_id)), data, journal_id)

    # ------------------------------------------------------------------ helpers
    def _relink(self, moved: dict[str, str | None], changer: Changer | None) -> tuple[list[Item], list[str]]:
        """Rewrite the links (``related`` and typed) of entries that link to paths going away.

        ``moved`` maps each such path to where its links should point now, or None to
        drop them. Returns the entries linking to any of them and (live only) those rewritten.
        """
        linking = [item for item in self.corpus().items if item.related & moved.keys() and item.path not in moved]
        rewritten = []
        for item in linking if changer else ():
            related: list[str] = []
            for link in item.stored.related:
                target = link_target(link)
                if target in moved:
                    new = moved[target]
                    if new is None:
                        continue
                    link = memory_uri(new)
                if link not in related:
                    related.append(link)
            links = _moved_links(item.stored.links, moved, item.path)
            metadata = item.stored.model_copy(update={"related": related, "links": links})
            changed = related != list(item.stored.related) or links != list(item.stored.links)
            if changed and changer is not None and changer.rewrite(item, metadata=metadata).done:
                rewritten.append(item.path)
        return linking, rewritten

    def _notes(self, action: str, dry: bool, journal_id: str | None) -> list[str]:
        if dry:
            return [self.wording.dry_run_note(action)]
        return [f"Journal: `{journal_id}`. {UNDO_NOTE}"] if journal_id else ["Nothing was changed."]

    @staticmethod
    def _pair_dict(corpus: Corpus, pair: Similar) -> dict[str, Any]:
        return {"a": corpus.paths[pair.a], "b": corpus.paths[pair.b], "similarity": round(pair.similarity, 4),
                "jaccard": round(pair.jaccard, 4), "cosine": None if pair.cosine is None else round(pair.cosine, 4)}


def _moved_links(links: list[Link], moved: dict[str, str | None], holder: str) -> list[Link]:
    """Typed ``links`` with targets in ``moved`` re-pointed (or dropped where it maps to None,
    or where the new target is the holder itself or already linked by the same kind)."""
    kept: dict[tuple[str, str], Link] = {}
    for link in links:
        if link.target in moved:
            goal = moved[link.target]
            if goal is None or goal == holder:
                continue
            link = link.model_copy(update={"target": goal})
        kept.setdefault(link.key, link)
    return list(kept.values())


def _merge_line(row: dict[str, Any]) -> str:
    """One merge as the report says it: which text the redirect replaces, and what becomes of it."""
    keep, other = memory_uri(row["keep"]), memory_uri(row["merge"])
    head = f"- {other}'s text is replaced by a redirect to {keep} ({row['similarity']:.2f})"
    if "appended" in row:
        if not row["appended"]:
            return f"{head}; {keep} already holds all of it"
        return f"{head}; what only it holds is appended to {keep}:\n{_quoted(row['appended'])}"
    if not row["dropped"]:
        return f"{head}; nothing is lost: {keep} already holds all of it"
    return f"{head}; this text, which {keep} lacks, is dropped:\n{_quoted(row['dropped'])}"


def _quoted(text: str) -> str:
    """Text as an indented quote under a list item."""
    return "\n".join(f"  > {line}" if line else "  >" for line in text.splitlines())


def _skipped(row: dict[str, Any]) -> str:
    return f" — skipped: {row['reason']}" if row["reason"] else ""


__all__ = ["Defragmenter"]
