"""The watchdog: deadlines of running test processes, stack dumps, kills and reaping.

A test past its timeout gets ``SIGUSR1`` (faulthandler in the child dumps every thread's
Python stack to its crash file) and ``SIGCONT`` (in case it stopped itself), then ``SIGKILL`` for its whole process group
``DUMP_GRACE_S`` later. A reaped process's group is killed too, so a test's background
processes die with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING

from xcompat.isolate.child import DUMP_SIGNAL

if TYPE_CHECKING:
    from xcompat.isolate.tracked import TestProcess

# After the stack-dump signal, how long the watchdog waits before SIGKILL.
DUMP_GRACE_S = 0.5
# How long the parent waits on its children per loop turn when no deadline is nearer.
POLL_S = 0.25
# Without a pidfd, how often an exited-looking process (its pipe closed) is polled.
EXIT_POLL_S = 0.002


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (or the process alone when it has none)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:  # no such group (ProcessLookupError), or not ours to signal
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def next_wake(processes: Iterable[TestProcess], now: float) -> float:
    """Seconds until the watchdog must look again."""
    wait = POLL_S
    for process in processes:
        for moment in (process.deadline, process.kill_at):
            if moment is not None:
                wait = min(wait, max(moment - now, 0.0))
        if process.messages.eof and process.pidfd is None:
            wait = min(wait, EXIT_POLL_S)
    return wait


def enforce_deadline(process: TestProcess, now: float) -> None:
    """Ask a process past its deadline for its stacks, then kill it once the grace is over."""
    if process.status is not None:
        return
    if process.kill_at is not None and now >= process.kill_at:
        kill_group(process.pid)
        process.kill_at = None
        process.killed = True
    elif process.deadline is not None and now >= process.deadline and not process.timed_out:
        process.timed_out = True
        if DUMP_SIGNAL is not None:
            try:
                os.kill(process.pid, DUMP_SIGNAL)
                # a test that stopped itself (SIGSTOP, SIGTSTP) handles the dump signal only
                # once it runs again
                os.kill(process.pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            process.kill_at = now + DUMP_GRACE_S
        else:
            kill_group(process.pid)
            process.killed = True


def reap(process: TestProcess, *, block: bool) -> None:
    """Collect the exit status of a process that ended (``block``: wait for it)."""
    try:
        pid, status = os.waitpid(process.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        process.status = process.status if process.status is not None else 0
        return
    if pid == process.pid:
        process.status = status
        # Stray grandchildren (a test's background process) die with their test.
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(process.pid, signal.SIGKILL)
