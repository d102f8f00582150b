"""The scheduler: hands groups of tests to device slots, one test process per slot at a time.

With ``isolation="test"`` each test is a group; with ``"file"`` all tests of one file are, in
pytest's order, even where pytest interleaved files (a parametrized module- or session-scoped
fixture makes it run every file once per parameter): one process per file, not per run. A
slot gets its next group as soon as its process reported the last test done (the process may
still be exiting), before the parent replays that test's reports. When a process dies
mid-group, the tests it never started go back to the front of the queue and run in a new
process.
"""

from __future__ import annotations

import gc
import os
import selectors
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from xcompat.isolate.heap import release_free_heap
from xcompat.isolate.outcomes import Isolation
from xcompat.isolate.processes import Launcher
from xcompat.isolate.tracked import TestProcess
from xcompat.isolate.watchdog import EXIT_POLL_S, enforce_deadline, kill_group, next_wake


class ProcessEvents(Protocol):
    """What the scheduler tells the pytest side about a process."""

    def on_message(self, config: Any, process: TestProcess, message: dict[str, Any]) -> None: ...

    def on_exit(self, config: Any, process: TestProcess) -> list[Any]:
        """Record how the process ended; return the items of its group that never started."""
        ...


def group_items(items: Sequence[Any], isolation: Isolation) -> deque[list[Any]]:
    if isolation == "test":
        return deque([item] for item in items)
    by_file: dict[Any, list[Any]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    return deque(by_file.values())


def _completes_group(process: TestProcess, messages: list[dict[str, Any]]) -> bool:
    """Do ``messages`` report the last unfinished test of the process's group done, and
    nothing failed (a failure replayed may stop the run: ``-x``, ``--maxfail``)?"""
    if not messages or messages[-1].get("event") != "done" or not process.items:
        return False
    if any(m.get("event") == "report" and (m.get("report") or {}).get("outcome") == "failed" for m in messages):
        return False
    done = process.finished | {m.get("nodeid") for m in messages if m.get("event") == "done"}
    return all(item.nodeid in done for item in process.items)


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
    # copy-on-write the whole heap. Without a collection first, as Python's documentation of
    # gc.freeze advises: a collection would walk the whole heap on every run and leave holes
    # in shared pages for the children's new objects. The garbage frozen with the rest is
    # collected after the run (gc.unfreeze below). The C allocator's free pages go back to
    # the kernel first (xcompat.isolate.heap): fewer present pages to copy at each fork.
    release_free_heap()
    gc.freeze()
    launcher.begin(session.items)
    pending = group_items(session.items, isolation)
    free = deque(range(slot_count))
    running: dict[int, TestProcess] = {}
    selector = selectors.DefaultSelector()
    # Message pipes the parent sleeps on (every process's, until its end of file). A test
    # process writes once per test, at the test's end, so the parent wakes then and hands the
    # slot its next tests while the process is still exiting (unmapping a copy of the warm
    # parent's heap takes milliseconds), rather than after its exit.
    watched: set[int] = set()

    spares_wanted: list[int] = []  # slots that started a group and get a spare when asked

    def stopping() -> bool:
        return bool(session.shouldstop or session.shouldfail)

    def start_groups() -> None:
        while pending and free and not stopping():
            slot_index = free.popleft()
            process = launcher.start(config, pending.popleft(), slot_index)
            running[process.pid] = process
            if process.pidfd is not None:
                selector.register(process.pidfd, selectors.EVENT_READ, ("exit", process))
            selector.register(process.read_fd, selectors.EVENT_READ, ("pipe", process))
            watched.add(process.pid)
            if prefork:
                spares_wanted.append(slot_index)

    def ask_for_spares() -> None:
        while spares_wanted:
            slot_index = spares_wanted.pop()
            if len(pending) > len(free) and not stopping():
                launcher.prepare_spare(config, slot_index)

    def drain(process: TestProcess, *, until_eof: bool = False) -> None:
        messages = list(process.messages.read(until_eof=until_eof))
        if not process.released and _completes_group(process, messages):
            # The group's last test is done: hand the slot its next group before the
            # parent replays these reports, so the next process starts meanwhile.
            process.released = True
            free.append(process.slot)
            start_groups()
        for message in messages:
            released = process.released
            events.on_message(config, process, message)
            if process.released and not released:
                free.append(process.slot)  # only the exit is left: the slot starts its next group
        # The next spare is asked for only now: forked while the new process starts and the
        # parent replays, it would take a core from both, which a machine with few cores feels.
        ask_for_spares()

    # Processes whose pidfd said they ended (no longer watched) and whose exit status is not
    # known yet: the zygote reports it when it is done with what it was doing, and its socket
    # (the launcher's notice descriptor, a duplicate of it here) wakes the loop then. Waiting
    # for that report instead would stall the parent while the zygote finishes a fork, often
    # when the next test has already finished.
    ended: set[int] = set()
    notices: int | None = None

    def watch_notices() -> None:
        nonlocal notices
        if notices is None and (fd := launcher.notice_fd()) is not None:
            notices = os.dup(fd)
            selector.register(notices, selectors.EVENT_READ, ("notices", None))

    def unwatch_notices() -> None:
        nonlocal notices
        if notices is not None:
            selector.unregister(notices)
            os.close(notices)
            notices = None

    try:
        while pending or running:
            start_groups()
            ask_for_spares()
            watch_notices()
            timeout = next_wake(running.values(), time.monotonic())
            if ended and notices is None:
                timeout = min(timeout, EXIT_POLL_S)
            for key, _ in selector.select(timeout=timeout):
                kind, process = key.data
                if kind == "pipe":
                    drain(process)
                    if process.messages.eof:
                        selector.unregister(process.read_fd)
                        watched.discard(process.pid)
                elif kind == "notices":
                    launcher.read_notices()
                    if launcher.notice_fd() is None:  # the zygote is gone: nothing more comes
                        unwatch_notices()
                elif process.pid not in ended:
                    selector.unregister(process.pidfd)
                    ended.add(process.pid)
            now = time.monotonic()
            for process in list(running.values()):
                enforce_deadline(process, now)
                if process.status is None and (process.pidfd is None or process.pid in ended):
                    launcher.reap(process, block=False)
                if process.status is None:
                    continue
                if not process.messages.eof:
                    drain(process, until_eof=True)
                if process.pid in watched:
                    selector.unregister(process.read_fd)
                    watched.discard(process.pid)
                os.close(process.read_fd)
                if process.pidfd is not None:
                    if process.pid not in ended:
                        selector.unregister(process.pidfd)
                    os.close(process.pidfd)
                ended.discard(process.pid)
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
        unwatch_notices()
        launcher.close()
        for process in running.values():
            kill_group(process.pid)
            try:
                os.waitpid(process.pid, 0)
            except ChildProcessError:
                pass
        selector.close()

