"""The in-process session's supervisor: what it reads back from the session process, malformed
and hostile files included (the tests that ran there could have written anything)."""

from __future__ import annotations

import json
import os
import pickle
import signal

from xcompat.errors import UsageError
from xcompat.isolate import supervised
from xcompat.isolate.outcomes import RunResult

EXIT_0 = 0  # wait status of exit(0)
SEGV = signal.SIGSEGV  # wait status of a death by SIGSEGV (no core)


def _write(path, lines):
    path.write_bytes(b"".join(line if isinstance(line, bytes) else line.encode() for line in lines))


def test_the_running_test_crashed_the_finished_keep_their_outcome_the_rest_never_ran(tmp_path):
    rec, col = tmp_path / "rec", tmp_path / "col"
    _write(rec, ['{"start": "t::a"}\n', '{"done": "t::a", "outcome": "failed", "message": "assert 1", "duration_s": 0.5}\n',
                 '{"start": "t::b"}\n'])
    _write(col, ["t::a\n", "t::b\n", "t::c\n"])
    records = {r.nodeid: r for r in supervised.records_from_recorder(str(rec), SEGV, device="cpu",
                                                                     collected_path=str(col))}
    assert records["t::a"].outcome == "failed" and records["t::a"].message == "assert 1"
    assert records["t::b"].outcome == "crashed" and "killed by SIGSEGV" in records["t::b"].message
    assert records["t::b"].crash is not None and records["t::b"].crash.signal == "SIGSEGV"
    assert records["t::c"].outcome == "error" and "before this test ran" in records["t::c"].message


def test_a_finished_failure_keeps_the_end_of_its_traceback_and_only_a_failure_does(tmp_path):
    rec = tmp_path / "rec"
    long_tb = "x" * 5000 + "E   assert 1 == 2"
    _write(rec, [json.dumps({"done": "t::f", "outcome": "failed", "longrepr": long_tb}) + "\n",
                 json.dumps({"done": "t::p", "outcome": "passed", "longrepr": "forged text"}) + "\n",
                 json.dumps({"done": "t::e", "outcome": "error", "longrepr": {"not": "text"}}) + "\n"])
    records = {r.nodeid: r for r in supervised.records_from_recorder(str(rec), EXIT_0, device="cpu")}
    assert records["t::f"].longrepr.endswith("E   assert 1 == 2")
    assert len(records["t::f"].longrepr) == supervised.RECORDED_TRACEBACK_CHARS
    assert records["t::p"].longrepr == "" and records["t::e"].longrepr == ""


def test_an_end_outside_any_test_is_a_crashed_session(tmp_path):
    rec = tmp_path / "rec"
    _write(rec, ['{"start": "t::a"}\n', '{"done": "t::a", "outcome": "passed", "message": "", "duration_s": 0}\n'])
    records = supervised.records_from_recorder(str(rec), EXIT_0, device="cpu")
    assert [(r.nodeid, r.outcome) for r in records] == [("t::a", "passed"), ("<pytest session>", "crashed")]
    assert "exit code 0" in records[1].message


def test_malformed_and_hostile_recorder_lines_never_make_a_test_green(tmp_path):
    rec = tmp_path / "rec"
    _write(rec, [b"\xff\xfe not json\n", b"[1, 2]\n", b'{"start": 5}\n', b'{"done": "t::x", "outcome": "totally-fine"}\n',
                 b'{"done": "t::y", "outcome": "passed", "duration_s": "fast"}\n', b'{"start": "t::z"}\n',
                 b'{"done": "t::z", "outc'])  # torn last line: the test was still running
    records = {r.nodeid: r for r in supervised.records_from_recorder(str(rec), EXIT_0, device="cpu")}
    assert records["t::x"].outcome == "error"  # an unknown outcome is not taken
    assert records["t::y"].outcome == "passed" and records["t::y"].duration_s == 0.0
    assert records["t::z"].outcome == "crashed"
    assert len(records) == 3


