"""ThreadControl: a thread's strategy, execution mode, stepping, compaction, pause, fork and state."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError
from memdir.threads.compaction import Ask, Summarize, sampling_summarizer
from memdir.tools.formatting import plural
from memdir.tools.thread_append import describe_compaction

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.threads.manager import ThreadManager

STATE_CHUNKS_SHOWN = 20


def _needs(value: str | None, action: str, example: str) -> str:
    if not value or not str(value).strip():
        raise InputValidationError(f"action {action!r} needs a value.", f"For example value={example!r}.")
    return str(value).strip()


def _strategy(manager: ThreadManager, thread: str, value: str | None, _: Summarize | None) -> str:
    before = manager.state(thread).strategy
    after = manager.set_strategy(thread, _needs(value, "strategy", "semantic")).strategy
    if after == before:
        return f"Thread {thread} already uses the {after} strategy."
    return f"Thread {thread} now uses the {after} strategy (was {before}); every event is kept."


def _mode(manager: ThreadManager, thread: str, value: str | None, summarize: Summarize | None) -> str:
    mode = _needs(value, "mode", "stepping")
    drained = manager.set_mode(thread, mode, summarize=summarize)
    if mode == "stepping":
        return f"Thread {thread} is stepping: appended messages wait until ThreadControl(action='step')."
    return f"Thread {thread} is in auto mode; {plural(drained, 'queued message')} processed."


def _step(manager: ThreadManager, thread: str, _: str | None, summarize: Summarize | None) -> str:
    stepped = manager.step(thread, summarize=summarize)
    left = f" {plural(stepped.remaining, 'message')} still queued."
    if stepped.compacted is not None:
        return f"Step: compaction ran first.{describe_compaction(stepped.compacted)}{left}"
    if stepped.processed is None:
        return f"Step: nothing to do; no message is queued and no compaction is due.{left}"
    error = stepped.processed.exception()
    if error is not None:
        reason = str(error).rstrip(".")
        return f"Step: the next message failed ({reason}); it was not written and stays queued for a later step.{left}"
    return f"Step: wrote {stepped.processed.result().chunk_id}.{left}"


def _compact(manager: ThreadManager, thread: str, _: str | None, summarize: Summarize | None) -> str:
    compacted = manager.compact(thread, summarize=summarize)
    if compacted is None:
        return (f"Nothing to compact in thread {thread}: only compressible working-flow chunks outside the recent "
                "ones are compacted (critical and important chunks, and unfinished tool pairs, stay).")
    return describe_compaction(compacted).strip()


def _pause(manager: ThreadManager, thread: str, _: str | None, __: Summarize | None) -> str:
    manager.pause(thread)
    return f"Thread {thread} is paused: appended messages wait until action='resume'."


def _resume(manager: ThreadManager, thread: str, _: str | None, __: Summarize | None) -> str:
    return f"Thread {thread} resumed; {plural(manager.resume(thread), 'queued message')} processed."


def _fork(manager: ThreadManager, thread: str, value: str | None, _: Summarize | None) -> str:
    new = _needs(value, "fork", f"{thread}-alt")
    state = manager.fork(thread, new)
    return f"Forked {thread} into {new}: {plural(len(state.chunks), 'chunk')}, strategy {state.strategy}."


def _reference(keep: bool) -> Callable[[ThreadManager, str, str | None, Summarize | None], str]:
    def act(manager: ThreadManager, thread: str, value: str | None, _: Summarize | None) -> str:
        state = manager.reference(thread, _needs(value, "ref" if keep else "unref", "p3"), keep=keep)
        return f"Pages and chunks referenced in thread {thread}: {', '.join(state.refs) or 'none'}."

    return act


def _state(manager: ThreadManager, thread: str, _: str | None, __: Summarize | None) -> str:
    state = manager.state(thread)
    blocked = manager.blocked_by(thread)
    lines = [
        f"Thread {thread}: version {state.version} ({plural(state.version, 'event')}), {plural(len(state.chunks), 'chunk')}",
        f"strategy {state.strategy} · mode {state.mode} · queue {manager.queued(thread)} waiting"
        f"{f' (blocked: {blocked.value})' if blocked else ''} · compaction due: {'yes' if manager.compaction_due(thread) else 'no'}",
    ]
    damaged = manager.damaged(thread)
    if damaged:
        lines.append(f"{plural(len(damaged), 'damaged log line')} skipped (the events around them count): "
                     + "; ".join(damaged[:3]) + (" …" if len(damaged) > 3 else ""))
    waiting = manager.next_queued(thread)
    if waiting is not None:
        lines.append(f"next queued: {waiting.role}: {' '.join(waiting.content.split()[:12])}")
    if state.refs:
        lines.append(f"referenced pages: {', '.join(state.refs)}")
    if state.forked_from:
        lines.append(f"forked from {state.forked_from}")
    shown = state.chunks[-STATE_CHUNKS_SHOWN:]
    if shown:
        lines.append(f"last {len(shown)} chunks:")
    for chunk in shown:
        words = " ".join(chunk.content.split()[:12])
        kind = f"{chunk.chunk_type}/{chunk.subtype}" if chunk.subtype else chunk.chunk_type
        lines.append(f"- {chunk.id} {chunk.role} {kind} {chunk.retention} {chunk.importance:.2f}: {words}")
    return "\n".join(lines)


_ACTIONS: dict[str, Callable[[ThreadManager, str, str | None, Summarize | None], str]] = {
    "strategy": _strategy, "mode": _mode, "step": _step, "compact": _compact, "pause": _pause, "resume": _resume,
    "fork": _fork, "state": _state, "ref": _reference(True), "unref": _reference(False),
}
ACTIONS = tuple(_ACTIONS)
CHOICES = {"action": ACTIONS}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def thread_control(memory: Memory, thread: str, action: str, value: str | None = None, ask: Ask | None = None,
                   threads: ThreadManager | None = None) -> str:
    """Control a working-memory thread: strategy, mode, stepping, compaction, pause, fork.

    Args:
        thread: the thread id.
        action: with a value: ``strategy`` (virtual, fragment, semantic), ``mode`` (auto, stepping), ``fork`` (new id), ``ref``/``unref`` (page or chunk id).
        value: the action's argument.

    Returns:
        What was done, in one or two sentences; `state` gives the version, strategy, mode,
        queue and the last chunks.
    """
    act = _ACTIONS.get(action)
    if act is None:
        raise InputValidationError(f"unknown action {action!r}.", f"Use one of {', '.join(ACTIONS)}.")
    summarize = sampling_summarizer(ask, memory.settings) if ask is not None else None
    # The threads machinery loads with the first thread call.
    from memdir.threads.manager import manager_for

    return act(threads or manager_for(memory), thread, value, summarize)


__all__ = ["ACTIONS", "CHOICES", "thread_control"]
