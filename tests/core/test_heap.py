"""The served process's heap: large temporaries leave nothing behind (`memdir.core.heap`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import ctypes, sys
from memdir.core.heap import keep_large_blocks_apart

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "fixed":
    keep_large_blocks_apart()
size = 1 << 20
libc.free(libc.malloc(size))  # glibc's own threshold rises past this size here
block = libc.malloc(size)
print(libc.mallinfo2().hblkhd >= size)  # the second block has a mapping of its own (given back when freed)
libc.free(block)
"""


def _mapped_apart(mode: str) -> bool:
    done = subprocess.run([sys.executable, "-c", CHECK, mode], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_block_freed_again_and_again_keeps_a_mapping_of_its_own() -> None:
    try:
        glibc_default = _mapped_apart("default")
    except subprocess.CalledProcessError:
        pytest.skip("no glibc mallinfo2 here")
    assert not glibc_default  # (what the server would do without it: the block comes from the heap)
    assert _mapped_apart("fixed")
