"""Phrases that mark a message as worth keeping: "remember …", "we decided …".

Shared by episodic memory (an episode's importance) and working memory (a thread's
message that compaction must not fold away), so both read a message the same way.
"""

from __future__ import annotations

import re

REMEMBER = re.compile(
    r"\b(?:remember|don'?t forget|do not forget|keep in mind|note to self|for future reference|from now on|"
    r"going forward|make sure to always|never again)\b|\bIMPORTANT\b|\bimportant:",
    re.IGNORECASE,
)
"""Something the speaker asks to be kept: importance 0.9."""
DECISION = re.compile(
    r"\b(?:decided|decision:|we'?ll go with|let'?s go with|going with|let'?s use|we'?ll use|settled on|chose|"
    r"chosen|agreed|the plan is|plan:|we should use|opted for)\b",
    re.IGNORECASE,
)
"""A decision taken: importance 0.75."""
REMEMBER_IMPORTANCE = 0.9
DECISION_IMPORTANCE = 0.75


def stated_importance(text: str) -> float | None:
    """The importance a "remember" or "decided" phrase gives ``text``; None when it has neither."""
    if REMEMBER.search(text):
        return REMEMBER_IMPORTANCE
    if DECISION.search(text):
        return DECISION_IMPORTANCE
    return None


__all__ = ["DECISION", "DECISION_IMPORTANCE", "REMEMBER", "REMEMBER_IMPORTANCE", "stated_importance"]
