"""Test processes: how they are started from the warm parent (what the parent knows about each
one is ``xcompat.isolate.tracked``).

``ForkLauncher`` forks a process for a device slot and its tests; the process prepares itself
(output redirect, faulthandler, the slot's environment) and runs them. Forking a process that holds torch and the child's set-up are most of the
per-test cost, so with cores to spare a *spare* is forked for a slot while its current test
runs; it waits on an assignment pipe until the next test is handed to it. ``xcompat.isolate.spawned`` has the launcher for
platforms without a safe fork.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from xcompat.isolate import forking
from xcompat.isolate.child import ChildPlan, run_forked_child
from xcompat.isolate.devices import DeviceSlot
from xcompat.isolate.leaks import LeakPolicy
from xcompat.isolate.tracked import TestProcess
from xcompat.isolate.watchdog import kill_group, reap
from xcompat.isolate.wire import MessageReader, encode_assignment, read_assignment


@dataclass(frozen=True)
class ForkedChild:
    """A test process just forked, as its forker holds it."""

    pid: int
    read_fd: int  # message pipe, read end
    ctrl_fd: int | None  # a spare's assignment pipe (write end)
    out_path: str
    crash_path: str


class Launcher(Protocol):
    """Starts test processes for device slots (fork from the warm parent, or spawn)."""

    def begin(self, items: Sequence[Any]) -> None: ...

    def start(self, config: Any, group: list[Any], slot_index: int) -> TestProcess: ...

    def prepare_spare(self, config: Any, slot_index: int) -> None: ...

    def reap(self, process: TestProcess, *, block: bool) -> None:
        """Set ``process.status`` once it exited (``block``: wait for that)."""
        ...

    def notice_fd(self) -> int | None:
        """A descriptor that turns readable when the launcher has news of its processes (the
        zygote's socket: an exit status, a spare), or None when it has none to give."""
        ...

    def read_notices(self) -> None:
        """Take in what waits on ``notice_fd``, without blocking."""
        ...

    def ended(self, process: TestProcess) -> None: ...

    def close(self) -> None: ...


def pidfd_of(pid: int) -> int | None:
    opener: Callable[[int], int] | None = getattr(os, "pidfd_open", None)  # Linux 5.3+
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def read_from(path: str, start: int, end: int | None = None) -> str:
    """Text a process wrote to ``path`` between two offsets (to the end without ``end``).

    A test may print gigabytes: only the last ``LIMITS.test_output_bytes`` of the range are
    read (records keep a few thousand characters of it), with a line saying what was cut."""
    from xcompat.limits import LIMITS

    if end is not None and end <= start:
        return ""  # the test wrote nothing (most do): no need to open the file
    limit = LIMITS.test_output_bytes
    try:
        with open(path, "rb") as fh:
            stop = os.fstat(fh.fileno()).st_size if end is None else end
            first = max(start, stop - limit)
            fh.seek(first)
            data = fh.read(max(stop - first, 0))
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if first > start:
        text = f"[... {first - start} bytes of output cut ...]\n" + text
    return text


def output_files(folder: str) -> tuple[str, str]:
    """A fresh (output, crash) file pair for one process."""
    os.makedirs(folder, mode=0o700, exist_ok=True)  # a test may have removed the run's temp folder
    fd, out_path = tempfile.mkstemp(prefix="out-", dir=folder)
    os.close(fd)
    fd, crash_path = tempfile.mkstemp(prefix="crash-", dir=folder)
    os.close(fd)
    return out_path, crash_path


def open_output(out_path: str, crash_path: str) -> tuple[int, int]:
    """The (output, crash) files opened for appending, before a fork: the process inherits them."""
    out_fd = os.open(out_path, os.O_WRONLY | os.O_APPEND)
    try:
        return out_fd, os.open(crash_path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        os.close(out_fd)
        raise


def remove_files(process: TestProcess) -> None:
    for path in (process.out_path, process.crash_path):
        with contextlib.suppress(OSError):
            os.unlink(path)


def discard(process: TestProcess) -> None:
    """Kill a process that will not be used, reap it and free what it held."""
    kill_group(process.pid)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(process.pid, 0)
    release(process)


def release(process: TestProcess) -> None:
    """Close the descriptors held for a discarded process and remove its files."""
    for fd in (process.read_fd, process.ctrl_fd, process.pidfd):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    remove_files(process)


class ForkLauncher:
    """Forks test processes from this (warm) process."""

    def __init__(
        self,
        *,
        slots: Sequence[DeviceSlot],
        folder: str,
        timeout_s: float | None,
        threads: int | None,
        leak_kinds: tuple[str, ...],
        leak_policy: LeakPolicy,
    ) -> None:
        self.slots = list(slots)
        self.folder = folder
        self.timeout_s = timeout_s
        self.threads = threads
        self.leak_kinds = leak_kinds
        self.leak_policy = leak_policy
        self._spares: dict[int, TestProcess] = {}
        self._items: list[Any] = []
        self._positions: dict[int, int] = {}

    def begin(self, items: Sequence[Any]) -> None:
        self._items = list(items)
        self._positions = {id(item): i for i, item in enumerate(self._items)}

    def plan(self, slot_index: int, *, write_fd: int, out_path: str, crash_path: str) -> ChildPlan:
        """What a test process of slot ``slot_index`` is told (its output files are opened
        here, before the fork)."""
        out_fd, crash_fd = open_output(out_path, crash_path)
        return ChildPlan(
            write_fd=write_fd,
            out_path=out_path,
            crash_path=crash_path,
            out_fd=out_fd,
            crash_fd=crash_fd,
            env=self.slots[slot_index].env,
            threads=self.threads,
            leak_kinds=self.leak_kinds,
            leak_policy=self.leak_policy,
        )

    def fork_child(
        self, config: Any, slot_index: int, group: list[Any] | None, release: Callable[[], None] = lambda: None
    ) -> ForkedChild:
        """Fork a test process for a slot (from this process: the warm parent, or its zygote);
        it prepares itself, then runs ``group``, or, as a spare (``group`` None), waits on its
        assignment pipe for the tests to run. ``release`` runs first in the new process."""
        out_path, crash_path = output_files(self.folder)
        read_fd, write_fd = os.pipe()
        ctrl_r, ctrl_w = os.pipe() if group is None else (-1, -1)
        plan = self.plan(slot_index, write_fd=write_fd, out_path=out_path, crash_path=crash_path)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = forking.fork()
        if pid == 0:
            os.close(read_fd)
            if group is None:
                os.close(ctrl_w)
            release()
            if group is not None:
                run_forked_child(config, lambda: group, plan)  # never returns
            items = self._items
            # A spare: waits for its tests on the assignment pipe; never returns either.
            run_forked_child(config, lambda: [items[i] for i in read_assignment(ctrl_r)], plan, waits=True)
        for fd in (write_fd, plan.out_fd, plan.crash_fd):
            os.close(fd)
        if group is None:
            os.close(ctrl_r)
        return ForkedChild(pid, read_fd, ctrl_w if group is None else None, out_path, crash_path)

    def _fork(self, config: Any, slot_index: int, group: list[Any] | None) -> TestProcess:
        child = self.fork_child(config, slot_index, group)
        os.set_blocking(child.read_fd, False)
        return TestProcess(
            pid=child.pid,
            slot=slot_index,
            items=list(group or []),
            messages=MessageReader(child.read_fd),
            out_path=child.out_path,
            crash_path=child.crash_path,
            spawned=time.monotonic(),
            pidfd=pidfd_of(child.pid),
            ctrl_fd=child.ctrl_fd,
        )

    def _arm(self, process: TestProcess) -> TestProcess:
        process.spawned = time.monotonic()
        if self.timeout_s:
            # Until the first test reports (fixtures of the group are set up inside the test).
            process.deadline = process.spawned + self.timeout_s
        return process

    def start(self, config: Any, group: list[Any], slot_index: int) -> TestProcess:
        """A process running ``group``: the slot's spare when it has one, else a new fork."""
        return self.take_spare(group, slot_index) or self._arm(self._fork(config, slot_index, group))

    def take_spare(self, group: list[Any], slot_index: int) -> TestProcess | None:
        """The slot's spare, told to run ``group``; None if the slot has no live spare."""
        spare = self._spares.pop(slot_index, None)
        if spare is None:
            return None
        assert spare.ctrl_fd is not None
        try:
            os.write(spare.ctrl_fd, encode_assignment([self._positions[id(item)] for item in group]))
        except BrokenPipeError:  # the spare died while it waited
            self.discard(spare)
            return None
        os.close(spare.ctrl_fd)
        spare.ctrl_fd = None
        spare.items = group
        return self._arm(spare)

    def prepare_spare(self, config: Any, slot_index: int) -> None:
        if slot_index not in self._spares:
            self._spares[slot_index] = self._fork(config, slot_index, None)

    def discard(self, process: TestProcess) -> None:
        """Kill a spare that will not be used, reap it and free what it held."""
        discard(process)

    def reap(self, process: TestProcess, *, block: bool) -> None:
        reap(process, block=block)

    def notice_fd(self) -> int | None:
        """None: the parent reaps its forks itself, when their pidfds say they ended."""
        return None

    def read_notices(self) -> None:
        """Nothing to read: see ``notice_fd``."""

    def ended(self, process: TestProcess) -> None:
        """Nothing to release: the parent reaped the fork itself."""

    def close(self) -> None:
        for spare in self._spares.values():
            self.discard(spare)
        self._spares.clear()
