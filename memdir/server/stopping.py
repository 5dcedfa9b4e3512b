"""Stopping `memdir serve` on SIGINT (Ctrl-C) and SIGTERM, promptly and without a traceback.

The MCP SDK reads stdin on a worker thread, and a blocked read from a terminal cannot be
interrupted: cancelling the server would wait for that read to return, which on a terminal
only Ctrl-D makes happen. So a signal cancels the session (the lifespan then closes the
memory, finishing the operation in flight, and releases its lock), and once that is done
the process exits with the shell's status for the signal (128 + its number: 130, 143)
instead of waiting for the read.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable

import anyio

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def run_until_signalled(session: Callable[[], Awaitable[None]]) -> signal.Signals | None:
    """Run ``session()`` until it ends or SIGINT/SIGTERM arrives; the signal, or None.

    The handlers stay installed until this returns, so a second Ctrl-C during the
    clean-up is absorbed rather than turned into a KeyboardInterrupt traceback.
    Off the main thread (where handlers cannot be installed) the session just runs.
    """
    if threading.current_thread() is not threading.main_thread():
        await session()
        return None
    received: list[signal.Signals] = []
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                async for signum in signals:
                    received.append(signal.Signals(signum))
                    group.cancel_scope.cancel()
                    return

            group.start_soon(watch)
            await session()
            group.cancel_scope.cancel()
    return received[0] if received else None


def exit_for(signum: signal.Signals) -> None:
    """End the process now with 128 + the signal's number, without waiting for the stdin read."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # closed, broken, or interrupted mid-write: nothing to save
            pass
    os._exit(128 + signum)


def exit_at_once_on_signals() -> None:
    """Until `run_until_signalled` takes over, SIGINT and SIGTERM end the process at once (130, 143).

    While the server starts nothing is open, so there is nothing to finish. Left to Python,
    Ctrl-C would raise a KeyboardInterrupt in whatever the start is doing (importing, building
    the tools' models), and an interrupt raised inside the `exec` that builds a dataclass or a
    namedtuple makes ``python -m memdir`` die of SIGINT at exit instead of leaving with 130
    (CPython remembers it and re-raises the signal). asyncio puts the default handlers back
    when `run_until_signalled`'s own go.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_for_signal)


def _exit_for_signal(signum: int, frame: object) -> None:
    exit_for(signal.Signals(signum))


__all__ = ["STOP_SIGNALS", "exit_at_once_on_signals", "exit_for", "run_until_signalled"]
