"""Giving the memory a process has freed back to the operating system."""

from __future__ import annotations

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 128 * 1024
"""Bytes from which an allocation gets a mapping of its own (glibc's initial value, kept fixed)."""


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


def keep_large_blocks_apart() -> None:
    """Give every allocation of `MMAP_THRESHOLD` bytes or more a mapping of its own, returned to the
    operating system as soon as it is freed (glibc's ``mallopt(M_MMAP_THRESHOLD)``).

    glibc raises that threshold each time such a block is freed, up to 32 MB, and from then on
    serves the large temporaries of every search (score arrays, numpy and onnxruntime buffers)
    from the heaps of the threads that ask: searches answered on worker threads fragment those
    heaps, so a server's resident memory grows with the searches it answers. With the threshold
    fixed, such a block leaves nothing behind. A no-op where the C library has no ``mallopt``.
    """
    import ctypes

    try:
        mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    except (OSError, TypeError):  # no C library to ask (Windows)
        return
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


__all__ = ["MMAP_THRESHOLD", "keep_large_blocks_apart", "release_freed_memory"]
