"""The defrag journal: what every live run changed, so that `undo_last` can put it back.

Each live run that changes anything keeps a journal (`memdir.optimization.journal_store`: files
of the root for the directory store, rows of the database for PostgreSQL), one JSON record
after another, each kept *before* the change it describes:

* ``{"type": "run", ...}`` — the action, its options, when it started and the agent who ran it;
* ``{"type": "before", "path": ..., "state": ...}`` — the full prior state of an entry,
  recorded the first time the run touches it: ``missing``, a ``stub`` (kind, target) or
  an ``entry`` (content, title, metadata, hits, updated_at and its embedding);
* ``{"type": "after", "path": ..., "state": ...}`` — a fingerprint of the state the run
  left, so an undo can tell whether someone changed the entry since;
* ``{"type": "end", "status": ...}`` and, once reverted, ``{"type": "undone", ...}``.

A run killed halfway still leaves a usable journal: every change it made has its
``before`` record kept. `undo_last` reverts the caller's newest run not yet undone (an
admin's: anyone's), refusing (unless forced) when entries it would overwrite were changed
after the run. Another agent's run is never undone by someone else: on a shared store it may
be live work the caller knows nothing of. Runs are listed under the store's exclusive lock,
so two servers (or processes) undoing at once undo two runs, never one twice.

A journal file of the root may have been planted or edited by hand, so `undo_last` checks
every record of the run it is about to revert first — a journal naming something that is
not a memory path, or a state it cannot restore, is set aside (quarantined) and nothing is undone.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import EntryNotFoundError, InputValidationError, InvalidPathError, RedirectError
from memdir.core.paths import normalize_path, resolve_in_root
from memdir.core.units import plural
from memdir.optimization.corpus import fingerprint
from memdir.optimization.journal_store import (
    JOURNAL_DIR,
    QUARANTINE_DIR,
    JournalStore,
    JournalWriter,
    journal_dir,
    journal_store,
)
from memdir.storage.base import committed

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)


def journals(memory: Memory) -> JournalStore:
    """Where ``memory``'s store keeps its defrag journals."""
    return journal_store(memory.root, memory.adapter.records)


def _now() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------- entry states


def _read_state(memory: Memory, path: str) -> Entry | dict[str, Any]:
    """The real entry at ``path``, or the state of a path that holds none: missing, or a stub.

    A malformed stub counts as an entry: its text is kept, so it can be put back as it was.
    """
    try:
        redirect = memory.redirect_of(path)
    except EntryNotFoundError:
        return {"state": "missing"}
    except RedirectError:
        redirect = None
    if redirect is not None:
        owner = memory.adapter.read_entry(path, follow=False).metadata.labels().created_by
        return {"state": "stub", "kind": redirect.kind, "target": redirect.target, "owner": owner}
    return memory.adapter.read_entry(path, follow=False)


def capture(memory: Memory, path: str, entry: Entry | None = None) -> dict[str, Any]:
    """The full current state of ``path``: missing, a stub, or an entry with everything needed to restore it.

    ``entry``: the real entry at ``path`` as the caller just read it under the lock (no second read).
    """
    found = entry or _read_state(memory, path)
    if isinstance(found, dict):
        return found
    entry = found
    embedding = None
    if entry.embedding is not None:
        embedding = base64.b64encode(np.asarray(entry.embedding, dtype="<f4").tobytes()).decode("ascii")
    return {
        "state": "entry",
        "content": entry.content,
        "title": entry.title,
        "metadata": json.loads(json.dumps(entry.metadata.to_yaml_dict(), default=str)),
        "hits": entry.hits,
        "updated_at": entry.updated_at.isoformat(),
        "embedding": embedding,
        "fingerprint": fingerprint(entry),
    }


def summary_of(memory: Memory, path: str, entry: Entry | None = None) -> dict[str, Any]:
    """A small description of the current state, compared with a journal's ``after`` records
    (``entry``: the real entry at ``path`` as the caller just wrote it)."""
    found = entry or _read_state(memory, path)
    if isinstance(found, dict):
        return found
    return {"state": "entry", "fingerprint": fingerprint(found), "hits": found.hits}


def _identity(state: dict[str, Any]) -> dict[str, Any]:
    """What makes two states the same for conflict checks: everything but the hit count and full content."""
    if state["state"] == "entry":
        return {"state": "entry", "fingerprint": state["fingerprint"]}
    return {key: value for key, value in state.items() if key not in ("hits", "owner")}


