"""What every context strategy shares: units (a tool call stays with its result), pieces, and the budget.

A strategy picks *pieces* — a unit verbatim, a page summary, a note — each with its place
in the thread; `assemble` lays them out in thread order. Every piece's token estimate
includes its newline, so the window's estimate never exceeds the sum the strategy
budgeted. The newest unit is always shown, clipped when it alone is larger than the
budget (a 30 KB message in a 2,000-token window); a zero budget gives an empty window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from memdir.core.units import CHARS_PER_TOKEN, estimate_tokens
from memdir.threads.model import Chunk

CLIP_NOTE = " …[clipped]"


def render_chunk(chunk: Chunk) -> str:
    """One chunk as a line of the context: ``[c12 user] text``; tool calls and summaries say what they are."""
    if chunk.is_summary:
        span = f"{chunk.parents[0]}–{chunk.parents[-1]}" if len(chunk.parents) > 1 else chunk.parents[0]
        label = f"{chunk.id} summary of {len(chunk.parents)} messages {span}; ref {chunk.id} brings them back"
    elif chunk.call_id and chunk.role == "tool":
        label = f"{chunk.id} tool result {chunk.call_id}"
    elif chunk.call_id:
        label = f"{chunk.id} {chunk.role} tool call {chunk.call_id}"
    else:
        label = f"{chunk.id} {chunk.role}"
    return f"[{label}] {chunk.content}"


@dataclass(frozen=True)
class Unit:
    """Chunks shown or left out together: one message, or a tool call with its result(s).

    Attributes:
        index: its place among the thread's units (0 = oldest).
        chunks: its chunks in thread order.
        text: the rendered text.
        tokens: the text's token estimate, newline included.
        lane: the virtual strategy's lane: ``tool`` for a tool exchange, else the role.
        importance: the highest of its chunks'.
    """

    index: int
    chunks: tuple[Chunk, ...]
    text: str
    tokens: int
    lane: str
    importance: float

    @classmethod
    def of(cls, index: int, chunks: list[Chunk]) -> Unit:
        first = chunks[0]
        text = "\n".join(render_chunk(chunk) for chunk in chunks)
        lane = "tool" if first.call_id or first.role == "tool" else first.role
        return cls(index, tuple(chunks), text, piece_tokens(text), lane, max(chunk.importance for chunk in chunks))

    @property
    def key(self) -> str:
        return self.chunks[0].id


def units_of(chunks: Sequence[Chunk], start: int = 0) -> list[Unit]:
    """The units of ``chunks`` in order, numbered from ``start``; chunks sharing a ``call_id`` join the unit of the
    first of them."""
    groups: list[list[Chunk]] = []
    by_call: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        if chunk.call_id and chunk.call_id in by_call:
            by_call[chunk.call_id].append(chunk)
            continue
        group = [chunk]
        groups.append(group)
        if chunk.call_id:
            by_call[chunk.call_id] = group
    return [Unit.of(start + index, group) for index, group in enumerate(groups)]


def piece_tokens(text: str) -> int:
    return estimate_tokens(text + "\n")


@dataclass(frozen=True)
class Piece:
    """Something placed in the window: ``position`` orders it (unit index; pages use their first unit's)."""

    position: float
    text: str
    kind: str = "message"
    chunk_ids: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return piece_tokens(self.text)

    @classmethod
    def of(cls, unit: Unit, text: str | None = None) -> Piece:
        """A unit shown verbatim (or clipped to ``text``); its chunk ids name the messages shown, not summaries."""
        ids = tuple(chunk.id for chunk in unit.chunks if not chunk.is_summary)
        return cls(unit.index, unit.text if text is None else text, chunk_ids=ids)


def clip(text: str, tokens: int) -> str:
    """``text`` cut to fit ``tokens`` (newline included), with a note that it was cut; empty if nothing fits."""
    room = tokens * CHARS_PER_TOKEN - 1
    if len(text) <= room:
        return text
    if room <= len(CLIP_NOTE):
        return ""
    return text[: room - len(CLIP_NOTE)] + CLIP_NOTE


@dataclass
class Budget:
    """Tokens left in the window."""

    total: int
    used: int = 0

    @property
    def left(self) -> int:
        return self.total - self.used

    def fits(self, tokens: int) -> bool:
        return tokens <= self.left

    def take(self, tokens: int) -> None:
        self.used += tokens


@dataclass
class Window:
    """An assembled context.

    Attributes:
        strategy: the strategy that chose it.
        text: the context, pieces in thread order.
        tokens: its token estimate (never above the budget).
        shown: ids of chunks shown verbatim.
        notes: what the strategy wants the caller to know (pages summarised, fallbacks).
        total: how many messages the thread holds, compacted ones included.
    """

    strategy: str
    text: str
    tokens: int
    shown: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    total: int = 0


def newest_piece(units: list[Unit], budget: Budget, limit: int) -> Piece | None:
    """The newest unit, clipped to ``limit`` tokens (the whole budget when ``limit`` is 0); None for a zero budget."""
    if not units:
        return None
    text = clip(units[-1].text, min(budget.left, limit) if limit > 0 else budget.left)
    if not text:
        return None
    piece = Piece.of(units[-1], text)
    budget.take(piece.tokens)
    return piece


def newest_first(units: list[Unit], budget: Budget, limit: int) -> list[Piece]:
    """The most recent units within ``limit`` tokens (and the budget); the newest always, clipped if it must be."""
    first = newest_piece(units, budget, limit)
    if first is None:
        return []
    pieces, spent = [first], first.tokens
    for unit in reversed(units[:-1]):
        if spent + unit.tokens > limit or not budget.fits(unit.tokens):
            break
        pieces.append(Piece.of(unit))
        budget.take(unit.tokens)
        spent += unit.tokens
    return pieces


def recent_and_older(units: list[Unit], budget: Budget, share: float) -> tuple[list[Piece], list[Unit]]:
    """`newest_first` within ``share`` of the budget, and the units older than the oldest of them."""
    pieces = newest_first(units, budget, int(budget.total * share))
    first_recent = min(int(piece.position) for piece in pieces) if pieces else len(units)
    return pieces, units[:first_recent]


def assemble(strategy: str, pieces: list[Piece], notes: list[str] | None = None) -> Window:
    """The window of ``pieces`` in thread order."""
    ordered = sorted(pieces, key=lambda piece: piece.position)
    text = "\n".join(piece.text for piece in ordered)
    shown = {chunk_id for piece in ordered if piece.kind == "message" for chunk_id in piece.chunk_ids}
    return Window(strategy, text, estimate_tokens(text) if text else 0, shown, list(notes or []))


__all__ = [
    "Budget", "Piece", "Unit", "Window", "assemble", "clip", "newest_first", "newest_piece", "piece_tokens",
    "recent_and_older", "render_chunk", "units_of",
]
