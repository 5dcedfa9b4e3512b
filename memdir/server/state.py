"""The server's state: one shared `Memory` (in the lifespan) and per-client-session state.

* `MemoryHost` opens the `Memory` on a worker thread once the handshake is over (or at
  the first operation). Tools that change the memory run on a pool of writer threads:
  one client session's changes one at a time, in the order they came, different
  sessions' beside each other, so that what a change does before its commit (embedding
  its text, the model's slow part, and checking for near-duplicates) never holds
  another client's write: the store's own lock, taken for the commit alone
  (`memdir.memory.Memory.write`), is where writes queue. A change sent without a
  session waits for every change sent before it. Read-only tools run on a pool of
  their own, so a grep that takes seconds delays neither a MemoryRead sent after it nor
  a write. A read waits only for the writes sent before it, so it sees them. `Memory`
  is safe to share between threads (its index and the store's lock serialise what must
  be). Opening never delays ``initialize``
  or ``tools/list`` (they do not need it), and a slow call never blocks the event loop.
  The embedding model loads in the background (keyword search until it is ready). An
  opening that failed (another process held the root's lock too long) is tried again by
  the next operation, not kept until a restart.
* `SessionRegistry` keeps one `SessionState` per client session: the read tracker and
  the loaded skill (`memdir.tools.session.Session`), plus what the session read in the
  workspace. A session is the transport's session id when there is one (streamable
  HTTP), else the client's connection (stdio: the one client of this process). A
  2026-07-28 request over HTTP has neither (that protocol has no sessions on HTTP, and
  the SDK gives all such requests one shared no-channel connection): its state is kept
  per client token (`HTTP_CLIENT`), so clients with their own tokens never share it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from memdir.core.errors import MemdirError
from memdir.core.files import disk_errors
from memdir.core.heap import release_freed_memory
from memdir.core.identity import Actor, parse_role
from memdir.core.settings import Settings
from memdir.tools.session import Session
from memdir.workspace.tools import FileReads, Workspace

if TYPE_CHECKING:
    from memdir.embeddings.base import Embedder
    from memdir.memory import Memory
    from memdir.server.scheduler import Scheduler
    from memdir.server.tokens import HttpClient
    from memdir.threads.manager import ThreadManager

T = TypeVar("T")
log = logging.getLogger(__name__)

OPENING_DELAY = 0.5
"""Seconds from the first answer after the handshake to the memory's opening in the background (`MemoryHost.start_soon`)."""


