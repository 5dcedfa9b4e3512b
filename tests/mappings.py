"""What this process holds in memory, mapping by mapping (Linux's ``/proc/self/smaps``), for tests and benchmarks."""

from __future__ import annotations

from pathlib import Path


def resident_bytes(address: int) -> int:
    """The resident bytes of this process's mapping that holds ``address``.

    Raises:
        LookupError: no mapping holds it.
    """
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(part, 16) for part in head.split("-"))
            inside = start <= address < end
        elif inside and head == "Rss:":
            return int(line.split()[1]) * 1024
    raise LookupError(f"no mapping holds {address:#x}")
