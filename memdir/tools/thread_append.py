"""ThreadAppend: add a message, tool call or tool result to a working-memory thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.threads.compaction import Ask, sampling_summarizer
from memdir.threads.messages import message
from memdir.threads.model import RETENTIONS, ROLES

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.threads.manager import Compacted

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
) -> str:
    """Append a message to a working-memory thread (created on first use); memdir keeps the whole thread.

    Record each turn — what the user said, your replies, tool calls and their results —
    and later ask ThreadContext for a window of the thread that fits your budget. A message
    containing `@@memory('semantic')@@` (or 'virtual', 'fragment'; 'hnsw' means semantic)
    switches the thread's context strategy; `@@ref('p3')@@` / `@@unref('p3')@@` bring a
    paged-out page of the virtual strategy back in, or let it go.

    Args:
        thread: the thread id, e.g. `"support-chat-42"` (letters, digits, '-', '_', '.').
        role: `user`, `assistant`, `system`, or `tool` for a tool's result.
        content: the message text, as said.
        chunk_type: default from the role; or `system`, `agent`, `workflow`, `delegation`,
            `environment`, `working-flow`, `output`, or a working-flow subtype: `thinking`,
            `response`, `user`, `agent-action` (a tool call), `action-response` (its result).
        retention: `critical` (never compacted; default for system), `compressible` (default),
            `batch-compressible`, `disposable`, `ephemeral`.
        importance: 0-1 (default 0.5); 0.7 and above stays verbatim in the virtual strategy.
        call_id: pairs a tool call (role assistant) with its result (role tool); a tool result
            without one answers the latest unanswered call. A pair is never separated.

    Returns:
        `Appended c12 to thread T (strategy virtual).`, or where it was queued (stepping or
        paused), plus a note when the marker switched the strategy or compaction ran.
    """
    # The threads machinery loads with the first thread call.
    from memdir.threads.manager import manager_for

    manager = manager_for(memory)
    checked = message(role, content, chunk_type=chunk_type, retention=retention, importance=importance,
                      call_id=call_id, max_bytes=memory.settings.max_entry_size)
    summarize = sampling_summarizer(ask, memory.settings) if ask is not None else None
    result = manager.append(thread, checked, summarize=summarize)
    if result.chunk_id is None:
        return (f"Queued as #{result.queued_at} in thread {thread} (the thread is "
                f"{manager.blocked_by(thread).value}): ThreadControl(action='step') or 'resume' processes it.")
    switched = f"; switched to {result.strategy} by the marker" if result.switched else ""
    return f"Appended {result.chunk_id} to thread {thread} (strategy {result.strategy}{switched}).{describe_compaction(result.compacted)}"


__all__ = ["CHOICES", "describe_compaction", "thread_append"]
