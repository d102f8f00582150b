"""Outcome classification: pytest's reports, or how a test process ended, to one ``TestRecord``."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from xcompat.isolate.outcomes import Crash, LeakReport, Outcome, TestRecord, signal_name


def skip_reason(longrepr: Any) -> str:
    """The reason of a skip report: pytest gives ``(path, line, "Skipped: reason")``."""
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return text.removeprefix("Skipped: ")


# A test passes only when its body ran: a run whose reports have no call phase (pytest's
# --setup-only or --setup-plan, however they were passed: PYTEST_ADDOPTS, the ini file's
# addopts, ``-o addopts=...``; or a plugin that skips the protocol) passed nothing.
BODY_NEVER_RAN = (
    "the test body never ran: pytest reported no call phase for it (--setup-only or --setup-plan, "
    "e.g. from PYTEST_ADDOPTS or the addopts of the project's pytest configuration, or a plugin that "
    "replaces pytest's test protocol); remove that option or plugin"
)


# Exit status of a test process whose test raised KeyboardInterrupt. SIGINT is at its default
# action in a test process, so a real Ctrl-C kills it by signal: a KeyboardInterrupt that
# escapes pytest's protocol there was raised by the test's own code.
TEST_INTERRUPT_EXIT = 71
TEST_INTERRUPT_IN_PROCESS = ("the test raised KeyboardInterrupt, which ends its test process "
                             "(no Ctrl-C reached xcompat)")


def body_never_ran(reports: Sequence[Any]) -> bool:
    """No call-phase report and nothing that explains its absence (a failure or a skip)."""
    return not any(rep.when == "call" or rep.failed or rep.skipped for rep in reports)


def record_from_reports(
    nodeid: str,
    reports: Sequence[Any],
    *,
    device: str | None,
    output: str = "",
    leaks: Sequence[LeakReport] = (),
) -> TestRecord:
    """Fold pytest's setup/call/teardown reports into one outcome, like its terminal summary."""
    outcome: Outcome = "passed"
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
                message = skip_reason(rep.longrepr)
        elif rep.passed and rep.when == "call" and wasxfail is not None and outcome == "passed":
            outcome, message = "xpassed", str(wasxfail)
    if outcome == "passed" and body_never_ran(reports):
        outcome, message, longrepr = "error", BODY_NEVER_RAN, BODY_NEVER_RAN
    leaked = [leak for leak in leaks if leak.leaked]
    if leaked and outcome == "passed":
        outcome = "leaked"
        message = "; ".join(leak.describe() for leak in leaked)
    return TestRecord(
        nodeid=nodeid,
        outcome=outcome,
        duration_s=duration,
        device=device,
        message=message,
        longrepr=longrepr,
        output_tail=output,
        leaks=tuple(leaks),
    )


def record_from_death(
    nodeid: str,
    status: int,
    *,
    timed_out: bool,
    timeout_s: float | None,
    duration_s: float,
    device: str | None,
    output: str,
    traceback: str,
    leaks: Sequence[LeakReport] = (),
) -> TestRecord:
    """A test whose process ended between its start and done messages: crashed, or timed out."""
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if timed_out:
        crash = Crash(signal=signal_name(sig) if sig else None, signal_number=sig, traceback=traceback)
        outcome: Outcome = "timeout"
        dumped = "stack dumped" if traceback.strip() else "no stack dump came back (the process did not answer)"
        message = f"timed out after {timeout_s or 0:g}s; {dumped}, then killed"
    else:
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        crash = Crash(
            signal=signal_name(sig) if sig else None, signal_number=sig, exit_code=exit_code, traceback=traceback
        )
        outcome = "crashed"
        message = crash.describe()
        if exit_code == TEST_INTERRUPT_EXIT and "KeyboardInterrupt" in output:
            message = TEST_INTERRUPT_IN_PROCESS
    return TestRecord(
        nodeid=nodeid,
        outcome=outcome,
        duration_s=duration_s,
        device=device,
        message=message,
        longrepr=f"{message}\n{traceback}".rstrip(),
        output_tail=output,
        crash=crash,
        leaks=tuple(leaks),
    )


def record_over_time(record: TestRecord, *, timeout_s: float, traceback: str = "", why: str) -> TestRecord:
    """A test that ran past its timeout but ended before it was stopped (during the stack
    dump's grace, or with ``--isolate none``, where nothing stops it): a timeout all the same,
    so the verdict does not depend on how quickly the watchdog acted."""
    message = f"timed out after {timeout_s:g}s; it ended at {record.duration_s:.2f}s, {why}"
    if record.outcome not in ("passed", "skipped", "xfailed", "xpassed"):
        message = f"{message}; it also {record.outcome}: {record.message}"
    return replace(
        record,
        outcome="timeout",
        message=message,
        longrepr=f"{message}\n{traceback}\n{record.longrepr}".strip(),
        crash=Crash(traceback=traceback) if traceback else record.crash,
    )


def failed_outside_tests(status: int) -> bool:
    """Whether a process that was in no test when it ended ended badly."""
    return os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0)


