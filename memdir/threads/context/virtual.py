"""The virtual strategy (gro's VirtualMemory): recent messages by lane, important ones pinned, the rest paged.

While the whole thread fits under the high watermark (65% of the budget) it is shown as
it is. Past that, older messages are paged out: the recent working set keeps the low
watermark's share (50%), split between lanes by weight (assistant 8, user 4, system 3,
tool 3; lanes absent from the thread give their share to the others), each lane keeping
at least its ``thread_lane_min_recent`` newest messages when they fit. Messages with
importance >= ``thread_pin_importance`` stay verbatim. Everything else lives in pages of
``thread_page_chunks`` units, shown as one-line summaries, newest pages first, while
the budget lasts; a page referenced back in (``@@ref('p3')@@``, ThreadControl ref) is
shown verbatim within ``thread_page_budget`` of the budget until it is unreferenced, and so
is a referenced chunk (``c41``). A compaction summary referenced (or on a referenced page)
brings back the turns it replaced, as many as fit, and the window says when some did not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memdir.core.settings import Settings
from memdir.threads.compaction import first_sentence
from memdir.threads.context.base import (
    Budget,
    Piece,
    Unit,
    Window,
    assemble,
    newest_piece,
    piece_tokens,
    render_chunk,
    units_of,
)
from memdir.threads.model import ThreadState

LANES = ("assistant", "user", "system", "tool")
PageSummary = Callable[[str, list[Unit]], str]


def page_id(unit: Unit, page_size: int) -> str:
    return f"p{unit.index // page_size}"


def page_summary(page: str, units: list[Unit], words_per_line: int = 12) -> str:
    """A page as one short line per message: ``[page p3: c17–c24] user: …; assistant: …``."""
    lines = "; ".join(f"{u.chunks[0].role}: {first_sentence(u.chunks[0].content, words_per_line)}" for u in units)
    return f"[page {page}: {units[0].key}–{units[-1].chunks[-1].id}, {len(units)} paged out] {lines}"


def _lane_shares(units: list[Unit], settings: Settings, total: float) -> dict[str, float]:
    weights = dict(zip(LANES, settings.threads.lane_weights))
    present = {unit.lane for unit in units}
    weight_sum = sum(weights.get(lane, min(weights.values())) for lane in present) or 1.0
    return {lane: total * weights.get(lane, min(weights.values())) / weight_sum for lane in present}


def _recent_by_lane(units: list[Unit], settings: Settings, budget: Budget) -> list[Piece]:
    """The recent working set: the newest unit, each lane's minimum, then each lane up to its share."""
    recent_total = int(budget.total * settings.threads.low_watermark)
    shares = _lane_shares(units, settings, recent_total)
    newest = newest_piece(units, budget, recent_total)
    pieces = [newest] if newest else []
    kept = {int(piece.position) for piece in pieces}
    spent = {lane: 0 for lane in shares}
    if newest:
        spent[units[-1].lane] += newest.tokens
    for fill_to_share in (False, True):
        count = {lane: 0 for lane in shares}
        for unit in reversed(units):
            if budget.used >= recent_total:
                break
            lane = unit.lane
            count[lane] += 1
            if unit.index in kept:
                continue
            wanted = spent[lane] + unit.tokens <= shares[lane] if fill_to_share else count[lane] <= settings.threads.lane_min_recent
            if wanted and budget.used + unit.tokens <= recent_total:
                pieces.append(Piece.of(unit))
                kept.add(unit.index)
                spent[lane] += unit.tokens
                budget.take(unit.tokens)
    return pieces


def _chunk_units(state: ThreadState, units: list[Unit], chunk_id: str, kept: set[int]) -> list[Unit]:
    """The unit to show for a referenced chunk id: its own (unless shown already), or, for a turn that compaction
    replaced, that turn alone."""
    for unit in units:
        if any(chunk.id == chunk_id for chunk in unit.chunks):
            return [] if unit.index in kept and not _is_summary(unit) else [unit]
    archived = state.archive.get(chunk_id)
    if archived is None:
        return []
    holder = next((unit for unit in units for chunk in unit.chunks
                   if any(turn.id == chunk_id for turn in state.originals(chunk))), None)
    if holder is None:
        return []
    return [Unit(holder.index, (archived,), render_chunk(archived), piece_tokens(render_chunk(archived)), holder.lane,
                 archived.importance)]


