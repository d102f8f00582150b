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
    # Move everything alive now (torch, sympy, collected items) out of the collector's
    # reach: a child's first full collection would otherwise touch every object and
    # copy-on-write the whole heap. Without a collection first, as Python's documentation of
    # gc.freeze advises: a collection would walk the whole heap on every run and leave holes
    # in shared pages for the children's new objects. The garbage frozen with the rest is
    # collected after the run (gc.unfreeze in _Scheduler.close). The C allocator's free pages
    # go back to the kernel first (xcompat.isolate.heap): fewer present pages to copy at each
    # fork.
    release_free_heap()
    gc.freeze()
    scheduler = _Scheduler(session, isolation=isolation, slot_count=slot_count, launcher=launcher,
                           events=events, prefork=prefork)
    try:
        scheduler.run()
    finally:
        scheduler.close()


class _Scheduler:
    """One run of the scheduler: its queue, its slots and the processes it waits on."""

    def __init__(
        self,
        session: Any,
        *,
        isolation: Isolation,
        slot_count: int,
        launcher: Launcher,
        events: ProcessEvents,
        prefork: bool,
    ) -> None:
        self.session = session
        self.config = session.config
        self.launcher = launcher
        self.events = events
        self.prefork = prefork
        launcher.begin(session.items)
        self.pending = group_items(session.items, isolation)
        self.free = deque(range(slot_count))
        self.running: dict[int, TestProcess] = {}
        self.selector = selectors.DefaultSelector()
        # Message pipes the parent sleeps on (every process's, until its end of file). A test
        # process writes once per test, at the test's end, so the parent wakes then and hands
        # the slot its next tests while the process is still exiting (unmapping a copy of the
        # warm parent's heap takes milliseconds), rather than after its exit.
        self.watched: set[int] = set()
        self.spares_wanted: list[int] = []  # slots that started a group and get a spare when asked
        # Processes whose pidfd said they ended (no longer watched) and whose exit status is
        # not known yet: the zygote reports it when it is done with what it was doing, and its
        # socket (the launcher's notice descriptor, a duplicate of it here) wakes the loop then.
        # Waiting for that report instead would stall the parent while the zygote finishes a
        # fork, often when the next test has already finished.
        self.ended: set[int] = set()
        self.notices: int | None = None

    # -- the loop -------------------------------------------------------------------
    def run(self) -> None:
        while self.pending or self.running:
            self.start_groups()
            self.ask_for_spares()
            self.watch_notices()
            timeout = next_wake(self.running.values(), time.monotonic())
            if self.ended and self.notices is None:
                timeout = min(timeout, EXIT_POLL_S)
            for key, _ in self.selector.select(timeout=timeout):
                self.dispatch(*key.data)
            now = time.monotonic()
            for process in list(self.running.values()):
                enforce_deadline(process, now)
                if process.status is None and (process.pidfd is None or process.pid in self.ended):
                    self.launcher.reap(process, block=False)
                if process.status is not None:
                    self.settle(process)
            if self.stopping():
                break

    def stopping(self) -> bool:
        return bool(self.session.shouldstop or self.session.shouldfail)

    def close(self) -> None:
        """Thaw the heap, let go of the launcher and kill what still runs."""
        gc.unfreeze()
        self.unwatch_notices()
        self.launcher.close()
        for process in self.running.values():
            kill_group(process.pid)
            try:
                os.waitpid(process.pid, 0)
            except ChildProcessError:
                continue
        self.selector.close()

    # -- starting processes -------------------------------------------------------------
    def start_groups(self) -> None:
        while self.pending and self.free and not self.stopping():
            slot_index = self.free.popleft()
            process = self.launcher.start(self.config, self.pending.popleft(), slot_index)
            self.running[process.pid] = process
            if process.pidfd is not None:
                self.selector.register(process.pidfd, selectors.EVENT_READ, ("exit", process))
            self.selector.register(process.read_fd, selectors.EVENT_READ, ("pipe", process))
            self.watched.add(process.pid)
            if self.prefork:
                self.spares_wanted.append(slot_index)

    def ask_for_spares(self) -> None:
        while self.spares_wanted:
            slot_index = self.spares_wanted.pop()
            if len(self.pending) > len(self.free) and not self.stopping():
                self.launcher.prepare_spare(self.config, slot_index)

    # -- what wakes the loop ---------------------------------------------------------
    def dispatch(self, kind: str, process: TestProcess | None) -> None:
        """Act on one ready descriptor: a process's messages, the launcher's notices, or a
        process's pidfd saying it ended."""
        if kind == "notices":
            self.launcher.read_notices()
            if self.launcher.notice_fd() is None:  # the zygote is gone: nothing more comes
                self.unwatch_notices()
            return
        assert process is not None
        if kind == "pipe":
            self.drain(process)
            if process.messages.eof:
                self.selector.unregister(process.read_fd)
                self.watched.discard(process.pid)
        elif process.pid not in self.ended:
            assert process.pidfd is not None
            self.selector.unregister(process.pidfd)
            self.ended.add(process.pid)

    def drain(self, process: TestProcess, *, until_eof: bool = False) -> None:
        messages = list(process.messages.read(until_eof=until_eof))
        if not process.released and _completes_group(process, messages):
            # The group's last test is done: hand the slot its next group before the
            # parent replays these reports, so the next process starts meanwhile.
            process.released = True
            self.free.append(process.slot)
            self.start_groups()
        for message in messages:
            released = process.released
            self.events.on_message(self.config, process, message)
            if process.released and not released:
                self.free.append(process.slot)  # only the exit is left: the slot starts its next group
        # The next spare is asked for only now: forked while the new process starts and the
        # parent replays, it would take a core from both, which a machine with few cores feels.
        self.ask_for_spares()

    def watch_notices(self) -> None:
        if self.notices is None and (fd := self.launcher.notice_fd()) is not None:
            self.notices = os.dup(fd)
            self.selector.register(self.notices, selectors.EVENT_READ, ("notices", None))

    def unwatch_notices(self) -> None:
        if self.notices is not None:
            self.selector.unregister(self.notices)
            os.close(self.notices)
            self.notices = None

    # -- bookkeeping of an ended process -------------------------------------------------
    def settle(self, process: TestProcess) -> None:
        """A reaped process: read what it left in its pipe, stop watching it, free its slot
        and queue again the tests of its group it never started."""
        if not process.messages.eof:
            self.drain(process, until_eof=True)
        if process.pid in self.watched:
            self.selector.unregister(process.read_fd)
            self.watched.discard(process.pid)
        os.close(process.read_fd)
        if process.pidfd is not None:
            if process.pid not in self.ended:
                self.selector.unregister(process.pidfd)
            os.close(process.pidfd)
        self.ended.discard(process.pid)
        del self.running[process.pid]
        if not process.released:
            self.free.append(process.slot)
        self.launcher.ended(process)
        leftover = self.events.on_exit(self.config, process)
        if leftover:
            self.pending.appendleft(leftover)