def died_in_a_test(status: int, *, failed_outside_exit: int) -> bool:
    """Whether a process whose current test sent nothing yet died in that test: killed by a
    signal, or ended by an exit status other than 0 and the one xcompat uses when its own
    set-up failed (a test calling ``os._exit(3)``)."""
    if os.WIFSIGNALED(status):
        return True
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) not in (0, failed_outside_exit)


_PYTEST_EXIT = re.compile(r"_pytest\.outcomes\.Exit: (.*)")


def _last_exception_line(text: str) -> str:
    """The exception a Python traceback at the end of ``text`` ends with, or ``""``."""
    _head, found, tail = text.rpartition("Traceback (most recent call last):")
    if not found:
        return ""
    lines = [line for line in tail.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    # a traceback's last line is the exception, flush left; indented lines are frames and code
    return last[:200] if last and not last[0].isspace() else ""


def describe_status(status: int) -> str:
    """A wait status in words: ``exit code 70``, ``killed by SIGKILL``."""
    if os.WIFSIGNALED(status):
        return f"killed by {signal_name(os.WTERMSIG(status))}"
    if os.WIFEXITED(status):
        return f"exit code {os.WEXITSTATUS(status)}"
    return f"status {status}"


def records_for_process_failure(
    unfinished: Sequence[str], *, any_finished: bool, status: int, device: str | None, text: str
) -> list[TestRecord]:
    """A process that died outside any test. Before its first test it could not start, and would
    fail the same way for every test of its group; between tests, the next test is blamed."""
    blamed = list(unfinished) if not any_finished else list(unfinished[:1])
    called_exit = _PYTEST_EXIT.search(text)
    if called_exit:  # pytest.exit() in a test or fixture ends only its own process here
        reason = called_exit.group(1).strip().rstrip("!").strip()  # pytest frames it in "!!!"
        message = f"pytest.exit() was called: {reason} (its test process ended)"
    else:
        message = f"test process failed outside the test ({describe_status(status)})"
        raised = _last_exception_line(text)
        if raised:  # e.g. KeyboardInterrupt raised in a test: it ends the process, not only the test
            message = f"{message}: {raised}"
    return [
        TestRecord(
            nodeid=nodeid,
            outcome="error",
            device=device,
            message=message,
            longrepr=text,
            output_tail=text,
        )
        for nodeid in blamed
    ]


def record_from_collection_error(nodeid: str, text: str) -> TestRecord:
    """A file pytest could not collect (import error, syntax error, a bad fixture at module level)."""
    return TestRecord(
        nodeid=nodeid or "<collection>",
        outcome="error",
        message="collection failed: " + collection_error_line(text),
        longrepr=text,
    )


def record_from_collection_skip(nodeid: str, longrepr: Any) -> TestRecord:
    """A file skipped as a whole while it was collected (``pytest.importorskip`` or
    ``pytest.skip(allow_module_level=True)`` at module level): none of its tests exist to be
    recorded, so the file is, and a run whose every file was skipped is ``skipped``, not "no
    tests were collected"."""
    return TestRecord(
        nodeid=nodeid or "<collection>",
        outcome="skipped",
        message="the whole file was skipped while it was collected: " + skip_reason(longrepr),
    )


def records_without_result(
    collected: Sequence[str], recorded: set[str], why: str, *, after_all: str | None = None
) -> list[TestRecord]:
    """The session stopped early (an internal error of pytest, ``pytest.exit()``): each
    collected test without a record is an error saying ``why`` (it never ran, or its result
    was lost). With ``after_all``, a session that stopped after every test had a result is
    itself an error with that message."""
    missing = [n for n in collected if n not in recorded]
    if not missing and after_all:
        return [TestRecord(nodeid="<pytest session>", outcome="error", message=after_all)]
    return [TestRecord(nodeid=n, outcome="error", message=why) for n in missing]


def collection_error_line(text: str) -> str:
    """The most telling line of pytest's collection error text.

    pytest prints the import traceback, then the exception as ``E`` lines. The exception's
    first line (``ModuleNotFoundError: No module named 'x'``) says what to fix; for a
    ``SyntaxError`` the file and line it names are added. Without ``E`` lines the last
    non-empty line is used.
    """
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    e_lines = [line[1:].strip() for line in lines if line.startswith("E ")]
    e_lines = [line for line in e_lines if line]
    for index in range(len(e_lines) - 1, -1, -1):
        line = e_lines[index]
        head = line.split(":", 1)[0].rsplit(".", 1)[-1]
        if not head.isidentifier() or not head.endswith(EXCEPTION_SUFFIXES):
            continue
        if head in ("SyntaxError", "IndentationError", "TabError"):
            where = next((m for m in map(_FILE_LINE.search, e_lines[:index]) if m), None)
            if where:
                return f"{line} ({where.group(1)}, line {where.group(2)})"
        return line
    if e_lines:
        return e_lines[-1]
    return lines[-1] if lines else "no details from pytest"


EXCEPTION_SUFFIXES = ("Error", "Exception", "Interrupt", "Exit", "Warning", "Failed")
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
