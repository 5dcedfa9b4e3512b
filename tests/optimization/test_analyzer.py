"""Quality scores, the health score with SwarmMemory's components and bands, and the health report."""

from __future__ import annotations

import pytest

from memdir.core.entry import Metadata
from memdir.core.quality import MAX_QUALITY, effective_metadata, parse_frontmatter, quality_score
from memdir.optimization.analyzer import (
    HealthStats,
    format_health_report,
    health_band,
    percentage,
    score_components,
)
from memdir.optimization.defragmenter import Defragmenter

# --------------------------------------------------------------------------- quality


@pytest.mark.parametrize(
    ("metadata", "score"),
    [
        ({}, 0),
        ({"type": "concept"}, 20),
        ({"confidence": "medium"}, 20),
        ({"confidence": "high"}, 30),
        ({"tags": ["ruby"]}, 15),
        ({"tags": []}, 0),
        ({"related": ["memory://fact/x.md"]}, 15),
        ({"domain": "programming/ruby"}, 10),
        ({"last_verified": "2025-01-15"}, 10),
        ({"type": "fact", "confidence": "low", "tags": ["a"]}, 55),
        (
            {"type": "concept", "confidence": "high", "tags": ["a"], "related": ["memory://b.md"],
             "domain": "d", "last_verified": "2025-01-15"},
            100,
        ),
    ],
)
def test_quality_score_points(metadata, score):
    assert quality_score(metadata) == score
    assert quality_score(Metadata.model_validate(metadata)) == score


def test_quality_max_is_100():
    assert MAX_QUALITY == 100


def test_frontmatter_in_content_counts_towards_quality():
    content = "---\ntype: concept\nconfidence: high\ntags: [ruby, oop]\n---\n\n# Ruby Classes\n\nContent here...\n"
    parsed = parse_frontmatter(content)
    assert parsed.data == {"type": "concept", "confidence": "high", "tags": ["ruby", "oop"]}
    assert parsed.body == "# Ruby Classes\n\nContent here...\n"
    assert parsed.error is None
    assert quality_score(None, content) == 20 + 20 + 10 + 15


def test_sidecar_wins_and_lists_are_merged():
    content = "---\nconfidence: low\ntags: [a]\n---\nbody"
    merged = effective_metadata(Metadata(confidence="high", tags=["b"]), content)
    assert merged == {"confidence": "high", "tags": ["b", "a"]}


@pytest.mark.parametrize(
    "content",
    ["no frontmatter", "---\nnot closed", "----\ntype: x\n----\n", "text\n---\ntype: x\n---\n"],
)
def test_content_without_frontmatter_is_all_body(content):
    parsed = parse_frontmatter(content)
    assert parsed.data == {} and parsed.body == content


def test_malformed_frontmatter_is_reported_not_raised():
    parsed = parse_frontmatter("---\ntype: [unclosed\n---\nbody")
    assert parsed.data == {} and parsed.error and parsed.body.startswith("---")


# --------------------------------------------------------------------------- health score


def stats(total: int, **counts: int) -> HealthStats:
    high = counts.pop("high", 0)
    values = {"with_frontmatter": 0, "with_embeddings": 0, "with_tags": 0, "with_links": 0, **counts}
    return HealthStats(total_entries=total, total_size=0, average_quality=0, by_confidence={"high": high}, **values)


@pytest.mark.parametrize(
    ("percent", "frontmatter", "tags", "links", "embeddings", "high"),
    [
        (100, 30, 20, 20, 15, 15),
        (81, 30, 20, 20, 15, 15),
        (80, 20, 20, 20, 8, 15),
        (61, 20, 20, 20, 8, 15),
        (60, 20, 10, 20, 8, 15),
        (51, 20, 10, 20, 8, 15),
        (50, 10, 10, 20, 0, 8),
        (41, 10, 10, 20, 0, 8),
        (40, 10, 10, 10, 0, 8),
        (31, 10, 10, 10, 0, 8),
        (30, 10, 0, 10, 0, 8),
        (26, 10, 0, 10, 0, 8),
        (25, 10, 0, 10, 0, 0),
        (21, 10, 0, 10, 0, 0),
        (20, 0, 0, 0, 0, 0),
        (0, 0, 0, 0, 0, 0),
    ],
)
def test_score_components_thresholds(percent, frontmatter, tags, links, embeddings, high):
    components = score_components(
        stats(100, with_frontmatter=percent, with_tags=percent, with_links=percent, with_embeddings=percent, high=percent)
    )
    assert components == {
        "frontmatter": frontmatter, "tags": tags, "links": links, "embeddings": embeddings, "high_confidence": high
    }


