"""Memory health: coverage statistics, SwarmMemory's health score and its report.

Health score (0-100), the sum of five components; each coverage is the share of
entries, as a whole percentage (rounded), compared with ``>``:

| component                         | points                      |
|-----------------------------------|-----------------------------|
| metadata ("frontmatter") coverage | >80%: 30, >50%: 20, >20%: 10 |
| tags coverage                     | >60%: 20, >30%: 10           |
| related-links coverage            | >40%: 20, >20%: 10           |
| embedding coverage                | >80%: 15, >50%: 8            |
| share with ``confidence: high``   | >50%: 15, >25%: 8            |

Bands (SwarmMemory's wording): 80-100 Excellent, 60-79 Good, 40-59 Fair, 20-39 Poor,
0-19 Critical.

Beyond SwarmMemory's report, links (typed ``links`` and ``related`` paths) to entries that
do not exist (deleted by hand or by another tool) are counted and listed, and so are
``links`` items that are no link at all (kept apart under ``links_unreadable`` when read):
they do not change the score, but a reader following one finds nothing. An entry counts as
linked when it has either kind of link.

An entry "has frontmatter" when it carries any metadata, in its ``.yml`` sidecar (memdir's
frontmatter) or as YAML frontmatter in its content. "By Type" lists concept, fact, skill
and experience in that order (as the design's example does), then any other types by
count; "By Confidence" lists high, medium, low.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from memdir.core.entry import CONFIDENCE_LEVELS, ENTRY_TYPES
from memdir.core.links import LINK_KINDS, UNREADABLE_LINKS, parse_links
from memdir.core.paths import link_target, memory_uri
from memdir.core.units import human_size
from memdir.optimization.corpus import Corpus, Item

# (minimum percentage, exclusive) -> points, best first
FRONTMATTER_POINTS = ((80, 30), (50, 20), (20, 10))
TAGS_POINTS = ((60, 20), (30, 10))
LINKS_POINTS = ((40, 20), (20, 10))
EMBEDDING_POINTS = ((80, 15), (50, 8))
HIGH_CONFIDENCE_POINTS = ((50, 15), (25, 8))

DANGLING_SHOWN = 10  # dangling links listed in the report (all are in its data)

HEALTH_BANDS = (
    (80, "Excellent", "Memory is well-organized and high-quality"),
    (60, "Good", "Memory is decent but could use some improvements"),
    (40, "Fair", "Consider running defrag to improve organization"),
    (20, "Poor", "Memory needs significant cleanup and reorganization"),
    (0, "Critical", "Memory is poorly organized and needs immediate attention"),
)


def percentage(part: int, total: int) -> int:
    """``part`` as a whole percentage of ``total``, halves rounded up as Ruby does (0 when there is nothing)."""
    return (part * 200 + total) // (2 * total) if total else 0


def _points(percent: int, table: tuple[tuple[int, int], ...]) -> int:
    for above, points in table:
        if percent > above:
            return points
    return 0


@dataclass(frozen=True, slots=True)
class HealthStats:
    """What `analyze` measures; ``health_score`` is the sum of ``components``."""

    total_entries: int
    total_size: int
    with_frontmatter: int
    with_embeddings: int
    with_tags: int
    with_links: int
    average_quality: int
    by_type: dict[str, int] = field(default_factory=dict)
    by_confidence: dict[str, int] = field(default_factory=dict)
    components: dict[str, int] = field(default_factory=dict)
    health_score: int = 0
    dangling_links: dict[str, list[str]] = field(default_factory=dict)  # entry -> links to missing entries
    unreadable_links: dict[str, list[str]] = field(default_factory=dict)  # entry -> `links` items that are no link

    @property
    def dangling_count(self) -> int:
        return sum(map(len, self.dangling_links.values()))

    @property
    def band(self) -> str:
        return health_band(self.health_score)[0]

    @property
    def interpretation(self) -> str:
        label, meaning = health_band(self.health_score)
        return f"{label} - {meaning}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["band"] = self.band
        data["interpretation"] = self.interpretation
        return data


def health_band(score: int) -> tuple[str, str]:
    """(label, meaning) of a health score, e.g. ``("Excellent", "Memory is well-organized ...")``."""
    for floor, label, meaning in HEALTH_BANDS:
        if score >= floor:
            return label, meaning
    return HEALTH_BANDS[-1][1], HEALTH_BANDS[-1][2]


def score_components(stats: HealthStats) -> dict[str, int]:
    """Points per component for the counts in ``stats``."""
    total = stats.total_entries
    if total == 0:
        return {"frontmatter": 0, "tags": 0, "links": 0, "embeddings": 0, "high_confidence": 0}
    return {
        "frontmatter": _points(percentage(stats.with_frontmatter, total), FRONTMATTER_POINTS),
        "tags": _points(percentage(stats.with_tags, total), TAGS_POINTS),
        "links": _points(percentage(stats.with_links, total), LINKS_POINTS),
        "embeddings": _points(percentage(stats.with_embeddings, total), EMBEDDING_POINTS),
        "high_confidence": _points(percentage(stats.by_confidence.get("high", 0), total), HIGH_CONFIDENCE_POINTS),
    }


def analyze_items(
    items: Iterable[Item], total_size: int | None = None, dangling_links: Mapping[str, list[str]] | None = None
) -> HealthStats:
    """Health statistics and score of a collection of entries (``dangling_links``: see `find_dangling_links`)."""
    items = list(items)
    by_type: Counter[str] = Counter(item.type for item in items if item.type)
    by_confidence: Counter[str] = Counter(item.confidence for item in items if item.confidence)
    stats = HealthStats(
        total_entries=len(items),
        total_size=sum(item.size for item in items) if total_size is None else total_size,
        with_frontmatter=sum(item.has_metadata for item in items),
        with_embeddings=sum(item.embedded for item in items),
        with_tags=sum(bool(item.tags) for item in items),
        with_links=sum(bool(item.links) for item in items),
        average_quality=sum(item.quality for item in items) // len(items) if items else 0,
        by_type=dict(sorted(by_type.items(), key=lambda kv: (_type_rank(kv[0]), -kv[1], kv[0]))),
        by_confidence=dict(sorted(by_confidence.items(), key=lambda kv: (_confidence_rank(kv[0]), kv[0]))),
        dangling_links=dict(dangling_links or {}),
        unreadable_links={item.path: [str(bad) for bad in item.metadata[UNREADABLE_LINKS]]
                          for item in items if item.metadata.get(UNREADABLE_LINKS)},
    )
    components = score_components(stats)
    return HealthStats(**{**asdict(stats), "components": components, "health_score": sum(components.values())})


def _type_rank(name: str) -> int:
    """memdir's four types in their usual order (as in the design's report), any others after them."""
    return ENTRY_TYPES.index(name) if name in ENTRY_TYPES else len(ENTRY_TYPES)


def _confidence_rank(level: str) -> int:
    return CONFIDENCE_LEVELS.index(level) if level in CONFIDENCE_LEVELS else len(CONFIDENCE_LEVELS)


def find_dangling_links(corpus: Corpus) -> dict[str, list[str]]:
    """Entry -> its links that lead nowhere (to no entry, stub or built-in skill): a ``related``
    path as written, a typed link as ``target (kind)``."""
    present = set(corpus.paths)
    checked: dict[str, bool] = {}

    def leads_somewhere(link: str) -> bool:
        target = link_target(link)
        if target is None:
            return False
        if target not in present and target not in checked:
            checked[target] = corpus.memory.exists(target)  # a stub or a built-in skill
        return target in present or checked[target]

    found = {}
    for item in corpus.items:
        dangling = [str(link) for link in item.metadata.get("related", []) if not leads_somewhere(link)]
        typed, _ = parse_links(item.metadata.get("links"))
        dangling += [f"{link.target} ({link.kind})" for link in typed if not leads_somewhere(link.target)]
        if dangling:
            found[item.path] = dangling
    return found


def analyze(corpus: Corpus) -> HealthStats:
    """Health statistics of a loaded `Corpus`."""
    return analyze_items(corpus.items, corpus.total_size, find_dangling_links(corpus))


def _listing(title: str, intro: str, items: list[str], advice: str) -> list[str]:
    """A report section listing problems: the first `DANGLING_SHOWN` items, how many more, what to do."""
    lines = [f"## {title}", intro, *(f"- {item}" for item in items[:DANGLING_SHOWN])]
    if len(items) > DANGLING_SHOWN:
        lines.append(f"- … and {len(items) - DANGLING_SHOWN} more")
    return [*lines, advice, ""]


def format_health_report(stats: HealthStats) -> str:
    """The report as SwarmMemory printed it (``# Memory Health Report`` ... ``## Health Score: n/100``)."""
    total = stats.total_entries
    if total == 0:
        return "# Memory Health Report\n\nMemory is empty. No entries to analyze.\n\n## Health Score: 0/100\n" + (
            stats.interpretation
        )
    lines = [
        "# Memory Health Report",
        "",
        "## Overview",
        f"- Total entries: {total}",
        f"- Total size: {human_size(stats.total_size)}",
        f"- Entries with frontmatter: {stats.with_frontmatter} ({percentage(stats.with_frontmatter, total)}%)",
        f"- Entries with embeddings: {stats.with_embeddings} ({percentage(stats.with_embeddings, total)}%)",
        f"- Entries with tags: {stats.with_tags} ({percentage(stats.with_tags, total)}%)",
        f"- Entries with related links: {stats.with_links} ({percentage(stats.with_links, total)}%)",
        f"- Average quality score: {stats.average_quality}/100",
        "",
    ]
    if stats.dangling_links:
        lines += _listing(
            "Dangling Links", f"{stats.dangling_count} link(s) lead to entries that do not exist:",
            [f"{memory_uri(path)} → {memory_uri(link)}" for path, links in stats.dangling_links.items() for link in links],
            "Remove them from those entries' `related` or `links` metadata (MemoryUnlink), or write the missing entries.",
        )
    if stats.unreadable_links:
        shown = [f"{memory_uri(path)}: {bad}" for path, items in stats.unreadable_links.items() for bad in items]
        lines += _listing(
            "Unreadable Links", f"{len(shown)} `links` item(s) are no link (kept under `{UNREADABLE_LINKS}`):", shown,
            f"Each needs a target path and a kind ({', '.join(LINK_KINDS)}); fix them or remove them.",
        )
    if stats.by_type:
        lines.append("## By Type")
        lines.extend(f"- {name}: {count} ({percentage(count, total)}%)" for name, count in stats.by_type.items())
        lines.append("")
    if stats.by_confidence:
        lines.append("## By Confidence")
        lines.extend(f"- {name}: {count} ({percentage(count, total)}%)" for name, count in stats.by_confidence.items())
        lines.append("")
    lines.append(f"## Health Score: {stats.health_score}/100")
    lines.append(stats.interpretation)
    return "\n".join(lines)


__all__ = [
    "HEALTH_BANDS",
    "HealthStats",
    "analyze",
    "analyze_items",
    "find_dangling_links",
    "format_health_report",
    "health_band",
    "percentage",
    "score_components",
]
