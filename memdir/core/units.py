"""How memdir shows sizes and counts and budgets text: one definition each, used by every report and reminder."""

from __future__ import annotations

import math
import re

CHARS_PER_TOKEN = 4  # a cheap, model-free estimate; reminders only need a budget, not an exact count


def human_size(size: int) -> str:
    """Bytes as SwarmMemory shows them: ``856B``, ``1.2KB``, ``3.0MB`` (decimal units)."""
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f}MB"
    if size >= 1_000:
        return f"{size / 1_000:.1f}KB"
    return f"{size}B"


def estimate_tokens(text: str) -> int:
    """A cheap token estimate: ~4 characters per token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 entry`` / ``2 entries``; ``1 match`` / ``3 matches`` (``plural_form`` for irregular words)."""
    if count == 1:
        return f"{count} {singular}"
    return f"{count} {plural_form or _plural(singular)}"


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


# Scripts written without spaces between words (Chinese, Japanese kana): each character is
# counted as a word, which is how their word counts are usually given. Korean puts spaces
# between words, so whitespace counts it right.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_BREAKS = re.compile(r"[\s\u200b\u2060\ufeff]+")  # whitespace, and the invisible word breaks


def count_words(text: str) -> int:
    """Words as the word limit counts them: whitespace-separated, and one per Chinese/Japanese character.

    ``str.split`` alone counted a whole paragraph of Chinese, or words joined by zero-width
    spaces, as one word, so the limit did not hold for them.
    """
    count = 0
    for token in _BREAKS.split(text):
        if token:
            unspaced = len(_UNSPACED.findall(token))
            count += unspaced + len(_UNSPACED.sub(" ", token).split()) if unspaced else 1
    return count
