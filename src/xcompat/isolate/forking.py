"""``os.fork()`` for the isolated runner, without Python 3.12's warning about native threads.

Python 3.12 and later warn ("This process is multi-threaded, use of fork() may lead to
deadlocks in the child") whenever the process has more than one OS thread. The warm parent
always has some: BLAS pools (OpenBLAS starts its workers when numpy is imported), CUDA and
NVML helper threads. Those libraries register their own fork handlers, and the parent never
runs a multi-threaded OpenMP region (xcompat.isolate.warmup), so for them the warning is
noise, printed once per run under a name that suggests xcompat did something wrong.

It is kept where it means something: when the process runs another *Python* thread (one a
conftest or plugin started), which may hold the import lock or a logging lock at the fork.
"""

from __future__ import annotations

import os
import threading
import warnings

_NATIVE_THREADS_WARNING = r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks"


def fork() -> int:
    """``os.fork()``; Python's multi-threaded-fork warning is silenced only while this is the
    process's single Python thread (the other threads are native pools)."""
    if threading.active_count() > 1:
        return os.fork()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_NATIVE_THREADS_WARNING, category=DeprecationWarning)
        return os.fork()