def test_a_missing_recorder_still_gives_a_crashed_record(tmp_path):
    records = supervised.records_from_recorder(str(tmp_path / "absent"), EXIT_0, device="cpu",
                                               collected_path=str(tmp_path / "absent-too"))
    assert [(r.nodeid, r.outcome) for r in records] == [("<pytest session>", "crashed")]


def test_only_a_well_formed_result_file_is_taken(tmp_path):
    path = tmp_path / "result.pickle"
    assert supervised._read_result(str(path)) is None  # none written
    for junk in (b"", b"garbage", pickle.dumps("passed"), pickle.dumps(("result", {"status": "passed"})),
                 pickle.dumps(("error", "not an exception")), pickle.dumps(("other", RunResult(
                     records=(), isolation="none", start_method="in-process", timeout_s=None, duration_s=0)))):
        path.write_bytes(junk)
        assert supervised._read_result(str(path)) is None, junk
    result = RunResult(records=(), isolation="none", start_method="in-process", timeout_s=None, duration_s=0)
    path.write_bytes(pickle.dumps(("result", result)))
    assert supervised._read_result(str(path)) == ("result", result)


def test_an_error_crosses_the_process_boundary_whole():
    err = UsageError("no tests were collected", hint="check the paths", file="tests", line=3)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is UsageError and str(back) == str(err) and back.exit_code == 2
    assert (back.hint, back.file, back.line) == ("check the paths", "tests", 3)


def test_the_supervisor_returns_the_sessions_result_and_raises_its_error():
    def ok(plugins):
        assert [type(p).__name__ for p in plugins] == ["FlightRecorder"]
        return RunResult(records=(), isolation="none", start_method="in-process", timeout_s=None, duration_s=0,
                         pytest_exit=os.getpid())

    result = supervised.run_supervised(ok, device="cpu", isolation="none", timeout_s=None, cell_id=None)
    assert result.pytest_exit != os.getpid()  # it ran in another process

    def fails(plugins):
        raise UsageError("bad option", hint="remove it")

    try:
        supervised.run_supervised(fails, device="cpu", isolation="none", timeout_s=None, cell_id=None)
    except UsageError as exc:
        assert exc.hint == "remove it"
    else:
        raise AssertionError("the session's error was lost")


def test_a_test_that_closes_the_recorders_descriptor_does_not_break_the_session(tmp_path):
    fd = os.open(tmp_path / "rec", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    recorder = supervised.FlightRecorder(fd, str(tmp_path / "col"))
    recorder.pytest_runtest_logstart("t::a", None)
    os.close(fd)  # as os.closerange(3, 4096) in a test does
    recorder.pytest_runtest_logstart("t::b", None)  # must not raise into pytest (INTERNALERROR)
    recorder.pytest_runtest_logfinish("t::b", None)
    assert (tmp_path / "rec").read_text() == '{"start": "t::a"}\n'


def test_a_test_finished_before_the_recorders_tail_has_no_result_never_a_pass(tmp_path, monkeypatch):
    # The recorder is read from its end, bounded; what lies before the tail is not guessed at.
    monkeypatch.setattr(supervised, "RECORDER_TAIL_BYTES", 400)
    rec, col = tmp_path / "rec", tmp_path / "col"
    lines = [json.dumps({"done": f"t::{i}", "outcome": "failed", "longrepr": "E" * 100}) + "\n" for i in range(20)]
    _write(rec, [*lines, '{"start": "t::last"}\n'])
    _write(col, [f"t::{i}\n" for i in range(20)] + ["t::last\n"])
    records = {r.nodeid: r for r in supervised.records_from_recorder(str(rec), EXIT_0, device="cpu",
                                                                     collected_path=str(col))}
    assert records["t::last"].outcome == "crashed"
    assert records["t::0"].outcome == "error" and "records lie before the last" in records["t::0"].message
    assert records["t::19"].outcome == "failed" and records["t::19"].longrepr == "E" * 100
    assert not [r for r in records.values() if r.outcome == "passed"]
