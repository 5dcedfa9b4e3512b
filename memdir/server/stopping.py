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
        except (OSError, ValueError):  # a closed or broken stream: nothing left to flush
            pass
    os._exit(128 + signum)


__all__ = ["STOP_SIGNALS", "exit_for", "run_until_signalled"]
