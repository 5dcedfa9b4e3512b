"""Giving the memory a process has freed back to the operating system."""

from __future__ import annotations


def release_freed_memory() -> None:
    """Return the heap memory freed so far to the operating system (glibc's ``malloc_trim``).

    glibc keeps freed memory in each thread's allocation arena for reuse, so a long-running
    process that once needed much more than it keeps (building the onnxruntime session reads the
    whole model file and the graph before optimisation; opening the index reads every row) holds
    tens of MB it never uses again. A no-op where the C library has no ``malloc_trim``.
    """
    import ctypes  # (here: the server's start-up path imports this module, and needs no ctypes yet)

    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no C library to ask (Windows)
        return
    if trim is not None:
        trim(0)


__all__ = ["release_freed_memory"]
