"""Give the C allocator's free memory back to the kernel before the warm parent is copied.

Collection allocates and frees a lot through ``malloc`` (objects over 512 bytes, assertion
rewriting's syntax trees): glibc keeps those free pages, touched and present, in its heap. A
fork copies a page-table entry for every present page and every test process later copies
the page it allocates in, where a page given back would cost a cheaper zero-filled fault and
no entry to copy or to tear down at exit. ``malloc_trim(0)`` gives back every whole free page
of every arena.

Called through ``ctypes``: no maintained package wraps this one glibc call. Elsewhere (musl,
macOS, Windows) there is no ``malloc_trim`` and this does nothing.
"""

from __future__ import annotations

import sys


def release_free_heap() -> bool:
    """Trim glibc's heap; True if it gave memory back."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only where it can work (as xcompat.isolate.strays does for prctl)

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))
