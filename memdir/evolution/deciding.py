"""Who decides what happens to a cluster of near-duplicates: the client's model, or a strict rule.

The consolidation job (`memdir.evolution.consolidation`) takes an optional ``decide(cluster)
-> Decision | None``. `model_decider` builds one from a plain ``ask(prompt, max_tokens) ->
reply`` callable (the same shape `memdir.episodes.sampling` uses; the server wires it to MCP
sampling, so this layer never imports MCP). The model answers::

    ACTION: merge | supersede | keep
    KEEP: <the path that stays>
    REASON: <one sentence>

A reply that cannot be read, a refusal, a timeout or an error is no decision (None): the
cluster is kept as it is this run, as the design wants when its LLM service is down.
Without a model, `rule_decision` decides: only *supersede*, and only members that are
near-identical to the newest one (cosine >= 0.95 and word overlap >= 0.8 by default) and
written within ``consolidation_max_gap_days`` of it (an entry written much later may be an
evolution of the older one, not a copy).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memdir.core.settings import Settings
from memdir.evolution.facts import days_between

log = logging.getLogger(__name__)

Ask = Callable[[str, int], "str | None"]
Action = Literal["merge", "supersede", "keep"]
ACTIONS: tuple[Action, ...] = ("merge", "supersede", "keep")
EXCERPT_CHARS = 1200


@dataclass(frozen=True, slots=True)
class Member:
    """One entry of a cluster, as the decider sees it."""

    path: str
    title: str
    content: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Cluster:
    """Near-duplicate entries (every pair similar enough), newest first.

    ``cosine[i][j]`` / ``jaccard[i][j]``: the similarities of members i and j.
    """

    members: tuple[Member, ...]
    cosine: tuple[tuple[float, ...], ...]
    jaccard: tuple[tuple[float, ...], ...]

    @property
    def paths(self) -> list[str]:
        return [member.path for member in self.members]

    @property
    def key(self) -> str:
        """What orders clusters and names where a partial run stopped: its first path."""
        return min(self.paths)


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a cluster: ``keep`` as is, ``supersede`` the others by ``keeper``, or
    ``merge`` the others' content into ``keeper`` (they are then superseded by it)."""

    action: Action
    keeper: str | None = None
    others: tuple[str, ...] = ()
    reason: str = ""
    by: str = "rule"


Decide = Callable[[Cluster], "Decision | None"]


def rule_decision(cluster: Cluster, settings: Settings) -> Decision:
    """Without a model: supersede by the newest member only those near-identical to it and written close to it."""
    newest = cluster.members[0]
    others = tuple(
        member.path for index, member in enumerate(cluster.members[1:], start=1)
        if cluster.cosine[0][index] >= settings.evolution.consolidation_supersede_cosine
        and cluster.jaccard[0][index] >= settings.evolution.consolidation_supersede_jaccard
        and days_between(member.updated_at, newest.updated_at) <= settings.evolution.consolidation_max_gap_days
    )  # fmt: skip
    if not others:
        return Decision("keep", reason="not near-identical to the newest, or written long apart")
    return Decision("supersede", newest.path, others, "near-identical to the newest copy")


# --------------------------------------------------------------------------- the client's model

INSTRUCTIONS = (
    "You maintain an agent's long-term memory. These entries were found to be near-duplicates. Decide:\n"
    "- merge: they hold parts of one piece of knowledge; their text is combined into the entry to keep;\n"
    "- supersede: one says everything the others say (or replaces them: newer, corrected); the others step aside;\n"
    "- keep: they differ in something that matters (another person, time, version or outcome).\n"
    "Nothing is deleted either way. Answer with exactly three lines:\n"
    "ACTION: merge|supersede|keep\nKEEP: <the path of the entry that stays>\nREASON: <one sentence>"
)
_FIELD = re.compile(r"^\s*\**(?P<name>action|keep|reason)\**\s*[:\-]\s*\**\s*(?P<value>.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def build_prompt(cluster: Cluster) -> str:
    """The request sent to the client's model: the instructions and each member (newest first, excerpted)."""
    parts = [INSTRUCTIONS, ""]
    for index, member in enumerate(cluster.members):
        body = member.content if len(member.content) <= EXCERPT_CHARS else member.content[:EXCERPT_CHARS] + " […]"
        similar = f", cosine {cluster.cosine[0][index]:.2f} to the first" if index else ""
        parts += [f"## {member.path} (written {member.updated_at:%Y-%m-%d}{similar})", f"Title: {member.title}", body, ""]
    return "\n".join(parts)


def parse_decision(reply: str | None, cluster: Cluster) -> Decision | None:
    """The model's reply as a `Decision`, or None when it names no action or a path outside the cluster."""
    if not reply:
        return None
    fields = {match["name"].lower(): match["value"].strip("`*\"' ") for match in _FIELD.finditer(reply)}
    action = fields.get("action", "").lower()
    if action not in ACTIONS:
        return None
    reason = fields.get("reason", "")
    if action == "keep":
        return Decision("keep", reason=reason, by="model")
    keeper = fields.get("keep", "").removeprefix("memory://")
    if keeper not in cluster.paths:
        return None
    others = tuple(path for path in cluster.paths if path != keeper)
    return Decision(action, keeper, others, reason, by="model")


def model_decider(ask: Ask, *, max_tokens: int = 200) -> Decide:
    """A `Decide` that asks the client's model through ``ask``; None (keep this run) on any failure."""

    def decide(cluster: Cluster) -> Decision | None:
        try:
            reply = ask(build_prompt(cluster), max_tokens)
        except Exception:  # no sampling, a refusal, a timeout: this cluster waits for the next run
            log.info("the client's model gave no consolidation decision", exc_info=True)
            return None
        return parse_decision(reply, cluster)

    return decide


__all__ = [
    "ACTIONS", "Cluster", "Decide", "Decision", "Member", "build_prompt", "model_decider", "parse_decision",
    "rule_decision",
]
