"""`ThreadManager`: the working-memory API that the tools and the CLI use (MemoryManager).

Per thread, a process keeps its log (`EventLog`), its context builder and its event queue.
Messages go through the queue; controls (strategy, mode, compaction, fork) act directly.

Execution modes (stored in the log, so a new process resumes in the same mode):

* ``auto`` — an appended message is written at once; when compressible chunks then pass
  the threshold, compaction runs before the next message is processed.
* ``stepping`` — messages wait in the queue; each `step` runs a due compaction first,
  else the next message. Switching back to ``auto`` runs a due compaction and drains the
  queue in order.

``pause`` blocks the queue too (messages wait until ``resume``). Queued messages wait on disk
(`memdir.threads.pending`), so another process — a restarted server, ``memdir thread step``
— finds them and processes them in order; the pause itself belongs to the process that
paused (a new process in auto mode processes what waited).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memdir.core.entry import utcnow
from memdir.core.errors import (
    InputValidationError,
    MemdirError,
    ThreadNotFoundError,
    ThreadOwnerError,
)
from memdir.core.identity import Actor, Labels
from memdir.core.settings import Settings
from memdir.embeddings.base import Embedder
from memdir.storage.audit_log import AuditRecord
from memdir.storage.base import ThreadLogs
from memdir.storage.directory.locking import LOCK_FILE_NAME, RootLock
from memdir.storage.directory.thread_files import THREADS_FOLDER, ThreadFiles
from memdir.threads import compaction
from memdir.threads.compaction import Summarize
from memdir.threads.context import ContextBuilder, Window, newest_turn
from memdir.threads.log import EventBuilder, EventLog, encode
from memdir.threads.markers import check_reference
from memdir.threads.messages import Message
from memdir.threads.model import (
    MODES,
    ThreadState,
    check_thread_id,
    is_thread_id,
    strategy_name,
)
from memdir.threads.pending import PENDING_NAME, PendingQueue
from memdir.threads.queue import BlockingReason, EventQueue, QueueItemGoneError
from memdir.threads.reducers import Event, replay
from memdir.threads.vectors import VectorCache

if TYPE_CHECKING:
    from memdir.memory import Memory

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class Compacted:
    """One compaction: how many chunks became the summary chunk, and who wrote the summary."""

    replaced: int
    chunk_id: str
    source: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class Appended:
    """What became of an appended message: written (``chunk_id``) or queued (``position``)."""

    thread: str
    chunk_id: str | None = None
    queued_at: int = 0
    strategy: str = ""
    switched: bool = False
    compacted: Compacted | None = None


@dataclass(frozen=True)
class Stepped:
    """One step: a compaction, or one message processed (or its error), and how many still wait."""

    compacted: Compacted | None
    processed: Future[Appended] | None
    remaining: int


@dataclass
class _Item:
    message: Message
    summarize: Summarize | None
    pending_id: str | None = None  # its entry in the thread's queue.jsonl while it waits


class _Thread:
    """One thread's runtime in this process."""

    def __init__(self, thread: str, log: EventLog, pending: PendingQueue, settings: Settings,
                 handler: Callable[[_Thread, _Item], Appended]) -> None:
        self.id, self.log, self.pending = thread, log, pending
        self.builder = ContextBuilder(thread, settings)
        self.candidates = compaction.Candidates(settings)
        self.queue: EventQueue[_Item, Appended] = EventQueue(lambda item: handler(self, item))


Audit = Callable[[str, str, ThreadState, dict[str, object]], None]
"""``audit(action, thread, state, details)``: records a thread's creation, fork, configuration or compaction."""


