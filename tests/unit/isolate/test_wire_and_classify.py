"""The parent/child wire protocol, outcome classification of dead processes, and test grouping."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from xcompat.isolate import classify
from xcompat.isolate.classify import (
    collection_error_line,
    record_from_death,
    records_for_process_failure,
)
from xcompat.isolate.scheduler import group_items
from xcompat.isolate.wire import Channel, MessageReader, encode_assignment, leak_from_wire, read_assignment


def test_messages_survive_partial_writes_and_arrive_in_order():
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    reader = MessageReader(read_fd)
    try:
        os.write(write_fd, b'{"event": "start", "nodeid": "t::a", "out": 0}\n{"event": "re')
        assert [m["event"] for m in reader.read()] == ["start"]
        os.write(write_fd, b'port", "nodeid": "t::a", "report": {}}\n\n')
        Channel(write_fd).send({"event": "done", "nodeid": "t::a", "out": 12})
        os.close(write_fd)
        write_fd = -1
        assert [m["event"] for m in reader.read(until_eof=True)] == ["report", "done"]
        assert reader.eof
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_assignment_round_trip_and_eof_means_exit():
    r, w = os.pipe()
    os.write(w, encode_assignment([3, 0, 7]))
    os.close(w)
    assert read_assignment(r) == [3, 0, 7]
    r, w = os.pipe()
    os.close(w)
    try:
        assert read_assignment(r) == []
    finally:
        os.close(r)


def test_leak_from_wire_round_trips_the_record_fields():
    leak = leak_from_wire({"kind": "host", "repeats": "5", "growth_bytes": 4096, "leaked": True, "samples": ["1", 2]})
    assert (leak.kind, leak.repeats, leak.growth_bytes, leak.leaked, leak.samples) == ("host", 5, 4096, True, (1, 2))
    assert leak.where == "native" and leak.python_bytes == 0


def _signalled(sig: int) -> int:
    """A waitpid status for a process killed by ``sig``."""
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), sig)
        os._exit(99)
    _, status = os.waitpid(pid, 0)
    return status


def _exited(code: int) -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def test_death_in_a_test_is_crashed_with_the_signal_or_exit_code():
    record = record_from_death("t::a", _signalled(signal.SIGTERM), timed_out=False, timeout_s=None, duration_s=0.1,
                               device="cpu", output="last words\n", traceback="Fatal Python error: Terminated")
    assert record.outcome == "crashed" and record.message == "killed by SIGTERM"
    assert record.crash is not None and record.crash.signal_number == signal.SIGTERM
    assert record.longrepr.startswith("killed by SIGTERM\nFatal Python error")
    record = record_from_death("t::a", _exited(3), timed_out=False, timeout_s=None, duration_s=0.1,
                               device="cpu", output="", traceback="")
    assert record.crash is not None and record.crash.exit_code == 3
    assert record.message == "process exited with status 3 during the test"


def test_the_interrupt_status_is_named_only_with_its_traceback():
    from xcompat.isolate.classify import TEST_INTERRUPT_EXIT, TEST_INTERRUPT_IN_PROCESS

    kw = dict(timed_out=False, timeout_s=None, duration_s=0.1, device="cpu", traceback="")
    raised = record_from_death("t::a", _exited(TEST_INTERRUPT_EXIT), output="Traceback ...\nKeyboardInterrupt\n", **kw)
    assert raised.outcome == "crashed" and raised.message == TEST_INTERRUPT_IN_PROCESS
    chosen = record_from_death("t::a", _exited(TEST_INTERRUPT_EXIT), output="", **kw)  # a test's os._exit(71)
    assert chosen.outcome == "crashed" and chosen.message == f"process exited with status {TEST_INTERRUPT_EXIT} during the test"


def test_killed_by_the_watchdog_is_timeout_not_crashed():
    record = record_from_death("t::a", _signalled(signal.SIGKILL), timed_out=True, timeout_s=2.5, duration_s=3.0,
                               device="cpu", output="", traceback="Thread 0x1 (most recent call first):")
    assert record.outcome == "timeout" and record.message.startswith("timed out after 2.5s")
    assert record.crash is not None and record.crash.signal == "SIGKILL"


def test_process_failure_before_the_first_test_blames_the_whole_group_else_the_next_test():
    unfinished = ["t::b", "t::c"]
    before = records_for_process_failure(unfinished, any_finished=False, status=256, device="cpu", text="boom")
    assert [r.nodeid for r in before] == ["t::b", "t::c"] and {r.outcome for r in before} == {"error"}
    between = records_for_process_failure(unfinished, any_finished=True, status=256, device="cpu", text="boom")
    assert [r.nodeid for r in between] == ["t::b"]
    assert between[0].message == "test process failed outside the test (exit code 1)"


def test_a_process_failure_names_the_exception_that_ended_it():
    text = (
        "Traceback (most recent call last):\n  File \"/p/tests/test_k.py\", line 4, in test_kbd\n"
        "    raise KeyboardInterrupt\nKeyboardInterrupt\n"
    )
    (record,) = records_for_process_failure(["t::k"], any_finished=False, status=70 << 8, device="cpu", text=text)
    assert record.message == "test process failed outside the test (exit code 70): KeyboardInterrupt"
    # a traceback cut short (its last line is a frame) names nothing
    cut = "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
    (record,) = records_for_process_failure(["t::k"], any_finished=False, status=70 << 8, device="cpu", text=cut)
    assert record.message == "test process failed outside the test (exit code 70)"


IMPORT_ERROR = """\
ImportError while importing test module '/p/tests/test_a.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_a.py:1: in <module>
    import helper
