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

from memdir.core.files import replace_file
from memdir.storage.locking import RootLock
from memdir.threads.log import append_bytes, encode, now_iso
from memdir.threads.messages import Message

PENDING_NAME = "queue.jsonl"


class PendingQueue:
    """One thread's waiting messages on disk."""

    def __init__(self, path: Path, lock: RootLock) -> None:
        self.path, self.lock = path, lock

    def add(self, message: Message) -> str:
        """Keep ``message`` as waiting; its id."""
        key = uuid.uuid4().hex
        line = encode({"id": key, "at": now_iso(), "message": message.to_json()})
        with self.lock.exclusive():
            append_bytes(self.path, line, cut=lambda size: self._whole_lines(size))
        return key

    def _whole_lines(self, size: int) -> int:
        """The length of the file's complete lines (a killed writer may have left part of one)."""
        with open(self.path, "rb") as handle:
            data = handle.read(size)
        return data.rfind(b"\n") + 1

    def entries(self) -> list[tuple[str, Message]]:
        """(id, message) of every waiting message, oldest first (whole lines only)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
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
            lines = self.path.read_bytes().split(b"\n")[:-1]
        except FileNotFoundError:
            return
        kept = [line + b"\n" for line in lines if line.strip() and json.loads(line)["id"] not in keys]
        replace_file(self.path, b"".join(kept))


__all__ = ["PENDING_NAME", "PendingQueue"]