def test_percentages_round_half_up_like_ruby():
    assert percentage(1, 8) == 13  # 12.5
    assert percentage(4, 42) == 10
    assert percentage(0, 0) == 0


@pytest.mark.parametrize(
    ("score", "label"),
    [(100, "Excellent"), (80, "Excellent"), (79, "Good"), (60, "Good"), (59, "Fair"), (40, "Fair"),
     (39, "Poor"), (20, "Poor"), (19, "Critical"), (0, "Critical")],
)
def test_health_bands(score, label):
    assert health_band(score)[0] == label


def test_sizes_are_shown_like_swarm_memory():
    from memdir.core.units import human_size

    assert [human_size(n) for n in (512, 156_300, 2_100_000)] == ["512B", "156.3KB", "2.1MB"]


SEED_REPORT = """# Memory Health Report

## Overview
- Total entries: 42
- Total size: 156.3KB
- Entries with frontmatter: 38 (90%)
- Entries with embeddings: 42 (100%)
- Entries with tags: 35 (83%)
- Entries with related links: 28 (67%)
- Average quality score: 72/100

## By Type
- concept: 15 (36%)
- fact: 18 (43%)
- skill: 6 (14%)
- experience: 3 (7%)

## By Confidence
- high: 25 (60%)
- medium: 13 (31%)
- low: 4 (10%)

## Health Score: 85/100
Excellent - Memory is well-organized and high-quality"""


def test_report_matches_the_seed_example():
    report = HealthStats(
        total_entries=42, total_size=156_300, with_frontmatter=38, with_embeddings=42, with_tags=35, with_links=28,
        average_quality=72, by_type={"concept": 15, "fact": 18, "skill": 6, "experience": 3},
        by_confidence={"high": 25, "medium": 13, "low": 4}, health_score=85,
    )
    assert format_health_report(report) == SEED_REPORT


# --------------------------------------------------------------------------- analyze a real memory


def test_analyze_a_memory(memory):
    memory.write("concept/a.md", "alpha", title="A",
                 metadata={"type": "concept", "confidence": "high", "tags": ["x"], "related": ["memory://fact/b.md"]})
    memory.write("fact/b.md", "beta", title="B", metadata={"type": "fact", "confidence": "high", "tags": ["y"]})
    memory.write("fact/c.md", "---\ntype: fact\nconfidence: low\n---\ngamma", title="C")
    memory.write("experience/d.md", "delta", title="D")
    report = Defragmenter(memory).run("analyze")
    data = report.data
    assert (data["total_entries"], data["with_frontmatter"], data["with_embeddings"]) == (4, 3, 4)
    assert (data["with_tags"], data["with_links"]) == (2, 1)
    assert data["by_type"] == {"fact": 2, "concept": 1, "experience": 1}  # d.md: its folder's type
    assert data["by_confidence"] == {"high": 2, "low": 1}
    assert data["average_quality"] == (80 + 65 + 40 + 0) // 4
    # frontmatter 75% -> 20, tags 50% -> 10, links 25% -> 10, embeddings 100% -> 15, high 50% -> 8
    assert data["components"] == {"frontmatter": 20, "tags": 10, "links": 10, "embeddings": 15, "high_confidence": 8}
    assert data["health_score"] == 63
    assert report.markdown.startswith("# Memory Health Report\n\n## Overview\n- Total entries: 4\n")
    assert "## Health Score: 63/100\nGood - Memory is decent but could use some improvements" in report.markdown
    assert "skill/meta" not in report.markdown  # built-in entries are not the user's to defragment


def test_analyze_empty_memory(memory):
    report = Defragmenter(memory).run("analyze")
    assert report.data["health_score"] == 0
    assert "Memory is empty" in report.markdown