class MemoryHost:
    """Owns the server's `Memory`: each session's changes in order, sessions beside each other;
    read-only calls on a pool of their own."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self._root = settings.store_root
        self._settings, self._embedder = settings, embedder
        self._writer = ThreadPoolExecutor(max_workers=max(1, settings.server.write_workers), thread_name_prefix="memdir-memory")
        self._readers = ThreadPoolExecutor(max_workers=max(1, settings.server.read_workers), thread_name_prefix="memdir-read")
        self._opening: Future[Memory] | None = None
        self._starting = threading.Lock()
        self._soon: asyncio.TimerHandle | None = None
        self._writes: set[Future[Any]] = set()
        """Changes sent and not done (a change sent without a session waits for all of them)."""
        self._writes_guard = threading.Lock()  # (a change leaves the set on the thread that ran it)
        self._last_writes: weakref.WeakKeyDictionary[Any, Future[Any]] = weakref.WeakKeyDictionary()
        self._threads: ThreadManager | None = None
        self.last_used = time.monotonic()
        """When a call last used the store (`time.monotonic`); the server's start counts as one."""

    def start(self) -> Future[Memory]:
        """Begin opening the memory (and loading the model behind it); the opening's future.

        Once, unless that attempt failed: then again, so a call after a failed opening
        (another process held the root's lock) tries anew instead of getting the old error.
        A call that needs the memory starts it (`run`); the server also starts it in the
        background, shortly after the handshake (`start_soon`).
        """
        with self._starting:
            failed = self._opening is not None and self._opening.done() and self._opening.exception() is not None
            if self._opening is None or failed:
                self._opening = self._writer.submit(self._open_memory)
            return self._opening

    def start_soon(self) -> None:
        """Begin opening the memory `OPENING_DELAY` seconds from now (on the running event loop), unless begun by then.

        Opening imports numpy, SQLite and onnxruntime on a thread of its own, in long stretches
        that hold the interpreter's lock: started at once, it would hold up the answer a client
        is waiting for (its ``tools/list``) on its way out, which is written on other threads.
        """
        if self._opening is None and self._soon is None:
            self._soon = asyncio.get_running_loop().call_later(OPENING_DELAY, self.start)

    def _open_memory(self) -> Memory:
        """Open the memory (on a writer thread); any failure becomes a `MemdirError`."""
        try:
            return self._open(self._settings, self._embedder)
        except MemdirError:
            raise
        except Exception as exc:
            raise MemdirError(
                f"memdir could not open the memory at {self._root}: {type(exc).__name__}: {exc}",
                "Check that --root (MEMDIR_ROOT) names a directory this user can read; the next "
                "call tries to open it again.",
            ) from exc

    @staticmethod
    def _open(settings: Settings, embedder: Embedder | None) -> Memory:
        """Open the memory, then prefetch what this agent's role is likely to read first
        (`memdir.server.prefetch`: the session starts with the server)."""
        from memdir.memory import Memory  # heavy imports stay off the start-up path
        from memdir.server.prefetch import warm

        memory = Memory.open(settings, embedder=embedder, background=True)
        memory.model.on_ready(_say_ready)
        try:
            warm(memory)
        except Exception:  # a guess that failed must not keep the memory from opening
            log.warning("prefetching at session start failed", exc_info=True)
        release_freed_memory()  # what reading the index freed
        return memory

    def memory(self) -> Memory:
        """The open memory (waits for the opening; never call it on a writer thread).

        Raises:
            MemdirError: it could not be opened; the next call tries again.
        """
        return self.start().result()

    def threads(self, memory: Memory) -> ThreadManager:
        """The server's working-memory threads of ``memory``: one manager, shared by every call (its queues,
        pauses and steps are the server's)."""
        with self._starting:
            if self._threads is None:
                from memdir.threads.manager import threads_of

                self._threads = threads_of(memory)
            return self._threads

    def _call(self, opening: Future[Memory], client: HttpClient | None, fn: Callable[..., T], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> T:
        """``fn`` on the memory ``opening`` gives: the attempt `run` started (or found) for this call,
        submitted to the writer threads before it, so waiting for it never blocks it.

        ``client``: the HTTP client the call is for (None: stdio). A plain token's client acts as
        the server itself (`HttpClient.is_server`); a token made with an agent or a role acts as
        that agent (its changes are its own, other agents' entries are theirs), in the role its
        token gives (else the server's). Either way with the server's admin flag, never a
        token's: admin stays a setting or flag of whoever runs the server.
        """
        memory = opening.result()
        if "threads" in kwargs:
            kwargs = {**kwargs, "threads": self.threads(memory)}
        actor = None
        if client is not None and not client.is_server:
            actor = Actor(client.agent or self._settings.roles.agent, parse_role(client.role or self._settings.roles.role),
                          self._settings.roles.admin)
        with disk_errors(self._root), memory.acting_as(actor):  # a tool's own files (defrag journal, episodes, ...) too
            return fn(memory, *args, **kwargs)

    async def run(self, fn: Callable[..., T], *args: Any, read_only: bool = False, writer: Any = None, **kwargs: Any) -> T:
        """``fn(memory, *args, **kwargs)`` off the event loop: on a writer thread, or on the
        read pool once the writes it must see are done (``read_only``).

        ``writer`` (a client session's state) scopes that wait: a read waits for the writes
        its own session sent before it, not for other clients' — with many clients on one
        server there is nearly always someone's write queued. Without it, a read waits for
        every write sent before it.

        Every such call is a use of the store (`last_used`, which the evolution scheduler
        watches), when it comes in and when it is done.
        """
        self.last_used = time.monotonic()
        try:
            return await self._run(fn, args, kwargs, read_only, writer)
        finally:
            self.last_used = time.monotonic()

    async def run_maintenance(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(memory, *args, **kwargs)`` on a writer thread, after the writes sent before it, without
        counting as a use of the store (the evolution scheduler's jobs)."""
        return await self._run(fn, args, kwargs, False, None)

    async def _run(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any], read_only: bool,
                   writer: Any) -> T:
        opening = self.start()  # queued before any write, which waits for it on a writer thread
        client = HTTP_CLIENT.get()  # (context variables do not follow a call to the worker threads)
        if not read_only:
            return await self._write(opening, client, fn, args, kwargs, writer)
        if writer is None:
            await _settled(*self._pending_writes())
        else:
            await _settled(self._last_writes.get(writer))
        return await asyncio.wrap_future(self._readers.submit(self._call, opening, client, fn, args, kwargs))

    def _pending_writes(self) -> list[Future[Any]]:
        with self._writes_guard:
            return list(self._writes)

    def _forget(self, write: Future[Any]) -> None:
        with self._writes_guard:
            self._writes.discard(write)

    async def _write(self, opening: Future[Memory], client: HttpClient | None, fn: Callable[..., T],
                     args: tuple[Any, ...], kwargs: dict[str, Any], writer: Any) -> T:
        """``fn`` on a writer thread once the changes it must follow are done: its session's last one
        (without a session: every change sent before it)."""
        before = [self._last_writes.get(writer)] if writer is not None else self._pending_writes()
        done: Future[Any] = Future()  # settles when this change does (what later calls wait for)
        with self._writes_guard:
            self._writes.add(done)
        done.add_done_callback(self._forget)
        if writer is not None:
            self._last_writes[writer] = done
        try:
            await _settled(*before)
            work = self._writer.submit(self._call, opening, client, fn, args, kwargs)
        except BaseException:
            done.set_result(None)
            raise
        work.add_done_callback(lambda _: done.set_result(None))
        return await asyncio.wrap_future(work)

    def close(self) -> None:
        """Close the memory (after the operations under way, reads included) and stop the threads."""
        if self._soon is not None:
            self._soon.cancel()

        def close_memory() -> None:
            self._writer.shutdown(wait=True, cancel_futures=True)
            self._readers.shutdown(wait=True, cancel_futures=True)
            opening = self._opening
            if opening is not None and opening.done() and opening.exception() is None:
                opening.result().close()

        closing = threading.Thread(target=close_memory, name="memdir-close", daemon=True)
        closing.start()
        closing.join(timeout=30)
        self._readers.shutdown(wait=False, cancel_futures=True)
        self._writer.shutdown(wait=False, cancel_futures=True)


def _say_ready(embedder: Any) -> None:
    """Tell whoever runs the server (its stderr: an editor's log, a terminal) that search now uses meaning."""
    print(f"memdir: the embedding model {embedder.model_id} is ready: search is semantic from now on",
          file=sys.stderr, flush=True)


async def _settled(*futures: Future[Any] | None) -> None:
    """Wait until ``futures`` are done, whatever their outcome (each is its own caller's to report)."""
    for future in futures:
        if future is not None and not future.done():
            try:
                await asyncio.wrap_future(future)
            except BaseException:  # noqa: BLE001 - (also a cancelled one: it is done)
                pass


@dataclass(eq=False)
class SessionState:
    """What one client session carries between calls (compared and hashed by identity)."""

    session: Session = field(default_factory=Session)
    file_reads: FileReads = field(default_factory=FileReads)
    role_warmed: bool = False
    """Whether the cache was warmed for this session's role (`memdir.server.role_warming.warm_for_role`)."""


HTTP_CLIENT: contextvars.ContextVar[HttpClient | None] = contextvars.ContextVar("memdir_http_client", default=None)
"""The client (token name and role) of the HTTP request being served (set by `memdir.server.http_guard`)."""


class SessionRegistry:
    """One `SessionState` per client session, dropped when its connection goes away."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_connection: weakref.WeakKeyDictionary[Any, SessionState] = weakref.WeakKeyDictionary()
        self._by_id: dict[str, SessionState] = {}

    def for_context(self, ctx: Any) -> SessionState:
        """The state of the session ``ctx`` belongs to (a `Context` or a `ServerRequestContext`)."""
        session = ctx.session
        # The SDK has no public handle on the connection; its outbound channel is the one
        # object that lives exactly as long as a stdio/legacy client connection does.
        connection = getattr(session, "_connection", None)
        session_id = getattr(connection, "session_id", None)
        with self._lock:
            if session_id:
                return self._by_id.setdefault(session_id, SessionState())
            if connection is not None and not getattr(connection, "has_standalone_channel", True):
                client = HTTP_CLIENT.get()
                return self._by_id.setdefault(f"client:{client.name if client else ''}", SessionState())
            key = getattr(connection, "outbound", None)
            if key is None:  # not a real connection (a direct call in tests): one shared session
                return self._by_id.setdefault("", SessionState())
            try:
                state = self._by_connection.get(key)
                if state is None:
                    state = self._by_connection[key] = SessionState()
                return state
            except TypeError:  # an outbound without weakref support: keep it by id
                return self._by_id.setdefault(f"outbound-{id(key)}", SessionState())


@dataclass
class AppState:
    """The lifespan's shared state.

    Attributes:
        settings: the server's settings (mode, workspace, limits).
        host: the memory and its thread.
        sessions: per-client-session state.
        workspace: the directory the workspace tools act on.
        tools: the memory tools this server registered (the mode's, minus those not installed).
        workspace_tools: the workspace tools it registered (none in retrieval mode).
        scheduler: the evolution scheduler (`memdir.server.scheduler`), None when it is off.
    """

    settings: Settings
    host: MemoryHost
    sessions: SessionRegistry
    workspace: Workspace
    tools: tuple[str, ...]
    workspace_tools: tuple[str, ...]
    scheduler: Scheduler | None = None

    def visible_tools(self, session: SessionState) -> list[str]:
        """The tools this session sees: the mode's memory tools plus its loaded skill's workspace tools."""
        loaded = set(session.session.skill_tools)
        return [*self.tools, *(name for name in self.workspace_tools if name in loaded)]


HANDSHAKE = frozenset({"initialize", "notifications/initialized", "server/discover"})
"""The messages a client opens a connection with: ``initialize`` and its notice (handshake-era
clients), ``server/discover`` (2026-era ones)."""


async def open_after_handshake(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: open the memory in the background soon after the first request after the handshake.

    Not during the handshake, nor at once: a client sends ``tools/list`` right behind it, and
    the opening's imports would compete for the processor with that answer until it is out
    (`MemoryHost.start_soon`).
    """
    result = await call_next(ctx)
    state = ctx.lifespan_context
    if ctx.method not in HANDSHAKE and isinstance(state, AppState):
        state.host.start_soon()
    return result


def app_state(ctx: Context[Any, Any]) -> AppState:
    """The `AppState` of the server handling ``ctx``."""
    return ctx.request_context.lifespan_context


def session_state(ctx: Context) -> SessionState:
    return app_state(ctx).sessions.for_context(ctx)


def tool_error(exc: MemdirError) -> ToolError:
    """A memdir error as the tool error the model sees: the message, then the hint."""
    return ToolError(f"{exc.message}\n{exc.hint}" if exc.hint else exc.message)


async def run_memory_tool(ctx: Context, fn: Callable[..., T], /, *, read_only: bool = False, **kwargs: Any) -> T:
    """Run a plain tool function ``fn(memory, **kwargs)`` on the memory's threads (`MemoryHost.run`);
    memdir errors become tool errors."""
    try:
        return await app_state(ctx).host.run(fn, read_only=read_only, writer=session_state(ctx), **kwargs)
    except MemdirError as exc:
        raise tool_error(exc) from exc


__all__ = [
    "HTTP_CLIENT",
    "AppState",
    "MemoryHost",
    "SessionRegistry",
    "SessionState",
    "app_state",
    "open_after_handshake",
    "run_memory_tool",
    "session_state",
    "tool_error",
]
