"""The fragment strategy (gro's FragmentationMemory with its RandomSamplingFragmenter).

The most recent turns keep ``thread_recent_share`` of the budget. Older units are sampled:
unit ``j`` of ``n`` older ones (0 = oldest) is kept with probability
``rate · w_j · n / Σw`` where ``w_j = ((j + 1) / n) ** age_exponent`` — about ``rate · n``
units in all, newer ones more likely (by default rate 0.2, exponent 1.5). The draw for a unit
is seeded by the thread id and the unit's first chunk id, so the same thread always gives
the same context, and a unit's draw does not change as the thread grows. Sampled units
form fragments (runs of consecutive ones); they fill the rest of the budget newest first.
"""

from __future__ import annotations

import hashlib

import numpy as np

from memdir.core.settings import Settings
from memdir.threads.context.base import Budget, Piece, Unit, Window, assemble, recent_and_older


def draw(thread: str, unit: Unit) -> float:
    """The unit's fixed uniform draw in [0, 1): a hash of (thread, first chunk id)."""
    digest = hashlib.blake2b(f"{thread}\0{unit.key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64


def sampled(older: list[Unit], draws: np.ndarray, settings: Settings) -> list[Unit]:
    """The older units the age-weighted sampler keeps, in thread order."""
    n = len(older)
    if n == 0:
        return []
    weights = (np.arange(1, n + 1, dtype=np.float64) / n) ** settings.threads.fragment_age_exponent
    chance = np.minimum(1.0, settings.threads.fragment_rate * weights * n / weights.sum())
    return [unit for unit, keep in zip(older, draws < chance) if keep]


def select(thread: str, units: list[Unit], draws: np.ndarray, budget_tokens: int, settings: Settings) -> Window:
    """The fragment window; ``draws[i]`` is `draw` of ``units[i]`` (callers cache them)."""
    budget = Budget(budget_tokens)
    if budget_tokens <= 0 or not units:
        return assemble("fragment", [])
    pieces, older = recent_and_older(units, budget, settings.threads.recent_share)
    chosen = sampled(older, draws[:len(older)], settings)
    shown = 0
    for unit in reversed(chosen):
        if budget.fits(unit.tokens):
            pieces.append(Piece.of(unit))
            budget.take(unit.tokens)
            shown += 1
    fragments = sum(1 for i, unit in enumerate(chosen) if i == 0 or chosen[i - 1].index != unit.index - 1)
    notes = [f"{shown} of {len(chosen)} sampled older messages shown ({fragments} fragments, {len(older)} older in all)"]
    return assemble("fragment", pieces, notes)


__all__ = ["draw", "sampled", "select"]
