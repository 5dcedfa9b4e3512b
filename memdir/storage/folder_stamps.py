"""Folder stamps: one ``stat`` per folder tells whether a listing may come from the derived index.

A listing walk stats every ``.md`` and ``.yml`` and opens lone ``.md`` files to tell stubs
(3.7 s at 100K entries). The derived index already holds every entry's row, and memdir's own
changes raise the root's change counter (`memdir.storage.changes`), which the index records
as caught up with. Changes made by hand (an editor, ``git checkout``, SwarmMemory) raise
nothing; what they do change is folders: creating, removing or renaming a file changes its
folder's mtime. So a walk that found the files exactly as the index has them records the
mtime of every folder it listed (each taken before the folder was listed) with the counter's
value, and while the counter and every folder's mtime are unchanged, the index's rows are
the listing (`FolderStamps.current`).

What may lag: a file edited in place (its folder keeps its mtime) is listed with the
size, mtime, title, type and hits its row had, until memdir next writes that entry or
re-scans the root (`Memory.reconcile`, run at every open). Its path is listed right.

Any stamped folder that changed (memdir's own counted reads rewrite a ``.yml`` too, and record
the new count in the index: `Memory.read`) makes the next listing a whole walk again, which
stamps anew if it agrees with the index; re-listing only the changed folders would be cheaper.

A folder changed less than `RACY_NS` before the walk is not trusted: a change within the
filesystem's timestamp granularity may leave its mtime as it was (git's "racy" files). The
listing then walks again next time, until the folders have settled.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

# Folder mtimes this recent are not trusted: Linux's coarse clock ticks every 1-10 ms, while
# FAT, SMB and some network filesystems keep 1-2 s; 2 s covers them all.
RACY_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class FolderStamps:
    """The mtime of every folder of the root, as a walk that agreed with the index saw them.

    Attributes:
        change: the root's change counter when the walk ran.
        mtimes: folder (its path on disk) -> mtime in ns.
    """

    change: int
    mtimes: Mapping[str, int]

    @classmethod
    def take(cls, change: int, mtimes: Mapping[str, int]) -> FolderStamps | None:
        """Stamps from a walk's folder mtimes; None if a folder changed too recently to trust (`RACY_NS`)."""
        settled = time.time_ns() - RACY_NS
        if any(mtime > settled for mtime in mtimes.values()):
            return None
        return cls(change, dict(mtimes))

    def current(self, change: int) -> bool:
        """True if no committed change (counter ``change``) and no folder changed since the walk."""
        if change != self.change:
            return False
        for folder, mtime in self.mtimes.items():
            try:
                if os.stat(folder).st_mtime_ns != mtime:
                    return False
            except OSError:  # removed (or unusable): walk again
                return False
        return True
