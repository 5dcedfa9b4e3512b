"""What a process holds in memory, mapping by mapping (Linux's ``/proc/PID/smaps``), for tests and benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Mapping(NamedTuple):
    start: int
    end: int
    resident: int
    """Bytes the process holds of it."""
    flags: frozenset[str]
    """Its ``VmFlags`` (``nh``: it refuses transparent huge pages)."""


def mappings(pid: int | str = "self") -> list[Mapping]:
    """Each mapping of process ``pid``."""
    found: list[Mapping] = []
    start = end = resident = 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(part, 16) for part in head.split("-"))
        elif head == "Rss:":
            resident = int(line.split()[1]) * 1024
        elif head == "VmFlags:":
            found.append(Mapping(start, end, resident, frozenset(line.split()[1:])))
    return found


def resident_bytes(address: int) -> int:
    """The resident bytes of this process's mapping that holds ``address``.

    Raises:
        LookupError: no mapping holds it.
    """
    for mapping in mappings():
        if mapping.start <= address < mapping.end:
            return mapping.resident
    raise LookupError(f"no mapping holds {address:#x}")