class ThreadManager:
    """The threads of one memory root.

    A thread has an owner and a visibility, as entries do (`memdir.core.identity`): the agent
    that created it owns it and only it (or an admin) may append to it or change it; it is
    visible to the roles of its creator's role view, and a thread outside the acting agent's
    view is not there for it (not listed, not found). Every event records who appended it.

    Args:
        root: the store root; logs go to ``<root>/threads/<id>/events.jsonl``, derived data
            to ``<root>/.memdir/threads/``.
        settings: limits and defaults (``thread_*``, ``lock_timeout``, ``max_entry_size``).
        embedder: returns the embedder for the semantic strategy, or None when there is none yet.
        actor: returns who is acting now (default: an anonymous agent with no role).
        audit: records creations, forks, strategy and mode changes and compactions.
        logs: where the event logs live (default: files under ``<root>/threads/``); queued
            messages and the embeddings cache stay under ``root`` either way.
    """

    def __init__(self, root: Path, settings: Settings, embedder: Callable[[], Embedder | None] | None = None,
                 actor: Callable[[], Actor] | None = None, audit: Audit | None = None,
                 logs: ThreadLogs | None = None) -> None:
        self.root, self.settings = Path(root), settings
        self.folder = self.root / THREADS_FOLDER
        self.derived = self.root / ".memdir" / THREADS_FOLDER
        local = RootLock(self.root / LOCK_FILE_NAME, timeout=settings.storage.lock_timeout)
        self.logs = logs or ThreadFiles(self.root, local)
        self.lock = self.logs.lock  # one lock for the logs and the queued messages
        self._local_lock = local  # the vector cache is derived data of this root: its lock, never a store-wide one
        self._embedder = embedder or (lambda: None)
        self._actor = actor or Actor
        self._audit = audit or (lambda *_: None)
        self._threads: dict[str, _Thread] = {}
        self._vectors: dict[str, VectorCache] = {}
        self._embedding: ThreadPoolExecutor | None = None  # embeds new messages of semantic threads
        self._runtimes = threading.Lock()

    # ------------------------------------------------------------------ threads
    def _runtime(self, thread: str) -> _Thread:
        """The thread's runtime in this process (made on first use; the log may not exist yet)."""
        check_thread_id(thread)
        with self._runtimes:
            runtime = self._threads.get(thread)
            if runtime is None:
                log = EventLog(self.logs, thread, lambda: self._actor().name)
                pending = PendingQueue(self.root, self.folder / thread / PENDING_NAME, self.lock)
                runtime = self._threads[thread] = _Thread(thread, log, pending, self.settings, self._process)
            return runtime

    def _thread(self, thread: str, *, create: bool = False, change: str | None = None, read: bool = False) -> _Thread:
        """The thread's runtime, if the acting agent sees it (and, for ``change``, may make that change).

        ``read``: for a read beside the writes (ThreadContext, ThreadList): the queue, which only
        the writer touches, is left as it is.
        """
        runtime = self._runtime(thread)
        if not runtime.log.exists():
            if not create:
                raise ThreadNotFoundError(thread)
            return runtime  # a new thread, the acting agent's: its first message creates it (`_process`)
        state = runtime.log.state()
        actor, labels = self._actor(), labels_of(state)
        if not actor.in_audience(labels):
            raise ThreadNotFoundError(thread)
        if change is not None and not actor.may_change(labels):
            raise ThreadOwnerError(thread, labels.created_by or "", actor.label, change)
        if read:
            return runtime
        self._follow_mode(runtime, state.mode)
        self._follow_pending(runtime)
        return runtime

    def _ownership(self) -> list[Event]:
        """The CONFIGURE operations that make the acting agent a thread's owner, visible to its role view."""
        actor = self._actor()
        return [{"op": "CONFIGURE", "key": "owner", "value": actor.name},
                {"op": "CONFIGURE", "key": "visible_to", "value": actor.default_visibility()}]

    def _create(self, runtime: _Thread, first: EventBuilder) -> tuple[Event, ThreadState]:
        """Write a new thread's first event (its strategy, owner and visibility) and its first message in one step;
        when another process created the thread meanwhile, its owner decides whether the message may follow."""
        operations = [{"op": "CONFIGURE", "key": "strategy", "value": self.settings.threads.strategy}, *self._ownership()]
        events = runtime.log.create([lambda seq, at, _: {"seq": seq, "at": at, "op": "BATCH", "events": operations}, first])
        if events is None:
            self._thread(runtime.id, change="append to")
            return runtime.log.append(first)
        state = runtime.log.state()
        self._audit("thread-create", runtime.id, replay(events[:1]), {})
        return events[-1], state

    def _follow_pending(self, runtime: _Thread) -> None:
        """Make this process's queue hold what ``queue.jsonl`` holds: messages queued by other (or dead)
        processes join it in order, and those another process has processed leave it."""
        waiting = runtime.pending.entries()
        if not waiting and not len(runtime.queue):
            return
        written = {key for key, _ in waiting if key in runtime.log.queued_ids}
        if written:  # a writer died between writing the event and removing its entry
            with self.lock.exclusive():
                runtime.pending.remove(written)
        on_disk = [(key, message) for key, message in waiting if key not in written]
        keys = {key for key, _ in on_disk}
        runtime.queue.discard(lambda item: item.pending_id is not None and item.pending_id not in keys,
                             "another process processed this queued message")
        known = {item.pending_id for item in runtime.queue.items()}
        for key, message in on_disk:
            if key not in known:
                runtime.queue.submit(_Item(message, None, key))

    def _follow_mode(self, runtime: _Thread, mode: str) -> None:
        """Block or unblock the queue for ``mode``, the one the log holds (another process may have changed it)."""
        queue = runtime.queue
        if mode == "stepping" and not queue.blocked:
            queue.block(BlockingReason.STEPPING)
        elif mode == "auto" and queue.blocked_by is BlockingReason.STEPPING:
            queue.unblock()
            queue.drain()

    def exists(self, thread: str) -> bool:
        return self.logs.exists(check_thread_id(thread))

    def ids(self) -> list[str]:
        """Every thread of the store in the acting agent's view, by id.

        A log that is no thread (a name no thread may have; in a directory, a log that is a link
        out of the root or a named pipe) is skipped here; a tool naming it gets the clear error.
        """
        return [name for name in self.logs.ids() if is_thread_id(name) and self._visible(name)]

    def _visible(self, thread: str) -> bool:
        try:
            self._thread(thread, read=True)
        except ThreadNotFoundError:
            return False
        except MemdirError:  # it is there, but cannot be read: the caller says so
            return True
        return True

    def state(self, thread: str) -> ThreadState:
        return self._thread(thread, read=True).log.state()

    def events(self, thread: str) -> Iterator[Event]:
        """The thread's events as logged, oldest first."""
        return self._thread(thread, read=True).log.events()

    def replay(self, thread: str) -> ThreadState:
        """The state rebuilt from the log alone (what a new process would see; damaged lines skipped)."""
        return replay(self.events(thread), rejected=[])

    def damaged(self, thread: str) -> list[str]:
        """The thread's damaged log lines that were skipped (where each ends, what is wrong with it)."""
        runtime = self._thread(thread, read=True)
        runtime.log.state()
        return list(runtime.log.damaged)

    def queued(self, thread: str) -> int:
        return len(self._thread(thread).queue)

    def next_queued(self, thread: str) -> Message | None:
        """The message the next step would process (``peekNextEvent``)."""
        item = self._thread(thread).queue.peek()
        return item.message if item is not None else None

    def blocked_by(self, thread: str) -> BlockingReason | None:
        return self._thread(thread).queue.blocked_by

    # ------------------------------------------------------------------ messages
    def append(self, thread: str, message: Message, *, summarize: Summarize | None = None) -> Appended:
        """Append a checked message: written now in auto mode, queued when stepping or paused.

        Raises:
            MemdirError: the message could not be written (its caller gets the error; nothing is written).
        """
        runtime = self._thread(thread, create=True, change="append to")
        who = self._actor().name
        item = _Item(replace(message, by=who) if who and not message.by else message, summarize)
        if runtime.queue.blocked or len(runtime.queue):
            item.pending_id = runtime.pending.add(message)  # waits on disk too: a restart loses nothing
        future = runtime.queue.submit(item)
        if future.done():
            return future.result()
        return Appended(thread, queued_at=len(runtime.queue), strategy=runtime.log.state().strategy)

    def _process(self, runtime: _Thread, item: _Item) -> Appended:
        before: list[str] = []  # the strategy right before the message (a marker in it may switch it)

        def build(seq: int, at: str, state: ThreadState) -> Event:
            before.append(state.strategy)
            return item.message.event(seq, at, state)

        if item.pending_id is None and not runtime.log.exists():
            event, state = self._create(runtime, build)
        elif item.pending_id is None:
            event, state = runtime.log.append(build)
        else:
            event, state = self._write_queued(runtime, build, item.pending_id)
        chunk_id = f"c{event['seq']}"
        switched = state.strategy != before[-1]
        if switched:
            self._audit("thread-configure", runtime.id, state, {"strategy": state.strategy, "by": "marker"})
        if state.strategy == "semantic":
            self._embed_soon(state)
        compacted = None
        if state.mode == "auto" and runtime.queue.blocked_by is None:
            try:
                compacted = self._compact(runtime, item.summarize, force=False, state=state)
            except MemdirError:  # the message is written; a compaction that lost a race runs next time
                logger.warning("compaction of thread %s failed; it will be tried again", runtime.id, exc_info=True)
        return Appended(runtime.id, chunk_id, strategy=state.strategy, switched=switched, compacted=compacted)

    def _write_queued(self, runtime: _Thread, message: EventBuilder, key: str) -> tuple[Event, ThreadState]:
        """Write a message that waited on disk (``message`` builds its event), then drop its entry, under one lock
        (it is written once)."""

        def build(seq: int, at: str, state: ThreadState) -> Event:
            return {**message(seq, at, state), "queued": key}

        with self.lock.exclusive():
            runtime.log.state()  # catch up: another process may have written it meanwhile
            if key in runtime.log.queued_ids or key not in {k for k, _ in runtime.pending.entries()}:
                raise QueueItemGoneError("another process processed this queued message.", "Nothing to do.")
            written = runtime.log.append(build)
            runtime.pending.remove({key})
            return written

    # ------------------------------------------------------------------ compaction
    def compact(self, thread: str, *, summarize: Summarize | None = None, force: bool = True) -> Compacted | None:
        """Compact now (``force``: whatever is compressible, threshold or not); None when nothing may be compacted."""
        runtime = self._thread(thread, change="compact")
        result = self._compact(runtime, summarize, force=force)
        if runtime.queue.blocked_by is None:
            runtime.queue.drain()
        return result

    def compaction_due(self, thread: str) -> bool:
        runtime = self._thread(thread, read=True)
        return compaction.due(runtime.candidates.plan(runtime.log.state()), self.settings)

    def _compact(self, runtime: _Thread, summarize: Summarize | None, *, force: bool,
                 state: ThreadState | None = None) -> Compacted | None:
        """Compact when due (``force``: whatever may be); ``state``: the log's state if the caller has just read it."""
        state = state or runtime.log.state()
        plan = runtime.candidates.plan(state)
        if not plan.chunks or not (force or compaction.due(plan, self.settings)):
            return None
        with self._blocked(runtime, BlockingReason.COMPACTING):
            summary, source = compaction.summary_for(plan.chunks, self.settings, summarize)  # no lock held meanwhile
            event, state = runtime.log.append(compaction.compaction_event(plan, summary, source))
        chunk = event["chunk"]
        self._audit("thread-compact", runtime.id, state, {"summary": chunk["id"], "replaced": len(plan.chunks)})
        after = len(chunk["content"]) // 4
        return Compacted(len(plan.chunks), chunk["id"], source, plan.tokens, after)

    @contextmanager
    def _blocked(self, runtime: _Thread, reason: BlockingReason) -> Iterator[None]:
        """Hold the queue blocked for ``reason`` unless it is blocked already (stepping, paused)."""
        queue = runtime.queue
        if queue.blocked:
            yield
            return
        queue.block(reason)
        try:
            yield
        finally:
            queue.unblock()

    # ------------------------------------------------------------------ controls
    def _configure(self, runtime: _Thread, key: str, value: object) -> ThreadState:
        def build(seq: int, at: str, _: ThreadState) -> Event:
            return {"seq": seq, "at": at, "op": "CONFIGURE", "key": key, "value": value}

        state = runtime.log.append(build)[1]
        if key in ("strategy", "mode"):
            self._audit("thread-configure", runtime.id, state, {key: value})
        return state

    def set_strategy(self, thread: str, name: str) -> ThreadState:
        """Switch the context strategy (every event is kept); an unknown name changes nothing."""
        strategy = strategy_name(name)
        runtime = self._thread(thread, change="change the strategy of")
        if runtime.log.state().strategy == strategy:
            return runtime.log.state()
        return self._configure(runtime, "strategy", strategy)

    def set_mode(self, thread: str, mode: str, *, summarize: Summarize | None = None) -> int:
        """Switch between ``auto`` and ``stepping``; back to auto compacts if due and drains the queue. Returns
        how many queued messages were processed."""
        if mode not in MODES:
            raise InputValidationError(f"mode must be auto or stepping; got {mode!r}.",
                                       "stepping queues messages until each step; auto processes them at once.")
        runtime = self._thread(thread, change="change the mode of")
        queue = runtime.queue
        if mode == "stepping":
            if queue.blocked_by is BlockingReason.PAUSED:
                raise InputValidationError("the thread is paused.", "Resume it before switching to stepping.")
            if runtime.log.state().mode != "stepping":
                self._configure(runtime, "mode", "stepping")
            self._follow_mode(runtime, runtime.log.state().mode)
            return 0
        if runtime.log.state().mode != "auto":
            self._configure(runtime, "mode", "auto")
        waiting = len(queue)
        if queue.blocked_by is BlockingReason.STEPPING:
            queue.unblock()
        if queue.blocked_by is None:
            self._compact(runtime, summarize, force=False)
            queue.drain()
        return waiting - len(queue)

    def step(self, thread: str, *, summarize: Summarize | None = None) -> Stepped:
        """In stepping mode: run a due compaction, else process the next queued message."""
        runtime = self._thread(thread, change="step")
        if runtime.log.state().mode != "stepping":
            raise InputValidationError("the thread is not in stepping mode.",
                                       "Switch with ThreadControl(action='mode', value='stepping') first.")
        compacted = self._compact(runtime, summarize, force=False)
        if compacted is not None:
            return Stepped(compacted, None, len(runtime.queue))
        processed = runtime.queue.process_one()
        return Stepped(None, processed, len(runtime.queue))

    def pause(self, thread: str) -> None:
        """Hold appended messages in the queue until `resume`; refused when already paused or stepping."""
        self._thread(thread, change="pause").queue.block(BlockingReason.PAUSED)

    def resume(self, thread: str) -> int:
        """Undo `pause` and process what waited; how many messages were processed."""
        runtime = self._thread(thread, change="resume")
        if runtime.queue.blocked_by is not BlockingReason.PAUSED:
            raise InputValidationError("the thread is not paused.", "Pause it first, or use mode to leave stepping.")
        runtime.queue.unblock()
        return runtime.queue.drain()

    def reference(self, thread: str, page: str, *, keep: bool = True) -> ThreadState:
        """Reference a virtual page (``p3``) or a chunk (``c41``; a summary: the turns it replaced) back into the
        context (``keep=False``: let it go again)."""
        name = check_reference(page)
        runtime = self._thread(thread, change="reference pages of")
        refs = [p for p in runtime.log.state().refs if p != name]
        return self._configure(runtime, "refs", [*refs, name] if keep else refs)

    def fork(self, thread: str, new_thread: str) -> ThreadState:
        """A new thread with a copy of ``thread``'s events (its state, strategy and mode) and its origin recorded;
        the agent that forks it owns the fork."""
        source = self._thread(thread)
        with self.lock.exclusive():
            if self.exists(new_thread):
                raise InputValidationError(f"thread {new_thread!r} already exists.", "Fork into a new thread id.")
            state = source.log.state()
            self.logs.create(new_thread, [encode(event) for event in source.log.events() if event["seq"] <= state.seq])
            operations = [{"op": "CONFIGURE", "key": "forked_from", "value": thread}, *self._ownership()]
            forked = self._runtime(new_thread)
            state = forked.log.append(lambda seq, at, _: {"seq": seq, "at": at, "op": "BATCH", "events": operations})[1]
        self._audit("thread-fork", new_thread, state, {"forked_from": thread})
        return state

    # ------------------------------------------------------------------ context
    def context(self, thread: str, budget_tokens: int, query: str | None = None) -> Window:
        """The thread's context window by its strategy, within ``budget_tokens``."""
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
            raise InputValidationError(f"budget_tokens must be a whole number >= 0; got {budget_tokens!r}.",
                                       "Pass the tokens you can spend on this thread's context, e.g. 2000.")
        runtime = self._thread(thread, read=True)
        state = runtime.log.state()
        cache = self._vector_cache() if state.strategy == "semantic" else None
        if cache is None:
            return runtime.builder.window(state, budget_tokens, query)
        return runtime.builder.window(state, budget_tokens, query, cache.vectors, cache.query)

    def _embed_soon(self, state: ThreadState) -> None:
        """Embed the newest message on a thread of its own, so the next context window finds its vector (or waits
        for it rather than embedding it again), and the append returns without waiting for the model. Only once a
        semantic window was asked in this process (its cache holds the model): an append never loads the model."""
        text = newest_turn(state)
        with self._runtimes:
            cache = next(reversed(self._vectors.values()), None)
            if cache is None or text is None:
                return
            if self._embedding is None:
                self._embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-thread-embed")
            future = self._embedding.submit(cache.vectors, [text])
        future.add_done_callback(_log_failure)

    def _vector_cache(self) -> VectorCache | None:
        """The embeddings cache of the current embedder; None when there is no model (yet)."""
        embedder = self._embedder()
        if embedder is None:
            return None
        with self._runtimes:
            cache = self._vectors.get(embedder.model_id)
            if cache is None:
                cache = self._vectors[embedder.model_id] = VectorCache(self.root, self.derived, embedder, self._local_lock)
        return cache


