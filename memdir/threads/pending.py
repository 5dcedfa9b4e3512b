"""Messages waiting in a blocked queue (stepping, paused), kept on disk until they are processed.

``<root>/threads/<id>/queue.jsonl`` holds one line per waiting message, oldest first:
``{"id", "at", "message"}``. A message accepted while the thread is stepping or paused is
therefore never lost: a new process (a restarted server, ``memdir thread step``) finds it
and processes it in order. Processing one happens under the root's lock: the message is
written to the event log (its event carries ``"queued": id``) and then removed from this
file; a writer killed between the two leaves an entry whose id the log already holds,
and the next reader drops it instead of writing it twice.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from memdir.core.files import append_bytes, read_regular, replace_file
from memdir.storage.base import StoreLock
from memdir.threads.log import encode, now_iso
from memdir.threads.messages import Message

PENDING_NAME = "queue.jsonl"


class PendingQueue:
    """One thread's waiting messages on disk."""

    def __init__(self, root: Path, path: Path, lock: StoreLock) -> None:
        self.root, self.path, self.lock = root, path, lock

    def add(self, message: Message) -> str:
        """Keep ``message`` as waiting; its id."""
        key = uuid.uuid4().hex
        line = encode({"id": key, "at": now_iso(), "message": message.to_json()})
        with self.lock.exclusive():
            append_bytes(self.root, self.path, line, cut=lambda size: self._whole_lines(size))
        return key

    def _whole_lines(self, size: int) -> int:
        """The length of the file's complete lines (a killed writer may have left part of one)."""
        return read_regular(self.root, self.path, size).rfind(b"\n") + 1

    def entries(self) -> list[tuple[str, Message]]:
        """(id, message) of every waiting message, oldest first (whole lines only)."""
        try:
            data = read_regular(self.root, self.path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for raw in data.split(b"\n")[:-1]:  # the part after the last newline is being written
            if raw.strip():
                entry = json.loads(raw)
                found.append((entry["id"], Message.from_json(entry["message"])))
        return found

    def remove(self, keys: set[str]) -> None:
        """Drop these entries (rewritten atomically; the caller holds the root's lock)."""
        try:
            lines = read_regular(self.root, self.path).split(b"\n")[:-1]
        except (FileNotFoundError, NotADirectoryError):
            return
        kept = [line + b"\n" for line in lines if line.strip() and json.loads(line)["id"] not in keys]
        replace_file(self.path, b"".join(kept), root=self.root)


__all__ = ["PENDING_NAME", "PendingQueue"]
