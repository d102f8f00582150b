"""The warm parent's pytest plugin: takes over pytest's run loop and records one outcome per test.

pytest collects once, in this process. ``pytest_runtestloop`` then runs the tests in place
(``isolation="none"``) or hands them to test processes (``xcompat.isolate.scheduler``), which
run pytest's own ``pytest_runtest_protocol`` and stream their reports back
(``xcompat.isolate.wire``). This plugin

* replays those reports into its own hooks, so pytest's terminal output, ``--junitxml``,
  ``--lf`` and friends keep working;
* turns each test's reports, or a process that died mid-test, into one ``TestRecord``
  (``xcompat.isolate.classify``), with the signal name and the faulthandler traceback;
* records a file pytest could not collect as an ``error`` of that file and, as pytest does,
  then runs no test at all (unless ``--continue-on-collection-errors`` is passed to pytest).

The run never stops because one test crashed.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import pytest

from xcompat.cpus import usable_cpus
from xcompat.isolate import zygote
from xcompat.isolate.child import FAILED_OUTSIDE_TESTS_EXIT, ChildPlan, install_leak_check, prepare_parent
from xcompat.isolate.classify import (
    died_in_a_test,
    failed_outside_tests,
    record_from_collection_error,
    record_from_collection_skip,
    record_from_death,
    record_from_reports,
    record_over_time,
    records_for_process_failure,
)
from xcompat.isolate.devices import DeviceSlot
from xcompat.isolate.leaks import LeakPolicy
from xcompat.isolate.mapped import MappedUnion, mapped_objects, remember_inherited
from xcompat.isolate.outcomes import Isolation, TestRecord
from xcompat.isolate.processes import ForkLauncher, Launcher, read_from, remove_files
from xcompat.isolate.pytest_output import show_crash, show_error, show_verdict_only
from xcompat.isolate.scheduler import run_groups
from xcompat.isolate.strays import become_subreaper, collect_strays
from xcompat.isolate.tracked import RunningTest, TestProcess
from xcompat.isolate.warmup import (
    WarmState,
    numba_in_use_after_collection,
    torch_in_use_after_collection,
    warm_numba,
    warm_parent,
)
from xcompat.isolate.wire import Channel, leak_from_wire, report_from_wire, warning_from_wire


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
        warm_torch_after_collection: bool = False,
        warm_numba: bool = False,
    ) -> None:
        self.isolation = isolation
        # numba is set up after collection, before the first fork: when the suite's files name
        # it (``warm_numba``), or when collection imported it anyway (the project's package).
        self.warm_numba = warm_numba
        self.numba_warmup: tuple[str | None, float] = (None, 0.0)
        # The suite's files never named torch, but collection may import it anyway (through the
        # project's package): then it is warmed before the first fork.
        self.warm_torch_after_collection = warm_torch_after_collection
        self.late_warmup: WarmState | None = None
        self.slots = list(slots)
        self.timeout_s = timeout_s
        self.threads = threads
        self.leak_kinds = leak_kinds
        self.leak_policy = leak_policy or LeakPolicy()
        self.records: dict[str, TestRecord] = {}
        self.order: list[str] = []
        self.collected: list[str] = []
        self.collection_errors: list[TestRecord] = []
        self._parent = os.getpid()
        self._inprocess: dict[str, RunningTest] = {}
        self._tmp = tempfile.mkdtemp(prefix="xcompat-test-")
        # The shared objects the test processes mapped at their end (None: no /proc to read).
        self.mapped: MappedUnion | None = None
        # Forking the next process while one runs hides the fork and the process's set-up.
        # From the zygote (xcompat.isolate.zygote) that costs the parent nothing, and a second
        # core per slot suffices; forked by the parent itself, it competes with the parent's
        # own work on every test, so with --isolate test it needs cores to spare
        # (benchmarks/isolation.py compares both).
        self.zygote = zygote.available()
        cores = usable_cpus()
        self.prefork = cores >= (2 if isolation == "file" or self.zygote else 4) * len(self.slots)
        forced = os.environ.get("XCOMPAT_TEST_PREFORK")
        if forced in ("0", "1"):
            self.prefork = forced == "1"

    def launcher(self) -> Launcher:
        """How test processes are started: forked from a zygote of this warm process, or from
        the process itself where there can be no zygote (``xcompat.isolate.zygote``)."""
        kind = zygote.ZygoteLauncher if self.zygote else ForkLauncher
        return kind(
            slots=self.slots,
            folder=self._tmp,
            timeout_s=self.timeout_s,
            threads=self.threads,
            leak_kinds=self.leak_kinds,
            leak_policy=self.leak_policy,
        )

    # -- recording ----------------------------------------------------------------
    def _store(self, record: TestRecord) -> None:
        if record.nodeid not in self.records:
            self.order.append(record.nodeid)
        self.records[record.nodeid] = record

    def results(self) -> list[TestRecord]:
        return [self.records[n] for n in self.order]

    # -- pytest hooks (parent only) -----------------------------------------------
    interrupted = False
    exited: str | None = None  # pytest.exit(msg) was called (by a test, a fixture or a plugin)
    subreaper = False  # set in the parent when it became the child subreaper of its test processes

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if os.getpid() != self._parent:
            return
        # pytest reports pytest.exit() through this hook too: that is the suite stopping
        # itself, not the user pressing Ctrl-C, and what ran so far is recorded.
        if excinfo.errisinstance(pytest.exit.Exception):
            self.exited = str(getattr(excinfo.value, "msg", "") or excinfo.value)
        else:
            self.interrupted = True

    def pytest_collectreport(self, report: Any) -> None:
        if os.getpid() != self._parent:
            return
        if report.skipped:
            self._store(record_from_collection_skip(report.nodeid, report.longrepr))
            return
        if not report.failed:
            return
        record = record_from_collection_error(report.nodeid, str(report.longreprtext or ""))
        self.collection_errors.append(record)
        self._store(record)

    def pytest_collection_finish(self, session: Any) -> None:
        self.collected = [item.nodeid for item in session.items]
        if os.getpid() == self._parent and self.isolation != "none":
            prepare_parent(session.config, session.items)  # once, here: test processes inherit it
        if os.getpid() == self._parent and self.warm_torch_after_collection and torch_in_use_after_collection():
            self.late_warmup = warm_parent(use_torch=True)
            self.threads = self.late_warmup.threads
        if os.getpid() == self._parent and self.isolation != "none" and (
            self.warm_numba or numba_in_use_after_collection()
        ):
            self.numba_warmup = warm_numba()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool | None:
        if session.config.option.collectonly:
            return None
        if self.collection_errors and not session.config.option.continue_on_collection_errors:
            # As pytest does: a file that cannot be collected stops the run before any test.
            return True
        if self.isolation == "none":
            self._run_in_process(session)
            found = mapped_objects()  # the one process, at the end of its last test
            self.mapped = MappedUnion(found, processes=1) if found is not None else None
        else:
            self.subreaper = become_subreaper()  # so that setsid() strays are re-parented here
            inherited = remember_inherited() if self.forks else frozenset() if os.path.isdir("/proc/self") else None
            self.mapped = MappedUnion(inherited) if inherited is not None else None
            run_groups(
                session,
                isolation=self.isolation,
                slot_count=len(self.slots),
                launcher=self.launcher(),
                events=self,
                prefork=self.prefork,
            )
        return True

    forks = True  # test processes are forked from this one: they inherit its libraries

    def pytest_runtest_logreport(self, report: Any) -> None:
        if os.getpid() != self._parent:
            return
        running = self._inprocess.get(report.nodeid)
        if running is not None:
            running.reports.append(report)

    # -- in-process (no isolation) -----------------------------------------------
    def _run_in_process(self, session: Any) -> None:
        import json

        items = session.items
        sink_r, sink_w = os.pipe()
        channel = Channel(sink_w)
        plan = ChildPlan(
            write_fd=sink_w, out_path="", crash_path="", leak_kinds=self.leak_kinds, leak_policy=self.leak_policy
        )
        for i, item in enumerate(items):
            running = RunningTest(nodeid=item.nodeid, location=item.location, keywords={}, device=self.slots[0].label)
            self._inprocess[item.nodeid] = running
            install_leak_check(item, plan, channel)
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
            channel.flush()
            os.set_blocking(sink_r, False)
            try:
                data = os.read(sink_r, 1 << 20)
            except BlockingIOError:
                data = b""
            for line in data.splitlines():
                running.leaks.extend(leak_from_wire(d) for d in json.loads(line).get("leaks", []))
            output = "".join(
                f"--- captured {name} ---\n{text}" for rep in running.reports for name, text in rep.sections
            )
            record = record_from_reports(
                item.nodeid, running.reports, device=running.device, output=output, leaks=running.leaks
            )
            if self.timeout_s and record.duration_s > self.timeout_s:
                # nothing can stop a test in this process, but its limit holds as in the others
                record = record_over_time(record, timeout_s=self.timeout_s, why="not stopped: --isolate none cannot stop a test")
            show_verdict_only(session.config, running, record)
            self._store(record)
            if session.shouldstop:
                break
        os.close(sink_r)
        os.close(sink_w)

    # -- events of test processes (xcompat.isolate.scheduler.ProcessEvents) ----------
    def on_message(self, config: Any, process: TestProcess, message: dict[str, Any]) -> None:
        event = message["event"]
        nodeid = message["nodeid"]
        current = process.current
        if event == "ready":
            # a spawned process is ready for its first test: the test's time starts at ``t``
            # (a forked process is armed when its group is handed over)
            now = time.monotonic()
            try:
                began = min(max(float(message.get("t", now)), process.spawned), now)
            except (TypeError, ValueError):
                began = now
            process.last_done = began
            if self.timeout_s:
                process.deadline = began + self.timeout_s
        elif event == "start":
            item = next((i for i in process.items if i.nodeid == nodeid), process.items[0])
            self._begin(process, item, nodeid=nodeid, out_start=int(message.get("out", 0)))
        elif event == "report" and current is not None:
            report = report_from_wire(config, message["report"])
            current.reports.append(report)
            config.hook.pytest_runtest_logreport(report=report)
        elif event == "leaks" and current is not None:
            current.leaks.extend(leak_from_wire(d) for d in message["leaks"])
        elif event == "libraries" and self.mapped is not None:
            self.mapped.add(message)
        elif event == "warning":
            # into the parent's own warnings summary, as pytest records a warning in process
            config.hook.pytest_warning_recorded.call_historic(kwargs={
                "warning_message": warning_from_wire(message.get("warning") or {}),
                "when": str(message.get("when") or "runtest"), "nodeid": nodeid, "location": None})
        elif event == "done" and current is not None:
            output = read_from(process.out_path, current.out_start, int(message.get("out", 0)))
            record = record_from_reports(
                nodeid, current.reports, device=current.device, output=output, leaks=current.leaks
            )
            if process.timed_out:
                # It ran past its deadline and ended while the watchdog waited for the stack
                # dump: a timeout all the same. Its process runs on with the next test (or, if
                # the kill came first, the next tests go to a new process, blaming none).
                record = record_over_time(
                    record,
                    timeout_s=self.timeout_s or 0.0,
                    traceback=read_from(process.crash_path, process.crash_start),
                    why="after its stack dump and before the kill" if not process.killed else "just before the kill",
                )
                process.timed_out = False
                process.kill_at = None
                process.crash_start = os.path.getsize(process.crash_path) if os.path.exists(process.crash_path) else 0
            show_verdict_only(config, current, record)
            self._store(record)
            config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=current.location)
            process.finished.add(nodeid)
            process.current = None
            process.last_done = time.monotonic()
            process.last_out = int(message.get("out", 0))
            process.deadline = process.last_done + self.timeout_s if self.timeout_s else None
            if all(i.nodeid in process.finished for i in process.items):
                process.released = True

    def _begin(self, process: TestProcess, item: Any, *, nodeid: str, out_start: int) -> RunningTest:
        """The test ``nodeid`` (of ``item``) started in ``process`` when its previous test ended."""
        process.current = RunningTest(
            nodeid=nodeid,
            location=item.location if item.nodeid == nodeid else (nodeid.split("::")[0], None, nodeid),
            keywords=dict.fromkeys(item.keywords, 1),
            device=self.slots[process.slot].label,
            started=process.last_done or process.spawned,
            out_start=out_start,
        )
        item.ihook.pytest_runtest_logstart(nodeid=nodeid, location=item.location)
        return process.current

    def on_exit(self, config: Any, process: TestProcess) -> list[Any]:
        """Record a test that died mid-run; return the group's items that never ran."""
        status = process.status or 0
        current = process.current
        unstarted = [i for i in process.items if i.nodeid not in process.finished]
        if current is None and unstarted and not (process.killed and not process.timed_out) and (
            process.timed_out
            or died_in_a_test(status, failed_outside_exit=FAILED_OUTSIDE_TESTS_EXIT)
            # status 0 with tests left: a test called os._exit(0). Re-queued, it would end
            # the same way in every new process, for ever.
            or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        ):
            # it died before the test's messages (sent when a test ends) went out
            current = self._begin(process, unstarted[0], nodeid=unstarted[0].nodeid, out_start=process.last_out)
        if current is not None:
            record = record_from_death(
                current.nodeid,
                status,
                timed_out=process.timed_out,
                timeout_s=self.timeout_s,
                duration_s=time.monotonic() - current.started,
                device=current.device,
                output=read_from(process.out_path, current.out_start),
                traceback=read_from(process.crash_path, process.crash_start),
                leaks=current.leaks,
            )
            self._store(record)
            show_crash(config, current, record.longrepr, record.duration_s)
        elif failed_outside_tests(status) and not process.killed:
            unfinished = [i.nodeid for i in process.items if i.nodeid not in process.finished]
            text = read_from(process.out_path, 0) + read_from(process.crash_path, 0)
            for record in records_for_process_failure(
                unfinished,
                any_finished=bool(process.finished),
                status=status,
                device=self.slots[process.slot].label,
                text=text,
            ):
                self._store(record)
                process.finished.add(record.nodeid)
                item = next((i for i in process.items if i.nodeid == record.nodeid), None)
                if item is not None:
                    show_error(config, item, record.message, record.longrepr, when="setup")
        started = process.finished | ({current.nodeid} if current else set())
        remove_files(process)
        if self.subreaper:
            self._note_strays(process.pid, started)
        return [item for item in process.items if item.nodeid not in started]

    def _note_strays(self, ended_pid: int, started: set[str]) -> None:
        """Kill what the ended test process left running and say so on its last test."""
        strays = collect_strays(ended_pid)
        if not strays:
            return
        nodeid = next((n for n in reversed(self.order) if n in started), None)
        if nodeid is None:
            return
        record = self.records[nodeid]
        note = "; ".join(s.message() for s in strays)
        self.records[nodeid] = dataclasses.replace(
            record,
            findings=record.findings + tuple(s.finding(nodeid) for s in strays),
            message=f"{record.message}; {note}" if record.message else note,
        )

    def cleanup(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)
