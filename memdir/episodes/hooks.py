"""Claude Code hooks: ingest a finished session, and remind a new one where it left off.

Both read the hook's JSON payload from stdin and never fail the session: any problem is
one line on stderr and exit code 0.

* ``memdir hook session-end`` (``SessionEnd``, ``PreCompact`` or ``Stop``) — payload
  ``{session_id, transcript_path, cwd, hook_event_name}``: ingests the transcript
  (idempotent, so a ``Stop`` hook after every reply only updates the last episode).
* ``memdir hook session-start`` (``SessionStart``) — payload ``{session_id, cwd,
  hook_event_name, source}``: prints ``{"hookSpecificOutput": {"hookEventName":
  "SessionStart", "additionalContext": "<reminder>"}}`` with the project's most recent
  episodes, and nothing at all when there are none.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from memdir.core import hook_socket
from memdir.core.settings import Settings

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)


def read_payload(text: str) -> dict[str, Any]:
    """The hook payload; an empty or unreadable one is ``{}``."""
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _say(err: IO[str] | None, text: str) -> None:
    if err is not None:
        print(f"memdir: {text}", file=err)


def session_end(stdin: str, settings: Callable[[], Settings], *, err: IO[str] | None = None) -> int:
    """Ingest the transcript named by a SessionEnd/Stop payload. Always returns 0 (exit code)."""
    try:
        payload = read_payload(stdin)
        transcript = payload.get("transcript_path")
        if not transcript:
            _say(err, "the hook payload has no transcript_path; nothing to ingest.")
            return 0
        from pathlib import Path

        from memdir.episodes.ingest import ingest
        from memdir.memory import Memory

        if not Path(transcript).expanduser().is_file():
            _say(err, f"transcript {transcript} does not exist; nothing to ingest.")
            return 0
        with Memory.open(settings()) as memory:
            report = ingest(memory, transcript, session_id=payload.get("session_id") or None,
                            cwd=payload.get("cwd") or None)
        _say(err, f"ingested {transcript}: {report.describe()}.")
    except Exception as exc:  # a hook must never break the user's session
        log.debug("session-end hook failed", exc_info=True)
        _say(err, f"could not ingest the session ({type(exc).__name__}: {exc}).")
    return 0


def session_start_reminder(memory: Memory, cwd: str | None) -> str:
    """The "where we left off" reminder for a session starting in ``cwd`` ("" when there are no episodes).

    The cold hook and a running server's hooks socket (`memdir.server.local_socket`) both call it.
    """
    from memdir.episodes.ingest import project_name
    from memdir.episodes.recall import where_we_left_off

    return where_we_left_off(memory, project=project_name(cwd))


def session_start(stdin: str, settings: Callable[[], Settings], *, out: IO[str], err: IO[str] | None = None) -> int:
    """Print the SessionStart ``additionalContext`` JSON (nothing when there are no episodes). Always returns 0.

    A running server for the same store answers over its hooks socket; otherwise the
    store is opened here (without the model: the reminder needs none).
    """
    try:
        payload = read_payload(stdin)
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        resolved = settings()

        def cold() -> str:
            from memdir.memory import Memory

            with Memory.open(resolved, load_model=False) as memory:
                return session_start_reminder(memory, cwd)

        reminder = hook_socket.answer(resolved, {"kind": "session-start", "cwd": cwd}, cold)
        out.write(hook_socket.hook_output("SessionStart", reminder))
    except Exception as exc:  # a hook must never break the user's session
        log.debug("session-start hook failed", exc_info=True)
        _say(err, f"could not build the session-start reminder ({type(exc).__name__}: {exc}).")
    return 0


__all__ = ["read_payload", "session_end", "session_start", "session_start_reminder"]
