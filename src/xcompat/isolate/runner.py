"""The warm parent: a pytest plugin that takes over the run loop and forks a child per test.

pytest collects once, in this process. ``pytest_runtestloop`` then hands each test (or each
file, with ``isolation="file"``) to a child process forked from this warm parent. Children
run pytest's own ``pytest_runtest_protocol`` and stream their reports back over a pipe
(``xcompat.isolate.child``). The parent

* replays those reports into its own hooks, so pytest's terminal output, ``--junitxml``,
  ``--lf`` and friends keep working;
* runs one child per device slot at a time (``--devices``), each pinned to its device
  through the ``*_VISIBLE_DEVICES`` variables of its slot;
* is the watchdog: a test past its timeout gets ``SIGUSR1`` (faulthandler dumps every
  thread's Python stack to the crash file), then ``SIGKILL`` for its process group;
* turns a child that died mid-test into a ``crashed`` record with the signal name and the
  faulthandler traceback, and re-queues the tests of that file that had not run yet.

The run never stops because one test crashed.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from xcompat.isolate.child import DUMP_SIGNAL, ChildPlan, run_forked_child
from xcompat.isolate.devices import DeviceSlot
from xcompat.isolate.leaks import LeakPolicy
from xcompat.isolate.outcomes import Crash, Isolation, LeakReport, TestRecord, signal_name

# After the stack-dump signal, how long the watchdog waits before SIGKILL.
DUMP_GRACE_S = 0.5
# How long the parent waits on its children per loop turn when no deadline is nearer.
POLL_S = 0.25


@dataclass(kw_only=True)
class _Pending:
    """Reports and timings of one test while it runs."""

    nodeid: str
    location: tuple[str, int | None, str]
    keywords: dict[str, Any]
    device: str
    started: float = 0.0
    out_start: int = 0
    out_end: int | None = None
    reports: list[Any] = field(default_factory=list)
    leaks: list[LeakReport] = field(default_factory=list)


@dataclass(kw_only=True)
class _Child:
    pid: int
    slot: int
    items: list[Any]
    read_fd: int
    out_path: str
    crash_path: str
    spawned: float
    buffer: bytes = b""
    current: _Pending | None = None
    finished: set[str] = field(default_factory=set)
    deadline: float | None = None
    kill_at: float | None = None
    timed_out: bool = False
    eof: bool = False
    status: int | None = None
    pidfd: int | None = None  # readable once the child exits (Linux >= 5.3)
    ctrl_fd: int | None = None  # a spare's assignment pipe (write end)
    released: bool = False  # every test reported done: its slot already runs the next one


def record_from_reports(
    nodeid: str,
    reports: Sequence[Any],
    *,
    device: str | None,
    output: str = "",
    leaks: Sequence[LeakReport] = (),
) -> TestRecord:
    """Fold pytest's setup/call/teardown reports into one outcome, like its terminal summary."""
    outcome = "passed"
    message = ""
    longrepr = ""
    duration = 0.0
    for rep in reports:
        duration += float(getattr(rep, "duration", 0.0) or 0.0)
        wasxfail = getattr(rep, "wasxfail", None)
        if rep.failed:
            if outcome in ("failed", "error"):
                continue
            outcome = "failed" if rep.when == "call" else "error"
            longrepr = str(rep.longreprtext or "")
            crash = getattr(getattr(rep, "longrepr", None), "reprcrash", None)
            message = getattr(crash, "message", None) or (longrepr.strip().splitlines() or [""])[-1]
        elif rep.skipped and outcome == "passed":
            if wasxfail is not None:
                outcome, message = "xfailed", str(wasxfail)
            else:
                outcome = "skipped"
                lr = rep.longrepr
                message = str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr or "")
                message = message.removeprefix("Skipped: ")
        elif rep.passed and rep.when == "call" and wasxfail is not None and outcome == "passed":
            outcome, message = "xpassed", str(wasxfail)
    leaked = [leak for leak in leaks if leak.leaked]
    if leaked and outcome == "passed":
        outcome = "leaked"
        message = "; ".join(leak.describe() for leak in leaked)
    return TestRecord(
        nodeid=nodeid,
        outcome=outcome,  # type: ignore[arg-type]
        duration_s=duration,
        device=device,
        message=message,
        longrepr=longrepr,
        output_tail=output,
        leaks=tuple(leaks),
    )


