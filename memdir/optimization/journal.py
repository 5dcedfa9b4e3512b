"""The defrag journal: what every live run changed, so that `undo_last` can put it back.

Each live run that changes anything writes ``<root>/.memdir/defrag/<run id>.jsonl``,
one JSON record per line, *before* each change (write-ahead, fsynced):

* ``{"type": "run", ...}`` — the action, its options, when it started and the agent who ran it;
* ``{"type": "before", "path": ..., "state": ...}`` — the full prior state of an entry,
  recorded the first time the run touches it: ``missing``, a ``stub`` (kind, target) or
  an ``entry`` (content, title, metadata, hits, updated_at and its embedding);
* ``{"type": "after", "path": ..., "state": ...}`` — a fingerprint of the state the run
  left, so an undo can tell whether someone changed the entry since;
* ``{"type": "end", "status": ...}`` and, once reverted, ``{"type": "undone", ...}``.

A run killed halfway still leaves a usable journal: every change it made has its
``before`` record on disk. `undo_last` reverts the caller's newest run not yet undone (an
admin's: anyone's), refusing (unless forced) when entries it would overwrite were changed
after the run. Another agent's run is never undone by someone else: on a shared root it may
be live work the caller knows nothing of.

Journals are files of the root, so one may have been planted or edited by hand: they are
read and appended to only as regular files inside the root (`memdir.core.files`), and
`undo_last` checks every record of the run it is about to revert first — a journal naming
something that is not a memory path, or a state it cannot restore, is quarantined in
``.memdir/defrag/quarantine/`` and nothing is undone.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import EntryNotFoundError, InputValidationError, InvalidPathError, RedirectError
from memdir.core.files import append_regular, private_folder, quarantine, read_regular
from memdir.core.paths import normalize_path, resolve_in_root
from memdir.core.units import plural
from memdir.optimization.corpus import fingerprint
from memdir.storage.base import committed

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)

JOURNAL_DIR = Path(".memdir") / "defrag"
QUARANTINE_DIR = JOURNAL_DIR / "quarantine"
JOURNAL_SUFFIX = ".jsonl"


def journal_dir(root: Path) -> Path:
    """Where a root's defrag journals live."""
    return Path(root) / JOURNAL_DIR


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

    Use as a context manager; call `before` under the root's exclusive lock right before
    changing a path, and `after` right after.
    """

    def __init__(self, memory: Memory, action: str, options: dict[str, Any]) -> None:
        self.memory = memory
        started = _now()
        self.action = action
        self.id = f"{started:%Y%m%dT%H%M%S%fZ}-{action}-{uuid.uuid4().hex[:6]}"
        self.path = journal_dir(memory.root) / f"{self.id}{JOURNAL_SUFFIX}"
        self._header = {
            "type": "run", "id": self.id, "action": action, "options": options, "started_at": started.isoformat(),
            "agent": memory.actor.name,
        }
        self._touched: set[str] = set()
        self._handle: Any = None
        self._files = ExitStack()  # holds `_handle` open for the run
        self.changes = 0

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.close("complete" if exc_type is None else "failed")

    @property
    def written(self) -> bool:
        return self._handle is not None or self.path.exists()

    def _append(self, record: dict[str, Any], *, sync: bool = True) -> None:
        if self._handle is None:
            private_folder(self.memory.root, JOURNAL_DIR)
            self._handle = self._files.enter_context(append_regular(self.memory.root, self.path))
            _write_record(self._handle, self._header)
        _write_record(self._handle, record, sync=sync)

    def before(self, *paths: str, read: Mapping[str, Entry] | None = None) -> None:
        """Record the prior state of ``paths`` (once per run: the state before the run touched
        each), all on disk — one fsync — before the caller changes them. ``read``: entries the
        caller has just read under the lock (real entries, not stubs), not read again."""
        known = read or {}
        for path in paths:
            if path in self._touched:
                continue
            self._append({"type": "before", "path": path, "state": capture(self.memory, path, known.get(path))}, sync=False)
            self._touched.add(path)
            self.changes += 1
        if self._handle is not None:
            _sync(self._handle)

    def after(self, *paths: str, written: Mapping[str, Entry] | None = None) -> None:
        """Record what ``paths`` look like now that the run changed them (one fsync); ``written``:
        entries as the change left them (not read again)."""
        known = written or {}
        for path in paths:
            self._append({"type": "after", "path": path, "state": summary_of(self.memory, path, known.get(path))}, sync=False)
        if self._handle is not None:
            _sync(self._handle)

    def close(self, status: str = "complete") -> None:
        if self._handle is None:
            return
        self._append({"type": "end", "status": status, "finished_at": _now().isoformat()})
        self._files.close()
        self._handle = None


def _write_record(handle: Any, record: dict[str, Any], *, sync: bool = True) -> None:
    """One JSON line, on disk (fsynced, unless a batch syncs once after its last) before the change it describes."""
    handle.write((json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8"))
    if sync:
        _sync(handle)


def _sync(handle: Any) -> None:
    handle.flush()
    os.fsync(handle.fileno())


# --------------------------------------------------------------------------- reading and undoing


@dataclass
class Run:
    """One journal, as read back from disk."""

    id: str
    file: Path
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


def _records(root: Path, file: Path) -> Iterator[dict[str, Any]]:
    for line in read_regular(root, file).splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a torn last line from a killed run (or bytes that are not UTF-8)
            continue
        if isinstance(record, dict):
            yield record


def _path_of(record: dict[str, Any]) -> str:
    """A record's path as text (whatever a hand-edited line holds there; `_check_run` judges it)."""
    path = record.get("path")
    return path if isinstance(path, str) else repr(path)


