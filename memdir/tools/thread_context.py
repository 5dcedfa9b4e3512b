"""ThreadContext: a window of a working-memory thread that fits a token budget, by the thread's strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.threads.manager import ThreadManager, manager_for

if TYPE_CHECKING:
    from memdir.memory import Memory


def thread_context(memory: Memory, thread: str, budget_tokens: int, query: str | None = None,
                   threads: ThreadManager | None = None) -> str:
    """The context of a thread, assembled by its strategy within a token budget.

    Use it instead of replaying the whole conversation: the recent turns are always there,
    and older ones as the strategy chooses — `virtual` (important messages plus summarised
    pages), `fragment` (a stable, age-weighted sample) or `semantic` (the older turns most
    related to `query`). Switch strategy with ThreadControl or a `@@memory('semantic')@@` marker.

    Args:
        thread: the thread id.
        budget_tokens: the most tokens the context may take (estimated at 4 characters a token).
        query: what you are about to work on; the semantic strategy brings back the turns
            nearest to it (default: the last user message), compacted ones included. The
            other strategies do not use it, and say so.

    Returns:
        A header `Thread T · strategy S · N of B tokens · K of M messages shown`, notes, then
        the context, one `[c12 role] text` line per message in thread order.
    """
    manager = threads or manager_for(memory)
    window = manager.context(thread, budget_tokens, query)
    head = (f"Thread {thread} · strategy {window.strategy} · {window.tokens:,} of {budget_tokens:,} tokens · "
            f"{len(window.shown)} of {window.total} messages shown verbatim")
    notes = "".join(f"\n({note})" for note in window.notes)
    if query and query.strip() and window.strategy != "semantic":
        notes += (f"\n(the {window.strategy} strategy does not use query; ThreadControl(action='strategy', "
                  "value='semantic') brings back the older turns nearest to it)")
    return f"{head}{notes}\n\n{window.text}" if window.text else f"{head}{notes}\n\n(empty: the budget holds nothing)"


__all__ = ["thread_context"]
