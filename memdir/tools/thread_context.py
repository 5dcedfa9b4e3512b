"""ThreadContext: a window of a working-memory thread that fits a token budget, by the thread's strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.threads.manager import ThreadManager


def thread_context(memory: Memory, thread: str, budget_tokens: int, query: str | None = None,
                   threads: ThreadManager | None = None) -> str:
    """A thread's context within a token budget: its recent turns, and older ones as its strategy picks.

    Args:
        thread: the thread id.
        budget_tokens: the most tokens the context may take.
        query: what you are working on (semantic).

    Returns:
        A header `Thread T · strategy S · N of B tokens · K of M messages shown`, notes, then
        the context, one `[c12 role] text` line per message in thread order.
    """
    # The threads machinery loads with the first thread call.
    from memdir.threads.manager import manager_for

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
