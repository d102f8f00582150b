"""``xcompat.isolate.heap``: glibc's free pages go back to the kernel before the parent is copied."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Frees 40 MB of malloc'd blocks (bytes objects over pymalloc's 512-byte limit) below a block
# still in use, where free() alone does not give them back, then prints RssAnon before and
# after release_free_heap().
PROGRAM = """
import sys
from xcompat.isolate.heap import release_free_heap

def anon_kb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssAnon:"))

blocks = [bytes(4000) + bytes([i % 256]) for i in range(10_000)]
pinned = bytes(4000) + b"pinned"
del blocks
before = anon_kb()
released = release_free_heap()
print(before, anon_kb(), released)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim and /proc: Linux only")
def test_free_pages_below_a_live_block_are_given_back() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True).stdout
    before, after, released = out.split()
    assert released == "True"
    assert int(before) - int(after) > 20_000, out  # kB: most of the 40 MB freed


def test_elsewhere_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from xcompat.isolate import heap

    monkeypatch.setattr(heap.sys, "platform", "darwin")
    assert heap.release_free_heap() is False
