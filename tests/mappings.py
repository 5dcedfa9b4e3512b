"""What a process holds in memory, mapping by mapping (Linux's ``/proc/PID/smaps``), for tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

PAGE = 4096


def mappings(pid: int | str = "self") -> list[tuple[int, int, int]]:
    """Each mapping of process ``pid``: its start and end address and its resident bytes."""
    found: list[tuple[int, int, int]] = []
    start = end = 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(part, 16) for part in head.split("-"))
        elif head == "Rss:":
            found.append((start, end, int(line.split()[1]) * 1024))
    return found


def resident_bytes(address: int) -> int:
    """The resident bytes of this process's mapping that holds ``address``.

    Raises:
        LookupError: no mapping holds it.
    """
    for start, end, resident in mappings():
        if start <= address < end:
            return resident
    raise LookupError(f"no mapping holds {address:#x}")


def resident_bytes_of_size(pid: int, size: int) -> list[int]:
    """The resident bytes of each mapping of process ``pid`` that is ``size`` bytes long (in whole pages)."""
    pages = -(-size // PAGE) * PAGE
    return [resident for start, end, resident in mappings(pid) if end - start == pages]
