"""The parent's bookkeeping when a test runs past its timeout but ends before the kill, and when
the kill lands after such a test ended: no test is blamed for another's time."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

from xcompat.isolate.classify import record_over_time
from xcompat.isolate.devices import DeviceSlot
from xcompat.isolate.outcomes import Crash, TestRecord
from xcompat.isolate.runner import IsolatedRunner
from xcompat.isolate.tracked import TestProcess
from xcompat.isolate.wire import MessageReader


def _item(name: str) -> SimpleNamespace:
    hooks = SimpleNamespace(pytest_runtest_logstart=lambda **kw: None)  # pytest's terminal is not running here
    return SimpleNamespace(nodeid=f"t.py::{name}", location=("t.py", 1, name), keywords={}, ihook=hooks)


def _process(tmp_path, items, **state) -> TestProcess:
    out = tmp_path / "out"
    crash = tmp_path / "crash"
    out.write_text("")
    crash.write_text("")
    read_fd, write_fd = os.pipe()
    os.close(write_fd)
    return TestProcess(pid=os.getpid(), slot=0, items=items, messages=MessageReader(read_fd),
                       out_path=str(out), crash_path=str(crash), spawned=0.0, **state)


def test_a_kill_after_the_overdue_test_ended_blames_no_other_test(tmp_path):
    runner = IsolatedRunner(isolation="file", slots=[DeviceSlot(label="cpu")], timeout_s=1.0, threads=None)
    items = [_item("a"), _item("b"), _item("c")]
    # "a" reported done after its deadline (recorded as a timeout then); the SIGKILL meant for
    # it had already been sent, so the process ended with "b" and "c" unstarted.
    process = _process(tmp_path, items, killed=True, timed_out=False, status=signal.SIGKILL)
    process.finished.add("t.py::a")
    try:
        leftover = runner.on_exit(None, process)
    finally:
        os.close(process.read_fd)
        runner.cleanup()
    assert [i.nodeid for i in leftover] == ["t.py::b", "t.py::c"]  # run again in a new process
    assert runner.records == {}


def test_a_hang_the_watchdog_killed_is_still_blamed_on_the_test_that_hung(tmp_path, monkeypatch):
    runner = IsolatedRunner(isolation="file", slots=[DeviceSlot(label="cpu")], timeout_s=1.0, threads=None)
    items = [_item("a"), _item("b")]
    process = _process(tmp_path, items, killed=True, timed_out=True, status=signal.SIGKILL)
    process.finished.add("t.py::a")
    calls = []
    monkeypatch.setattr("xcompat.isolate.runner.show_crash", lambda *a, **k: calls.append(a))
    try:
        leftover = runner.on_exit(None, process)
    finally:
        os.close(process.read_fd)
        runner.cleanup()
    assert leftover == []
    assert runner.records["t.py::b"].outcome == "timeout"
    assert len(calls) == 1


def test_record_over_time_keeps_a_failure_and_the_dump():
    failed = TestRecord(nodeid="t.py::a", outcome="failed", duration_s=1.3, message="assert 1 == 2",
                        longrepr="E  assert 1 == 2")
    record = record_over_time(failed, timeout_s=1.0, traceback="Thread 0x1 (most recent call first):",
                              why="after its stack dump and before the kill")
    assert record.outcome == "timeout"
    assert record.message.startswith("timed out after 1s; it ended at 1.30s, after its stack dump")
    assert "it also failed: assert 1 == 2" in record.message
    assert record.crash == Crash(traceback="Thread 0x1 (most recent call first):")
    assert "E  assert 1 == 2" in record.longrepr
    leaked = TestRecord(nodeid="t.py::c", outcome="leaked", duration_s=2.0, message="host memory grew 3 MiB")
    assert "it also leaked: host memory grew 3 MiB" in record_over_time(leaked, timeout_s=1.0, why="x").message
    passed = TestRecord(nodeid="t.py::b", outcome="passed", duration_s=2.0)
    assert "also" not in record_over_time(passed, timeout_s=1.0, why="x").message