def _log_failure(future: Future[np.ndarray]) -> None:
    """A message's vector could not be made ahead: the next context window makes it (or says why not)."""
    if (exc := future.exception()) is not None:
        logger.warning("embedding a new thread message ahead failed: %s", exc)


def labels_of(state: ThreadState) -> Labels:
    """What access rules look at in a thread: its owner and the roles it is visible to (threads have no kind)."""
    return Labels(None, state.owner, state.visible_to)


def threads_of(memory: Memory) -> ThreadManager:
    """A new `ThreadManager` for an open `Memory`: its root, settings and model, acting as the memory's actor and
    auditing into its audit trail. The server keeps one in its state; one process must use one per memory (the
    queues, pauses and steps it holds are the process's)."""
    return ThreadManager(memory.root, memory.settings, lambda: memory.model.get(wait=False), lambda: memory.actor,
                         lambda action, thread, state, details: _audit(memory, action, thread, state, details),
                         memory.adapter.threads)


_MANAGERS: weakref.WeakKeyDictionary[Memory, ThreadManager] = weakref.WeakKeyDictionary()
_MANAGERS_LOCK = threading.Lock()


def manager_for(memory: Memory) -> ThreadManager:
    """The `ThreadManager` of an open `Memory` for callers without a server (the CLI, Python code): one per memory,
    so that every call in the process shares its queues."""
    with _MANAGERS_LOCK:
        manager = _MANAGERS.get(memory)
        if manager is None:
            manager = _MANAGERS[memory] = threads_of(memory)
        return manager


def _audit(memory: Memory, action: str, thread: str, state: ThreadState, details: dict[str, object]) -> None:
    """Append a thread's audit record to the memory's audit trail (``path``: ``threads/<id>``)."""
    actor = memory.actor
    overrode = actor.admin and state.owner is not None and state.owner != actor.name
    memory.audit.append(AuditRecord(
        at=utcnow().isoformat(), agent=actor.name, role=actor.role.value if actor.role else None, admin=overrode,
        action=action, path=f"{THREADS_FOLDER}/{thread}", owner=state.owner, details=dict(details),
    ))


__all__ = ["THREADS_FOLDER", "Appended", "Compacted", "Stepped", "ThreadManager", "labels_of", "manager_for", "threads_of"]
