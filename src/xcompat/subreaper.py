"""Becoming the child subreaper of this process's descendants (``prctl(PR_SET_CHILD_SUBREAPER)``,
Linux 3.4+): an orphan below this process is re-parented to it instead of to init, so it stays
visible (and can be reaped) here.

The isolation runner and the local pipeline use it to find what a test or a cell left running;
``xcompat.interrupts`` uses it on a signal, before it notes the processes below this one. It
lives here, beside them and below both, so that neither imports the other for it.
"""

from __future__ import annotations

import sys

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_subreaper(on: bool = True) -> bool:
    """Make this process the subreaper of its descendants (``on=False``: stop being one);
    False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