E   ModuleNotFoundError: No module named 'helper'
"""
MULTI_LINE = """\
tests/test_b.py:3: in <module>
    load()
tests/test_b.py:2: in load
    raise ValueError("bad config\\nsee the docs")
E   ValueError: bad config
E   see the docs
"""
CHAINED = """\
E   KeyError: 'x'

During handling of the above exception, another exception occurred:
tests/test_c.py:4: in <module>
    raise RuntimeError("settings incomplete") from err
E   RuntimeError: settings incomplete
"""
SYNTAX = """\
/usr/lib/python3.11/ast.py:50: in parse
    return compile(source, filename, mode, flags,
E     File "/p/tests/test_d.py", line 7
E       def test_z(:
E                  ^
E   SyntaxError: invalid syntax
"""


@pytest.mark.parametrize(("text", "line"), [
    (IMPORT_ERROR, "ModuleNotFoundError: No module named 'helper'"),
    (MULTI_LINE, "ValueError: bad config"),
    (CHAINED, "RuntimeError: settings incomplete"),
    (SYNTAX, "SyntaxError: invalid syntax (/p/tests/test_d.py, line 7)"),
    ("usage: something odd\nno E lines here\n", "no E lines here"),
    ("", "no details from pytest"),
])
def test_collection_error_line_is_the_exception_not_the_last_line(text, line):
    assert collection_error_line(text) == line


def test_groups_are_single_tests_or_whole_files():
    # pytest interleaves files when a parametrized module fixture is used: a[x], b[x], a[y], b[y]
    paths = ["a.py", "a.py", "b.py", "a.py", "c.py", "b.py"]
    items = [SimpleNamespace(path=Path(p), nodeid=f"{p}::{i}") for i, p in enumerate(paths)]
    assert [len(g) for g in group_items(items, "test")] == [1] * 6
    assert [[i.nodeid for i in g] for g in group_items(items, "file")] == [
        ["a.py::0", "a.py::1", "a.py::3"], ["b.py::2", "b.py::5"], ["c.py::4"]]


def test_which_endings_mean_the_current_test_died():
    from xcompat.isolate.classify import died_in_a_test

    assert died_in_a_test(_signalled(signal.SIGTERM), failed_outside_exit=70)
    assert died_in_a_test(_exited(3), failed_outside_exit=70)  # os._exit(3) in a test
    assert not died_in_a_test(_exited(0), failed_outside_exit=70)
    assert not died_in_a_test(_exited(70), failed_outside_exit=70)  # xcompat's own set-up failed


def test_a_group_completes_on_its_last_done_unless_something_failed():
    from xcompat.isolate.scheduler import _completes_group

    items = [SimpleNamespace(nodeid=n) for n in ("t.py::a", "t.py::b")]
    process = SimpleNamespace(items=items, finished={"t.py::a"})
    passed = {"event": "report", "nodeid": "t.py::b", "report": {"outcome": "passed"}}
    failed = {"event": "report", "nodeid": "t.py::b", "report": {"outcome": "failed"}}
    done = {"event": "done", "nodeid": "t.py::b"}
    assert _completes_group(process, [{"event": "start", "nodeid": "t.py::b"}, passed, done])
    # a failure may stop the run (-x, --maxfail): the parent replays it before starting anything
    assert not _completes_group(process, [passed, failed, done])
    assert not _completes_group(process, [passed])  # the test is not done yet
    first_only = SimpleNamespace(items=items, finished=set())
    assert not _completes_group(first_only, [{"event": "done", "nodeid": "t.py::a"}, passed])
    assert not _completes_group(first_only, [{"event": "done", "nodeid": "t.py::a"}])  # b has not run


def test_wait_statuses_in_words():
    from xcompat.isolate.classify import describe_status

    assert describe_status(70 << 8) == "exit code 70"
    assert describe_status(signal.SIGKILL) == "killed by SIGKILL"


def test_reading_back_a_flood_of_output_keeps_only_its_end(tmp_path):
    from xcompat.isolate.processes import read_from
    from xcompat.limits import LIMITS

    out = tmp_path / "out"
    head, flood_end = b"first line\n", b"the crash message at the end\n"
    with open(out, "wb") as fh:
        fh.write(head)
        fh.write(b"x" * (4 * LIMITS.test_output_bytes))
        fh.write(flood_end)
    size = out.stat().st_size
    text = read_from(str(out), 0)
    assert text.endswith(flood_end.decode()) and "first line" not in text
    assert text.startswith(f"[... {size - LIMITS.test_output_bytes} bytes of output cut ...]\n")
    assert len(text) < LIMITS.test_output_bytes + 100
    # a range inside the file: the same rule, and short ranges are read whole
    assert read_from(str(out), 0, len(head)) == "first line\n"
    middle = read_from(str(out), 5, size - len(flood_end))
    assert middle.startswith("[... ") and middle.endswith("x")
    assert read_from(str(tmp_path / "missing"), 0) == ""
    # an empty range (a test that printed nothing) is "" without opening the file
    assert read_from(str(out), 7, 7) == "" and read_from(str(tmp_path / "missing"), 3, 3) == ""
    assert read_from(str(out), 6, 11) == "line\n"


def _report(when: str, outcome: str, longrepr=None, **extra):
    from _pytest.reports import TestReport

    rep = TestReport(nodeid="t.py::a", location=("t.py", 1, "a"), keywords={}, outcome=outcome,
                     longrepr=longrepr, when=when)
    for key, value in extra.items():
        setattr(rep, key, value)
    return rep


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        ([("setup", "passed"), ("teardown", "passed")], "error"),  # --setup-only / --setup-plan
        ([], "error"),  # a plugin that replaced the protocol and reported nothing
        ([("setup", "passed"), ("call", "passed"), ("teardown", "passed")], "passed"),
        ([("setup", "failed"), ("teardown", "passed")], "error"),
        ([("setup", "skipped"), ("teardown", "passed")], "skipped"),
        ([("setup", "passed"), ("teardown", "failed")], "error"),
    ],
)
def test_a_test_passes_only_when_its_body_ran(phases, expected):
    reports = [_report(when, outcome, ("t.py", 1, "Skipped: no") if outcome == "skipped" else
                       ("boom" if outcome == "failed" else None)) for when, outcome in phases]
    record = classify.record_from_reports("t.py::a", reports, device="cpu")
    assert record.outcome == expected, record
    if not any(when == "call" or outcome != "passed" for when, outcome in phases):
        assert record.message == classify.BODY_NEVER_RAN and "PYTEST_ADDOPTS" in record.message


def test_xfail_without_running_is_not_a_body_that_never_ran():
    reports = [_report("setup", "skipped", ("t.py", 1, "reason"), wasxfail="not yet"), _report("teardown", "passed")]
    assert classify.record_from_reports("t.py::a", reports, device="cpu").outcome == "xfailed"