def restore(memory: Memory, path: str, state: dict[str, Any], extra_hits: int = 0) -> None:
    """Put ``path`` back into a state recorded by `capture` (caller holds the exclusive lock).

    ``extra_hits`` are reads the entry got after the run; they are kept on top of the recorded count.
    """
    kind = state["state"]
    if kind == "missing":
        if memory.exists(path):
            memory.delete(path)
        return
    if kind == "stub":
        owner = state.get("owner")
        memory.write_stub(path, state["target"], state["kind"], owner=owner if isinstance(owner, str) else None)
        return
    metadata = Metadata.model_validate(state.get("metadata") or {})
    title, content, hits = state.get("title", ""), state["content"], int(state.get("hits", 0)) + extra_hits
    # Memory.write indexes the entry and embeds it with the current model (the same vector
    # for the same model), with the recorded age and read count.
    updated_at = datetime.fromisoformat(state["updated_at"]) if state.get("updated_at") else None
    result = memory.write(path, content, title=title, metadata=metadata, updated_at=updated_at, hits=hits)
    if result.entry.embedding is None and state.get("embedding"):  # no model right now: keep the recorded vector
        vector = np.frombuffer(base64.b64decode(state["embedding"]), dtype="<f4").astype(np.float32)
        committed(memory.adapter.write(path, content, title=title, metadata=metadata, embedding=vector, hits=hits,
                                       updated_at=result.entry.updated_at))


# --------------------------------------------------------------------------- writing a journal


class Journal:
    """The write-ahead record of one live run (created on its first change; empty runs leave none).

    Use as a context manager; call `before` under the store's exclusive lock right before
    changing a path, and `after` right after.
    """

    def __init__(self, memory: Memory, action: str, options: dict[str, Any]) -> None:
        self.memory = memory
        started = _now()
        self.action = action
        self.id = f"{started:%Y%m%dT%H%M%S%fZ}-{action}-{uuid.uuid4().hex[:6]}"
        self._header = {
            "type": "run", "id": self.id, "action": action, "options": options, "started_at": started.isoformat(),
            "agent": memory.actor.name,
        }
        self._touched: set[str] = set()
        self._writer: JournalWriter | None = None
        self.written = False
        self.changes = 0

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.close("complete" if exc_type is None else "failed")

    def _write(self, record: dict[str, Any]) -> JournalWriter:
        if self._writer is None:  # (kept only once its header is: a journal that cannot be written has nothing to close)
            writer = journals(self.memory).open(self.id)
            writer.write(self._header)
            self._writer, self.written = writer, True
        self._writer.write(record)
        return self._writer

    def _sync(self) -> None:
        if self._writer is not None:
            self._writer.sync()

    def before(self, *paths: str, read: Mapping[str, Entry] | None = None) -> None:
        """Record the prior state of ``paths`` (once per run: the state before the run touched
        each), all kept — one sync — before the caller changes them. ``read``: entries the
        caller has just read under the lock (real entries, not stubs), not read again."""
        known = read or {}
        for path in paths:
            if path in self._touched:
                continue
            self._write({"type": "before", "path": path, "state": capture(self.memory, path, known.get(path))})
            self._touched.add(path)
            self.changes += 1
        self._sync()

    def after(self, *paths: str, written: Mapping[str, Entry] | None = None) -> None:
        """Record what ``paths`` look like now that the run changed them (one sync); ``written``:
        entries as the change left them (not read again)."""
        known = written or {}
        for path in paths:
            self._write({"type": "after", "path": path, "state": summary_of(self.memory, path, known.get(path))})
        self._sync()

    def close(self, status: str = "complete") -> None:
        if self._writer is None:
            return
        self._write({"type": "end", "status": status, "finished_at": _now().isoformat()}).sync()
        self._writer.close()
        self._writer = None


# --------------------------------------------------------------------------- reading and undoing


@dataclass
class Run:
    """One journal, as read back from disk."""

    id: str
    action: str
    options: dict[str, Any]
    started_at: str
    status: str  # complete | failed | interrupted
    undone: bool
    agent: str | None = None  # who ran it (None: an anonymous caller, or a journal older than the field)
    # path -> state as the journal holds it (JSON, whatever a hand edit left: `_check_run` checks it)
    before: dict[str, Any] = field(default_factory=dict)  # in change order
    after: dict[str, Any] = field(default_factory=dict)  # path -> latest summary

    @property
    def paths(self) -> list[str]:
        return list(self.before)


