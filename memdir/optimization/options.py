"""MemoryDefrag's actions, their options and defaults (SwarmMemory's), and option checking.

One table, `ACTIONS`, says which options each action takes and their defaults; the tool,
the CLI and the server's parameter schema all read it.

``dry_run`` is true unless the caller passes a real ``false``. The JSON string
``"false"`` (any case) counts as false too, because some MCP clients stringify
booleans; anything else — ``0``, ``"no"``, ``null``, an empty string — leaves the run dry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memdir.core.entry import CONFIDENCE_LEVELS
from memdir.core.errors import InputValidationError
from memdir.core.suggest import did_you_mean

DEFAULT_LIMIT = 50
MERGE_STRATEGIES = ("keep_newer", "keep_larger", "combine")
DEFAULT_MERGE_STRATEGY = "combine"
"""Keeps every fact: the richer entry, plus what only the other holds."""
CONFIDENCE_FILTERS = (*CONFIDENCE_LEVELS, "none")


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option: its kind (``fraction``, ``number``, ``integer``, ``choice``, ``flag``) and help."""

    kind: str
    help: str
    choices: tuple[str, ...] = ()
    maximum: float | None = None


OPTION_SPECS: Mapping[str, OptionSpec] = {
    "similarity_threshold": OptionSpec(
        "fraction", "Pairs at least this similar (max of word Jaccard and cosine) are duplicates."
    ),
    "merge_strategy": OptionSpec(
        "choice", "combine (default: keeps every fact), keep_newer or keep_larger (drop the other's text).",
        MERGE_STRATEGIES,
    ),
    "min_quality_score": OptionSpec("integer", "Entries scoring below this (0-100) count as low quality.", maximum=100),
    "confidence_filter": OptionSpec(
        "choice", "Only entries with this confidence (none = no confidence set).", CONFIDENCE_FILTERS
    ),
    "age_days": OptionSpec("number", "Only entries (or stubs) not updated for at least this many days."),
    "min_age_days": OptionSpec("number", "Only entries not updated for at least this many days."),
    "max_hits": OptionSpec("integer", "Only entries read at most this many times."),
    "min_similarity": OptionSpec("fraction", "Lowest cosine similarity of related entries (inclusive)."),
    "max_similarity": OptionSpec("fraction", "Cosine similarity from which entries count as duplicates (exclusive)."),
    "dry_run": OptionSpec("flag", "true (default) previews; only false changes memory."),
    "limit": OptionSpec("integer", "Most items listed in the report (all are counted)."),
}

ACTIONS: Mapping[str, Mapping[str, Any]] = {
    "analyze": {},
    "find_duplicates": {"similarity_threshold": 0.85},
    "find_low_quality": {"min_quality_score": 50, "confidence_filter": None},
    "find_archival_candidates": {"age_days": 90, "max_hits": 0},
    "find_related": {"min_similarity": 0.60, "max_similarity": 0.85},
    "link_related": {"min_similarity": 0.60, "max_similarity": 0.85, "dry_run": True},
    "merge_duplicates": {"similarity_threshold": 0.85, "merge_strategy": DEFAULT_MERGE_STRATEGY, "dry_run": True},
    "cleanup_stubs": {"age_days": 30, "max_hits": 3, "dry_run": True},
    "compact": {"min_quality_score": 20, "min_age_days": 30, "max_hits": 0, "dry_run": True},
    "full": {
        "similarity_threshold": 0.85, "merge_strategy": DEFAULT_MERGE_STRATEGY, "min_quality_score": 20, "min_age_days": 30,
        "dry_run": True,
    },
}
READ_ONLY_ACTIONS = ("analyze", "find_duplicates", "find_low_quality", "find_archival_candidates", "find_related")
ACTIVE_ACTIONS = tuple(name for name in ACTIONS if name not in READ_ONLY_ACTIONS)
COMMON_OPTIONS = {"limit": DEFAULT_LIMIT, "dry_run": True}


def parse_dry_run(value: Any) -> bool:
    """True unless ``value`` is a real ``False`` (or the string ``"false"``): only that goes live."""
    if value is False:
        return False
    if isinstance(value, str) and value.strip().lower() == "false":
        return False
    return True


def _number(action: str, name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise InputValidationError(f"{action}: {name} must be a number, not {value!r}.", f"Pass e.g. {name}: 0.85.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputValidationError(
            f"{action}: {name} must be a number, got {value!r}.", f"Pass e.g. {name}: {ACTIONS[action].get(name, 1)}."
        ) from None


def _check(action: str, name: str, value: Any) -> Any:
    spec = OPTION_SPECS[name]
    if spec.kind == "flag":
        return parse_dry_run(value)
    if spec.kind == "choice":
        text = str(value).strip().lower()
        if text not in spec.choices:
            raise InputValidationError(
                f"{action}: {name} {value!r} is not one of {', '.join(spec.choices)}.{did_you_mean(value, spec.choices)}",
                f"Pass {name} as one of: {', '.join(spec.choices)}.",
            )
        return text
    number = _number(action, name, value)
    if spec.kind == "fraction":
        if not 0.0 < number <= 1.0:
            raise InputValidationError(
                f"{action}: {name} must be between 0 and 1 (a similarity), got {value!r}.",
                f"Pass e.g. {name}: {ACTIONS[action].get(name, 0.85)}.",
            )
        return number
    if number < 0 or (spec.maximum is not None and number > spec.maximum):
        bound = f"between 0 and {spec.maximum:g}" if spec.maximum is not None else "zero or more"
        raise InputValidationError(f"{action}: {name} must be {bound}, got {value!r}.", spec.help)
    if spec.kind == "integer":
        if number != int(number):
            raise InputValidationError(f"{action}: {name} must be a whole number, got {value!r}.", spec.help)
        return int(number)
    return number


def resolve_options(action: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The action's options with defaults filled in and every value checked.

    ``None`` means "use the default". Options that belong to other actions are refused
    (a destructive action must not silently ignore what the caller meant), as are unknown ones.

    Raises:
        InputValidationError: unknown action, option or value; the message lists what is valid.
    """
    if action not in ACTIONS:
        raise InputValidationError(
            f"Unknown MemoryDefrag action {action!r}.{did_you_mean(action, ACTIONS)}",
            "Valid actions: " + ", ".join(ACTIONS) + ".",
        )
    accepted = {**ACTIONS[action], **COMMON_OPTIONS}
    resolved: dict[str, Any] = dict(accepted)
    for name, value in options.items():
        if value is None:
            continue
        if name not in accepted:
            known = "unknown option" if name not in OPTION_SPECS else f"an option of other actions, not of {action}"
            takes = ", ".join(ACTIONS[action]) or "no options"
            raise InputValidationError(f"{name!r} is {known}.", f"{action} takes: {takes} (and limit).")
        resolved[name] = _check(action, name, value)
    if action in READ_ONLY_ACTIONS:
        resolved.pop("dry_run")
    if "min_similarity" in resolved and resolved["min_similarity"] >= resolved["max_similarity"]:
        raise InputValidationError(
            f"{action}: min_similarity ({resolved['min_similarity']}) must be below max_similarity "
            f"({resolved['max_similarity']}).",
            "Related entries are those with min_similarity <= cosine < max_similarity, e.g. 0.60 and 0.85.",
        )
    return resolved


__all__ = [
    "ACTIONS",
    "ACTIVE_ACTIONS",
    "DEFAULT_LIMIT",
    "OPTION_SPECS",
    "OptionSpec",
    "READ_ONLY_ACTIONS",
    "parse_dry_run",
    "resolve_options",
]
