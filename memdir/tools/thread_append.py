"""ThreadAppend: add a message, tool call or tool result to a working-memory thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.threads.compaction import Ask, sampling_summarizer
from memdir.threads.messages import message
from memdir.threads.model import RETENTIONS, ROLES

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.threads.manager import Compacted, ThreadManager

CHOICES = {"role": ROLES, "retention": RETENTIONS}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def describe_compaction(compacted: Compacted | None) -> str:
    if compacted is None:
        return ""
    return (f" Compacted {compacted.replaced} chunks ({compacted.tokens_before:,} tokens) into {compacted.chunk_id} "
            f"({compacted.source} summary, ~{compacted.tokens_after:,} tokens).")


def thread_append(
    memory: Memory,
    thread: str,
    role: str,
    content: str,
    chunk_type: str | None = None,
    retention: str | None = None,
    importance: float | None = None,
    call_id: str | None = None,
    ask: Ask | None = None,
    threads: ThreadManager | None = None,
) -> str:
    """Append a message to a working-memory thread (created on first use); ThreadContext gives it back.

    ``@@memory('semantic')@@`` in a message switches strategy (or virtual, fragment);
    ``@@ref('p3')@@`` / ``@@unref('p3')@@`` page in or out (a chunk too).

    Args:
        thread: the thread id, e.g. ``support-chat-42``.
        role: ``tool`` for a tool's result.
        content: the message text.
        chunk_type: default from the role; ``agent-action`` for a tool call, ``action-response`` for its result.
        retention: ``critical`` is never compacted.
        importance: 0-1 (default 0.5, more for "remember"); 0.7+ stays verbatim.
        call_id: pairs a tool call and its result.

    Returns:
        `Appended c12 to thread T (strategy virtual).`, or where it was queued (stepping or
        paused), plus a note when the marker switched the strategy or compaction ran.
    """
    # The threads machinery loads with the first thread call.
    from memdir.threads.manager import manager_for

    manager = threads or manager_for(memory)
    checked = message(role, content, chunk_type=chunk_type, retention=retention, importance=importance,
                      call_id=call_id, max_bytes=memory.settings.storage.max_entry_size)
    summarize = sampling_summarizer(ask, memory.settings) if ask is not None else None
    result = manager.append(thread, checked, summarize=summarize)
    ignored = "".join(f" Ignored {why}." for why in checked.markers.ignored)
    if result.chunk_id is None:
        reason = manager.blocked_by(thread)
        state = f"the thread is {reason.value}" if reason is not None else "earlier messages are queued"
        return (f"Queued as #{result.queued_at} in thread {thread} ({state}): "
                f"ThreadControl(action='step') or 'resume' processes it.{ignored}")
    switched = f"; switched to {result.strategy} by the marker" if result.switched else ""
    return (f"Appended {result.chunk_id} to thread {thread} (strategy {result.strategy}{switched})."
            f"{describe_compaction(result.compacted)}{ignored}")


__all__ = ["CHOICES", "describe_compaction", "thread_append"]