def _path_of(record: dict[str, Any]) -> str:
    """A record's path as text (whatever a hand-edited line holds there; `_check_run` judges it)."""
    path = record.get("path")
    return path if isinstance(path, str) else repr(path)


def _agent_of(record: dict[str, Any]) -> str | None:
    agent = record.get("agent")
    return agent if isinstance(agent, str) else None


def read_run(run_id: str, records: Iterable[dict[str, Any]]) -> Run | None:
    """A run's journal records as a `Run`, or None if they hold no readable header."""
    run: Run | None = None
    for record in records:
        kind = record.get("type")
        if kind == "run":
            run = Run(
                id=run_id, action=str(record.get("action", "?")),
                options=record.get("options") or {}, started_at=str(record.get("started_at", "")),
                status="interrupted", undone=False, agent=_agent_of(record),
            )
        elif run is None:
            continue
        elif kind == "before":
            run.before.setdefault(_path_of(record), record.get("state"))
        elif kind == "after":
            run.after[_path_of(record)] = record.get("state")
        elif kind == "end":
            run.status = str(record.get("status", "complete"))
        elif kind == "undone":
            run.undone = True
    return run


def list_runs(memory: Memory) -> list[Run]:
    """Every journaled live run of ``memory``'s store, oldest first."""
    found = (read_run(run_id, records) for run_id, records in journals(memory).runs())
    return [run for run in found if run is not None]


# What `restore` needs of each recorded prior state ("after" records only name their state).
_STATE_FIELDS = {"missing": (), "stub": ("kind", "target"), "entry": ("content",)}


def _check_run(root: Path, run: Run) -> None:
    """Raise if the run names a path that is not a memory path inside the root, or a state `restore` cannot use.

    Raises:
        ValueError, InvalidPathError: what is wrong, for the quarantine message.
    """
    records = [(path, state, True) for path, state in run.before.items()]
    records += [(path, state, False) for path, state in run.after.items()]
    for path, state, restored in records:
        if normalize_path(path) != path:
            raise ValueError(f"{path!r} is not a memory path in its canonical form")
        resolve_in_root(root, path)
        kind = state.get("state") if isinstance(state, dict) else None
        needed = _STATE_FIELDS.get(kind) if isinstance(kind, str) else None
        try:
            if not isinstance(kind, str) or needed is None or (restored and any(key not in state for key in needed)):
                raise ValueError("a field is missing")
            if restored:
                _check_restorable(kind, state)
        except (ValueError, TypeError, InvalidPathError) as exc:
            why = getattr(exc, "message", None) or str(exc)
            raise ValueError(f"the state recorded for memory://{path} is not one it can restore ({why})") from exc


def _check_restorable(kind: str, state: dict[str, Any]) -> None:
    """Raise (`ValueError`, `TypeError`, `InvalidPathError`) where `restore` would fail halfway through an undo."""
    if kind == "stub":
        normalize_path(state["target"])
    elif kind == "entry":
        if not isinstance(state["content"], str):
            raise ValueError("a recorded content is not text")
        Metadata.model_validate(state.get("metadata") or {})  # pydantic's ValidationError is a ValueError
        int(state.get("hits", 0))
        if state.get("updated_at"):
            datetime.fromisoformat(state["updated_at"])


def _quarantine(store: JournalStore, run: Run, why: str) -> InputValidationError:
    """Set a journal that must not be replayed aside, and the error that says so."""
    done = store.quarantine(run.id)
    log.error("Defrag journal %s was not undone and is quarantined (%s): %s.", run.id, done, why)
    return InputValidationError(
        f"The defrag journal {run.id} cannot be undone: {why}. Nothing was changed; the journal was quarantined ({done}).",
        "It was not written by memdir as it is now (planted or edited by hand): inspect it there before undoing anything else.",
    )


@dataclass(frozen=True, slots=True)
class UndoResult:
    """What `undo_last` did."""

    run_id: str
    action: str
    started_at: str
    restored: list[str]
    removed: list[str]
    conflicts: list[str]

    def to_markdown(self) -> str:
        lines = [f"# Undo: {self.action} run {self.run_id}", ""]
        lines.append(f"Restored {plural(len(self.restored), 'entry')} and removed {len(self.removed)} created by the run.")
        lines.extend(f"- restored memory://{path}" for path in self.restored)
        lines.extend(f"- removed memory://{path}" for path in self.removed)
        if self.conflicts:
            lines.append("")
            lines.append(f"Overwrote {plural(len(self.conflicts), 'entry')} changed after the run (forced):")
            lines.extend(f"- memory://{path}" for path in self.conflicts)
        return "\n".join(lines)


