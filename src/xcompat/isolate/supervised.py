"""``--isolate none`` under a supervisor: the in-process session runs in one child process.

In-process tests share their process, so a test or a plugin can end it: ``os._exit(0)``, a
segfault, a signal, ``exit()`` from C. Were that process ``xcompat test`` itself, the exit
status would be the test's: ``os._exit(0)`` made the run exit 0 with no result at all. So
where ``fork`` exists, ``xcompat test --isolate none`` forks once, before pytest starts; the
child runs the whole session in-process exactly as before (one process, tests in order,
sharing state) and hands its ``RunResult`` back through a file; the parent decides the
verdict. A session that ends without handing a result back is never green: the test that
was running is ``crashed``, read from a flight recorder the child appends to as tests start
and finish (each finished test's outcome is there too).

Where ``fork`` does not exist (Windows), and under ``coverage run`` without parallel mode, the
session runs in the ``xcompat`` process itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from xcompat import interrupts
from xcompat.errors import Interrupted, XcompatError
from xcompat.isolate import forking
from xcompat.isolate.classify import describe_status, record_from_reports
from xcompat.isolate.measured import save_coverage
from xcompat.isolate.outcomes import Crash, Isolation, Outcome, RunResult, TestRecord, signal_name
from xcompat.isolate.strays import StrayProcess, become_subreaper, children, collect_new_children

SESSION = "<pytest session>"  # the record of a session that ended outside any test

# The child's result: a pickle written by our own fork. The tests running there could write
# anything to it, but they already run as this user with this process's rights, so loading
# it gives them nothing they did not have; its size is still bounded.
RESULT_LIMIT_BYTES = 1 << 30
# The flight recorder is read from its end: the test that was running is the last one started.
# 32 MiB holds about 15,000 failed tests with their tracebacks; a test finished before that
# tail is reported as having no result (an error), never as passed.
RECORDER_TAIL_BYTES = 32 << 20
# The end of a failed test's traceback kept in the flight recorder (its assertion and the
# lines above it): enough to act on, small enough that thousands of failures fit in the tail.
RECORDED_TRACEBACK_CHARS = 2000
_WITH_TRACEBACK = ("failed", "error")


def available() -> bool:
    """Whether the session can run supervised: ``fork`` exists, and coverage.py is not measuring
    this process without parallel mode (the session process's measurements would be
    overwritten by this one's when it saves: a 0% report)."""
    if not hasattr(os, "fork"):
        return False
    cov = _measuring_coverage()
    return cov is None or bool(getattr(getattr(cov, "config", None), "parallel", False))


def _measuring_coverage() -> Any:
    """coverage.py's ``Coverage`` measuring this process, if any (never imports coverage)."""
    module = sys.modules.get("coverage")
    current = getattr(getattr(module, "Coverage", None), "current", None)
    return current() if current is not None else None


class FlightRecorder:
    """pytest plugin of the session process: one JSON line when a test starts and one with
    its outcome when it finishes, written straight to the file (nothing is buffered in the
    process that may die)."""

    def __init__(self, fd: int, collected_path: str) -> None:
        self.fd = fd
        self.collected_path = collected_path
        self.reports: dict[str, list[Any]] = {}

    def pytest_collection_finish(self, session: Any) -> None:
        with open(self.collected_path, "w", encoding="utf-8") as fh:
            fh.writelines(item.nodeid + "\n" for item in session.items)

    def _write(self, entry: dict[str, Any]) -> None:
        if self.fd < 0:
            return
        try:
            os.write(self.fd, (json.dumps(entry) + "\n").encode())
        except OSError:  # a test closed or broke the descriptor: the session goes on without it
            self.fd = -1

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._write({"start": nodeid})

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        record = record_from_reports(nodeid, self.reports.pop(nodeid, []), device=None)
        entry = {"done": nodeid, "outcome": record.outcome, "message": record.message[:500],
                 "duration_s": record.duration_s}
        if record.outcome in _WITH_TRACEBACK and record.longrepr:
            entry["longrepr"] = record.longrepr[-RECORDED_TRACEBACK_CHARS:]
        self._write(entry)


def run_supervised(run: Callable[[Sequence[Any]], RunResult], *, device: str, isolation: Isolation,
                   timeout_s: float | None, cell_id: str | None) -> RunResult:
    """``run(plugins)`` in a forked session process; its result, or a crashed one without it."""
    folder = tempfile.mkdtemp(prefix="xcompat-session-")
    result_path = os.path.join(folder, "result.pickle")
    recorder_path = os.path.join(folder, "recorder.jsonl")
    collected_path = os.path.join(folder, "collected.txt")
    # Subreaper for the session's duration: a process a test started and left running (even
    # in a new session) is re-parented here and ended with the session, before the result is
    # written; it could otherwise outlive xcompat and rewrite its output files.
    before = children()
    subreaper = become_subreaper()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = forking.fork()
        if pid == 0:  # the session process
            _session_child(run, result_path, recorder_path, collected_path)  # never returns
        status, signalled = _wait(pid)
        strays = collect_new_children(before) if subreaper else []
        if signalled:  # the user's (or CI's) request to stop, whatever the session handed back
            raise interrupts.error("no results were written")
        outcome = _read_result(result_path)
        cause = None
        if outcome is not None:
            kind, value = outcome
            if kind == "result":
                return _with_strays(value, strays)
            if not isinstance(value, Interrupted):
                raise value
            # "interrupted" while no signal reached xcompat: a test raised KeyboardInterrupt.
            # That is the test's failure, not a request to stop: record the run (below).
            cause = TEST_INTERRUPT
        records = records_from_recorder(recorder_path, status, device=device, collected_path=collected_path,
                                        cause=cause)
        return _with_strays(
            RunResult(records=tuple(records), isolation=isolation, start_method="in-process",
                      timeout_s=timeout_s, duration_s=sum(r.duration_s for r in records), cell_id=cell_id,
                      devices=(device,)),
            strays)
    finally:
        if subreaper:
            become_subreaper(False)
        shutil.rmtree(folder, ignore_errors=True)


def _with_strays(result: RunResult, strays: Sequence[StrayProcess]) -> RunResult:
    """The session's processes left running, killed: findings of the run (no single test can
    be blamed when the tests share one process), and a warning."""
    if not strays:
        return result
    from xcompat.log import get_logger

    for stray in strays:
        get_logger().warning(f"the test session {stray.message('its tests')}")
    return dataclasses.replace(result, findings=result.findings + tuple(s.finding(SESSION) for s in strays))


def _session_child(
    run: Callable[[Sequence[Any]], RunResult], result_path: str, recorder_path: str, collected_path: str
) -> None:
    code = 0
    try:
        fd = os.open(recorder_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            outcome: tuple[str, Any] = ("result", run([FlightRecorder(fd, collected_path)]))
        except Interrupted as exc:
            outcome, code = ("error", exc), Interrupted.exit_code
        except XcompatError as exc:
            outcome = ("error", exc)
        except BaseException as exc:  # noqa: BLE001 - a bug: its traceback here, the error to the parent
            import traceback

            traceback.print_exc()
            outcome = ("error", RuntimeError(f"the test session failed: {type(exc).__name__}: {exc}"))
        tmp = result_path + ".part"
        with open(tmp, "wb") as fh:
            pickle.dump(outcome, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, result_path)
    except BaseException:  # noqa: BLE001 - the result could not be handed back
        code = 70
    finally:
        _save_coverage()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _save_coverage() -> None:
    """Under ``coverage run`` the session's measurements live in this process, which leaves
    by ``os._exit`` (no atexit): save them here (``parallel = true`` keeps them apart from the
    parent's file), and the native counters of the coverage stage's instrumented build."""
    save_coverage("the test session")


def _wait(pid: int) -> tuple[int, bool]:
    """The session's wait status, and whether a signal stopped this process meanwhile (Ctrl-C,
    SIGTERM, SIGHUP: ``xcompat.interrupts``). The session is then asked to stop as Ctrl-C asks
    it, so pytest there runs its teardowns: a terminal's Ctrl-C reaches it anyway (same process
    group), but ``kill`` and ``timeout`` signal this process alone. A session that has not
    ended after ``GRACE_S`` is killed. A session that hands back "interrupted" while no signal
    came here was stopped by its tests (a test that raised KeyboardInterrupt)."""
    try:
        return os.waitpid(pid, 0)[1], False
    except KeyboardInterrupt:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + interrupts.GRACE_S
    try:
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, True
            time.sleep(0.02)
    except KeyboardInterrupt:  # a second Ctrl-C, where xcompat.interrupts does not drop it (no CLI)
        pass
    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1], True


def _read_result(path: str) -> tuple[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(RESULT_LIMIT_BYTES + 1)
    except OSError:
        return None
    if len(data) > RESULT_LIMIT_BYTES:
        return None
    try:
        outcome = pickle.loads(data)  # written by our own fork (see RESULT_LIMIT_BYTES)
    except Exception:  # noqa: BLE001 - a torn or forged file is no result
        return None
    if not (isinstance(outcome, tuple) and len(outcome) == 2):
        return None
    kind, value = outcome
    if kind == "result" and isinstance(value, RunResult):
        return outcome
    if kind == "error" and isinstance(value, BaseException):
        return outcome
    return None


def _tail(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - limit))
            return fh.read(limit)
    except OSError:
        return b""


TEST_INTERRUPT = ("the test raised KeyboardInterrupt, which stops pytest's whole session "
                  "(no Ctrl-C reached xcompat)")


def records_from_recorder(path: str, status: int, *, device: str, collected_path: str | None = None,
                          cause: str | None = None) -> list[TestRecord]:
    """What a session that ended without its result leaves: the finished tests with the
    outcome they had, a crashed record for the one that was running (or for the session,
    when it ended outside any test), and an error for each collected test that never ran.
    ``cause``: what ended the session, when known (``TEST_INTERRUPT``)."""
    data = _tail(path, RECORDER_TAIL_BYTES)
    finished: dict[str, TestRecord] = {}
    running: str | None = None
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the torn first line of the tail, or the last one of a killed writer
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("start"), str):
            running = entry["start"]
        elif isinstance(entry.get("done"), str):
            nodeid = entry["done"]
            outcome = entry.get("outcome")
            if outcome not in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
                outcome = "error"
            outcome = cast(Outcome, outcome)  # one of those, checked just above
            duration = entry.get("duration_s")
            longrepr = entry.get("longrepr")
            finished[nodeid] = TestRecord(
                nodeid=nodeid, outcome=outcome, device=device,
                message=str(entry.get("message") or "")[:500],
                longrepr=longrepr[-RECORDED_TRACEBACK_CHARS:]
                if outcome in _WITH_TRACEBACK and isinstance(longrepr, str) else "",
                duration_s=float(duration) if isinstance(duration, (int, float)) else 0.0)
            if running == nodeid:
                running = None
    how = describe_status(status)
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    crash = Crash(signal=signal_name(sig) if sig else None, signal_number=sig,
                  exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)
    if running is not None:
        message = (f"the in-process session ended ({how}) in this test, before xcompat recorded the run: "
                   f"{cause or 'the test ended the process (os._exit, a crash or a signal)'}; its output is above")
        nodeid = running
    else:
        message = (f"the in-process session ended ({how}) outside any test, before xcompat recorded the run "
                   "(a plugin, fixture or conftest ended the process)")
        nodeid = SESSION
    records = list(finished.values())
    records.append(TestRecord(nodeid=nodeid, outcome="crashed", device=device, message=message,
                              longrepr=message, crash=crash))
    seen = {r.nodeid for r in records}
    collected = _tail(collected_path, RECORDER_TAIL_BYTES).decode("utf-8", "replace") if collected_path else ""
    never_ran = f"no result: the in-process session ended ({how}) before this test ran"
    if len(data) >= RECORDER_TAIL_BYTES:  # the recorder's start was not read: it may have run
        never_ran = (f"no result: the in-process session ended ({how}) before this test ran, or it ran among the "
                     f"first tests, whose records lie before the last {RECORDER_TAIL_BYTES >> 20} MiB of the "
                     "flight recorder that are read")
    records += [TestRecord(nodeid=n, outcome="error", device=device, message=never_ran)
                for n in dict.fromkeys(collected.splitlines()[1 if len(collected) >= RECORDER_TAIL_BYTES else 0:])
                if n and n not in seen]
    return records
