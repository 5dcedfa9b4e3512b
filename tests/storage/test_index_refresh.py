"""A process that keeps a root open sees what another process's writer committed, even one killed mid-write.

The writer child is killed with SIGKILL at an exact point of `Memory.write` (a hook set in the
child only): after its files were renamed into place but before the index was updated, after the
commit point but before the renames, or before its journal was removed. The long-lived reader
must then search, read and glob the new version without reopening the root.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys

import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.storage.directory import atomic
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_read import memory_read
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


def facts(memory: Memory, query: str) -> list:
    """Search results among the entries these tests write (built-in skills left out)."""
    return [hit for hit in memory.search(query) if hit.path.startswith("fact/")]


def _die(*_args: object, **_kwargs: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _write_then_die_at(root: str, point: str) -> None:
    """Overwrite fact/paris, SIGKILLed at ``point`` (the hook is set in this child only).

    The index is updated between staging the files and the commit point (so a failure there
    changes neither): a writer killed before or after that update has committed nothing.
    """
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        if point == "before the index update":
            memory.index.upsert = _die
        elif point == "after the index update, before the commit point":
            upsert = memory.index.upsert
            memory.index.upsert = lambda *args, **kwargs: (upsert(*args, **kwargs), _die())
        elif point == "before the renames":
            atomic._roll_forward = _die
        else:  # before the journal is removed
            atomic._finish = _die
        memory.write("fact/paris", "Lyon is famous for its food.", title="Lyon", metadata={"type": "fact"})


@pytest.mark.parametrize(("point", "committed"), [
    ("before the index update", False),
    ("after the index update, before the commit point", False),
    ("before the renames", True),
    ("before the journal is removed", True),
])
def test_a_long_lived_reader_sees_what_a_killed_writer_committed(tmp_path, session, point, committed):
    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as reader:
        reader.write("fact/paris", "Paris is the capital of France.", title="Paris", metadata={"type": "fact"})
        assert [hit.title for hit in facts(reader, "capital France")] == ["Paris"]

        child = multiprocessing.get_context("spawn").Process(target=_write_then_die_at, args=(str(settings.store_root), point))
        child.start()
        child.join(60)
        assert child.exitcode == -signal.SIGKILL

        # A plain read takes no lock; a journal left mid-rename sends it to the lock, which repairs.
        title, words, other = ("Lyon", "Lyon food", "capital France") if committed else ("Paris", "capital France", "Lyon food")
        assert reader.read("fact/paris").title == title
        assert [(hit.path, hit.title) for hit in facts(reader, words)] == [("fact/paris.md", title)]
        assert facts(reader, other) == []
        assert f'"{title}"' in memory_glob(reader, session, "fact/*")
        if committed:
            assert "Lyon is famous for its food." in memory_read(reader, session, "fact/paris.md")
        # (a journal that never reached its commit point changes nothing; the next writer removes it)
        assert not atomic.has_pending(settings.store_root, committed_only=True)


def test_every_change_leaves_the_index_caught_up_with_the_files(tmp_path):
    """A healthy change records the file change count it reached, in its own process and for the others:
    an index left behind after each write would make every later call re-scan the whole root."""
    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory, Memory.open(settings, embedder=FakeEmbedder()) as other:
        changes = [
            lambda: memory.write("fact/paris", "Paris is the capital of France.", title="Paris"),
            lambda: memory.write("fact/lyon", "Lyon is famous for its food.", title="Lyon"),
            lambda: memory.write_stub("fact/lyon", "fact/paris"),
            lambda: memory.delete("fact/paris"),
            lambda: memory.rebuild(),
        ]
        for change in changes:
            change()
            assert not memory.index.behind_files()
            assert not other.index.behind_files()