def _newest(memory: Memory, actions: Collection[str] | None) -> Run:
    """The caller's newest run not undone yet (an admin's: anyone's).

    Raises:
        InputValidationError: there is none.
    """
    actor = memory.actor
    runs = [run for run in list_runs(memory)
            if not run.undone and run.before and (actions is None or run.action in actions)]
    own = runs if actor.admin else [run for run in runs if run.agent == actor.name]
    if own:
        return own[-1]
    what = "defrag run" if actions is None else " or ".join(sorted(actions)) + " run"
    if runs:
        newest = runs[-1]
        raise InputValidationError(
            f"There is no live {what} of {actor.label}'s to undo; the newest, {newest.id}, was run by "
            f"{newest.agent or 'anonymous'}.",
            f"Ask {newest.agent or 'whoever ran it'} to undo it, or act as an admin (`--admin`).",
        )
    raise InputValidationError(
        f"There is no live {what} to undo.",
        f"Only live runs (not dry runs) that changed something are journaled (in {journals(memory).where()}).",
    )


def undo_last(memory: Memory, *, force: bool = False, actions: Collection[str] | None = None) -> UndoResult:
    """Revert the caller's newest live defrag run (or evolution job run) that has not been undone yet;
    an admin's undo takes the newest of anyone's.

    Every path the run touched goes back to the state recorded before the run
    touched it: deleted entries come back (content, title, metadata, hits, vector),
    changed ones are rewritten, stubs it created are removed or turned back into the
    entries they replaced.

    Args:
        memory: a `memdir.memory.Memory`.
        force: also overwrite entries that were changed after the run.
        actions: only runs of these actions (the evolution jobs undo their own); None: any.

    Raises:
        InputValidationError: there is no run of the caller's to undo, or (without ``force``)
            entries were changed after the run; nothing is changed then.
    """
    store = journals(memory)
    run = _newest(memory, actions)
    try:
        _check_run(memory.root, run)
    except (ValueError, InvalidPathError) as exc:
        raise _quarantine(store, run, getattr(exc, "message", None) or str(exc)) from exc
    restored: list[str] = []
    removed: list[str] = []
    with memory.adapter.lock.exclusive():
        if _newest(memory, actions).id != run.id:  # another server or process undid it (or ran another) meanwhile
            raise InputValidationError(
                f"The {run.action} run {run.id} was undone, or another run finished, while this undo began; nothing was changed.",
                "Run the undo again: it takes the newest run not undone yet.",
            )
        conflicts = []
        current = {path: summary_of(memory, path) for path in run.before}
        for path, state in run.before.items():
            expected = run.after.get(path)
            now = _identity(current[path])
            if expected is not None and now != _identity(expected) and now != _identity(state):
                conflicts.append(path)
        if conflicts and not force:
            shown = ", ".join(f"memory://{path}" for path in conflicts[:5])
            more = f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
            raise InputValidationError(
                f"Cannot undo the {run.action} run {run.id}: {plural(len(conflicts), 'entry')} changed after it ({shown}{more}).",
                "Undoing would overwrite those changes; use --force (force=True) to undo anyway.",
            )
        to_restore = [(path, state) for path, state in reversed(list(run.before.items()))
                      if _identity(current[path]) != _identity(state)]  # (else already as it was: an earlier undo)
        for path, _ in to_restore:  # every entry may be changed by this caller, or none is (no half-undone run)
            memory.check_change(path, "undo")
        with memory.action("undo", run=run.id):
            for path, state in to_restore:
                now, after = current[path], run.after.get(path) or {}
                # Reads the entry got since the run are kept, not lost with the undo.
                extra = max(0, now.get("hits", 0) - after.get("hits", now.get("hits", 0)))
                restore(memory, path, state, extra)
                (removed if state["state"] == "missing" else restored).append(path)
        store.append(run.id, {"type": "undone", "at": _now().isoformat(), "forced": bool(conflicts)})
    return UndoResult(run.id, run.action, run.started_at, restored[::-1], removed[::-1], conflicts)


__all__ = [
    "JOURNAL_DIR", "QUARANTINE_DIR", "Journal", "Run", "UndoResult", "capture", "journal_dir", "journals", "list_runs",
    "read_run", "restore", "undo_last",
]