def _read_from(path: str, start: int, end: int | None = None) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read() if end is None else fh.read(max(end - start, 0))
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


class IsolatedRunner:
    """pytest plugin object registered by ``xcompat.isolate.session.run_tests``."""

    def __init__(
        self,
        *,
        isolation: Isolation,
        slots: Sequence[DeviceSlot],
        timeout_s: float | None,
        threads: int | None,
        leak_kinds: tuple[str, ...] = (),
        leak_policy: LeakPolicy | None = None,
    ) -> None:
        self.isolation = isolation
        self.slots = list(slots)
        self.timeout_s = timeout_s
        self.threads = threads
        self.leak_kinds = leak_kinds
        self.leak_policy = leak_policy or LeakPolicy()
        self.records: dict[str, TestRecord] = {}
        self.order: list[str] = []
        self.collected: list[str] = []
        self._parent = os.getpid()
        self._inprocess: dict[str, _Pending] = {}
        self._tmp = tempfile.mkdtemp(prefix="xcompat-test-")
        self._spares: dict[int, _Child] = {}
        self._released: list[int] = []
        # Forking the next test's process while one runs hides the fork, but only pays off
        # with cores to spare: on a busy 2-core runner it was measured slower.
        self.prefork = (os.cpu_count() or 1) >= 4 * len(self.slots)
        forced = os.environ.get("XCOMPAT_TEST_PREFORK")
        if forced in ("0", "1"):
            self.prefork = forced == "1"
        self._items: list[Any] = []
        self._positions: dict[int, int] = {}

    # -- recording ----------------------------------------------------------------
    def _store(self, record: TestRecord) -> None:
        if record.nodeid not in self.records:
            self.order.append(record.nodeid)
        self.records[record.nodeid] = record

    def results(self) -> list[TestRecord]:
        return [self.records[n] for n in self.order]

    # -- pytest hooks (parent only) -----------------------------------------------
    interrupted = False

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if os.getpid() == self._parent:
            self.interrupted = True

    def pytest_collectreport(self, report: Any) -> None:
        if os.getpid() != self._parent or not report.failed:
            return
        text = str(report.longreprtext or "")
        self._store(
            TestRecord(
                nodeid=report.nodeid or "<collection>",
                outcome="error",
                message="collection failed: " + ((text.strip().splitlines() or [""])[-1]),
                longrepr=text,
            )
        )

    def pytest_collection_finish(self, session: Any) -> None:
        self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool | None:
        if session.config.option.collectonly:
            return None
        if self.isolation == "none":
            self._run_in_process(session)
        else:
            self._run_forked(session)
        return True

    # -- in-process (no isolation) -----------------------------------------------
    def _run_in_process(self, session: Any) -> None:
        from xcompat.isolate.child import Channel, _install_leak_check

        items = session.items
        sink_r, sink_w = os.pipe()
        channel = Channel(sink_w)
        plan = ChildPlan(
            write_fd=sink_w,
            out_path="",
            crash_path="",
            leak_kinds=self.leak_kinds,
            leak_policy=self.leak_policy,
        )
        import json

        for i, item in enumerate(items):
            pending = _Pending(
                nodeid=item.nodeid, location=item.location, keywords={}, device=self.slots[0].label
            )
            self._inprocess[item.nodeid] = pending
            _install_leak_check(item, plan, channel)
            item.config.hook.pytest_runtest_protocol(
                item=item, nextitem=items[i + 1] if i + 1 < len(items) else None
            )
            os.set_blocking(sink_r, False)
            try:
                data = os.read(sink_r, 1 << 20)
            except BlockingIOError:
                data = b""
            for line in data.splitlines():
                msg = json.loads(line)
                pending.leaks.extend(_leak_from_dict(d) for d in msg.get("leaks", []))
            output = "".join(
                f"--- captured {name} ---\n{text}" for rep in pending.reports for name, text in rep.sections
            )
            self._store(
                record_from_reports(
                    item.nodeid, pending.reports, device=pending.device, output=output, leaks=pending.leaks
                )
            )
            if session.shouldstop:
                break
        os.close(sink_r)
        os.close(sink_w)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if os.getpid() != self._parent:
            return
        pending = self._inprocess.get(report.nodeid)
        if pending is not None:
            pending.reports.append(report)

    # -- forked ---------------------------------------------------------------------
    def _groups(self, items: Sequence[Any]) -> deque[list[Any]]:
        if self.isolation == "test":
            return deque([item] for item in items)
        groups: deque[list[Any]] = deque()
        for item in items:
            if groups and groups[-1][0].path == item.path:
                groups[-1].append(item)
            else:
                groups.append([item])
        return groups

    def _fork_idle(self, config: Any, slot_index: int) -> _Child:
        """Fork a test process for a slot; it prepares itself, then waits for its tests.

        Forking (page tables of a process that holds torch) and the child's set-up take
        most of the per-test cost; a spare forked while the previous test runs hides them.
        """
        slot = self.slots[slot_index]
        fd, out_path = tempfile.mkstemp(prefix="out-", dir=self._tmp)
        os.close(fd)
        fd, crash_path = tempfile.mkstemp(prefix="crash-", dir=self._tmp)
        os.close(fd)
        read_fd, write_fd = os.pipe()
        ctrl_r, ctrl_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(ctrl_w)
            plan = ChildPlan(
                write_fd=write_fd,
                out_path=out_path,
                crash_path=crash_path,
                env=slot.env,
                threads=self.threads,
                leak_kinds=self.leak_kinds,
                leak_policy=self.leak_policy,
            )
            run_forked_child(config, lambda: self._await_assignment(ctrl_r), plan)  # never returns
        os.close(write_fd)
        os.close(ctrl_r)
        os.set_blocking(read_fd, False)
        return _Child(
            pid=pid,
            slot=slot_index,
            items=[],
            read_fd=read_fd,
            out_path=out_path,
            crash_path=crash_path,
            spawned=time.monotonic(),
            pidfd=_pidfd(pid),
            ctrl_fd=ctrl_w,
        )

    def _await_assignment(self, ctrl_r: int) -> list[Any]:
        """In the child: block until the parent names the tests to run (empty: exit)."""
        import json

        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(ctrl_r, 1 << 16)
            if not chunk:
                return []
            data += chunk
        os.close(ctrl_r)
        return [self._items[i] for i in json.loads(data)]

    def _start(self, config: Any, group: list[Any], slot_index: int) -> _Child:
        """A process running ``group``: the slot's spare when it has one, else a new fork."""
        import json

        message = (json.dumps([self._positions[id(item)] for item in group]) + "\n").encode()
        for _attempt in range(2):
            child = self._spares.pop(slot_index, None) or self._fork_idle(config, slot_index)
            try:
                os.write(child.ctrl_fd, message)  # type: ignore[arg-type]
            except BrokenPipeError:  # the spare died while it waited: use a fresh one
                self._discard(child)
                continue
            os.close(child.ctrl_fd)  # type: ignore[arg-type]
            child.ctrl_fd = None
            child.items = group
            child.spawned = time.monotonic()
            if self.timeout_s:
                # Until the first test starts (fixtures of the group are set up inside the test).
                child.deadline = child.spawned + self.timeout_s
            return child
        raise RuntimeError("could not start a test process")

    def _prefork(self, config: Any, slot_index: int) -> None:
        if slot_index not in self._spares:
            self._spares[slot_index] = self._fork_idle(config, slot_index)

    def _discard(self, child: _Child) -> None:
        self._kill_group(child.pid)
        try:
            os.waitpid(child.pid, 0)
        except ChildProcessError:
            pass
        for fd in (child.read_fd, child.ctrl_fd, child.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for path in (child.out_path, child.crash_path):
            try:
                os.unlink(path)
            except OSError:
                pass

    def _run_forked(self, session: Any) -> None:
        import gc

        config = session.config
        # Move everything alive now (torch, sympy, collected items) out of the collector's
        # reach: a child's first full collection would otherwise touch every object and
        # copy-on-write the whole heap, tens of milliseconds per test.
        gc.collect()
        gc.freeze()
        self._items = list(session.items)
        self._positions = {id(item): i for i, item in enumerate(self._items)}
        pending = self._groups(session.items)
        free = deque(range(len(self.slots)))
        running: dict[int, _Child] = {}
        selector = selectors.DefaultSelector()
        try:
            while pending or running:
                while pending and free:
                    slot_index = free.popleft()
                    child = self._start(config, pending.popleft(), slot_index)
                    running[child.pid] = child
                    selector.register(child.read_fd, selectors.EVENT_READ, ("pipe", child))
                    if child.pidfd is not None:
                        selector.register(child.pidfd, selectors.EVENT_READ, ("exit", child))
                    if self.prefork and len(pending) > len(free):
                        self._prefork(config, slot_index)
                wait = POLL_S
                now = time.monotonic()
                for child in running.values():
                    for moment in (child.deadline, child.kill_at):
                        if moment is not None:
                            wait = min(wait, max(moment - now, 0.0))
                    if child.eof and child.pidfd is None:
                        wait = min(wait, 0.002)  # no pidfd: poll for the exit briefly
                for key, _ in selector.select(timeout=wait if not self._released else 0):
                    kind, child = key.data
                    if kind == "pipe":
                        self._drain(config, child)
                        if child.eof:
                            selector.unregister(child.read_fd)
                    elif child.status is None:
                        self._reap(child, block=True)
                now = time.monotonic()
                for child in list(running.values()):
                    self._watchdog(child, now)
                    if child.status is None and child.pidfd is None:
                        self._reap(child, block=False)
                    if child.status is None:
                        continue
                    if not child.eof:
                        self._drain(config, child, final=True)
                        selector.unregister(child.read_fd)
                    os.close(child.read_fd)
                    if child.pidfd is not None:
                        selector.unregister(child.pidfd)
                        os.close(child.pidfd)
                    del running[child.pid]
                    if not child.released:
                        free.append(child.slot)
                    leftover = self._finish_child(config, child)
                    if leftover:
                        pending.appendleft(leftover)
                free.extend(self._released)
                self._released.clear()
                if session.shouldstop or session.shouldfail:
                    break
        finally:
            gc.unfreeze()
            for spare in self._spares.values():
                self._discard(spare)
            self._spares.clear()
            for child in running.values():
                self._kill_group(child.pid)
                try:
                    os.waitpid(child.pid, 0)
                except ChildProcessError:
                    pass
            selector.close()

    def _drain(self, config: Any, child: _Child, *, final: bool = False) -> None:
        while True:
            try:
                data = os.read(child.read_fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                child.eof = True
                break
            child.buffer += data
            if not final and len(data) < (1 << 16):
                break
        *lines, child.buffer = child.buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._handle(config, child, line)

    def _handle(self, config: Any, child: _Child, line: bytes) -> None:
        import json

        message = json.loads(line)
        event = message["event"]
        nodeid = message["nodeid"]
        if event == "start":
            item = next((i for i in child.items if i.nodeid == nodeid), child.items[0])
            child.current = _Pending(
                nodeid=nodeid,
                location=item.location if item.nodeid == nodeid else (nodeid.split("::")[0], None, nodeid),
                keywords=dict.fromkeys(item.keywords, 1),
                device=self.slots[child.slot].label,
                started=time.monotonic(),
                out_start=int(message.get("out", 0)),
            )
            item.ihook.pytest_runtest_logstart(nodeid=nodeid, location=item.location)
            if self.timeout_s:
                child.deadline = child.current.started + self.timeout_s
        elif event == "report" and child.current is not None:
            report = config.hook.pytest_report_from_serializable(config=config, data=message["report"])
            # JSON has no tuples; pytest's summary code expects them here.
            for attr in ("longrepr", "location"):
                if isinstance(getattr(report, attr, None), list):
                    setattr(report, attr, tuple(getattr(report, attr)))
            child.current.reports.append(report)
            config.hook.pytest_runtest_logreport(report=report)
        elif event == "leaks" and child.current is not None:
            child.current.leaks.extend(_leak_from_dict(d) for d in message["leaks"])
        elif event == "done" and child.current is not None:
            current = child.current
            output = _read_from(child.out_path, current.out_start, int(message.get("out", 0)))
            self._store(
                record_from_reports(
                    nodeid, current.reports, device=current.device, output=output, leaks=current.leaks
                )
            )
            config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=current.location)
            child.finished.add(nodeid)
            child.current = None
            child.deadline = time.monotonic() + self.timeout_s if self.timeout_s else None
            if not child.released and all(i.nodeid in child.finished for i in child.items):
                # Only the process exit is left: let the slot start the next test meanwhile.
                child.released = True
                self._released.append(child.slot)

    def _watchdog(self, child: _Child, now: float) -> None:
        if child.status is not None:
            return
        if child.kill_at is not None and now >= child.kill_at:
            self._kill_group(child.pid)
            child.kill_at = None
        elif child.deadline is not None and now >= child.deadline and not child.timed_out:
            child.timed_out = True
            if DUMP_SIGNAL is not None:
                try:
                    os.kill(child.pid, DUMP_SIGNAL)
                except ProcessLookupError:
                    return
                child.kill_at = now + DUMP_GRACE_S
            else:
                self._kill_group(child.pid)

    @staticmethod
    def _kill_group(pid: int) -> None:
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                target()
                return
            except (ProcessLookupError, PermissionError, OSError):
                continue

    def _reap(self, child: _Child, *, block: bool) -> None:
        try:
            pid, status = os.waitpid(child.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            child.status = child.status if child.status is not None else 0
            return
        if pid == child.pid:
            child.status = status
            # Stray grandchildren (a test's background process) die with their test.
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass

    def _finish_child(self, config: Any, child: _Child) -> list[Any]:
        """Record a test that died mid-run; return the group's items that never ran."""
        status = child.status or 0
        current = child.current
        if current is not None:
            output = _read_from(child.out_path, current.out_start)
            traceback = _read_from(child.crash_path, 0)
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            duration = time.monotonic() - current.started
            if child.timed_out:
                crash = Crash(
                    signal=signal_name(sig) if sig else None, signal_number=sig, traceback=traceback
                )
                outcome = "timeout"
                message = f"timed out after {self.timeout_s:g}s; stack dumped, then killed"
            else:
                crash = Crash(
                    signal=signal_name(sig) if sig else None,
                    signal_number=sig,
                    exit_code=exit_code,
                    traceback=traceback,
                )
                outcome = "crashed"
                message = crash.describe()
            longrepr = f"{message}\n{traceback}".rstrip()
            record = TestRecord(
                nodeid=current.nodeid,
                outcome=outcome,  # type: ignore[arg-type]
                duration_s=duration,
                device=current.device,
                message=message,
                longrepr=longrepr,
                output_tail=output,
                crash=crash,
                leaks=tuple(current.leaks),
            )
            self._store(record)
            self._report_crash(config, current, longrepr, duration)
        elif os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0):
            # Died outside any test. Before the first test: the process could not start, and
            # would fail the same way for every test of the group. Between tests: blame the next.
            unfinished = [i for i in child.items if i.nodeid not in child.finished]
            blamed = unfinished if not child.finished else unfinished[:1]
            text = _read_from(child.out_path, 0) + _read_from(child.crash_path, 0)
            for item in blamed:
                self._store(
                    TestRecord(
                        nodeid=item.nodeid,
                        outcome="error",
                        device=self.slots[child.slot].label,
                        message=f"test process failed outside the test (status {status})",
                        longrepr=text,
                        output_tail=text,
                    )
                )
                child.finished.add(item.nodeid)
        started = child.finished | ({current.nodeid} if current else set())
        for path in (child.out_path, child.crash_path):
            try:
                os.unlink(path)
            except OSError:
                pass
        return [item for item in child.items if item.nodeid not in started]

    def _report_crash(self, config: Any, current: _Pending, longrepr: str, duration: float) -> None:
        """Show the crash in pytest's own output (and in ``--junitxml``) as a failed call."""
        from _pytest.reports import TestReport

        report = TestReport(
            nodeid=current.nodeid,
            location=current.location,
            keywords=current.keywords,
            outcome="failed",
            longrepr=longrepr,
            when="call",
            duration=duration,
        )
        config.hook.pytest_runtest_logreport(report=report)
        config.hook.pytest_runtest_logfinish(nodeid=current.nodeid, location=current.location)

    def cleanup(self) -> None:
        import shutil

        shutil.rmtree(self._tmp, ignore_errors=True)


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _leak_from_dict(data: dict[str, Any]) -> LeakReport:
    return LeakReport(
        kind=data["kind"],
        repeats=int(data["repeats"]),
        growth_bytes=int(data["growth_bytes"]),
        python_bytes=int(data.get("python_bytes", 0)),
        threshold_bytes=int(data.get("threshold_bytes", 0)),
        leaked=bool(data["leaked"]),
        where=data.get("where", "native"),
        samples=tuple(int(x) for x in data.get("samples", ())),
    )