def _agent_of(record: dict[str, Any]) -> str | None:
    agent = record.get("agent")
    return agent if isinstance(agent, str) else None


def read_run(root: Path, file: Path) -> Run | None:
    """A journal file of ``root`` as a `Run`, or None if it has no readable header."""
    run: Run | None = None
    for record in _records(root, file):
        kind = record.get("type")
        if kind == "run":
            run = Run(
                id=str(record.get("id", file.stem)), file=file, action=str(record.get("action", "?")),
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


def list_runs(root: Path) -> list[Run]:
    """Every journaled live run of a root, oldest first."""
    if not os.path.lexists(journal_dir(root)):
        return []
    folder = private_folder(root, JOURNAL_DIR)
    runs = (read_run(root, file) for file in sorted(folder.glob(f"*{JOURNAL_SUFFIX}")))
    return [run for run in runs if run is not None]


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


def _quarantine(root: Path, run: Run, why: str) -> InputValidationError:
    """Move a journal that must not be replayed aside, and the error that says so."""
    done = quarantine(root, run.file, QUARANTINE_DIR)
    log.error("Defrag journal %s was not undone and is quarantined (%s): %s.", run.file.name, done, why)
    return InputValidationError(
        f"The defrag journal {run.file.name} cannot be undone: {why}. Nothing was changed; the journal was "
        f"quarantined ({QUARANTINE_DIR.as_posix()}/).",
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
    actor = memory.actor
    runs = [run for run in list_runs(memory.root)
            if not run.undone and run.before and (actions is None or run.action in actions)]
    own = runs if actor.admin else [run for run in runs if run.agent == actor.name]
    if not own:
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
            "Only live runs (not dry runs) that changed something are journaled (under .memdir/defrag/).",
        )
    run = own[-1]
    try:
        _check_run(memory.root, run)
    except (ValueError, InvalidPathError) as exc:
        raise _quarantine(memory.root, run, getattr(exc, "message", None) or str(exc)) from exc
    restored: list[str] = []
    removed: list[str] = []
    with memory.adapter.lock.exclusive():
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
        with append_regular(memory.root, run.file) as handle:
            _write_record(handle, {"type": "undone", "at": _now().isoformat(), "forced": bool(conflicts)})
    return UndoResult(run.id, run.action, run.started_at, restored[::-1], removed[::-1], conflicts)


__all__ = [
    "JOURNAL_DIR", "Journal", "Run", "UndoResult", "capture", "journal_dir", "list_runs", "read_run", "restore", "undo_last",
]
