"""What the verdict counts and pytest never saw, shown in pytest's own output.

A test process that crashed, a test that ran past its timeout or leaked, a process that failed
outside its tests: the parent records each as the verdict counts it, and reports it to pytest
too (the terminal summary, ``--junitxml``), as a failed call, a setup error or a teardown
error, so pytest's output and the verdict agree.
"""

from __future__ import annotations

from typing import Any, Literal

from xcompat.isolate.classify import BODY_NEVER_RAN
from xcompat.isolate.outcomes import TestRecord
from xcompat.isolate.tracked import RunningTest


def show_crash(config: Any, current: RunningTest, longrepr: str, duration: float) -> None:
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


def show_verdict_only(config: Any, running: RunningTest, record: TestRecord) -> None:
    """A test pytest saw pass that the verdict does not count as passed (it ran over its
    timeout, or leaked): an error at teardown in pytest's own output too."""
    if record.outcome == "timeout":
        show_error(config, running, record.message, "", when="teardown")
    elif record.outcome == "leaked":
        show_error(config, running, f"leaked: {record.message}", "", when="teardown")
    elif record.message == BODY_NEVER_RAN:
        show_error(config, running, BODY_NEVER_RAN, "", when="teardown")


def show_error(config: Any, test: Any, message: str, text: str, *, when: Literal["setup", "teardown"]) -> None:
    """Show in pytest's own output (the terminal summary and ``--junitxml``) what the
    verdict counts and pytest never saw: a test whose process failed outside it (an error
    at ``setup``: ``test`` is its item), or one that ran past its timeout but ended, or
    passed and leaked (``teardown``, after its own reports: ``test`` is its running test)."""
    from _pytest.reports import TestReport

    keywords: Any = test.keywords if isinstance(test, RunningTest) else dict.fromkeys(test.keywords, 1)
    if when == "setup":
        config.hook.pytest_runtest_logstart(nodeid=test.nodeid, location=test.location)
    report = TestReport(
        nodeid=test.nodeid,
        location=test.location,
        keywords=keywords,
        outcome="failed",
        longrepr=f"{message}\n{text}" if text else message,
        when=when,
        duration=0.0,
    )
    config.hook.pytest_runtest_logreport(report=report)
    if when == "setup":
        config.hook.pytest_runtest_logfinish(nodeid=test.nodeid, location=test.location)
