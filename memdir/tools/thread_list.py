"""ThreadList: the working-memory threads of this memory, with their size, strategy and mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.errors import MemdirError
from memdir.tools.formatting import plural

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.threads.manager import ThreadManager


def thread_list(memory: Memory, threads: ThreadManager | None = None) -> str:
    """List the working-memory threads stored in this memory.

    Returns:
        `Threads (N):` then one line per thread: id, chunks, events, strategy, mode and
        when it last changed.
    """
    # The threads machinery loads with the first thread call.
    from memdir.threads.manager import manager_for

    manager = threads or manager_for(memory)
    ids = manager.ids()
    if not ids:
        return "No threads yet. ThreadAppend starts one."
    lines = [f"Threads ({len(ids)}):"]
    for thread in ids:
        try:
            state = manager.state(thread)
        except MemdirError as exc:  # one thread that cannot be read does not hide the others
            lines.append(f"- {thread} · could not be read: {exc}")
            continue
        last = state.chunks[-1].at if state.chunks else "-"
        origin = f" · forked from {state.forked_from}" if state.forked_from else ""
        lines.append(f"- {thread} · {plural(len(state.chunks), 'chunk')} · {plural(state.version, 'event')} · "
                     f"strategy {state.strategy} · mode {state.mode} · last message {last}{origin}")
    return "\n".join(lines)


__all__ = ["thread_list"]
