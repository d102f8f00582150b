"""The scheduler: hands groups of tests to device slots, one test process per slot at a time.

With ``isolation="test"`` each test is a group; with ``"file"`` the consecutive tests of one
file are. A slot gets its next group as soon as its process reported the last test done (the
process may still be exiting). When a process dies mid-group, the tests it never started go
back to the front of the queue and run in a new process.
"""

from __future__ import annotations

import gc
import os
import selectors
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from xcompat.isolate.outcomes import Isolation
from xcompat.isolate.processes import Launcher, TestProcess
from xcompat.isolate.watchdog import enforce_deadline, kill_group, next_wake, reap


class ProcessEvents(Protocol):
    """What the scheduler tells the pytest side about a process."""

    def on_message(self, config: Any, process: TestProcess, message: dict[str, Any]) -> None: ...

    def on_exit(self, config: Any, process: TestProcess) -> list[Any]:
        """Record how the process ended; return the items of its group that never started."""
        ...


def group_items(items: Sequence[Any], isolation: Isolation) -> deque[list[Any]]:
    if isolation == "test":
        return deque([item] for item in items)
    groups: deque[list[Any]] = deque()
    for item in items:
        if groups and groups[-1][0].path == item.path:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def run_groups(
    session: Any,
    *,
    isolation: Isolation,
    slot_count: int,
    launcher: Launcher,
    events: ProcessEvents,
    prefork: bool,
) -> None:
    """Run every collected item of ``session`` in test processes until done or pytest says stop."""
    config = session.config
    # Move everything alive now (torch, sympy, collected items) out of the collector's
    # reach: a child's first full collection would otherwise touch every object and
    # copy-on-write the whole heap, tens of milliseconds per test.
    gc.collect()
    gc.freeze()
    launcher.begin(session.items)
    pending = group_items(session.items, isolation)
    free = deque(range(slot_count))
    running: dict[int, TestProcess] = {}
    selector = selectors.DefaultSelector()
    # Message pipes the parent sleeps on. A process with one test and a pidfd is not watched:
    # the parent sleeps on its exit (and deadlines) only, so the test's write does not wake it
    # too (on a busy machine each wake-up is a context switch), and reads the pipe whenever it
    # is awake. A process with several tests is watched: its writes would fill the pipe.
    watched: set[int] = set()

    def drain(process: TestProcess, *, until_eof: bool = False) -> None:
        for message in process.messages.read(until_eof=until_eof):
            released = process.released
            events.on_message(config, process, message)
            if process.released and not released:
                free.append(process.slot)  # only the exit is left: the slot starts its next group

    try:
        while pending or running:
            while pending and free:
                slot_index = free.popleft()
                process = launcher.start(config, pending.popleft(), slot_index)
                running[process.pid] = process
                if process.pidfd is not None:
                    selector.register(process.pidfd, selectors.EVENT_READ, ("exit", process))
                if process.pidfd is None or len(process.items) > 1:
                    selector.register(process.read_fd, selectors.EVENT_READ, ("pipe", process))
                    watched.add(process.pid)
                if prefork and len(pending) > len(free):
                    launcher.prepare_spare(config, slot_index)
            for key, _ in selector.select(timeout=next_wake(running.values(), time.monotonic())):
                kind, process = key.data
                if kind == "pipe":
                    drain(process)
                    if process.messages.eof:
                        selector.unregister(process.read_fd)
                        watched.discard(process.pid)
                elif process.status is None:
                    reap(process, block=True)
            for process in running.values():
                if process.pid not in watched and not process.messages.eof:
                    drain(process)  # what arrived meanwhile: done tests, before their deadlines count
            now = time.monotonic()
            for process in list(running.values()):
                enforce_deadline(process, now)
                if process.status is None and process.pidfd is None:
                    reap(process, block=False)
                if process.status is None:
                    continue
                if not process.messages.eof:
                    drain(process, until_eof=True)
                if process.pid in watched:
                    selector.unregister(process.read_fd)
                    watched.discard(process.pid)
                os.close(process.read_fd)
                if process.pidfd is not None:
                    selector.unregister(process.pidfd)
                    os.close(process.pidfd)
                del running[process.pid]
                if not process.released:
                    free.append(process.slot)
                launcher.ended(process)
                leftover = events.on_exit(config, process)
                if leftover:
                    pending.appendleft(leftover)
            if session.shouldstop or session.shouldfail:
                break
    finally:
        gc.unfreeze()
        launcher.close()
        for process in running.values():
            kill_group(process.pid)
            try:
                os.waitpid(process.pid, 0)
            except ChildProcessError:
                pass
        selector.close()

