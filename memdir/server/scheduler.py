"""The evolution scheduler inside the server: due jobs run while the store is idle.

Every ``evolution_check_seconds`` the scheduler looks whether the store has been idle — no
call through the memory host (tool, resource, hook socket) for ``evolution_idle_minutes``
— and if so runs the jobs that are due (`memdir.evolution.runner.is_due`), one at a time,
in `memdir.evolution.JOBS` order, each on one of the memory's writer threads (after the
writes sent before it), each with ``evolution_job_timeout`` and ``evolution_batch_size``. A call that
arrives meanwhile stops the running job between two items (``interrupted``); the next idle
spell goes on from where it stopped. Each job's lock file keeps two servers (or a server and
``memdir evolve``) from running the same job: the one that finds it taken skips it.

Consolidation asks the client's model when a client that offered MCP sampling has called a
tool on this server (the last such client's session is kept); otherwise, or when that
client is gone, it follows the strict rule (`memdir.evolution.deciding`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from memdir.core.errors import JobBusyError, MemdirError
from memdir.core.settings import Settings
from memdir.server.sampling import offers_sampling, session_ask

if TYPE_CHECKING:
    from memdir.evolution.history import RunRecord
    from memdir.evolution.runner import Job
    from memdir.memory import Memory

log = logging.getLogger(__name__)
T = TypeVar("T")


class MaintenanceHost(Protocol):
    """What the scheduler needs of the server's memory host (`memdir.server.state.MemoryHost`): when the
    store was last used, and a way to run a job on its writer thread without counting as a use."""

    last_used: float

    async def run_maintenance(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...


def _scheduled_run(memory: Memory, job: Job, **options: Any) -> RunRecord | None:
    """One scheduled run of ``job`` (on a writer thread); None when not due, or the root is read-only."""
    from memdir.evolution.runner import run_job

    if memory.read_only:
        return None
    return run_job(memory, job, scheduled=True, **options)


class Scheduler:
    """Runs due evolution jobs on ``host``'s memory while it is idle (see the module docstring)."""

    def __init__(self, settings: Settings, host: MaintenanceHost) -> None:
        self.settings = settings
        self.host = host
        self._sampling_session: Any = None
        self._stopping = False

    def note_client(self, session: Any) -> None:
        """A client called a tool: remember its session if it offers sampling (for consolidation)."""
        if offers_sampling(session):
            self._sampling_session = session

    def idle(self) -> bool:
        """True when nothing has used the store for ``evolution_idle_minutes``."""
        return time.monotonic() - self.host.last_used >= self.settings.evolution.idle_minutes * 60

    def stop(self) -> None:
        """Stop: a running job ends at its next item, and no other starts."""
        self._stopping = True

    async def run_due(self) -> list[RunRecord]:
        """Run each due job once, one at a time, while the store stays idle; the runs made."""
        from memdir.evolution import JOBS
        from memdir.evolution.deciding import model_decider

        settings, records = self.settings, []
        for job in JOBS.values():
            if self._stopping or not self.idle():
                break
            mark = self.host.last_used
            options: dict[str, Any] = {}
            ask = session_ask(self._sampling_session, settings.evolution.consolidation_sampling_timeout) if (
                job.name == "consolidation" and self._sampling_session is not None) else None
            if ask is not None:
                options["decide"] = model_decider(ask)
            try:
                record = await self.host.run_maintenance(
                    _scheduled_run, job, batch_size=settings.evolution.batch_size, timeout=settings.evolution.job_timeout,
                    busy=lambda: self._stopping or self.host.last_used != mark, options=options,  # noqa: B023 — asked only during this run
                )  # fmt: skip
            except JobBusyError:
                log.info("the %s job is running in another process; skipped", job.name)
                continue
            except MemdirError as exc:  # the memory cannot be opened, its disk is full, ...
                log.warning("the %s job could not run: %s", job.name, exc)
                continue
            if record is not None:
                log.info("evolution job %s: %s, %d processed, %d changed", job.name, record.status, record.processed, record.changed)
                records.append(record)
        return records

    async def serve(self) -> None:
        """Look for idleness every ``evolution_check_seconds`` and run due jobs, until cancelled."""
        while not self._stopping:
            await anyio.sleep(self.settings.evolution.check_seconds)
            if not self.idle():
                continue
            try:
                await self.run_due()
            except Exception:  # a record that cannot be written, ...: the server goes on, the next check tries again
                log.exception("the evolution scheduler could not run its jobs")


async def note_clients(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: tell the scheduler which client called a tool (its sampling, for consolidation)."""
    scheduler = getattr(ctx.lifespan_context, "scheduler", None)
    if scheduler is not None and ctx.method == "tools/call":
        scheduler.note_client(ctx.session)
    return await call_next(ctx)


__all__ = ["Scheduler", "note_clients"]
