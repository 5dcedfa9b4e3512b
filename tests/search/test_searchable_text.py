"""The text an entry is embedded from (SwarmMemory's searchable text)."""

from __future__ import annotations

from memdir.core.entry import Metadata
from memdir.embeddings.text import first_paragraph, searchable_text, text_hash


def test_full_card_has_title_tags_domain_and_first_paragraph():
    meta = Metadata(tags=["ruby", "oop"], domain="programming")
    content = "Classes bundle state and behaviour.\nThey are objects too.\n\nSecond paragraph is left out."
    assert searchable_text("Ruby classes", meta, content) == (
        "Title: Ruby classes\n"
        "Tags: ruby, oop\n"
        "Domain: programming\n"
        "Summary: Classes bundle state and behaviour. They are objects too."
    )


def test_empty_parts_are_left_out():
    assert searchable_text("", Metadata(), "Just content.") == "Summary: Just content."
    assert searchable_text("Only a title", Metadata(), "") == "Title: Only a title"
    assert searchable_text("", None, "   \n\n  ") == ""


def test_a_leading_heading_repeating_the_title_is_skipped():
    content = "# Ruby Classes\n\nClasses are objects.\n\nMore."
    assert first_paragraph(content, "ruby classes") == "Classes are objects."
    # a heading that says something else is the first paragraph
    assert first_paragraph("# Overview\nText", "Ruby classes") == "# Overview Text"


def test_summary_is_capped_and_minus_one_means_unlimited():
    content = "word " * 1000
    capped = searchable_text("T", Metadata(), content, max_chars=50)
    assert capped.startswith("Title: T\nSummary: ")
    assert len(capped.split("Summary: ", 1)[1]) <= 50
    full = searchable_text("T", Metadata(), content, max_chars=-1)
    assert len(full.split("Summary: ", 1)[1]) == len(content.strip())
    assert len(searchable_text("T", Metadata(), content).split("Summary: ", 1)[1]) <= 1200


def test_plain_dict_metadata_is_accepted():
    assert searchable_text("T", {"tags": ["a", "b"], "domain": "d"}, "x") == "Title: T\nTags: a, b\nDomain: d\nSummary: x"


def test_text_hash_is_stable_and_sensitive():
    assert text_hash("abc") == text_hash("abc")
    assert text_hash("abc") != text_hash("abd")
    assert len(text_hash("abc")) == 16


def test_a_heading_on_its_own_is_joined_by_the_paragraph_after_it():
    content = "# Deploy checklist\n\nRun the migrations before switching traffic.\nThen warm the caches.\n\nLater notes."
    assert first_paragraph(content, "Production deploys") == (
        "# Deploy checklist Run the migrations before switching traffic. Then warm the caches."
    )
    assert first_paragraph("# Only a heading", "Other") == "# Only a heading"


def test_a_document_of_headings_only_gives_at_most_two_of_them():
    content = "\n\n".join(f"# Heading {i}" for i in range(200))
    assert first_paragraph(content, "Other") == "# Heading 0 # Heading 1"


def test_content_summary_embeds_every_paragraph():
    content = "# T\n\nCaroline: I went to the support group.\n\nIn reply to Melanie: What's new?"
    assert searchable_text("T", Metadata(), content, summary="content") == (
        "Title: T\nSummary: Caroline: I went to the support group. In reply to Melanie: What's new?"
    )
    assert searchable_text("T", Metadata(), content) == "Title: T\nSummary: Caroline: I went to the support group."