def _is_summary(unit: Unit) -> bool:
    return any(chunk.is_summary for chunk in unit.chunks)


def _unfolded(state: ThreadState, units: list[Unit]) -> list[tuple[float, Unit]]:
    """``units`` with every summary replaced by the turns it stands for, each with its place in the window."""
    placed: list[tuple[float, Unit]] = []
    for unit in units:
        if not _is_summary(unit):
            placed.append((float(unit.index), unit))
            continue
        turns = units_of([turn for chunk in unit.chunks for turn in state.originals(chunk)])
        placed.extend((unit.index + (i + 1) / (len(turns) + 1), turn) for i, turn in enumerate(turns))
    return placed


def select(state: ThreadState, units: list[Unit], budget_tokens: int, settings: Settings,
           summary: PageSummary = page_summary) -> Window:
    """The virtual window of ``state`` within ``budget_tokens``."""
    budget = Budget(budget_tokens)
    if budget_tokens <= 0 or not units:
        return assemble("virtual", [])
    fits = sum(unit.tokens for unit in units) <= budget_tokens * settings.threads.high_watermark
    if fits:
        pieces = [Piece.of(unit) for unit in units]
        budget.take(sum(unit.tokens for unit in units))
    else:
        pieces = _recent_by_lane(units, settings, budget)
    kept = {int(piece.position) for piece in pieces}
    for unit in reversed(units):  # pinned: important messages stay verbatim
        if unit.index not in kept and unit.importance >= settings.threads.pin_importance and budget.fits(unit.tokens):
            pieces.append(Piece.of(unit))
            kept.add(unit.index)
            budget.take(unit.tokens)
    size = max(settings.threads.page_chunks, 1)
    pages: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.index not in kept or _is_summary(unit):  # a summary shown still unfolds when referenced
            pages.setdefault(page_id(unit, size), []).append(unit)
    notes: list[str] = []
    ref_budget = Budget(int(budget_tokens * settings.threads.page_budget))
    for ref in state.refs:  # referenced pages and chunks, verbatim (summaries unfolded), within the page budget
        wanted = pages.pop(ref, []) if ref.startswith("p") else _chunk_units(state, units, ref, kept)
        if fits:
            wanted = [unit for unit in wanted if _is_summary(unit)]
        shown, unfolded = 0, _unfolded(state, wanted)
        for position, unit in unfolded:
            if not (ref_budget.fits(unit.tokens) and budget.fits(unit.tokens)):
                break
            pieces.append(replace(Piece.of(unit), position=position))
            ref_budget.take(unit.tokens)
            budget.take(unit.tokens)
            shown += 1
        if shown < len(unfolded):
            notes.append(f"{ref}: {shown} of its {len(unfolded)} messages shown, the rest did not fit the "
                         f"{ref_budget.total:,} tokens referenced pages may take; ask with a larger budget_tokens")
    if fits:
        return assemble("virtual", pieces, notes)
    pages = {page: [unit for unit in held if unit.index not in kept] for page, held in pages.items()}
    pages = {page: held for page, held in pages.items() if held}
    shown_pages = 0
    left_out: list[str] = []
    for page in sorted(pages, key=lambda p: -int(p[1:])):  # newest pages first, until one does not fit
        text = summary(page, pages[page]) if not left_out else ""
        if text and budget.fits(piece_tokens(text)):
            pieces.append(Piece(pages[page][0].index - 0.5, text, kind="page"))
            budget.take(piece_tokens(text))
            shown_pages += 1
        else:
            left_out.append(page)
    index = f"[{len(left_out)} older pages not shown ({left_out[-1]}–{left_out[0]}): reference one with @@ref('{left_out[0]}')@@]" if left_out else ""
    if index and budget.fits(piece_tokens(index)):
        pieces.append(Piece(-1, index, kind="page"))
        budget.take(piece_tokens(index))
    notes.insert(0, f"{shown_pages} pages summarised, {len(left_out)} not shown, {len(state.refs)} referenced")
    return assemble("virtual", pieces, notes)


__all__ = ["LANES", "page_id", "page_summary", "select"]
